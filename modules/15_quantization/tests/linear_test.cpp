// Module 15 checks for QuantizedLinear: built from a module 08 Linear whose weight and bias are
// the test's, it must hold the transposed weight quantized per output, stay within the error bound
// of the float layer, and give exactly what the int8 computation gives (quantized input, int32
// sums, one rescale, the float bias).
//
// The bound. With x̂ = sx·q(x) and ŵ = sw[n]·q(w), and every x inside the calibrated range,
// |x - x̂| ≤ sx/2 and |w - ŵ| ≤ sw[n]/2, so for output n
//   |x̂·ŵ - x·w| ≤ |x̂|·|ŵ - w| + |w|·|x̂ - x| ≤ (|x| + sx/2)·sw[n]/2 + |w|·sx/2,
// summed over the in_features inputs; a float rounding of each term comes on top.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/quantization.h"
#include "kiln/testing.h"
#include "quantization_testing.h"

namespace kiln {
namespace {

using namespace quant_testing;
using testing::data_of;
using testing::observe;

// One layer to judge: x (N, in), weight (in, out) as module 08 keeps it, bias (out), a scale.
struct LayerCase {
  std::string what;
  TensorData x, weight, bias;
  float input_scale;
};

// Everything a QuantizedLinear holds and its forward(x); then what its bias is: whether it
// records gradients, whether forward's result does, and whether a change to the layer's bias
// after construction reached it.
using LayerParts = std::tuple<std::int64_t, std::int64_t, float, WeightParts, Tensor, Tensor, bool, bool, bool>;

LayerParts run_layer(const LayerCase& c) {
  WichmannHill generator(15);
  nn::Linear layer(c.weight.shape[0], c.weight.shape[1], generator);
  // Parameters, as a trained layer's are.
  layer.weight = c.weight.tensor().set_requires_grad(true);
  layer.bias = c.bias.tensor().set_requires_grad(true);
  const quant::QuantizedLinear q(layer, c.input_scale);
  const Tensor y = q.forward(c.x.tensor());
  const bool bias_records = q.bias.requires_grad(), forward_records = y.requires_grad();
  // The float layer trained on: its bias moves, the quantized layer's copy must not.
  const std::vector<float> before = q.bias.to_vector();
  layer.bias.data()[0] += 1.0f;
  const bool follows_layer = q.bias.to_vector() != before;
  return {q.in_features, q.out_features, q.input_scale, parts_of(q.weight), q.bias, y,
          bias_records, forward_records, follows_layer};
}

// The weight transposed to (out, in): the rows quantize_per_channel sees.
TensorData transposed(const TensorData& w) {
  const std::int64_t in = w.shape[0], out = w.shape[1];
  std::vector<float> values;
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in; ++i) values.push_back(w.values[at(i * out + o)]);
  return data_of({out, in}, values);
}

// Observes the layer of `c` and judges it: its parts, then its forward within the bound of the
// float layer and exactly as the int8 computation.
bool check_layer(const char* file, int line, const LayerCase& c) {
  const auto got = observe(c.what, [&] { return run_layer(c); });
  KILN_JUDGE {
    const std::int64_t batch = c.x.shape[0], in = c.weight.shape[0], out = c.weight.shape[1];
    const testing::Params params = {{"in", std::to_string(in)}, {"out", std::to_string(out)}};
    if (!testing::expect_ok(file, line, got, "quantized_weight_wrong", params)) return false;
    const auto& [in_features, out_features, input_scale, weight, bias, y, bias_records, forward_records, follows_layer] =
        *got;

    // Its bias its own first: a shared one also reads as the layer's changed value below.
    std::string shared;
    if (follows_layer)
      shared = "adding 1 to layer.bias[0] after the constructor changed the quantized layer's bias too: they share one storage";
    else if (bias_records)
      shared = "its bias.requires_grad() is true: it carries the layer's autograd bookkeeping";
    else if (forward_records)
      shared = "forward's result records a graph (requires_grad() is true)";
    if (!shared.empty()) {
      testing::report_failure(file, line, "bias_not_copied", params, got.call() + ": " + shared);
      return false;
    }
    // The layer's parts: sizes, scale, codes and scales of the (out, in) weight, the bias.
    const Quantized expected = trusted_quantize(transposed(c.weight));
    const auto& [codes, scales, rows, cols] = weight;
    if (in_features != in || out_features != out || input_scale != c.input_scale) {
      testing::report_failure(file, line, "quantized_settings_not_kept", params,
                              fmt::format("{}: in_features {}, out_features {}, input_scale {}; expected {}, {} and {}",
                                          got.call(), in_features, out_features, input_scale, in, out,
                                          c.input_scale));
      return false;
    }
    std::string wrong;
    if (rows != out || cols != in)
      wrong = fmt::format("its weight is ({}, {}), expected (out, in) = ({}, {})", rows, cols, out, in);
    else if (codes != expected.codes)
      wrong = "its weight's codes differ from quantize_per_channel of the transposed weight";
    else
      for (std::int64_t o = 0; o < out && wrong.empty(); ++o)
        if (std::fabs(scales[at(o)] - expected.scales[at(o)]) > 1e-6 * expected.scales[at(o)])
          wrong = fmt::format("scales[{}] is {}, expected {}", o, scales[at(o)], expected.scales[at(o)]);
    if (wrong.empty() && !testing::compare(bias, c.bias, 0).close) wrong = "its bias differs from the layer's";
    if (!wrong.empty()) {
      testing::report_failure(file, line, "quantized_weight_wrong", params, got.call() + ": " + wrong);
      return false;
    }
    if (y.shape != Shape{batch, out}) {
      testing::report_failure(file, line, "quantized_linear_wrong", params,
                              fmt::format("{}: forward gave shape {}, expected ({}, {})", got.call(), to_string(y.shape), batch, out));
      return false;
    }

    // Within the bound of the float layer, y = x·W + b in double.
    const double sx = c.input_scale;
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t o = 0; o < out; ++o) {
        double exact = c.bias.values[at(o)], bound = 0, magnitude = std::fabs(exact);
        const double sw = expected.scales[at(o)];
        for (std::int64_t i = 0; i < in; ++i) {
          const double xv = c.x.values[at(n * in + i)], wv = c.weight.values[at(i * out + o)];
          exact += xv * wv;
          bound += (std::fabs(xv) + sx / 2) * sw / 2 + std::fabs(wv) * sx / 2;
          magnitude += std::fabs(xv * wv);
        }
        const double allowed = bound + 1e-5 * magnitude + 1e-6;
        const double got_value = y.values[at(n * out + o)];
        if (std::fabs(got_value - exact) <= allowed) continue;
        testing::report_failure(file, line, "quantized_linear_drift", params,
                                fmt::format("{}: y[{}, {}] is {}, the float layer's {}: off by {}, where the bound is {}",
                                            got.call(), n, o, got_value, exact, std::fabs(got_value - exact), allowed));
        return false;
      }
    }

    // Exactly the int8 computation: sx·sw[o]·Σ q(x)·q(w) + b, here in double.
    std::vector<float> simulated;
    for (std::int64_t n = 0; n < batch; ++n) {
      for (std::int64_t o = 0; o < out; ++o) {
        std::int64_t acc = 0;
        for (std::int64_t i = 0; i < in; ++i)
          acc += trusted_code(c.x.values[at(n * in + i)] / sx) * expected.codes[at(o * in + i)];
        simulated.push_back(static_cast<float>(sx * expected.scales[at(o)] * static_cast<double>(acc) + c.bias.values[at(o)]));
      }
    }
    const testing::Comparison cmp = testing::compare(y, data_of({batch, out}, simulated), 1e-5, 1e-5);
    if (cmp.close) return true;
    testing::report_failure(file, line, "quantized_linear_wrong", params, got.call() + ", forward: " + cmp.describe());
    return false;
  }
  return got.ok();
}

// A layer of the run: weight (in, out) in [-1, 1) tie-free per output, bias in ±[0.5, 1.5),
// x (batch, in) in [-1, 1) tie-free for the scale max|x|/127, which covers all of x.
LayerCase drawn_case(std::int64_t batch, std::int64_t in, std::int64_t out, std::uint64_t stream) {
  // Tie-free rows of the (out, in) transpose, stored (in, out).
  const Tensor rows = tie_free_weight(out, in, stream);
  const TensorData weight = data_of(stored_transposed(data_of(rows).values, out, in));
  std::vector<float> bias = data_of(testing::random_tensor({out}, stream + 1, 0.5f, 1.5f)).values;
  const std::vector<std::int64_t> signs = testing::random_ints(at(out), 2, stream + 2);
  for (std::int64_t o = 0; o < out; ++o)
    if (signs[at(o)] == 1) bias[at(o)] = -bias[at(o)];
  std::vector<float> x = data_of(testing::random_tensor({batch, in}, stream + 3)).values;
  const float scale = trusted_scale(largest_magnitude(x, 0, batch * in, 1));
  away_from_ties(x, 0, batch * in, 1, scale);
  return {fmt::format("QuantizedLinear(Linear({}, {}) with the run's weight and bias, input scale {}).forward(x ({}, {}))", in,
                      out, scale, batch, in),
          data_of({batch, in}, x), weight, data_of({out}, bias), scale};
}

}  // namespace

TEST(Quantization, QuantizedLinear) {
  // By hand: Linear(2, 3) with weight (in, out) [[31.75, 0, -1.984375], [1, 0, 0.75]], bias
  // [12, -8, 2], input scale 0.5 and x = [[10, -3.25]].
  //   weight (out, in): [31.75, 1] scale 0.25 -> [127, 4]; [0, 0] scale 1 -> [0, 0];
  //                     [-1.984375, 0.75] scale 1/64 -> [-127, 48]
  //   x: [10, -3.25] / 0.5 = [20, -6.5] -> [20, -7]
  //   y = 0.5·[0.25·2512, 1·0, (1/64)·(-2876)] + bias = [326, -8, -20.46875]
  //   (the float layer gives [326.25, -8, -20.28125], within the bounds 9.906, 6.875 and 0.791;
  //   each bias is larger than its bound, so that a forgotten bias shows)
  if (!check_layer(__FILE__, __LINE__,
                   {"QuantizedLinear(the hand-worked Linear(2, 3), 0.5).forward([[10, -3.25]])", data_of({1, 2}, {10, -3.25f}),
                    data_of({2, 3}, {31.75f, 0, -1.984375f, 1, 0, 0.75f}), data_of({3}, {12, -8, 2}), 0.5f}))
    return;

  testing::Generator draw(1507);
  const std::tuple<std::int64_t, std::int64_t, std::int64_t> shapes[] = {
      {1, 1, 3}, {3, 33, 7}, {5, 31, 33}, {1 + draw.below(8), 1 + draw.below(70), 1 + draw.below(40)}};
  std::uint64_t stream = 1590;
  for (const auto& [batch, in, out] : shapes) {
    if (!check_layer(__FILE__, __LINE__, drawn_case(batch, in, out, stream += 4))) return;
  }

  // A wrong x, for the hand-worked Linear(2, 3), whose weight is (3, 2) as the product sees it:
  // x (2, 4) is 8 values, a whole number of rows of 2, and a 1-D x (2) is one row's worth. Each
  // must be refused with a ShapeError naming its shape, never re-cut into rows of in_features
  // values (which would return (4, 3) and (1, 3)).
  const auto hand_layer = [] {
    WichmannHill generator(15);
    nn::Linear layer(2, 3, generator);
    layer.weight = Tensor({2, 3}, {31.75f, 0, -1.984375f, 1, 0, 0.75f});
    layer.bias = Tensor({3}, {12, -8, 2});
    return quant::QuantizedLinear(layer, 0.5f);
  };
  const auto wrong_width = observe("QuantizedLinear(the hand-worked Linear(2, 3), 0.5).forward(x (2, 4))", [&] {
    return hand_layer().forward(Tensor({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  });
  KILN_JUDGE {
    // The product's ShapeError names both shapes.
    testing::expect_throws<ShapeError>(__FILE__, __LINE__, wrong_width, "wrong_x_accepted", {"(2, 4)", "(3, 2)"},
                                       {{"in", "2"}, {"out", "3"}});
    if (wrong_width.ok()) return;
  }
  const auto one_dimensional = observe("QuantizedLinear(the hand-worked Linear(2, 3), 0.5).forward(x (2), 1-D)", [&] {
    return hand_layer().forward(Tensor({2}, {10, -3.25f}));
  });
  KILN_JUDGE {
    testing::expect_throws<ShapeError>(__FILE__, __LINE__, one_dimensional, "wrong_x_accepted", {"(2)"},
                                       {{"in", "2"}, {"out", "3"}});
  }
}

}  // namespace kiln
