// Module 06 checks: one TEST per check in module.yaml.
//
// Gradients are compared against central finite differences: for a loss L = Σ w ⊙ f(inputs) with
// fixed weights w, dL/dx_j ≈ (L(x_j + ε) - L(x_j - ε)) / 2ε, with L summed in double. Every operation
// here is at most quadratic in any one input element, and relu is only probed away from its kink,
// so the central difference is exact up to float32 rounding.
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/testing.h"

namespace {

using kiln::testing::random_tensor;

using kiln::Shape;
using kiln::Tensor;
using kiln::WichmannHill;
namespace ag = kiln::autograd;

using Forward = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs backward on L = Σ w ⊙ f(inputs) and compares the gradient of every input with central
// differences. Any error thrown on the way (other than an unwritten stub's) is reported under
// failure_id. Returns whether everything matched.
bool check_gradients(const char* file, int line, const Forward& f, const std::vector<Tensor>& values,
                     const char* failure_id, const std::string& what) {
  constexpr float kEps = 1e-2f;
  std::vector<Tensor> inputs;
  for (const Tensor& v : values) inputs.push_back(v.clone().set_requires_grad(true));

  Tensor weights;
  try {
    Tensor y = f(inputs);
    weights = random_tensor(y.shape(), 4242, 0.5f, 1.5f);
    y.backward(weights);  // dL/dy = w
  } catch (const kiln::NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    kiln::testing::report_failure(file, line, failure_id, {{"difference", "-"}, {"where", "-"}},
                                  what + ": backward threw " + error.what());
    return false;
  }

  for (std::size_t i = 0; i < values.size(); ++i) {
    const Tensor numeric = kiln::testing::numeric_gradient(f, values, i, weights, kEps);
    const kiln::testing::Comparison c = kiln::testing::compare(inputs[i].grad(), numeric, 1e-3, 1e-3);
    if (!c.close) {
      const std::string which = what + ", gradient of input " + std::to_string(i) + ": ";
      if (!c.shapes_match) {
        kiln::testing::report_failure(
            file, line, failure_id, {{"difference", "inf"}, {"where", "-"}},
            which + "got shape " + kiln::to_string(inputs[i].grad().shape()) + ", expected " +
                kiln::to_string(values[i].shape()));
      } else {
        kiln::testing::report_failure(
            file, line, failure_id,
            {{"difference", kiln::testing::format_number(c.max_abs_diff)}, {"where", kiln::to_string(c.where)}},
            which + c.describe());
      }
      return false;
    }
  }
  return true;
}

#define CHECK_GRADIENTS(f, values, id, what) check_gradients(__FILE__, __LINE__, f, values, id, what)

// Reports reduce_shape_wrong or reduce_values_wrong for reduce_to_shape(grad, shape).
void expect_reduced(const char* file, int line, const Tensor& grad, const Shape& shape,
                    const Tensor& expected) {
  Tensor actual;
  try {
    actual = ag::reduce_to_shape(grad, shape);
  } catch (const kiln::NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    kiln::testing::report_failure(file, line, "reduce_shape_wrong",
                                  {{"got", "an error"}, {"expected", kiln::to_string(shape)}},
                                  std::string("reduce_to_shape threw ") + error.what());
    return;
  }
  if (actual.shape() != expected.shape()) {
    kiln::testing::report_failure(file, line, "reduce_shape_wrong",
                                  {{"got", kiln::to_string(actual.shape())},
                                   {"expected", kiln::to_string(expected.shape())}},
                                  "reducing a gradient of shape " + kiln::to_string(grad.shape()));
    return;
  }
  kiln::testing::expect_close(file, line, actual, expected, 1e-4, "reduce_values_wrong");
}

#define EXPECT_REDUCED(grad, shape, expected) expect_reduced(__FILE__, __LINE__, grad, shape, expected)

}  // namespace

TEST(Autograd, ReduceToShape) {
  // g(i, j, k) = 12i + 4j + k, shape (2, 3, 4).
  const Tensor g3 = Tensor::arange(24).reshape({2, 3, 4});
  // To (3, 1): Σ_i Σ_k (12i + 4j + k) = 48 + 32j + 12.
  EXPECT_REDUCED(g3, (Shape{3, 1}), Tensor({3, 1}, {60, 92, 124}));
  // To (4,): Σ_i Σ_j (12i + 4j + k) = 36 + 24 + 6k.
  EXPECT_REDUCED(g3, (Shape{4}), Tensor({4}, {60, 66, 72, 78}));

  const Tensor g2({2, 3}, {0, 1, 2, 3, 4, 5});
  EXPECT_REDUCED(g2, (Shape{2, 3}), g2);
  EXPECT_REDUCED(g2, (Shape{3}), Tensor({3}, {3, 5, 7}));
  EXPECT_REDUCED(g2, (Shape{1, 3}), Tensor({1, 3}, {3, 5, 7}));
  EXPECT_REDUCED(g2, (Shape{2, 1}), Tensor({2, 1}, {3, 12}));
  EXPECT_REDUCED(g2, (Shape{}), Tensor::scalar(15));
}

TEST(Autograd, BroadcastGradients) {
  const auto add = [](const std::vector<Tensor>& in) { return ag::add(in[0], in[1]); };
  CHECK_GRADIENTS(add, (std::vector<Tensor>{random_tensor({3, 1}, 1), random_tensor({1, 4}, 2)}),
                  "broadcast_grad_not_reduced", "add of (3, 1) and (1, 4)");
  CHECK_GRADIENTS(add, (std::vector<Tensor>{random_tensor({4}, 3), random_tensor({3, 4}, 4)}),
                  "broadcast_grad_not_reduced", "add of (4) and (3, 4)");
  CHECK_GRADIENTS(add, (std::vector<Tensor>{random_tensor({2, 3}, 5), Tensor::scalar(0.5f)}),
                  "broadcast_grad_not_reduced", "add of (2, 3) and a scalar");
}

TEST(Autograd, AddSubGradients) {
  const auto add = [](const std::vector<Tensor>& in) { return ag::add(in[0], in[1]); };
  const auto sub = [](const std::vector<Tensor>& in) { return ag::sub(in[0], in[1]); };
  CHECK_GRADIENTS(add, (std::vector<Tensor>{random_tensor({2, 3}, 11), random_tensor({2, 3}, 12)}),
                  "add_sub_grad_wrong", "add of (2, 3) and (2, 3)");
  CHECK_GRADIENTS(sub, (std::vector<Tensor>{random_tensor({2, 3}, 13), random_tensor({2, 3}, 14)}),
                  "add_sub_grad_wrong", "sub of (2, 3) and (2, 3)");
  CHECK_GRADIENTS(sub, (std::vector<Tensor>{random_tensor({2, 3}, 15), random_tensor({3}, 16)}),
                  "add_sub_grad_wrong", "sub of (2, 3) and (3)");
}

TEST(Autograd, MulGradients) {
  const auto mul = [](const std::vector<Tensor>& in) { return ag::mul(in[0], in[1]); };
  CHECK_GRADIENTS(mul, (std::vector<Tensor>{random_tensor({2, 3}, 21), random_tensor({2, 3}, 22)}),
                  "mul_grad_wrong", "mul of (2, 3) and (2, 3)");
  CHECK_GRADIENTS(mul, (std::vector<Tensor>{random_tensor({2, 3}, 23), random_tensor({2, 1}, 24)}),
                  "mul_grad_wrong", "mul of (2, 3) and (2, 1)");
}

TEST(Autograd, MatmulGradients) {
  const auto matmul = [](const std::vector<Tensor>& in) { return ag::matmul(in[0], in[1]); };
  CHECK_GRADIENTS(matmul, (std::vector<Tensor>{random_tensor({2, 3}, 31), random_tensor({3, 4}, 32)}),
                  "matmul_grad_wrong", "matmul of (2, 3) and (3, 4)");
  CHECK_GRADIENTS(matmul, (std::vector<Tensor>{random_tensor({4, 1}, 33), random_tensor({1, 2}, 34)}),
                  "matmul_grad_wrong", "matmul of (4, 1) and (1, 2)");
}

TEST(Autograd, SumGradients) {
  const std::vector<Tensor> x{random_tensor({2, 3}, 41)};
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return ag::sum(in[0]); }, x, "sum_grad_wrong",
                  "sum of all elements of (2, 3)");
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return ag::sum(in[0], 1); }, x,
                  "sum_grad_wrong", "sum of (2, 3) over dim 1");
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return ag::sum(in[0], 0, true); }, x,
                  "sum_grad_wrong", "sum of (2, 3) over dim 0 with keepdim");
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return ag::sum(in[0], -1, true); }, x,
                  "sum_grad_wrong", "sum of (2, 3) over dim -1 with keepdim");
}

TEST(Autograd, ViewGradients) {
  const std::vector<Tensor> x{random_tensor({2, 3}, 51)};
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return ag::reshape(in[0], {3, 2}); }, x,
                  "view_grad_wrong", "reshape of (2, 3) to (3, 2)");
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return ag::reshape(in[0], {-1}); }, x,
                  "view_grad_wrong", "reshape of (2, 3) to (-1)");
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return ag::transpose(in[0], 0, 1); }, x,
                  "view_grad_wrong", "transpose of (2, 3)");
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return ag::transpose(in[0], 2, 0); },
                  (std::vector<Tensor>{random_tensor({2, 3, 4}, 52)}), "view_grad_wrong",
                  "transpose of (2, 3, 4), dims 2 and 0");
}

TEST(Autograd, ReluGradients) {
  // Away from the kink at 0, so that a step of 0.01 never crosses it.
  const Tensor x({2, 4}, {-1.5f, -0.3f, 0.2f, 0.9f, 1.7f, -0.8f, 0.4f, -0.1f});
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return ag::relu(in[0]); },
                  std::vector<Tensor>{x}, "relu_grad_wrong", "relu of (2, 4)");
}

TEST(Autograd, AccumulatesAcrossUses) {
  // y = x·x + x: x reaches y along three edges, so dy/dx = 2x + 1.
  {
    Tensor x = Tensor({2, 2}, {-1.0f, 0.5f, 2.0f, 3.0f}).set_requires_grad(true);
    Tensor y = ag::add(ag::mul(x, x), x);
    y.backward(Tensor::ones({2, 2}));
    if (!KILN_EXPECT_CLOSE(x.grad(), Tensor({2, 2}, {-1.0f, 2.0f, 5.0f, 7.0f}), 1e-5,
                           "uses_not_accumulated")) {
      return;
    }
  }
  // A shared tensor inside the graph: a = x + 1, y = a + a·a. Walking a before a·a has passed on
  // its gradient loses that part: dy/dx = 1 + 2a = 3 + 2x.
  {
    Tensor x = Tensor({3}, {-1.0f, 0.0f, 2.0f}).set_requires_grad(true);
    const Tensor a = ag::add(x, Tensor::ones({3}));
    Tensor y = ag::add(a, ag::mul(a, a));
    y.backward(Tensor::ones({3}));
    KILN_EXPECT_CLOSE(x.grad(), Tensor({3}, {1.0f, 3.0f, 7.0f}), 1e-4, "node_processed_early");
  }
}

TEST(Autograd, AccumulatesAcrossCalls) {
  Tensor x = Tensor({3}, {1.0f, 2.0f, 3.0f}).set_requires_grad(true);
  Tensor loss = ag::sum(x);  // dloss/dx = 1 for every element
  loss.backward();
  loss.backward();
  KILN_EXPECT_CLOSE(x.grad(), Tensor::full({3}, 2.0f), 1e-5, "calls_not_accumulated");
  // A second graph built from the same leaf adds to the same gradient.
  Tensor loss2 = ag::sum(ag::reshape(x, {3, 1}));
  loss2.backward();
  KILN_EXPECT_CLOSE(x.grad(), Tensor::full({3}, 3.0f), 1e-5, "calls_not_accumulated");
  // zero_grad starts over.
  x.zero_grad();
  loss.backward();
  KILN_EXPECT_CLOSE(x.grad(), Tensor::ones({3}), 1e-5, "calls_not_accumulated");
}

TEST(Autograd, BackwardShapeErrors) {
  Tensor x = random_tensor({2, 3}, 61).set_requires_grad(true);
  Tensor y = ag::mul(x, x);
  KILN_EXPECT_THROWS(y.backward(), kiln::ShapeError, "nonscalar_backward_allowed", {"(2, 3)"});
  KILN_EXPECT_THROWS(x.backward(Tensor::ones({3, 2})), kiln::ShapeError,
                     "grad_output_shape_unchecked", {"(2, 3)", "(3, 2)"});
  KILN_EXPECT_THROWS(y.backward(Tensor::ones({6})), kiln::ShapeError, "grad_output_shape_unchecked",
                     {"(2, 3)", "(6)"});
}

TEST(Autograd, FrozenTensorsGetNoGrad) {
  // Nothing requires grad: nothing is recorded.
  const Tensor a({2}, {1.0f, 2.0f});
  const Tensor b({2}, {3.0f, 4.0f});
  const Tensor c = ag::mul(a, b);
  KILN_EXPECT(!c.requires_grad() && (!c.autograd() || !c.autograd()->grad_fn), "grad_for_frozen_tensor",
              {}, "mul of two tensors that do not require grad recorded a node");

  // A frozen parameter (requires_grad switched off again) and a constant take part in a loss.
  Tensor w = Tensor({2}, {0.5f, -2.0f}).set_requires_grad(true);
  w.set_requires_grad(false);
  Tensor x = Tensor({2}, {3.0f, 1.0f}).set_requires_grad(true);
  const Tensor constant({2}, {1.0f, 1.0f});
  Tensor loss = ag::sum(ag::mul(ag::mul(w, x), constant));
  loss.backward();
  KILN_EXPECT(ag::has_grad(x), "grad_for_frozen_tensor", {}, "x requires grad but received none");
  KILN_EXPECT(!ag::has_grad(w), "grad_for_frozen_tensor", {},
              "w.set_requires_grad(false) was called, yet w received a gradient");
  KILN_EXPECT(!ag::has_grad(constant), "grad_for_frozen_tensor", {},
              "a constant that never required grad received a gradient");
}
