// Module 09 checks: one TEST per check in module.yaml.
//
// Forward values are compared with numbers worked out by hand (shown beside each case).
// Gradients are compared with central finite differences of L = Σ w ⊙ conv(x, weight, bias) for
// fixed weights w, where conv is an independent loop written in this file and summed in double:
// the convolution is linear in each of its arguments, so the central difference is exact up to
// float32 rounding. (So a gradient check judges your backward against the true convolution, even
// if your forward has a bug of its own.)
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/conv.h"
#include "kiln/testing.h"

namespace {

using kiln::testing::random_tensor;

using kiln::Conv2d;
using kiln::Conv2dFunction;
using kiln::MaxPool2d;
using kiln::Shape;
using kiln::Tensor;
using kiln::WichmannHill;

using Forward = std::function<Tensor(const std::vector<Tensor>&)>;

// Runs backward on L = Σ w ⊙ f(inputs) and compares the gradient of input i with central
// differences of the same L computed by `reference`, reporting failure_ids[i] (an empty id skips
// that input). An error thrown on the way (other than an unwritten stub's) is reported under the
// first id.
void check_gradients(const char* file, int line, const Forward& f, const Forward& reference,
                     const std::vector<Tensor>& values, const std::vector<std::string>& failure_ids,
                     const std::string& what) {
  constexpr float kEps = 1e-2f;
  std::vector<Tensor> inputs;
  for (const Tensor& v : values) inputs.push_back(v.clone().set_requires_grad(true));
  std::string first_id;
  for (const auto& id : failure_ids) {
    if (first_id.empty()) first_id = id;
  }

  Tensor weights;
  try {
    Tensor y = f(inputs);
    weights = random_tensor(y.shape(), 4242, 0.5f, 1.5f);
    y.backward(weights);
  } catch (const kiln::NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    kiln::testing::report_failure(file, line, first_id, {}, what + ": backward threw " + error.what());
    return;
  }

  for (std::size_t i = 0; i < values.size(); ++i) {
    if (failure_ids[i].empty()) continue;
    const Tensor numeric = kiln::testing::numeric_gradient(reference, values, i, weights, kEps);
    const Tensor actual = inputs[i].grad();
    const kiln::testing::Comparison c = kiln::testing::compare(actual, numeric, 1e-3, 1e-3);
    if (!c.close) {
      kiln::testing::report_failure(
          file, line, failure_ids[i], {},
          what + ": " +
              (c.shapes_match ? c.describe()
                              : "got shape " + kiln::to_string(actual.shape()) + ", expected " +
                                    kiln::to_string(values[i].shape())));
    }
  }
}

#define CHECK_GRADIENTS(f, reference, values, ids, what) \
  check_gradients(__FILE__, __LINE__, f, reference, values, ids, what)

// conv(x, weight, bias) through the autograd Function.
Tensor conv(const std::vector<Tensor>& in, int stride, int padding) {
  return Conv2dFunction::apply(in[0], in[1], in.size() == 3 ? std::optional<Tensor>(in[2]) : std::nullopt,
                               stride, padding);
}

// The same convolution written independently here, summed in double, for the finite differences:
// in = {x (N, C, H, W), weight (out_ch, C, k, k), bias (out_ch) if present}.
Tensor reference_conv(const std::vector<Tensor>& in, int stride, int padding) {
  const Shape& xs = in[0].shape();
  const Shape& ws = in[1].shape();
  const std::vector<float> x = in[0].to_vector();
  const std::vector<float> w = in[1].to_vector();
  const std::vector<float> b = in.size() == 3 ? in[2].to_vector() : std::vector<float>(ws[0], 0.0f);
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], out_ch = ws[0], k = ws[2];
  const std::int64_t out_h = (H + 2 * padding - k) / stride + 1;
  const std::int64_t out_w = (W + 2 * padding - k) / stride + 1;
  std::vector<float> out;
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t oc = 0; oc < out_ch; ++oc) {
      for (std::int64_t oh = 0; oh < out_h; ++oh) {
        for (std::int64_t ow = 0; ow < out_w; ++ow) {
          double total = b[static_cast<std::size_t>(oc)];
          for (std::int64_t c = 0; c < C; ++c) {
            for (std::int64_t kh = 0; kh < k; ++kh) {
              for (std::int64_t kw = 0; kw < k; ++kw) {
                const std::int64_t ih = oh * stride - padding + kh;
                const std::int64_t iw = ow * stride - padding + kw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                total += static_cast<double>(x[static_cast<std::size_t>(((n * C + c) * H + ih) * W + iw)]) *
                         w[static_cast<std::size_t>(((oc * C + c) * k + kh) * k + kw)];
              }
            }
          }
          out.push_back(static_cast<float>(total));
        }
      }
    }
  }
  return Tensor({N, out_ch, out_h, out_w}, out);
}

}  // namespace

TEST(Convolutions, OutputShape) {
  const auto expect_size = [](std::int64_t got, std::int64_t expected, const std::string& what) {
    KILN_EXPECT(got == expected, "conv_output_shape_wrong",
                {{"got", std::to_string(got)}, {"expected", std::to_string(expected)}}, what);
  };
  expect_size(kiln::conv_output_size(7, 3, 2, 1), 4, "conv_output_size(7, kernel 3, stride 2, padding 1)");
  expect_size(kiln::conv_output_size(32, 5, 1, 2), 32, "conv_output_size(32, kernel 5, stride 1, padding 2)");
  expect_size(kiln::conv_output_size(28, 3, 2, 0), 13, "conv_output_size(28, kernel 3, stride 2, padding 0)");

  const Tensor x = random_tensor({2, 3, 7, 5}, 1);
  struct Case {
    int stride, padding;
    Shape expected;
  };
  for (const Case& c : {Case{1, 0, {2, 4, 5, 3}}, Case{1, 1, {2, 4, 7, 5}}, Case{2, 1, {2, 4, 4, 3}},
                        Case{2, 0, {2, 4, 3, 2}}, Case{3, 2, {2, 4, 3, 3}}}) {
    Conv2d layer(3, 4, 3, c.stride, c.padding, true, 5);
    const Tensor out = layer.forward(x);
    KILN_EXPECT(out.shape() == c.expected, "conv_output_shape_wrong",
                {{"got", kiln::to_string(out.shape())}, {"expected", kiln::to_string(c.expected)}},
                "Conv2d(3, 4, kernel 3, stride " + std::to_string(c.stride) + ", padding " +
                    std::to_string(c.padding) + ") on x (2, 3, 7, 5)");
  }
}

TEST(Convolutions, ForwardValues) {
  // x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], kernel [[1, 2], [3, 4]], bias 0.5, stride 1:
  //   out[0, 0] = 1·1 + 2·2 + 4·3 + 5·4 + 0.5 = 37.5, and so on; not flipped.
  const Tensor x({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  KILN_EXPECT_CLOSE(conv({x, Tensor({1, 1, 2, 2}, {1, 2, 3, 4}), Tensor({1}, {0.5f})}, 1, 0),
                    Tensor({1, 1, 2, 2}, {37.5f, 47.5f, 67.5f, 77.5f}), 1e-4, "conv_values_wrong");
  // The same x, a 3×3 kernel of ones, stride 2, padding 1, no bias: each of the four windows
  // covers one 2×2 corner of x: 1+2+4+5 = 12, 2+3+5+6 = 16, 4+5+7+8 = 24, 5+6+8+9 = 28.
  KILN_EXPECT_CLOSE(conv({x, Tensor::ones({1, 1, 3, 3})}, 2, 1), Tensor({1, 1, 2, 2}, {12, 16, 24, 28}),
                    1e-4, "conv_values_wrong");
  // Two images, two channels, two 1×1 filters: filter 0 is c0 + 2·c1, filter 1 is -c1 + 1.
  //   image 0: c0 = [[1, 2], [3, 4]], c1 = [[-1, 0], [2, 1]]; image 1 is image 0 times 2.
  const Tensor x2({2, 2, 2, 2}, {1, 2, 3, 4, -1, 0, 2, 1, 2, 4, 6, 8, -2, 0, 4, 2});
  const Tensor w2({2, 2, 1, 1}, {1, 2, 0, -1});
  const Tensor b2({2}, {0, 1});
  KILN_EXPECT_CLOSE(conv({x2, w2, b2}, 1, 0),
                    Tensor({2, 2, 2, 2}, {-1, 2, 7, 6, 2, 1, -1, 0, -2, 4, 14, 12, 3, 1, -3, -1}), 1e-4,
                    "conv_values_wrong");
}

TEST(Convolutions, NoBias) {
  Conv2d layer(2, 3, 3, 1, 1, false, 3);
  KILN_EXPECT(layer.bias.numel() == 0 && !layer.has_bias(), "no_bias_wrong", {},
              "Conv2d(..., with_bias = false) has a bias of shape " + kiln::to_string(layer.bias.shape()));
  // The layer's output is the convolution with its weight and nothing added.
  Tensor x = random_tensor({1, 2, 4, 4}, 7).set_requires_grad(true);
  Tensor y;
  try {
    y = layer.forward(x);
    KILN_EXPECT_CLOSE(y, conv({x, layer.weight}, 1, 1), 1e-5, "no_bias_wrong");
    y.backward(Tensor::ones(y.shape()));
  } catch (const kiln::NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    KILN_FAIL("no_bias_wrong", {}, std::string("forward or backward threw ") + error.what());
    return;
  }
  // Gradients reach x and the weight, with their shapes.
  KILN_EXPECT(kiln::autograd::has_grad(x) && x.grad().shape() == x.shape(), "no_bias_wrong", {},
              "x has no gradient of shape (1, 2, 4, 4)");
  KILN_EXPECT(kiln::autograd::has_grad(layer.weight) && layer.weight.grad().shape() == layer.weight.shape(),
              "no_bias_wrong", {}, "the weight has no gradient of shape (3, 2, 3, 3)");
}

TEST(Convolutions, Initialisation) {
  // The same draws, made here: bound · (2u - 1) with bound = 1/√(C·k·k), weight first, then bias.
  const auto expected_draws = [](WichmannHill& generator, int count, double bound) {
    std::vector<float> values(static_cast<std::size_t>(count));
    for (float& v : values) v = static_cast<float>(bound * (2.0 * generator.next() - 1.0));
    return values;
  };
  {
    Conv2d layer(3, 2, 2, 1, 0, true, 7);
    WichmannHill generator(7);
    const double bound = 1.0 / std::sqrt(3.0 * 2 * 2);
    const Tensor weight({2, 3, 2, 2}, expected_draws(generator, 24, bound));
    const Tensor bias({2}, expected_draws(generator, 2, bound));
    KILN_EXPECT_CLOSE(layer.weight, weight, 1e-6, "init_values_wrong");
    KILN_EXPECT_CLOSE(layer.bias, bias, 1e-6, "init_values_wrong");
    KILN_EXPECT(layer.weight.requires_grad() && layer.bias.requires_grad(), "params_not_trainable");
    KILN_EXPECT(layer.in_channels == 3 && layer.out_channels == 2 && layer.kernel_size == 2 &&
                    layer.stride == 1 && layer.padding == 0,
                "init_values_wrong", {}, "the layer's settings were not stored");
  }
  {
    // Two layers sharing one generator: the second continues where the first stopped.
    WichmannHill shared(11);
    Conv2d first(1, 2, 3, 1, 1, true, shared);
    Conv2d second(2, 1, 1, 1, 0, false, shared);
    WichmannHill generator(11);
    const std::vector<float> first_weight = expected_draws(generator, 18, 1.0 / 3.0);
    expected_draws(generator, 2, 1.0 / 3.0);  // first's bias
    const Tensor second_weight({1, 2, 1, 1}, expected_draws(generator, 2, 1.0 / std::sqrt(2.0)));
    KILN_EXPECT_CLOSE(first.weight, Tensor({2, 1, 3, 3}, first_weight), 1e-6, "init_values_wrong");
    KILN_EXPECT_CLOSE(second.weight, second_weight, 1e-6, "init_values_wrong");
    KILN_EXPECT(second.weight.requires_grad(), "params_not_trainable");
  }
}

TEST(Convolutions, InputGradient) {
  const std::vector<std::string> ids{"input_grad_wrong", "", ""};
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return conv(in, 1, 1); },
                  [](const std::vector<Tensor>& in) { return reference_conv(in, 1, 1); },
                  (std::vector<Tensor>{random_tensor({2, 2, 4, 4}, 21), random_tensor({3, 2, 3, 3}, 22),
                                       random_tensor({3}, 23)}),
                  ids, "x (2, 2, 4, 4), weight (3, 2, 3, 3), stride 1, padding 1");
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return conv(in, 2, 0); },
                  [](const std::vector<Tensor>& in) { return reference_conv(in, 2, 0); },
                  (std::vector<Tensor>{random_tensor({1, 2, 5, 5}, 24), random_tensor({2, 2, 3, 3}, 25),
                                       random_tensor({2}, 26)}),
                  ids, "x (1, 2, 5, 5), weight (2, 2, 3, 3), stride 2, padding 0");
}

TEST(Convolutions, WeightBiasGradient) {
  const std::vector<std::string> ids{"", "weight_grad_wrong", "bias_grad_wrong"};
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return conv(in, 1, 1); },
                  [](const std::vector<Tensor>& in) { return reference_conv(in, 1, 1); },
                  (std::vector<Tensor>{random_tensor({2, 2, 4, 4}, 31), random_tensor({3, 2, 3, 3}, 32),
                                       random_tensor({3}, 33)}),
                  ids, "x (2, 2, 4, 4), weight (3, 2, 3, 3), stride 1, padding 1");
  CHECK_GRADIENTS([](const std::vector<Tensor>& in) { return conv(in, 2, 0); },
                  [](const std::vector<Tensor>& in) { return reference_conv(in, 2, 0); },
                  (std::vector<Tensor>{random_tensor({1, 2, 5, 5}, 34), random_tensor({2, 2, 3, 3}, 35),
                                       random_tensor({2}, 36)}),
                  ids, "x (1, 2, 5, 5), weight (2, 2, 3, 3), stride 2, padding 0");
}

TEST(Convolutions, ChannelMismatch) {
  Conv2d layer(3, 4, 3, 1, 0, true, 1);
  const Tensor x = Tensor::zeros({1, 2, 5, 5});
  KILN_EXPECT_THROWS(layer.forward(x), kiln::ShapeError, "channel_mismatch_unreported",
                     {"(1, 2, 5, 5)", "(4, 3, 3, 3)"});
}

TEST(Convolutions, MaxPoolForward) {
  // One 5×5 channel of negative numbers, kernel 2, stride 3: windows at rows/columns 0-1 and 3-4.
  //   -1  -2  -3  -4  -5
  //   -6  -7  -8  -9 -10
  //  -11 -12 -13 -14 -15
  //  -16 -17 -18 -19 -20
  //  -21 -22 -23 -24 -25
  std::vector<float> negatives(25);
  for (int i = 0; i < 25; ++i) negatives[static_cast<std::size_t>(i)] = -static_cast<float>(i + 1);
  if (!KILN_EXPECT_CLOSE(MaxPool2d(2, 3).forward(Tensor({1, 1, 5, 5}, negatives)),
                         Tensor({1, 1, 2, 2}, {-1, -4, -16, -19}), 1e-6, "maxpool_values_wrong")) {
    return;
  }
  // Two channels, the default stride (= kernel 2), side-by-side windows.
  const Tensor x({1, 2, 4, 4}, {1, 5, 2, 0,   3, 4, 8, 1,   0, 2, 9, 9,   7, 1, 3, 4,
                                -1, -2, 0, 6,  -3, -4, 5, 2,  1, 1, 1, 1,  1, 1, 1, 2});
  KILN_EXPECT_CLOSE(MaxPool2d(2).forward(x), Tensor({1, 2, 2, 2}, {5, 8, 7, 9, -1, 6, 1, 2}), 1e-6,
                    "maxpool_values_wrong");
  // Overlapping windows: kernel 3, stride 1 on the first channel (4×4 -> 2×2).
  KILN_EXPECT_CLOSE(MaxPool2d(3, 1).forward(Tensor({1, 1, 4, 4}, {1, 5, 2, 0, 3, 4, 8, 1, 0, 2, 9, 9, 7, 1, 3, 4})),
                    Tensor({1, 1, 2, 2}, {9, 9, 9, 9}), 1e-6, "maxpool_values_wrong");
}

TEST(Convolutions, MaxPoolBackward) {
  // Side-by-side windows over two channels: each output's gradient lands on its window's maximum
  // (the first one on a tie), every other element gets 0.
  {
    Tensor x = Tensor({1, 2, 4, 4}, {1, 5, 2, 0,   3, 4, 8, 1,   0, 2, 9, 9,   7, 1, 3, 4,
                                     -1, -2, 0, 6,  -3, -4, 5, 2,  1, 1, 1, 1,  1, 1, 1, 2})
                   .set_requires_grad(true);
    Tensor y = MaxPool2d(2).forward(x);
    y.backward(Tensor({1, 2, 2, 2}, {10, 20, 30, 40, 50, 60, 70, 80}));
    const Tensor expected({1, 2, 4, 4}, {0, 10, 0, 0,   0, 0, 20, 0,   0, 0, 40, 0,   30, 0, 0, 0,
                                         50, 0, 0, 60,  0, 0, 0, 0,    70, 0, 0, 0,   0, 0, 0, 80});
    if (!KILN_EXPECT_CLOSE(x.grad(), expected, 1e-6, "maxpool_grad_misrouted")) return;
  }
  // Overlapping windows (kernel 2, stride 1): the centre 9 is the maximum of all four windows,
  // so it receives the sum of their gradients, 1 + 2 + 3 + 4.
  {
    Tensor x = Tensor({1, 1, 3, 3}, {1, 2, 3, 4, 9, 5, 6, 7, 8}).set_requires_grad(true);
    Tensor y = MaxPool2d(2, 1).forward(x);
    y.backward(Tensor({1, 1, 2, 2}, {1, 2, 3, 4}));
    KILN_EXPECT_CLOSE(x.grad(), Tensor({1, 1, 3, 3}, {0, 0, 0, 0, 10, 0, 0, 0, 0}), 1e-6,
                      "maxpool_overlap_lost");
  }
}
