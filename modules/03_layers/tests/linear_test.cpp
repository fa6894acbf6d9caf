// Module 03 checks for the Linear layer: its Kaiming initialisation, its forward values, and its
// hand-written backward pass. Gradients are compared with central finite differences of
// L = Σ G ⊙ y for a fixed G, where y = x·W + b is computed by an independent loop in this file,
// summed in double: y is linear in each of x, W and b, so the central difference is exact up to
// float rounding, and your backward is judged against the true layer even if your forward has a
// bug of its own.
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "kiln/layers.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using kiln::testing::random_tensor;

// y = x·W (+ b), independently: in = {x (N, in), W (in, out), b (out) if present}.
Tensor reference_linear(const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const std::int64_t n = x.shape()[0], k = x.shape()[1], m = w.shape()[1];
  std::vector<float> y(static_cast<std::size_t>(n * m));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t o = 0; o < m; ++o) {
      double total = in.size() == 3 ? in[2].at({o}) : 0.0;
      for (std::int64_t p = 0; p < k; ++p) total += static_cast<double>(x.at({i, p})) * w.at({p, o});
      y[static_cast<std::size_t>(i * m + o)] = static_cast<float>(total);
    }
  }
  return Tensor({n, m}, y);
}

// dL/d(values[i]) for L = Σ G ⊙ reference_linear(values), by central differences.
Tensor numeric_gradient(const std::vector<Tensor>& values, std::size_t i, const Tensor& grad_output) {
  return kiln::testing::numeric_gradient(reference_linear, values, i, grad_output);
}

// Runs linear_backward for values = {x, W} or {x, W, b} and a random G, and compares the
// gradient of input i with finite differences when failure_ids[i] is not empty (i = 0 input,
// 1 weight, 2 bias). Returns false after reporting; an error thrown on the way (other than a
// stub's) is reported under the first id.
bool check_gradients(const char* file, int line, const std::vector<Tensor>& values,
                     const std::vector<std::string>& failure_ids, const std::string& what) {
  std::string first_id;
  for (const auto& id : failure_ids) {
    if (first_id.empty()) first_id = id;
  }
  const Tensor grad_output = random_tensor({values[0].shape()[0], values[1].shape()[1]}, 4242, 0.5f, 1.5f);
  LinearGradients grads;
  try {
    grads = linear_backward(values[0], values[1], grad_output, values.size() == 3);
  } catch (const NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    testing::report_failure(file, line, first_id, {}, what + ": linear_backward threw " + error.what());
    return false;
  }
  const Tensor* actual[] = {&grads.input, &grads.weight, &grads.bias};
  bool all_close = true;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (failure_ids[i].empty()) continue;
    const Tensor expected = numeric_gradient(values, i, grad_output);
    const testing::Comparison c = testing::compare(*actual[i], expected, 1e-3, 1e-3);
    if (!c.close) {
      all_close = false;
      testing::report_failure(file, line, failure_ids[i], {},
                              what + ": " +
                                  (c.shapes_match ? c.describe()
                                                  : "got shape " + to_string(actual[i]->shape()) + ", expected " +
                                                        to_string(expected.shape())));
    }
  }
  return all_close;
}

#define CHECK_GRADIENTS(values, ids, what) check_gradients(__FILE__, __LINE__, values, ids, what)

}  // namespace

TEST(Layers, LinearInit) {
  // fast.ai's seed: WichmannHill(457428938475) draws 0.7645251082582081, 0.7920889799553945,
  // 0.06912886811267205 first. With bound = √(6/784) = 0.0874817765..., the first three weights
  // of Linear(784, 10) are bound·(2u - 1):
  const Linear layer(784, 10, true, 457428938475ULL);
  KILN_EXPECT(layer.weight.shape() == Shape({784, 10}) && layer.in_features == 784 && layer.out_features == 10,
              "linear_init_wrong", {},
              "Linear(784, 10) has weight shape " + to_string(layer.weight.shape()) + " and in/out features " +
                  std::to_string(layer.in_features) + "/" + std::to_string(layer.out_features));
  if (layer.weight.shape() != Shape({784, 10})) return;
  const Tensor first_three = make_view(layer.weight, {3}, {1}, layer.weight.offset());
  KILN_EXPECT_CLOSE(first_three, Tensor({3}, {0.0462822528f, 0.0511049257f, -0.0753867441f}), 1e-6, "linear_init_wrong");

  // Every weight, drawn here in row-major order; the bias is zeros and draws nothing.
  WichmannHill generator(457428938475ULL);
  const double bound = std::sqrt(6.0 / 784.0);
  std::vector<float> expected(784 * 10);
  for (float& w : expected) w = static_cast<float>(bound * (2.0 * generator.next() - 1.0));
  KILN_EXPECT_CLOSE(layer.weight, Tensor({784, 10}, expected), 1e-6, "linear_init_wrong");
  KILN_EXPECT_CLOSE(layer.bias, Tensor::zeros({10}), 0.0, "linear_init_wrong");
  KILN_EXPECT(layer.weight_grad.shape() == layer.weight.shape() && layer.bias_grad.shape() == layer.bias.shape(),
              "linear_init_wrong", {},
              "weight_grad and bias_grad should start as zeros of shapes (784, 10) and (10), got " +
                  to_string(layer.weight_grad.shape()) + " and " + to_string(layer.bias_grad.shape()));

  // Two layers sharing one generator: the second continues where the first stopped (12 draws,
  // none for the first layer's bias).
  WichmannHill shared(11);
  const Linear first(4, 3, true, shared);
  const Linear second(3, 2, false, shared);
  WichmannHill replay(11);
  std::vector<float> first_weights(12), second_weights(6);
  for (float& w : first_weights) w = static_cast<float>(std::sqrt(6.0 / 4.0) * (2.0 * replay.next() - 1.0));
  for (float& w : second_weights) w = static_cast<float>(std::sqrt(6.0 / 3.0) * (2.0 * replay.next() - 1.0));
  KILN_EXPECT_CLOSE(first.weight, Tensor({4, 3}, first_weights), 1e-6, "linear_init_wrong");
  KILN_EXPECT_CLOSE(second.weight, Tensor({3, 2}, second_weights), 1e-6, "linear_init_wrong");
}

TEST(Layers, LinearForward) {
  // x = [[1, 2, 3], [4, 5, 6]], W = [[7, 8], [9, 10], [11, 12]], b = [0.5, -1]:
  //   x·W = [[58, 64], [139, 154]], plus b on every row.
  const Tensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor w({3, 2}, {7, 8, 9, 10, 11, 12});
  try {
    KILN_EXPECT_CLOSE(linear_forward(x, w, Tensor({2}, {0.5f, -1.0f})), Tensor({2, 2}, {58.5f, 63, 139.5f, 153}),
                      1e-4, "linear_forward_wrong");
    // The course's sizes: five 784-pixel inputs through Linear(784, 10), given a random bias.
    Linear layer(784, 10, true, 3);
    layer.bias = random_tensor({10}, 5);
    const Tensor images = random_tensor({5, 784}, 457428938475ULL, 0.0f, 1.0f);
    KILN_EXPECT_CLOSE(layer.forward(images), reference_linear({images, layer.weight, layer.bias}), 1e-3,
                      "linear_forward_wrong");
  } catch (const NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    KILN_FAIL("linear_forward_wrong", {}, std::string("forward threw ") + error.what());
    return;
  }

  // Without bias: the layer's bias is empty, and the output is x·W with nothing added.
  Linear plain(3, 2, false);
  KILN_EXPECT(plain.bias.shape() == Shape({0}) && !plain.has_bias(), "linear_no_bias_wrong", {},
              "Linear(3, 2, false) has a bias of shape " + to_string(plain.bias.shape()));
  plain.weight = w;
  try {
    KILN_EXPECT_CLOSE(plain.forward(x), Tensor({2, 2}, {58, 64, 139, 154}), 1e-4, "linear_no_bias_wrong");
    KILN_EXPECT_CLOSE(linear_forward(x, w, std::nullopt), Tensor({2, 2}, {58, 64, 139, 154}), 1e-4,
                      "linear_no_bias_wrong");
  } catch (const NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    KILN_FAIL("linear_no_bias_wrong", {}, std::string("forward without bias threw ") + error.what());
  }
}

TEST(Layers, LinearGradients) {
  const std::vector<std::string> ids{"linear_input_grad_wrong", "linear_weight_grad_wrong", ""};
  // A square layer first (in = out = 3), where a missing transpose still has the right shape,
  // then a (5, 4) batch through a (4, 3) weight, then one without bias.
  if (!CHECK_GRADIENTS((std::vector<Tensor>{random_tensor({2, 3}, 51), random_tensor({3, 3}, 52), random_tensor({3}, 53)}),
                       ids, "x (2, 3), W (3, 3), b (3)"))
    return;
  if (!CHECK_GRADIENTS((std::vector<Tensor>{random_tensor({5, 4}, 54), random_tensor({4, 3}, 55), random_tensor({3}, 56)}),
                       ids, "x (5, 4), W (4, 3), b (3)"))
    return;
  if (!CHECK_GRADIENTS((std::vector<Tensor>{random_tensor({5, 4}, 57), random_tensor({4, 3}, 58)}),
                       (std::vector<std::string>{ids[0], ids[1]}), "x (5, 4), W (4, 3), no bias"))
    return;

  // Through the layer: forward, then backward twice with the same G; the given backward() adds,
  // so weight_grad holds twice xᵀ·G, and the returned input gradient is G·Wᵀ each time.
  Linear layer(4, 3, true, 59);
  const Tensor x = random_tensor({5, 4}, 60);
  const Tensor grad_output = random_tensor({5, 3}, 4242, 0.5f, 1.5f);
  Tensor input_grad;
  try {
    layer.forward(x);
    layer.backward(grad_output);
    input_grad = layer.backward(grad_output);
  } catch (const NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    KILN_FAIL("linear_input_grad_wrong", {}, std::string("Linear(4, 3): forward or backward threw ") + error.what());
    return;
  }
  const std::vector<Tensor> values{x, layer.weight, layer.bias};
  KILN_EXPECT_CLOSE(input_grad, numeric_gradient(values, 0, grad_output), 1e-2, "linear_input_grad_wrong");
  KILN_EXPECT_CLOSE(layer.weight_grad, 2.0f * numeric_gradient(values, 1, grad_output), 1e-2, "linear_weight_grad_wrong");
}

TEST(Layers, LinearBiasGradient) {
  const std::vector<std::string> ids{"", "", "linear_bias_grad_wrong"};
  if (!CHECK_GRADIENTS((std::vector<Tensor>{random_tensor({5, 4}, 61), random_tensor({4, 3}, 62), random_tensor({3}, 63)}),
                       ids, "x (5, 4), W (4, 3), b (3)"))
    return;
  // Through the layer, with G all ones: every bias was added to 5 rows, so it gets 5.
  Linear layer(4, 3, true, 64);
  try {
    layer.forward(random_tensor({5, 4}, 65));
    layer.backward(Tensor::ones({5, 3}));
  } catch (const NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    KILN_FAIL("linear_bias_grad_wrong", {}, std::string("forward or backward threw ") + error.what());
    return;
  }
  KILN_EXPECT_CLOSE(layer.bias_grad, Tensor::full({3}, 5.0f), 1e-5, "linear_bias_grad_wrong");
}

}  // namespace kiln
