// Module 03 checks for the Linear layer: its Kaiming initialisation, its forward values, and its
// hand-written backward pass. Gradients are compared with central finite differences of
// L = Σ G ⊙ y for a fixed G, where y = x·W + b is computed by an independent loop in this file,
// summed in double: y is linear in each of x, W and b, so the central difference is exact up to
// float rounding, and your backward is judged against the true layer even if your forward has a
// bug of its own.
//
// Every value taken from the module's functions, the Linear class included, passes through
// observe(): a layer is built, used and read inside one call. Checks that go through the layer
// set its weight and bias to inputs of the test, so that they do not depend on its
// initialisation.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/layers.h"
#include "kiln/testing.h"
#include "kiln/trusted.h"

namespace kiln {
namespace {

using testing::TrustedWichmannHill;

using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;

// y = x·W (+ b), independently: in = {x (N, in), W (in, out), b (out) if present}.
TensorData reference_linear(const std::vector<TensorData>& in) {
  const TensorData& x = in[0];
  const TensorData& w = in[1];
  const std::int64_t n = x.shape[0], k = x.shape[1], m = w.shape[1];
  std::vector<float> y(static_cast<std::size_t>(n * m));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t o = 0; o < m; ++o) {
      double total = in.size() == 3 ? in[2].values[o] : 0.0;
      for (std::int64_t p = 0; p < k; ++p) total += static_cast<double>(x.values[i * k + p]) * w.values[p * m + o];
      y[static_cast<std::size_t>(i * m + o)] = static_cast<float>(total);
    }
  }
  return data_of({n, m}, y);
}

TensorData reference_linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b) {
  if (b) return reference_linear({data_of(x), data_of(w), data_of(*b)});
  return reference_linear({data_of(x), data_of(w)});
}

// dL/d(values[i]) for L = Σ G ⊙ reference_linear(values), by central differences.
TensorData numeric_gradient(const std::vector<Tensor>& values, std::size_t i, const Tensor& grad_output) {
  std::vector<TensorData> plain;
  for (const Tensor& t : values) plain.push_back(data_of(t));
  return testing::numeric_gradient([](const std::vector<TensorData>& in) { return reference_linear(in); }, plain, i,
                                   data_of(grad_output));
}

TensorData scaled(TensorData t, float factor) {
  for (float& v : t.values) v *= factor;
  return t;
}

// Reports `failure_id` unless `actual` (part of the observation of `call`) is within
// 1e-3 + 1e-3·|expected| of `expected` and of its shape.
bool expect_gradient(const char* file, int line, const std::string& call, const std::string& which,
                     const TensorData& actual, const TensorData& expected, double tolerance,
                     const std::string& failure_id) {
  const testing::Comparison c = testing::compare(actual, expected, tolerance, 1e-3);
  if (c.close) return true;
  testing::report_failure(file, line, failure_id, {},
                          call + ", " + which + ": " +
                              (c.shapes_match ? c.describe()
                                              : "got shape " + to_string(actual.shape) + ", expected " +
                                                    to_string(expected.shape)));
  return false;
}

// Runs linear_backward for values = {x, W} or {x, W, b} and a random G, and compares the
// gradient of input i with finite differences when failure_ids[i] is not empty (i = 0 input,
// 1 weight, 2 bias). Returns false after reporting; an error thrown by linear_backward is
// reported under the first id.
bool check_gradients(const char* file, int line, const std::vector<Tensor>& values,
                     const std::vector<std::string>& failure_ids, std::uint64_t stream) {
  std::string first_id;
  for (const auto& id : failure_ids) {
    if (first_id.empty()) first_id = id;
  }
  const Tensor& x = values[0];
  const Tensor& w = values[1];
  const bool has_bias = values.size() == 3;
  const Tensor grad_output = random_tensor({x.shape()[0], w.shape()[1]}, stream, 0.5f, 1.5f);
  const auto grads = observe(fmt::format("linear_backward(x, W, G, {}) with x {}, W {}{}", has_bias,
                                         to_string(x.shape()), to_string(w.shape()), has_bias ? ", b" : ""),
                             [&] {
                               const LinearGradients g = linear_backward(x, w, grad_output, has_bias);
                               return std::tuple(g.input, g.weight, g.bias);
                             });
  KILN_JUDGE {
    if (!testing::expect_ok(file, line, grads, first_id)) return false;
  }
  if (!grads.ok()) return false;
  bool all_close = true;
  KILN_JUDGE {
    const TensorData* actual[] = {&std::get<0>(*grads), &std::get<1>(*grads), &std::get<2>(*grads)};
    const char* names[] = {"the input gradient", "the weight gradient", "the bias gradient"};
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (failure_ids[i].empty()) continue;
      all_close &= expect_gradient(file, line, grads.call(), names[i], *actual[i],
                                   numeric_gradient(values, i, grad_output), 1e-3, failure_ids[i]);
    }
  }
  return all_close;
}

#define CHECK_GRADIENTS(values, ids, stream) check_gradients(__FILE__, __LINE__, values, ids, stream)


// The Kaiming-uniform weights of Linear(in, out) drawn from `generator`, in row-major order.
TensorData kaiming_weights(std::int64_t in, std::int64_t out, TrustedWichmannHill& generator) {
  const double bound = std::sqrt(6.0 / static_cast<double>(in));
  std::vector<float> w(static_cast<std::size_t>(in * out));
  for (float& v : w) v = static_cast<float>(bound * (2.0 * generator.next() - 1.0));
  return data_of({in, out}, w);
}

// Everything a new layer holds: in and out features, weight, bias, weight_grad and bias_grad.
using LayerState = std::tuple<int, int, Tensor, Tensor, Tensor, Tensor>;
LayerState state_of(const Linear& layer) {
  return {layer.in_features, layer.out_features, layer.weight, layer.bias, layer.weight_grad, layer.bias_grad};
}

using ObservedState = testing::Plain<LayerState>::type;

// Reports linear_features_wrong unless a new layer (`what`, observed) has in features `in` and
// out features `out`, linear_init_wrong unless it has the given weight and a zero bias (of shape
// (0) without bias), then linear_grads_not_zeroed unless its gradients are zeros of the same shapes.
bool expect_new_layer(const char* file, int line, const std::string& what, const ObservedState& layer,
                      std::int64_t in, std::int64_t out, bool bias, const TensorData& weight) {
  const auto& [in_features, out_features, w, b, w_grad, b_grad] = layer;
  if (in_features != in || out_features != out) {
    testing::report_failure(file, line, "linear_features_wrong", {},
                            fmt::format("{} has in_features {} and out_features {}, expected {} and {}", what,
                                        in_features, out_features, in, out));
    return false;
  }
  const TensorData zero_bias = data_of({bias ? out : 0}, std::vector<float>(bias ? out : 0, 0.0f));
  const TensorData zero_weight = data_of({in, out}, std::vector<float>(in * out, 0.0f));
  const std::tuple<const char*, std::pair<const TensorData*, const TensorData*>, const char*> parts[] = {
      {"weight", {&w, &weight}, "linear_init_wrong"},
      {"bias", {&b, &zero_bias}, "linear_init_wrong"},
      {"weight_grad", {&w_grad, &zero_weight}, "linear_grads_not_zeroed"},
      {"bias_grad", {&b_grad, &zero_bias}, "linear_grads_not_zeroed"},
  };
  for (const auto& [name, pair, failure] : parts) {
    const testing::Comparison c = testing::compare(*pair.first, *pair.second, 1e-6);
    if (c.close) continue;
    testing::report_failure(file, line, failure, {},
                            what + ": its " + name + " " +
                                (c.shapes_match ? c.describe()
                                                : "has shape " + to_string(pair.first->shape) + ", expected " +
                                                      to_string(pair.second->shape)));
    return false;
  }
  return true;
}

// Whether two results agree to the last bit (NaN with NaN): for a pair of results judged by
// expect_gradient rather than testing::expect_same_at_offset.
bool same_values(const TensorData& a, const TensorData& b) {
  bool same = a.shape == b.shape && a.values.size() == b.values.size();
  for (std::size_t i = 0; same && i < a.values.size(); ++i)
    same = a.values[i] == b.values[i] || (std::isnan(a.values[i]) && std::isnan(b.values[i]));
  return same;
}

}  // namespace

TEST(Layers, LinearInit) {
  // fast.ai's seed: WichmannHill(457428938475) draws 0.7645251082582081, 0.7920889799553945,
  // 0.06912886811267205 first. With bound = √(6/784) = 0.0874817765..., the first three weights
  // of Linear(784, 10) are bound·(2u - 1): 0.0462822528, 0.0511049257 and -0.0753867441.
  const auto layer = observe("Linear(784, 10, true, 457428938475)",
                             [] { return state_of(Linear(784, 10, true, 457428938475ULL)); });
  if (!KILN_EXPECT_OK(layer, "linear_init_wrong")) return;
  KILN_JUDGE {
    const TensorData& weight = std::get<2>(*layer);
    if (weight.shape != Shape({784, 10})) {
      KILN_FAIL("linear_init_wrong", {},
                layer.call() + " has weight shape " + to_string(weight.shape) + ", expected (784, 10)");
      return;
    }
    const std::vector<float> golden = {0.0462822528f, 0.0511049257f, -0.0753867441f};
    for (std::size_t i = 0; i < golden.size(); ++i) {
      if (std::fabs(weight.values[i] - golden[i]) > 1e-6) {
        const auto [got, expected] = testing::format_pair(weight.values[i], golden[i]);
        KILN_FAIL("linear_init_wrong", {},
                  fmt::format("{}: weight[0, {}] is {}, expected {}", layer.call(), i, got, expected));
        return;
      }
    }
    // Every weight, drawn here in row-major order; the bias is zeros and draws nothing.
    TrustedWichmannHill fast_ai(457428938475ULL);
    const TensorData expected = kaiming_weights(784, 10, fast_ai);
    if (!expect_new_layer(__FILE__, __LINE__, layer.call(), *layer, 784, 10, true, expected)) return;
    // Within 1e-6 each; and exactly the header's float(bound·(2u - 1)) in double, rounded once.
    // The bound taken in float lands a last bit off on 2,357 of them.
    std::size_t off = 0, first = 0;
    for (std::size_t i = expected.values.size(); i-- > 0;) {
      if (weight.values[i] == expected.values[i]) continue;
      ++off;
      first = i;
    }
    if (off > 0) {
      KILN_FAIL("linear_init_not_exact", {{"off", fmt::format("{} of {}", off, expected.values.size())}},
                fmt::format("{}: weight[{}, {}] is {:.9g}, float(bound·(2u - 1)) in double is {:.9g}", layer.call(),
                            first / 10, first % 10, weight.values[first], expected.values[first]));
      return;
    }
  }

  // Two layers sharing one generator: the second continues where the first stopped (12 draws,
  // none for the first layer's bias).
  const auto shared = observe("Linear(4, 3, true, g), then Linear(3, 2, false, g) with one g = WichmannHill(11)", [] {
    WichmannHill g(11);
    const Linear first(4, 3, true, g);
    const Linear second(3, 2, false, g);
    return std::pair(state_of(first), state_of(second));
  });
  if (!KILN_EXPECT_OK(shared, "linear_init_wrong")) return;
  KILN_JUDGE {
    TrustedWichmannHill replay(11);
    const TensorData first_weights = kaiming_weights(4, 3, replay);
    const TensorData second_weights = kaiming_weights(3, 2, replay);
    if (!expect_new_layer(__FILE__, __LINE__, "the first layer of " + shared.call(), shared->first, 4, 3, true,
                          first_weights))
      return;
    if (!expect_new_layer(__FILE__, __LINE__, "the second layer of " + shared.call(), shared->second, 3, 2, false,
                          second_weights))
      return;
  }

  // A layer of the run's own: a seed and sizes (in from 2 to 9, out = in + 1 to in + 4) drawn
  // from the run.
  testing::Generator draw(66);
  const std::uint64_t seed = draw.next() >> 16;
  const int in = static_cast<int>(2 + draw.below(8));
  const int out = in + 1 + static_cast<int>(draw.below(4));
  const auto own = observe(fmt::format("Linear({}, {}, true, {})", in, out, seed),
                           [&] { return state_of(Linear(in, out, true, seed)); });
  if (!KILN_EXPECT_OK(own, "linear_init_wrong")) return;
  KILN_JUDGE {
    TrustedWichmannHill own_generator(seed);
    expect_new_layer(__FILE__, __LINE__, own.call(), *own, in, out, true, kaiming_weights(in, out, own_generator));
  }
}

TEST(Layers, LinearForward) {
  // x = [[1, 2, 3], [4, 5, 6]], W = [[7, 8], [9, 10], [11, 12]], b = [0.5, -1]:
  //   x·W = [[58, 64], [139, 154]], plus b on every row.
  const Tensor x({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor w({3, 2}, {7, 8, 9, 10, 11, 12});
  const Tensor b({2}, {0.5f, -1.0f});
  if (!KILN_EXPECT_CLOSE(KILN_OBSERVE(linear_forward(x, w, b)), data_of({2, 2}, {58.5f, 63, 139.5f, 153}), 1e-4,
                         "linear_forward_wrong"))
    return;
  // The course's sizes: five 784-pixel inputs through a Linear(784, 10) whose weight and bias are
  // set to random values of the run.
  const Tensor images = random_tensor({5, 784}, 457428938475ULL, 0.0f, 1.0f);
  const Tensor weight = random_tensor({784, 10}, 4);
  const Tensor bias = random_tensor({10}, 5);
  const auto y = observe("layer.forward(images) of a Linear(784, 10) with a random weight and bias", [&] {
    Linear layer(784, 10, true, 3);
    layer.weight = weight;
    layer.bias = bias;
    return layer.forward(images);
  });
  if (!KILN_EXPECT_CLOSE_REL(y, reference_linear(images, weight, bias), 1e-3, 1e-5, "linear_forward_wrong")) return;

  // Without bias: the layer's bias is empty, and the output is x·W with nothing added.
  const auto plain = observe("Linear(3, 2, false): its bias and has_bias()", [] {
    const Linear layer(3, 2, false);
    return std::pair(layer.bias, layer.has_bias());
  });
  if (!KILN_EXPECT_OK(plain, "linear_no_bias_wrong")) return;
  KILN_JUDGE {
    if (plain->first.shape != Shape({0}) || plain->second) {
      KILN_FAIL("linear_no_bias_wrong", {},
                fmt::format("Linear(3, 2, false) has a bias of shape {} and has_bias() {}, expected (0) and false",
                            to_string(plain->first.shape), plain->second));
      return;
    }
  }
  const auto plain_y = observe("layer.forward(x) of Linear(3, 2, false) with W = [[7, 8], [9, 10], [11, 12]]", [&] {
    Linear layer(3, 2, false);
    layer.weight = w;
    return layer.forward(x);
  });
  if (!KILN_EXPECT_CLOSE(plain_y, data_of({2, 2}, {58, 64, 139, 154}), 1e-4, "linear_no_bias_wrong")) return;
  // And linear_forward itself without bias, on a (4, 5)·(5, 3) of the run.
  const Tensor x_run = random_tensor({4, 5}, 6), w_run = random_tensor({5, 3}, 7);
  const auto y_run = observe("linear_forward(x, W, std::nullopt) with x (4, 5), W (5, 3)",
                             [&] { return linear_forward(x_run, w_run, std::nullopt); });
  if (!KILN_EXPECT_CLOSE_REL(y_run, reference_linear(x_run, w_run, std::nullopt), 1e-5, 1e-5, "linear_no_bias_wrong"))
    return;
  // An x whose rows are not in_features long: a ShapeError naming both shapes. A (2, 6) holds a
  // whole number of rows of 3, so reading it as rows of 3 would not notice.
  for (const Tensor& bad : {random_tensor({2, 4}, 8), random_tensor({2, 6}, 9)}) {
    const std::string shape = to_string(bad.shape());
    const auto error = observe("linear_forward(x, W, b) with x " + shape + ", W (3, 2), b (2)",
                               [&] { return linear_forward(bad, w, b); });
    KILN_JUDGE {
      testing::expect_throws<ShapeError>(__FILE__, __LINE__, error, "linear_shape_unchecked", {shape, "(3, 2)"},
                                         {{"x", shape}});
    }
    if (error.ok()) return;
  }
  // Views: x the (4, 3) transpose of a random (3, 4) (strides (1, 4)), W (3, 2) and b (2)
  // contiguous views 5 floats into storages of other numbers (kiln/testing.h). Each is read
  // through its own offset and strides.
  const Tensor x_view = make_view(random_tensor({3, 4}, 71), {4, 3}, {1, 4}, 0);
  const Tensor w_view = testing::at_offset(data_of(random_tensor({3, 2}, 72)), 73);
  const Tensor b_view = testing::at_offset(data_of(random_tensor({2}, 74)), 75);
  // Observed on fresh tensors of the same values too: the view failure only where the views'
  // result differs from the fresh one's (linear_forward_wrong where both are wrong alike).
  const auto fresh = observe("linear_forward(x, W, b) with the same x (4, 3), W (3, 2) and b (2) as fresh tensors", [&] {
    return linear_forward(data_of(x_view).tensor(), data_of(w_view).tensor(), data_of(b_view).tensor());
  });
  const auto y_views = observe("linear_forward(x, W, b) with x the (4, 3) transpose of a (3, 4), W (3, 2) and b (2) "
                               "contiguous views at storage offset 5",
                               [&] { return linear_forward(x_view, w_view, b_view); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(fresh, y_views, reference_linear(x_view, w_view, b_view), 1e-5, 1e-5,
                               "linear_forward_wrong", "linear_forward_view_misread");
  }
}

TEST(Layers, LinearGradients) {
  const std::vector<std::string> ids{"linear_input_grad_wrong", "linear_weight_grad_wrong", ""};
  // A square layer first (in = out = 3), where a missing transpose still has the right shape,
  // then a (5, 4) batch through a (4, 3) weight, then one without bias.
  if (!CHECK_GRADIENTS((std::vector<Tensor>{random_tensor({2, 3}, 51), random_tensor({3, 3}, 52), random_tensor({3}, 53)}),
                       ids, 4242))
    return;
  if (!CHECK_GRADIENTS((std::vector<Tensor>{random_tensor({5, 4}, 54), random_tensor({4, 3}, 55), random_tensor({3}, 56)}),
                       ids, 4243))
    return;
  if (!CHECK_GRADIENTS((std::vector<Tensor>{random_tensor({5, 4}, 57), random_tensor({4, 3}, 58)}),
                       (std::vector<std::string>{ids[0], ids[1]}), 4244))
    return;

  // Through the layer: forward, then backward twice with the same G; the given backward() adds,
  // so weight_grad holds twice xᵀ·G, and the returned input gradient is G·Wᵀ each time. The layer
  // has no bias: its gradient is linear_bias_grad's to judge, and a wrong one (of another shape,
  // which the layer's += refuses) must not be reported here as the input's.
  const Tensor x = random_tensor({5, 4}, 60);
  const Tensor weight = random_tensor({4, 3}, 61);
  const Tensor grad_output = random_tensor({5, 3}, 4245, 0.5f, 1.5f);
  const auto through = observe(
      "Linear(4, 3, no bias) with a random weight: forward(x), backward(G) twice; the input gradient and weight_grad",
      [&] {
        Linear layer(4, 3, false, 59);
        layer.weight = weight;
        layer.zero_grad();
        layer.forward(x);
        layer.backward(grad_output);
        const Tensor input_grad = layer.backward(grad_output);
        return std::pair(input_grad, layer.weight_grad);
      });
  if (!KILN_EXPECT_OK(through, "linear_input_grad_wrong")) return;
  KILN_JUDGE {
    const std::vector<Tensor> values{x, weight};
    expect_gradient(__FILE__, __LINE__, through.call(), "the input gradient", through->first,
                    numeric_gradient(values, 0, grad_output), 1e-2, "linear_input_grad_wrong");
    expect_gradient(__FILE__, __LINE__, through.call(), "weight_grad", through->second,
                    scaled(numeric_gradient(values, 1, grad_output), 2.0f), 1e-2, "linear_weight_grad_wrong");
    if (::testing::Test::HasFailure()) return;
  }
  // Views: x the (5, 4) transpose of a random (4, 5) (strides (1, 5)), W (4, 3) and G (5, 3)
  // contiguous views 5 floats into storages of other numbers (kiln/testing.h).
  const Tensor x_view = make_view(random_tensor({4, 5}, 76), {5, 4}, {1, 5}, 0);
  const Tensor w_view = testing::at_offset(data_of(random_tensor({4, 3}, 77)), 78);
  const Tensor g_view = testing::at_offset(data_of(random_tensor({5, 3}, 79, 0.5f, 1.5f)), 80);
  // Observed on fresh tensors of the same values too: the view failure only where the views'
  // gradients differ from the fresh ones (the input or weight gradient's own failure where both
  // are wrong alike).
  const auto fresh = observe("linear_backward(x, W, G, false) with the same x (5, 4), W (4, 3) and G (5, 3) as fresh "
                             "tensors",
                             [&] {
                               const LinearGradients g = linear_backward(data_of(x_view).tensor(), data_of(w_view).tensor(),
                                                                         data_of(g_view).tensor(), false);
                               return std::pair(g.input, g.weight);
                             });
  const auto views = observe("linear_backward(x, W, G, false) with x the (5, 4) transpose of a (4, 5), W (4, 3) and "
                             "G (5, 3) contiguous views at storage offset 5",
                             [&] {
                               const LinearGradients g = linear_backward(x_view, w_view, g_view, false);
                               return std::pair(g.input, g.weight);
                             });
  KILN_JUDGE {
    // The views' gradients against the fresh ones, compared as expect_gradient compares them (NaN
    // with NaN).
    const auto close = [](const TensorData& a, const TensorData& b) {
      return same_values(a, b) || testing::compare(a, b, 1e-3, 1e-3).close;
    };
    if (testing::offset_changes(views, fresh, [&](const auto& v, const auto& f) {
          return close(v.first, f.first) && close(v.second, f.second);
        })) {
      if (!views.ok() || !fresh.ok()) {
        testing::expect_ok(__FILE__, __LINE__, views.ok() ? fresh : views, "linear_grad_view_misread");
        return;
      }
      for (const auto& [which, got, given] :
           {std::tuple{"the input gradient", views->first, fresh->first},
            std::tuple{"the weight gradient", views->second, fresh->second}}) {
        if (!close(got, given)) {
          expect_gradient(__FILE__, __LINE__, views.call(), std::string(which) + " (against " + fresh.call() + ")", got,
                          given, 1e-3, "linear_grad_view_misread");
          return;
        }
      }
    }
    if (!KILN_EXPECT_OK(fresh, "linear_input_grad_wrong")) return;
    const std::vector<Tensor> values{x_view, w_view};
    if (!expect_gradient(__FILE__, __LINE__, fresh.call(), "the input gradient", fresh->first,
                         numeric_gradient(values, 0, g_view), 1e-3, "linear_input_grad_wrong"))
      return;
    expect_gradient(__FILE__, __LINE__, fresh.call(), "the weight gradient", fresh->second,
                    numeric_gradient(values, 1, g_view), 1e-3, "linear_weight_grad_wrong");
    if (::testing::Test::HasFailure()) return;
  }
  if (!fresh.ok() || !views.ok()) return;  // the judge has returned: the observed program stops there too
  // An empty batch: x (0, 4) and G (0, 3) give an input gradient (0, 4) and a weight gradient of
  // zeros (a sum of no products).
  CHECK_GRADIENTS((std::vector<Tensor>{Tensor::zeros({0, 4}), random_tensor({4, 3}, 83), random_tensor({3}, 84)}), ids,
                  4248);
}

TEST(Layers, LinearBiasGradient) {
  const std::vector<std::string> ids{"", "", "linear_bias_grad_wrong"};
  if (!CHECK_GRADIENTS((std::vector<Tensor>{random_tensor({5, 4}, 63), random_tensor({4, 3}, 64), random_tensor({3}, 65)}),
                       ids, 4246))
    return;
  // Without a bias the bias gradient is the empty tensor of shape (0).
  const Tensor x = random_tensor({5, 4}, 67), weight = random_tensor({4, 3}, 68);
  const Tensor grad_output = random_tensor({5, 3}, 4247, 0.5f, 1.5f);
  const auto empty = observe("linear_backward(x, W, G, false).bias with x (5, 4), W (4, 3)",
                             [&] { return linear_backward(x, weight, grad_output, false).bias; });
  if (!KILN_EXPECT_OK(empty, "linear_bias_grad_wrong")) return;
  KILN_JUDGE {
    if (empty->shape != Shape({0})) {
      KILN_FAIL("bias_grad_not_empty", {{"shape", to_string(empty->shape)}},
                empty.call() + " has shape " + to_string(empty->shape) + ", expected (0)");
      return;
    }
  }
  // Through the layer, with G all ones: every bias was added to 5 rows, so it gets 5.
  const auto through = observe("bias_grad after forward(x) and backward(ones (5, 3)) of a Linear(4, 3)", [&] {
    Linear layer(4, 3, true, 64);
    layer.weight = weight;
    layer.zero_grad();
    layer.forward(x);
    layer.backward(Tensor::ones({5, 3}));
    return layer.bias_grad;
  });
  if (!KILN_EXPECT_CLOSE(through, data_of({3}, {5, 5, 5}), 1e-5, "linear_bias_grad_wrong")) return;
  // G a contiguous view 5 floats into a storage of other numbers (kiln/testing.h): its own rows
  // are summed, read from its first element, not from the storage's first float.
  const TensorData g_values = data_of(random_tensor({5, 3}, 81, 0.5f, 1.5f));
  const Tensor g_view = testing::at_offset(g_values, 82);
  // Observed on a fresh G of the same values too: the view failure only where the view's sums
  // differ from the fresh one's.
  const auto fresh = observe("linear_backward(x, W, G, true).bias with x (5, 4), W (4, 3) and the same G (5, 3) as a "
                             "fresh tensor",
                             [&] { return linear_backward(x, weight, g_values.tensor(), true).bias; });
  const auto shifted = observe("linear_backward(x, W, G, true).bias with x (5, 4), W (4, 3) and G (5, 3) a contiguous "
                               "view at storage offset 5",
                               [&] { return linear_backward(x, weight, g_view, true).bias; });
  KILN_JUDGE {
    std::vector<float> sums;
    for (std::size_t o = 0; o < 3; ++o) {
      double total = 0;
      for (std::size_t n = 0; n < 5; ++n) total += g_values.values[n * 3 + o];
      sums.push_back(static_cast<float>(total));
    }
    KILN_EXPECT_SAME_AT_OFFSET(fresh, shifted, data_of({3}, sums), 1e-5, 1e-5, "linear_bias_grad_wrong",
                               "linear_bias_grad_view_misread");
    if (::testing::Test::HasFailure()) return;
  }
  // An empty batch: G (0, 3) gives a bias gradient of zeros (a sum of no rows).
  CHECK_GRADIENTS((std::vector<Tensor>{Tensor::zeros({0, 4}), random_tensor({4, 3}, 87), random_tensor({3}, 88)}), ids,
                  4249);
}

}  // namespace kiln
