// Module 09 checks: one TEST per check in module.yaml.
//
// Every value taken from the student's code passes through observe() (kiln/observe.h): the checks
// judge plain data only.
//
// Forward values are compared with numbers worked out by hand (shown beside each case) and, on
// random non-square images of the run, with a direct convolution written in this file and summed
// in double. The gradient checks build the Conv2dFunction node themselves and call its backward(w)
// directly, so that they depend neither on the forward loops nor on module 06's graph walk. They
// compare with central finite differences of L = Σ w ⊙ conv(x, weight, bias) for fixed random
// weights w, with conv the same loop written here: the convolution is linear in each of its
// arguments, so the central difference is exact up to float32 rounding.
//
// Images are never square and outputs never square, except in the hand-worked cases, so that a
// height and width mixed up fails the check of the loop that mixed them.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/autograd.h"
#include "kiln/conv.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::Observed;
using testing::random_tensor;
using testing::report_failure;
using testing::TensorData;

// ---------------------------------------------------------------------------------------------
// Trusted references

// The convolution written out here, summed in double: in = {x (N, C, H, W), weight (out_ch, C, k,
// k), bias (out_ch) if present}.
TensorData reference_conv(const std::vector<TensorData>& in, int stride, int padding) {
  const Shape& xs = in[0].shape;
  const Shape& ws = in[1].shape;
  const std::vector<float>& x = in[0].values;
  const std::vector<float>& w = in[1].values;
  const std::int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], out_ch = ws[0], k = ws[2];
  const std::int64_t out_h = (H + 2 * padding - k) / stride + 1;
  const std::int64_t out_w = (W + 2 * padding - k) / stride + 1;
  std::vector<float> out;
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t oc = 0; oc < out_ch; ++oc) {
      for (std::int64_t oh = 0; oh < out_h; ++oh) {
        for (std::int64_t ow = 0; ow < out_w; ++ow) {
          double total = in.size() == 3 ? in[2].values[static_cast<std::size_t>(oc)] : 0.0;
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
  return data_of({N, out_ch, out_h, out_w}, out);
}

// Max pooling written out here: the maxima, and for each output the row-major index into x of
// the first largest element of its window.
struct Pooled {
  TensorData out;
  std::vector<std::int64_t> argmax;
};
// Which of a window's equal maxima it takes: the first in row-major order (the rule), or the last
// (a > written as >=, to name that mistake).
enum class Tie { first, last };

Pooled reference_maxpool(const TensorData& x, std::int64_t k, std::int64_t stride, Tie tie = Tie::first) {
  const std::int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const std::int64_t out_h = (H - k) / stride + 1, out_w = (W - k) / stride + 1;
  Pooled pooled;
  std::vector<float> out;
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t oh = 0; oh < out_h; ++oh)
        for (std::int64_t ow = 0; ow < out_w; ++ow) {
          std::int64_t best = -1;
          for (std::int64_t kh = 0; kh < k; ++kh)
            for (std::int64_t kw = 0; kw < k; ++kw) {
              const std::int64_t at = ((n * C + c) * H + oh * stride + kh) * W + ow * stride + kw;
              const auto value = [&](std::int64_t i) { return x.values[static_cast<std::size_t>(i)]; };
              if (best < 0 || value(at) > value(best) || (tie == Tie::last && value(at) == value(best))) best = at;
            }
          out.push_back(x.values[static_cast<std::size_t>(best)]);
          pooled.argmax.push_back(best);
        }
  pooled.out = data_of({N, C, out_h, out_w}, out);
  return pooled;
}

// Max pooling's gradient for x: each output's gradient added at the element its window took.
TensorData reference_maxpool_grad(const TensorData& x, std::int64_t k, std::int64_t stride, const TensorData& g,
                                  Tie tie = Tie::first) {
  const Pooled pooled = reference_maxpool(x, k, stride, tie);
  std::vector<float> grad(x.values.size(), 0.0f);
  for (std::size_t i = 0; i < pooled.argmax.size(); ++i) grad[static_cast<std::size_t>(pooled.argmax[i])] += g.values[i];
  return data_of(x.shape, grad);
}

// Image n of a batch of images of shape `image` (1, C, H, W), as a tensor's values of its own.
TensorData image_of(const TensorData& batch, std::size_t n, const Shape& image) {
  const std::size_t size = static_cast<std::size_t>(image[1] * image[2] * image[3]);
  const auto first = batch.values.begin() + static_cast<std::ptrdiff_t>(n * size);
  return data_of(image, std::vector<float>(first, first + static_cast<std::ptrdiff_t>(size)));
}

std::string shape_text(const TensorData& t) { return to_string(t.shape); }

// "x (2, 3, 5, 7), weight (4, 3, 3, 3), bias (4), stride 2, padding 1"
std::string describe(const std::vector<TensorData>& in, int stride, int padding) {
  std::string text = "x " + shape_text(in[0]) + ", weight " + shape_text(in[1]);
  text += in.size() == 3 ? ", bias " + shape_text(in[2]) : ", no bias";
  return text + fmt::format(", stride {}, padding {}", stride, padding);
}

// Random inputs of the run for a convolution: x (N, C, H, W), weight (out_ch, C, k, k) and, when
// with_bias, bias (out_ch).
std::vector<TensorData> random_conv_inputs(const Shape& x_shape, std::int64_t out_ch, std::int64_t k, bool with_bias,
                                           std::uint64_t stream) {
  std::vector<TensorData> in = {data_of(random_tensor(x_shape, stream)),
                                data_of(random_tensor({out_ch, x_shape[1], k, k}, stream + 1))};
  if (with_bias) in.push_back(data_of(random_tensor({out_ch}, stream + 2)));
  return in;
}

// The observed Conv2dFunction forward: Conv2dFunction::apply (given) on fresh tensors of `in`.
Observed<TensorData> observe_conv(const std::vector<TensorData>& in, int stride, int padding) {
  return observe("Conv2dFunction::apply(" + describe(in, stride, padding) + ")", [&] {
    const std::optional<Tensor> bias = in.size() == 3 ? std::optional<Tensor>(in[2].tensor()) : std::nullopt;
    return Conv2dFunction::apply(in[0].tensor(), in[1].tensor(), bias, stride, padding);
  });
}

// ---------------------------------------------------------------------------------------------
// Gradients

// The shape of a convolution's output on `in` (an input: the shape of the weights w given to
// backward), from the sizes: (N, out_ch, (H + 2p - k)/s + 1, (W + 2p - k)/s + 1).
Shape conv_out_shape(const std::vector<TensorData>& in, int stride, int padding) {
  const Shape& xs = in[0].shape;
  const Shape& ws = in[1].shape;
  return {xs[0], ws[0], (xs[2] + 2 * padding - ws[2]) / stride + 1, (xs[3] + 2 * padding - ws[2]) / stride + 1};
}

// The values of a 4-D x as a view that is not contiguous: the (N, C, H, W) transpose of a
// contiguous (N, C, W, H) tensor, strides (C·W·H, W·H, 1, H).
Tensor transposed_view(const TensorData& x) {
  const std::int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  std::vector<float> stored(x.values.size());  // (N, C, W, H), row-major
  for (std::int64_t i = 0; i < n * c; ++i)
    for (std::int64_t ih = 0; ih < h; ++ih)
      for (std::int64_t iw = 0; iw < w; ++iw)
        stored[static_cast<std::size_t>((i * w + iw) * h + ih)] = x.values[static_cast<std::size_t>((i * h + ih) * w + iw)];
  return make_view(Tensor({n, c, w, h}, stored), {n, c, h, w}, {c * w * h, w * h, 1, h}, 0);
}

// Builds a Conv2dFunction node on `in` with the given stride and padding, calls its backward(w)
// with random weights w of the output's shape, and compares the gradient of every input i whose
// failure_ids[i] is not empty with central differences of reference_conv. An error, or a wrong
// number of gradients, is reported under the first non-empty id. Returns whether all matched (in
// the observed program: whether backward returned).
// With x_as_view, the node's x is transposed_view of the same values; with g_as_view, w is.
bool check_conv_gradients(const char* file, int line, const std::vector<TensorData>& in, int stride, int padding,
                          std::uint64_t weight_stream, const std::vector<std::string>& failure_ids,
                          bool x_as_view = false, bool g_as_view = false) {
  const TensorData weights = data_of(random_tensor(conv_out_shape(in, stride, padding), weight_stream, 0.5f, 1.5f));
  const std::string x_text =
      std::string(x_as_view ? ", x a transposed view," : "") + (g_as_view ? ", w a transposed view," : "");
  const auto grads = observe("Conv2dFunction::backward(w) with " + describe(in, stride, padding) + x_text, [&] {
    auto node = std::make_shared<Conv2dFunction>();
    node->stride = stride;
    node->padding = padding;
    for (std::size_t i = 0; i < in.size(); ++i)
      node->inputs.push_back(i == 0 && x_as_view ? transposed_view(in[0]) : in[i].tensor());
    return node->backward(g_as_view ? transposed_view(weights) : weights.tensor());
  });
  KILN_JUDGE {
    std::string first_id;
    for (const auto& id : failure_ids)
      if (first_id.empty()) first_id = id;
    const auto forward = [stride, padding](const std::vector<TensorData>& values) {
      return reference_conv(values, stride, padding);
    };
    if (!testing::expect_ok(file, line, grads, first_id)) return false;
    if (grads->size() != in.size()) {
      report_failure(file, line, first_id, {},
                     fmt::format("{} returned {} for {}", grads.call(), testing::counted(grads->size(), "gradient"),
                                 testing::counted(in.size(), "input")));
      return false;
    }
    bool all_close = true;
    const char* names[] = {"x", "weight", "bias"};
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (failure_ids[i].empty()) continue;
      const TensorData numeric = testing::numeric_gradient(forward, in, i, weights);
      const Observed<TensorData> grad(grads.call() + ", the gradient of " + names[i], (*grads)[i]);
      all_close = testing::expect_close(file, line, grad, numeric, 1e-3, failure_ids[i], 1e-3) && all_close;
    }
    return all_close;
  }
  return grads.ok();
}
#define CHECK_CONV_GRADIENTS(in, stride, padding, stream, ids, ...) \
  check_conv_gradients(__FILE__, __LINE__, in, stride, padding, stream, ids __VA_OPT__(, ) __VA_ARGS__)

// The node's backward(w) on fresh tensors, then with x, weight, bias and w each testing::at_offset
// of the same values (contiguous views at offset 5 of a storage whose other floats are random).
// A gradient that differs between the two, or a call that threw on one only, is
// conv_grad_view_offset_ignored; the same wrong gradient of x on both is input_grad_wrong, and the
// same wrong weight or bias gradient on both is left to weight_bias_grad, which owns them.
void check_conv_gradients_at_offset(const std::vector<TensorData>& in, int stride, int padding,
                                    std::uint64_t weight_stream) {
  const TensorData weights = data_of(random_tensor(conv_out_shape(in, stride, padding), weight_stream, 0.5f, 1.5f));
  const std::string call = "Conv2dFunction::backward(w) with " + describe(in, stride, padding);
  const auto run = [&](bool at_offset) {
    auto node = std::make_shared<Conv2dFunction>();
    node->stride = stride;
    node->padding = padding;
    for (std::size_t i = 0; i < in.size(); ++i)
      node->inputs.push_back(at_offset ? testing::at_offset(in[i], weight_stream + 1 + i) : in[i].tensor());
    return node->backward(at_offset ? testing::at_offset(weights, weight_stream + 4) : weights.tensor());
  };
  const auto fresh = observe(call + ", each a fresh tensor", [&] { return run(false); });
  const auto viewed = observe(call + ", x, weight, bias and w each a contiguous view at offset 5", [&] { return run(true); });
  KILN_JUDGE {
    const char* names[] = {"x", "weight", "bias"};
    const std::vector<std::string> general_ids = {"input_grad_wrong", "", ""};
    const auto gradient = [&](const auto& grads, std::size_t i) {
      if (!grads.ok()) return Observed<TensorData>(grads.call() + ", the gradient of " + names[i], grads.error());
      if (grads->size() != in.size())
        return Observed<TensorData>(grads.call() + ", the gradient of " + names[i],
                                    testing::ErrorData{{"std::length_error"}, fmt::format("backward returned {} for {}",
                                                                               testing::counted(grads->size(), "gradient"),
                                                                               testing::counted(in.size(), "input"))});
      return Observed<TensorData>(grads.call() + ", the gradient of " + names[i], (*grads)[i]);
    };
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto forward = [stride, padding](const std::vector<TensorData>& values) {
        return reference_conv(values, stride, padding);
      };
      const TensorData numeric = testing::numeric_gradient(forward, in, i, weights);
      if (!KILN_EXPECT_SAME_AT_OFFSET(gradient(fresh, i), gradient(viewed, i), numeric, 1e-3, 1e-3, general_ids[i],
                                      "conv_grad_view_offset_ignored"))
        return;
    }
  }
}

struct GradientCase {
  Shape x;
  std::int64_t out_ch, k;
  int stride, padding;
};
// Stride 1 with padding 1, stride 2 without padding, and stride 2 with padding 1; no image and no
// output is square: (4, 5) -> (4, 5), (5, 7) -> (2, 3), (6, 4) -> (4, 3).
const std::vector<GradientCase>& gradient_cases() {
  static const std::vector<GradientCase> cases = {
      {{2, 2, 4, 5}, 3, 3, 1, 1},
      {{1, 2, 5, 7}, 2, 3, 2, 0},
      {{2, 3, 6, 4}, 2, 2, 2, 1},
  };
  return cases;
}

// ---------------------------------------------------------------------------------------------
// The checks

TEST(Convolutions, OutputShape) {
  struct Size {
    std::int64_t size;
    int kernel, stride, padding;
  };
  std::vector<Size> sizes = {{7, 3, 2, 1}, {32, 5, 1, 2}, {28, 3, 2, 0}, {5, 3, 3, 2}, {6, 2, 4, 0}};
  // Sizes of the run: 5 to 40 pixels, kernel 1 to 5, stride 1 to 3, padding 0 to 2.
  testing::Generator generator(1);
  for (int i = 0; i < 4; ++i) {
    Size s{5 + generator.below(36), static_cast<int>(1 + generator.below(5)), static_cast<int>(1 + generator.below(3)),
           static_cast<int>(generator.below(3))};
    sizes.push_back(s);
  }
  for (const Size& s : sizes) {
    const auto got = observe(fmt::format("conv_output_size({}, kernel {}, stride {}, padding {})", s.size, s.kernel,
                                         s.stride, s.padding),
                             [&] { return conv_output_size(s.size, s.kernel, s.stride, s.padding); });
    KILN_JUDGE {
      const std::int64_t expected = (s.size + 2 * s.padding - s.kernel) / s.stride + 1;
      if (!KILN_EXPECT_OK(got, "conv_output_shape_wrong", {{"got", "an error"}, {"expected", std::to_string(expected)}}))
        return;
      KILN_EXPECT(*got == expected, "conv_output_shape_wrong",
                  {{"got", std::to_string(*got)}, {"expected", std::to_string(expected)}}, got.call());
      if (*got != expected) return;  // the first wrong count is the report
    }
  }
  // size is an std::int64_t, and so is the padded size: 2^32 + 7, 3e9, and 2^31 - 1 with padding 1
  // (padded, 2^31 + 1) are past an int, where a padded size kept in an int wraps (to 7, to a
  // negative number). Only the count is asked for: no tensor is made.
  const std::vector<Size> large = {{4294967303, 3, 1, 0}, {3000000000, 3, 1, 0}, {2147483647, 3, 2, 1}};
  for (const Size& s : large) {
    const auto got = observe(fmt::format("conv_output_size({}, kernel {}, stride {}, padding {})", s.size, s.kernel,
                                         s.stride, s.padding),
                             [&] { return conv_output_size(s.size, s.kernel, s.stride, s.padding); });
    KILN_JUDGE {
      const std::int64_t expected = (s.size + 2 * static_cast<std::int64_t>(s.padding) - s.kernel) / s.stride + 1;
      const testing::Params params = {{"size", std::to_string(s.size)}, {"expected", std::to_string(expected)}};
      if (!KILN_EXPECT_OK(got, "conv_output_size_overflow", params)) return;
      KILN_EXPECT(*got == expected, "conv_output_size_overflow", params,
                  got.call() + " gave " + std::to_string(*got) + ", expected " + std::to_string(expected));
      if (*got != expected) return;
    }
  }
  // padding 2^30 on a size of 3 (kernel 3, stride 1): 2·padding is 2^31, past an int, so it is
  // doubled in std::int64_t too; doubled in the int padding is, it wraps to -2^31 and the count
  // to -2147483647 instead of 2147483649.
  const auto doubled = observe("conv_output_size(3, kernel 3, stride 1, padding 1073741824)",
                               [] { return conv_output_size(3, 3, 1, 1073741824); });
  KILN_JUDGE {
    const std::int64_t expected = 2147483649;
    const testing::Params params = {{"padding", "1073741824"}, {"expected", std::to_string(expected)}};
    if (!KILN_EXPECT_OK(doubled, "conv_padding_doubled_in_int", params)) return;
    KILN_EXPECT(*doubled == expected, "conv_padding_doubled_in_int", params,
                doubled.call() + " gave " + std::to_string(*doubled) + ", expected " + std::to_string(expected));
    if (*doubled != expected) return;
  }

  // The forward's output: x (2, 3, 7, 5) through 4 filters of 3×3.
  const std::vector<TensorData> in = random_conv_inputs({2, 3, 7, 5}, 4, 3, true, 2);
  struct Case {
    int stride, padding;
  };
  const std::vector<Case> cases = {{1, 0}, {1, 1}, {2, 1}, {2, 0}, {3, 2}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const auto out = observe_conv(in, c.stride, c.padding);
    KILN_JUDGE {
      const std::vector<Shape> expected_shapes = {{2, 4, 5, 3}, {2, 4, 7, 5}, {2, 4, 4, 3}, {2, 4, 3, 2}, {2, 4, 3, 3}};
      const Shape& expected = expected_shapes[i];
      if (!KILN_EXPECT_OK(out, "conv_output_shape_wrong", {{"got", "an error"}, {"expected", to_string(expected)}}))
        return;
      KILN_EXPECT(out->shape == expected, "conv_output_shape_wrong",
                  {{"got", to_string(out->shape)}, {"expected", to_string(expected)}}, out.call());
      if (out->shape != expected) return;
    }
  }
  // An empty batch: x (0, 3, 7, 5) has no images, and its output (0, 4, 7, 5) none either.
  const std::vector<TensorData> empty_in = random_conv_inputs({0, 3, 7, 5}, 4, 3, true, 5);
  const auto empty_out = observe_conv(empty_in, 1, 1);
  KILN_JUDGE {
    const Shape expected{0, 4, 7, 5};
    if (!KILN_EXPECT_OK(empty_out, "conv_output_shape_wrong", {{"got", "an error"}, {"expected", to_string(expected)}}))
      return;
    KILN_EXPECT(empty_out->shape == expected, "conv_output_shape_wrong",
                {{"got", to_string(empty_out->shape)}, {"expected", to_string(expected)}}, empty_out.call());
  }
}

TEST(Convolutions, ForwardValues) {
  // x = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], kernel [[1, 2], [3, 4]], bias 0.5, stride 1:
  //   out[0, 0] = 1·1 + 2·2 + 4·3 + 5·4 + 0.5 = 37.5, and so on; not flipped.
  const TensorData x = data_of({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  KILN_EXPECT_CLOSE(observe_conv({x, data_of({1, 1, 2, 2}, {1, 2, 3, 4}), data_of({1}, {0.5f})}, 1, 0),
                    data_of({1, 1, 2, 2}, {37.5f, 47.5f, 67.5f, 77.5f}), 1e-4, "conv_values_wrong");
  // The same x, a 3×3 kernel of ones, stride 2, padding 1, no bias: each of the four windows
  // covers one 2×2 corner of x: 1+2+4+5 = 12, 2+3+5+6 = 16, 4+5+7+8 = 24, 5+6+8+9 = 28.
  KILN_EXPECT_CLOSE(observe_conv({x, data_of(Tensor::ones({1, 1, 3, 3}))}, 2, 1), data_of({1, 1, 2, 2}, {12, 16, 24, 28}),
                    1e-4, "conv_values_wrong");
  // Two images, two channels, two 1×1 filters: filter 0 is c0 + 2·c1, filter 1 is -c1 + 1.
  //   image 0: c0 = [[1, 2], [3, 4]], c1 = [[-1, 0], [2, 1]]; image 1 is image 0 times 2.
  const TensorData x2 = data_of({2, 2, 2, 2}, {1, 2, 3, 4, -1, 0, 2, 1, 2, 4, 6, 8, -2, 0, 4, 2});
  KILN_EXPECT_CLOSE(observe_conv({x2, data_of({2, 2, 1, 1}, {1, 2, 0, -1}), data_of({2}, {0, 1})}, 1, 0),
                    data_of({2, 2, 2, 2}, {-1, 2, 7, 6, 2, 1, -1, 0, -2, 4, 14, 12, 3, 1, -3, -1}), 1e-4,
                    "conv_values_wrong");
  // A 2×3 image [[1, 2, 3], [4, 5, 6]], a 2×2 kernel [[1, 0], [0, 2]], stride 1, padding 1: a 3×4
  // output, out[oh, ow] = x[oh - 1, ow - 1] + 2·x[oh, ow]. Row 0 is twice the top row, then 0
  // (2, 4, 6, 0); row 1 adds the top row shifted right to twice the bottom row (8, 11, 14, 3);
  // row 2 is the bottom row shifted right (0, 4, 5, 6).
  KILN_EXPECT_CLOSE(observe_conv({data_of({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6}), data_of({1, 1, 2, 2}, {1, 0, 0, 2})}, 1, 1),
                    data_of({1, 1, 3, 4}, {2, 4, 6, 0, 8, 11, 14, 3, 0, 4, 5, 6}), 1e-4, "conv_values_wrong");

  // Random images of the run, against the convolution written in this file: images taller than
  // wide and wider than tall, outputs (3, 4), (5, 3) and (3, 2).
  struct Case {
    Shape x;
    std::int64_t out_ch, k;
    int stride, padding;
    bool with_bias;
  };
  std::uint64_t stream = 10;
  for (const Case& c : {Case{{2, 3, 5, 7}, 4, 3, 2, 1, true}, Case{{1, 2, 6, 4}, 3, 2, 1, 0, true},
                        Case{{2, 2, 7, 5}, 2, 3, 2, 0, false}}) {
    const std::vector<TensorData> in = random_conv_inputs(c.x, c.out_ch, c.k, c.with_bias, stream);
    stream += 3;
    if (!KILN_EXPECT_CLOSE(observe_conv(in, c.stride, c.padding), reference_conv(in, c.stride, c.padding), 1e-4,
                           "conv_values_wrong"))
      return;
  }

  // x a contiguous view at an offset: image 1 of a random batch (2, 2, 4, 5), strides
  // (40, 20, 5, 1), offset 40. Its contiguous() is the view itself, offset and all, so x must be
  // read from data() (where the view starts), not from the storage's first float (image 0).
  // Judged against the same call on image 1 as a fresh tensor: only a difference between the two
  // is the offset's failure.
  const TensorData batch = data_of(random_tensor({2, 2, 4, 5}, 90));
  const std::vector<TensorData> view_in = random_conv_inputs({1, 2, 4, 5}, 3, 3, true, 91);
  const TensorData image_1 = image_of(batch, 1, {1, 2, 4, 5});
  const auto of_fresh = observe("Conv2dFunction::apply(x, weight (3, 2, 3, 3), bias (3), stride 1, padding 1) with x "
                                "image 1 of a batch (2, 2, 4, 5) as a fresh tensor",
                                [&] { return Conv2dFunction::apply(image_1.tensor(), view_in[1].tensor(), view_in[2].tensor(), 1, 1); });
  const auto of_view = observe("Conv2dFunction::apply(x, weight (3, 2, 3, 3), bias (3), stride 1, padding 1) with x "
                               "image 1 of a batch (2, 2, 4, 5), a view at offset 40",
                               [&] {
                                 const Tensor view = make_view(batch.tensor(), {1, 2, 4, 5}, {40, 20, 5, 1}, 40);
                                 return Conv2dFunction::apply(view, view_in[1].tensor(), view_in[2].tensor(), 1, 1);
                               });
  KILN_JUDGE {
    if (!KILN_EXPECT_SAME_AT_OFFSET(of_fresh, of_view, reference_conv({image_1, view_in[1], view_in[2]}, 1, 1), 1e-4,
                                    0.0, "conv_values_wrong", "conv_view_offset_ignored", {{"offset", "40"}}))
      return;
  }

  // The weight and the bias contiguous views at an offset (testing::at_offset: 5 random floats
  // before the values): forward must read them from data() too, not from storage_data().
  const std::vector<TensorData> offset_in = random_conv_inputs({2, 2, 5, 4}, 3, 3, true, 94);
  const auto offset_fresh = observe_conv(offset_in, 1, 1);
  const auto of_offset = observe("Conv2dFunction::apply(x (2, 2, 5, 4), weight (3, 2, 3, 3), bias (3), stride 1, "
                                 "padding 1) with the weight and the bias each a contiguous view at offset 5",
                                 [&] {
                                   return Conv2dFunction::apply(offset_in[0].tensor(), testing::at_offset(offset_in[1], 98),
                                                                testing::at_offset(offset_in[2], 99), 1, 1);
                                 });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(offset_fresh, of_offset, reference_conv(offset_in, 1, 1), 1e-4, 0.0,
                               "conv_values_wrong", "conv_weight_offset_ignored");
  }
}

// read(layer) of Conv2d(2, 3, 3, stride 2, padding 1, with_bias, seed 3) and of Conv2d(3, 4, 5,
// stride 3, padding 2, no bias) built from a generator: one layer of each constructor.
template <class Read>
auto of_both_constructors(Read read) {
  const Conv2d seeded(2, 3, 3, 2, 1, true, 3);
  WichmannHill generator(3);
  const Conv2d shared(3, 4, 5, 3, 2, false, generator);
  return std::vector{read(seeded), read(shared)};
}

TEST(Convolutions, NoBias) {
  // Every layer keeps the five settings it was built with, by either constructor: a setting left
  // at its default (padding 0, stride 1) changes every output of the layer.
  const auto settings = observe(
      "in_channels, out_channels, kernel_size, stride and padding of Conv2d(2, 3, 3, stride 2, padding 1, "
      "with_bias, seed 3) and of Conv2d(3, 4, 5, stride 3, padding 2, no bias, a generator)",
      [] {
        return of_both_constructors([](const Conv2d& conv) {
          return std::vector<std::int64_t>{conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                                           conv.padding};
        });
      });
  if (!KILN_EXPECT_OK(settings, "settings_not_kept")) return;
  KILN_JUDGE {
    const std::vector<std::vector<std::int64_t>> expected = {{2, 3, 3, 2, 1}, {3, 4, 5, 3, 2}};
    if (*settings != expected) {
      const auto text = [](const std::vector<std::vector<std::int64_t>>& layers) {
        std::string out;
        for (const auto& l : layers) out += (out.empty() ? "" : " and ") + fmt::format("({})", fmt::join(l, ", "));
        return out;
      };
      KILN_FAIL("settings_not_kept", {}, settings.call() + ": got " + text(*settings) + ", expected " + text(expected));
      return;
    }
  }
  // The weight holds one filter per output channel, each across every input channel: (out_ch, C,
  // k, k), whatever the order of the constructor's arguments. Asked before anything runs through
  // a layer, which only fits x's channels with that layout.
  const auto weights = observe(
      "the weight's shape of Conv2d(2, 3, 3, stride 2, padding 1, with_bias, seed 3) and of Conv2d(3, 4, 5, "
      "stride 3, padding 2, no bias, a generator)",
      [] { return of_both_constructors([](const Conv2d& conv) { return conv.weight.shape(); }); });
  if (!KILN_EXPECT_OK(weights, "weight_shape_wrong")) return;
  KILN_JUDGE {
    const std::vector<Shape> expected = {{3, 2, 3, 3}, {4, 3, 5, 5}};
    if (*weights != expected) {
      std::string got;
      for (const Shape& shape : *weights) got += (got.empty() ? "" : " and ") + to_string(shape);
      KILN_FAIL("weight_shape_wrong", {},
                fmt::format("{}: got {}, expected (3, 2, 3, 3) and (4, 3, 5, 5)", weights.call(), got));
      return;
    }
  }
  const auto layer = observe("Conv2d(2, 3, 3, 1, 1, with_bias = false, seed 3): bias and has_bias()", [] {
    const Conv2d conv(2, 3, 3, 1, 1, false, 3);
    return std::tuple<Tensor, bool>{conv.bias, conv.has_bias()};
  });
  if (!KILN_EXPECT_OK(layer, "no_bias_wrong")) return;
  KILN_JUDGE {
    const auto& [bias, has_bias] = *layer;
    if (bias.numel() != 0 || has_bias) {
      KILN_FAIL("no_bias_wrong", {},
                fmt::format("{}: the bias has shape {} and has_bias() is {}", layer.call(), to_string(bias.shape), has_bias));
      return;
    }
  }
  // The layer's output is the convolution with its weight and nothing added; its node has the two
  // inputs x and weight, so backward returns two gradients with their shapes.
  const TensorData x = data_of(random_tensor({1, 2, 5, 4}, 7));
  const auto run = observe(
      "the weight, layer.forward(x) and its node's backward(ones) for that layer and x (1, 2, 5, 4)", [&] {
        Conv2d conv(2, 3, 3, 1, 1, false, 3);
        const Tensor input = x.tensor().set_requires_grad(true);
        const Tensor y = conv.forward(input);
        const std::vector<Tensor> grads = y.autograd()->grad_fn->backward(Tensor::ones(y.shape()));
        return std::tuple<Tensor, Tensor, std::vector<Tensor>>{conv.weight, y, grads};
      });
  if (!KILN_EXPECT_OK(run, "no_bias_wrong")) return;
  KILN_JUDGE {
    const auto& [weight, y, grads] = *run;
    // The expected output is computed from the observed weight: its shape is checked first, and a
    // weight of zeros (which any output of zeros would match) does not count as a layer.
    const bool weight_drawn = std::any_of(weight.values.begin(), weight.values.end(), [](float v) { return v != 0.0f; });
    if (weight.shape != Shape{3, 2, 3, 3} || !weight_drawn) {
      KILN_FAIL("no_bias_wrong", {},
                "Conv2d(2, 3, 3, stride 1, padding 1, no bias) has a weight of shape " + to_string(weight.shape) +
                    (weight_drawn ? "" : " holding only zeros") + ", expected (3, 2, 3, 3) drawn from the generator");
      return;
    }
    const Observed<TensorData> output("layer.forward(x) with x (1, 2, 5, 4)", y);
    if (!KILN_EXPECT_CLOSE(output, reference_conv({x, weight}, 1, 1), 1e-4, "no_bias_wrong")) return;
    if (grads.size() != 2) {
      KILN_FAIL("no_bias_wrong", {},
                fmt::format("the node's backward returned {} for its 2 inputs (x and weight)",
                            testing::counted(grads.size(), "gradient")));
      return;
    }
    KILN_EXPECT(grads[0].shape == x.shape && grads[1].shape == weight.shape, "no_bias_wrong", {},
                "the node's backward returned gradients of shapes " + to_string(grads[0].shape) + " and " +
                    to_string(grads[1].shape) + ", expected (1, 2, 5, 4) and (3, 2, 3, 3)");
  }
}

TEST(Convolutions, Initialisation) {
  // The same draws, made here: bound · (2u - 1) with bound = 1/√(C·k·k), weight first, then bias.
  const auto expected_draws = [](WichmannHill& generator, std::int64_t count, double bound) {
    std::vector<float> values(static_cast<std::size_t>(count));
    for (float& v : values) v = static_cast<float>(bound * (2.0 * generator.next() - 1.0));
    return values;
  };
  // One layer's parameters and settings, as plain data.
  using Layer = std::tuple<Tensor, Tensor, bool, bool, std::vector<std::int64_t>>;
  const auto layer_data = [](const Conv2d& conv) {
    return Layer{conv.weight, conv.bias, conv.weight.requires_grad(), conv.bias.requires_grad(),
                 {conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding}};
  };

  // Conv2d(3, 2, 2, 1, 0, with bias, seed 7), and Conv2d(2, 3, 3, 2, 1) with a seed of the run.
  const std::uint64_t run_seed = testing::Generator(31).next() >> 16;
  struct Case {
    int in_channels, out_channels, kernel_size, stride, padding;
    std::uint64_t seed;
  };
  for (const Case& c : {Case{3, 2, 2, 1, 0, 7}, Case{2, 3, 3, 2, 1, run_seed}}) {
    const std::string call = fmt::format("Conv2d({}, {}, {}, {}, {}, with bias, seed {})", c.in_channels,
                                         c.out_channels, c.kernel_size, c.stride, c.padding, c.seed);
    const auto layer = observe(call, [&] {
      return layer_data(Conv2d(c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding, true, c.seed));
    });
    if (!KILN_EXPECT_OK(layer, "init_values_wrong")) return;
    KILN_JUDGE {
      const auto& [weight, bias, weight_trainable, bias_trainable, settings] = *layer;
      WichmannHill generator(c.seed);
      const double bound = 1.0 / std::sqrt(static_cast<double>(c.in_channels) * c.kernel_size * c.kernel_size);
      const Shape weight_shape = {c.out_channels, c.in_channels, c.kernel_size, c.kernel_size};
      const TensorData expected_weight = data_of(weight_shape, expected_draws(generator, numel(weight_shape), bound));
      const TensorData expected_bias = data_of({c.out_channels}, expected_draws(generator, c.out_channels, bound));
      KILN_EXPECT_CLOSE(Observed<TensorData>(call + ".weight", weight), expected_weight, 1e-6, "init_values_wrong");
      KILN_EXPECT_CLOSE(Observed<TensorData>(call + ".bias", bias), expected_bias, 1e-6, "init_values_wrong");
      KILN_EXPECT(weight_trainable && bias_trainable, "params_not_trainable", {},
                  fmt::format("{}: weight.requires_grad() is {}, bias.requires_grad() is {}", call, weight_trainable,
                              bias_trainable));
      const std::vector<std::int64_t> expected_settings = {c.in_channels, c.out_channels, c.kernel_size, c.stride,
                                                           c.padding};
      KILN_EXPECT(settings == expected_settings, "init_values_wrong", {},
                  call + ": the layer's settings (in_channels, out_channels, kernel_size, stride, padding) were not stored");
    }
  }

  // Three layers sharing one generator: each continues where the one before stopped, and the
  // second, without a bias, draws nothing for one.
  const auto shared = observe("Conv2d(1, 2, 3, 1, 1, with bias, g), Conv2d(2, 1, 1, 1, 0, without bias, g), then "
                              "Conv2d(1, 1, 1, 1, 0, with bias, g), g = WichmannHill(11)",
                              [&] {
                                WichmannHill g(11);
                                const Conv2d first(1, 2, 3, 1, 1, true, g);
                                const Conv2d second(2, 1, 1, 1, 0, false, g);
                                const Conv2d third(1, 1, 1, 1, 0, true, g);
                                return std::tuple<Tensor, Tensor, bool, Tensor>{first.weight, second.weight,
                                                                                second.weight.requires_grad(), third.weight};
                              });
  if (!KILN_EXPECT_OK(shared, "init_values_wrong")) return;
  KILN_JUDGE {
    const auto& [first_weight, second_weight, second_trainable, third_weight] = *shared;
    WichmannHill generator(11);
    const TensorData expected_first = data_of({2, 1, 3, 3}, expected_draws(generator, 18, 1.0 / 3.0));
    expected_draws(generator, 2, 1.0 / 3.0);  // first's bias
    const TensorData expected_second = data_of({1, 2, 1, 1}, expected_draws(generator, 2, 1.0 / std::sqrt(2.0)));
    const TensorData expected_third = data_of({1, 1, 1, 1}, expected_draws(generator, 1, 1.0));
    if (!KILN_EXPECT_CLOSE(Observed<TensorData>("the first layer's weight", first_weight), expected_first, 1e-6,
                           "init_values_wrong"))
      return;
    if (!KILN_EXPECT_CLOSE(Observed<TensorData>("the second layer's weight", second_weight), expected_second, 1e-6,
                           "init_values_wrong"))
      return;
    KILN_EXPECT(second_trainable, "params_not_trainable", {}, "the second layer's weight does not require grad");
    KILN_EXPECT_CLOSE(Observed<TensorData>("the third layer's weight, drawn after the layer without a bias", third_weight),
                      expected_third, 1e-6, "bias_drawn_without_bias");
  }
}

TEST(Convolutions, InputGradient) {
  std::uint64_t stream = 20;
  for (const GradientCase& c : gradient_cases()) {
    if (!CHECK_CONV_GRADIENTS(random_conv_inputs(c.x, c.out_ch, c.k, true, stream), c.stride, c.padding, stream + 3,
                              (std::vector<std::string>{"input_grad_wrong", "", ""})))
      return;
    stream += 4;
  }
  // x a view (a transposed image batch): the node keeps the x forward was given, and backward reads it.
  const GradientCase& c = gradient_cases()[1];
  if (!CHECK_CONV_GRADIENTS(random_conv_inputs(c.x, c.out_ch, c.k, true, stream), c.stride, c.padding, stream + 3,
                            (std::vector<std::string>{"input_grad_wrong", "", ""}), true))
    return;
  // grad_output a view: backward(g) gets any tensor of the output's shape, a transpose's too.
  if (!CHECK_CONV_GRADIENTS(random_conv_inputs(c.x, c.out_ch, c.k, true, stream + 4), c.stride, c.padding, stream + 7,
                            (std::vector<std::string>{"grad_output_view_unread", "", ""}), false, true))
    return;
  // x, weight, bias and grad_output contiguous views at an offset (a slice of a batch, of a
  // larger buffer): contiguous() of each is the view itself, so backward must read them from
  // data(), where they start, not from storage_data(). All three gradients are judged: a slip on
  // x shows in the weight's gradient, one on the weight in x's, one on grad_output in all.
  // Each is judged against the same call on fresh tensors: only a gradient that differs between
  // the two is the offset's failure.
  const GradientCase& o = gradient_cases()[0];
  check_conv_gradients_at_offset(random_conv_inputs(o.x, o.out_ch, o.k, true, stream + 8), o.stride, o.padding,
                                 stream + 11);
}

TEST(Convolutions, WeightBiasGradient) {
  std::uint64_t stream = 40;
  for (const GradientCase& c : gradient_cases()) {
    if (!CHECK_CONV_GRADIENTS(random_conv_inputs(c.x, c.out_ch, c.k, true, stream), c.stride, c.padding, stream + 3,
                              (std::vector<std::string>{"", "weight_grad_wrong", "bias_grad_wrong"})))
      return;
    stream += 4;
  }
}

TEST(Convolutions, ChannelMismatch) {
  // Inputs with 2 channels for a weight that expects 3, and with 5 channels for one that expects 2.
  struct Case {
    Shape x, weight;
  };
  std::uint64_t stream = 60;
  for (const Case& c : {Case{{1, 2, 5, 5}, {4, 3, 3, 3}}, Case{{2, 5, 4, 6}, {3, 2, 3, 3}}}) {
    const std::vector<TensorData> in = {data_of(random_tensor(c.x, stream)), data_of(random_tensor(c.weight, stream + 1)),
                                        data_of(random_tensor({c.weight[0]}, stream + 2))};
    stream += 3;
    const auto error = observe_conv(in, 1, 0);
    KILN_JUDGE {
      testing::expect_throws<ShapeError>(__FILE__, __LINE__, error, "channel_mismatch_unreported",
                                         {to_string(c.x), to_string(c.weight)});
    }
  }
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
  const Tensor grid({1, 1, 5, 5}, negatives);
  const auto strided = observe("MaxPool2d(2, 3).forward(x) on the 5×5 grid of -1..-25",
                               [&] { return MaxPool2d(2, 3).forward(grid); });
  const TensorData strided_expected = data_of({1, 1, 2, 2}, {-1, -4, -16, -19});
  KILN_JUDGE {
    // The windows side by side, every 2 rows and columns: the stride taken from the kernel.
    if (strided.ok()) {
      const testing::Comparison right = testing::compare(*strided, strided_expected, 1e-6);
      if (!right.close && testing::compare(*strided, data_of({1, 1, 2, 2}, {-1, -3, -11, -13}), 1e-6).close) {
        KILN_FAIL("maxpool_stride_ignored", {}, strided.call() + ": " + right.describe());
        return;
      }
    }
  }
  if (!KILN_EXPECT_CLOSE(strided, strided_expected, 1e-6, "maxpool_values_wrong")) return;
  // Two channels, the default stride (= kernel 2), side-by-side windows.
  const Tensor x({1, 2, 4, 4}, {1, 5, 2, 0,   3, 4, 8, 1,   0, 2, 9, 9,   7, 1, 3, 4,
                                -1, -2, 0, 6,  -3, -4, 5, 2,  1, 1, 1, 1,  1, 1, 1, 2});
  KILN_EXPECT_CLOSE(observe("MaxPool2d(2).forward(x) with x (1, 2, 4, 4)", [&] { return MaxPool2d(2).forward(x); }),
                    data_of({1, 2, 2, 2}, {5, 8, 7, 9, -1, 6, 1, 2}), 1e-6, "maxpool_values_wrong");
  // Overlapping windows: kernel 3, stride 1 on the first channel (4×4 -> 2×2).
  const Tensor first({1, 1, 4, 4}, {1, 5, 2, 0, 3, 4, 8, 1, 0, 2, 9, 9, 7, 1, 3, 4});
  KILN_EXPECT_CLOSE(observe("MaxPool2d(3, 1).forward(x) with x (1, 1, 4, 4)", [&] { return MaxPool2d(3, 1).forward(first); }),
                    data_of({1, 1, 2, 2}, {9, 9, 9, 9}), 1e-6, "maxpool_values_wrong");
  // Random images of the run, not square: (5, 7) pooled side by side to (2, 3), and (7, 5) with
  // overlapping 3×3 windows every 2 to (3, 2).
  struct Case {
    Shape x;
    int kernel, stride;
  };
  std::uint64_t stream = 70;
  for (const Case& c : {Case{{2, 3, 5, 7}, 2, 2}, Case{{1, 2, 7, 5}, 3, 2}}) {
    const Tensor r = random_tensor(c.x, stream++);
    const auto got = observe(fmt::format("MaxPool2d({}, {}).forward(x) with a random x {}", c.kernel, c.stride, to_string(c.x)),
                             [&] { return MaxPool2d(c.kernel, c.stride).forward(r); });
    if (!KILN_EXPECT_CLOSE(got, reference_maxpool(data_of(r), c.kernel, c.stride).out, 1e-6, "maxpool_values_wrong"))
      return;
  }
  // Windows of -infinity: one holding nothing else, whose largest value is -infinity itself (not
  // the lowest finite float), and one where a finite value beats it.
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const Tensor masked({1, 1, 2, 4}, {minus_inf, minus_inf, minus_inf, -3, minus_inf, minus_inf, -5, minus_inf});
  if (!KILN_EXPECT_CLOSE(observe("MaxPool2d(2).forward(x) with x = [[-inf, -inf, -inf, -3], [-inf, -inf, -5, -inf]]",
                                 [&] { return MaxPool2d(2).forward(masked); }),
                         data_of({1, 1, 1, 2}, {minus_inf, -3}), 0.0, "maxpool_values_wrong"))
    return;

  // x a contiguous view at an offset: image 1 of a random batch (2, 2, 4, 6), strides
  // (48, 24, 6, 1), offset 48. Its contiguous() is the view itself, offset and all, so x must be
  // read from data() (where the view starts), not from the storage's first float (image 0).
  // Judged against the same call on image 1 as a fresh tensor.
  const TensorData batch = data_of(random_tensor({2, 2, 4, 6}, 93));
  const TensorData image_1 = image_of(batch, 1, {1, 2, 4, 6});
  const auto of_fresh = observe("MaxPool2d(2).forward(x) with x image 1 of a random batch (2, 2, 4, 6) as a fresh tensor",
                                [&] { return MaxPool2d(2).forward(image_1.tensor()); });
  const auto of_view = observe("MaxPool2d(2).forward(x) with x image 1 of a random batch (2, 2, 4, 6), a view at offset 48",
                               [&] {
                                 const Tensor view = make_view(batch.tensor(), {1, 2, 4, 6}, {48, 24, 6, 1}, 48);
                                 return MaxPool2d(2).forward(view);
                               });
  KILN_JUDGE {
    if (!KILN_EXPECT_SAME_AT_OFFSET(of_fresh, of_view, reference_maxpool(image_1, 2, 2).out, 0.0, 0.0,
                                    "maxpool_values_wrong", "maxpool_view_offset_ignored", {{"offset", "48"}}))
      return;
  }
  // An empty batch: x (0, 2, 4, 6) has no images, and its maxima (0, 2, 2, 3) none either.
  const Tensor no_images = Tensor::zeros({0, 2, 4, 6});
  KILN_EXPECT_CLOSE(observe("MaxPool2d(2).forward(x) with x (0, 2, 4, 6), a batch of no images",
                            [&] { return MaxPool2d(2).forward(no_images); }),
                    data_of({0, 2, 2, 3}, {}), 0.0, "maxpool_values_wrong");
}

// MaxPool2dFunction::apply (given) runs the node's forward, which records argmax; then the node's
// backward(g), called directly.
// How g is handed to backward: a fresh tensor, transposed_view of its values, or
// testing::at_offset of them (a contiguous view at offset 5 of a storage of random floats).
enum class GradAs { fresh, transposed, at_offset };

Observed<TensorData> observe_maxpool_grad(const std::string& what, const TensorData& x, int kernel, int stride,
                                          const TensorData& g, GradAs g_as = GradAs::fresh) {
  return observe(fmt::format("MaxPool2dFunction::apply(x, {}, {}), then its backward(g), with {}", kernel, stride, what),
                 [&] {
                   const Tensor input = x.tensor().set_requires_grad(true);
                   const Tensor y = MaxPool2dFunction::apply(input, kernel, stride);
                   const Tensor grad_output = g_as == GradAs::transposed  ? transposed_view(g)
                                              : g_as == GradAs::at_offset ? testing::at_offset(g, 95)
                                                                          : g.tensor();
                   const std::vector<Tensor> grads = y.autograd()->grad_fn->backward(grad_output);
                   if (grads.size() != 1)
                     throw std::length_error("backward returned " + std::to_string(grads.size()) + " gradients for 1 input");
                   return grads[0];
                 });
}

TEST(Convolutions, MaxPoolBackward) {
  // Side-by-side windows over two channels: each output's gradient lands on its window's maximum
  // (the first one on a tie), every other element gets 0.
  const TensorData x = data_of({1, 2, 4, 4}, {1, 5, 2, 0,   3, 4, 8, 1,   0, 2, 9, 9,   7, 1, 3, 4,
                                              -1, -2, 0, 6,  -3, -4, 5, 2,  1, 1, 1, 1,  1, 1, 1, 2});
  const TensorData hand_g = data_of({1, 2, 2, 2}, {10, 20, 30, 40, 50, 60, 70, 80});
  const auto hand = observe_maxpool_grad("x (1, 2, 4, 4) and g = [10, 20, ..., 80]", x, 2, 2, hand_g);
  const TensorData hand_expected = data_of({1, 2, 4, 4}, {0, 10, 0, 0,   0, 0, 20, 0,   0, 0, 40, 0,   30, 0, 0, 0,
                                                          50, 0, 0, 60,  0, 0, 0, 0,    70, 0, 0, 0,   0, 0, 0, 80});
  KILN_JUDGE {
    // Right but for the ties (9, 9 in channel 0; 1, 1, 1, 1 in channel 1): the last maximum taken.
    if (hand.ok()) {
      const testing::Comparison first = testing::compare(*hand, hand_expected, 1e-6);
      if (!first.close && testing::compare(*hand, reference_maxpool_grad(x, 2, 2, hand_g, Tie::last), 1e-6).close) {
        KILN_FAIL("maxpool_tie_last", {}, hand.call() + ": " + first.describe());
        return;
      }
    }
  }
  if (!KILN_EXPECT_CLOSE(hand, hand_expected, 1e-6, "maxpool_grad_misrouted")) return;
  // Equal maxima on a diagonal, [[0, 7], [7, 0]]: the first in row-major order is (0, 1); a window
  // scanned column by column meets (1, 0) first.
  const TensorData diagonal = data_of({1, 1, 2, 2}, {0, 7, 7, 0});
  const TensorData five = data_of({1, 1, 1, 1}, {5});
  const auto crossed = observe_maxpool_grad("x = [[0, 7], [7, 0]] and g = [5]", diagonal, 2, 2, five);
  KILN_JUDGE {
    if (crossed.ok()) {
      const testing::Comparison tie = testing::compare(*crossed, data_of({1, 1, 2, 2}, {0, 5, 0, 0}), 0.0);
      if (!tie.close) {
        KILN_FAIL("maxpool_tie_last", {}, crossed.call() + ": " + tie.describe());
        return;
      }
    }
  }
  if (!KILN_EXPECT_OK(crossed, "maxpool_grad_misrouted")) return;
  // A random image of the run, (5, 7) pooled side by side to (2, 3).
  const TensorData r = data_of(random_tensor({1, 2, 5, 7}, 80));
  const TensorData g = data_of(random_tensor({1, 2, 2, 3}, 81, 0.5f, 1.5f));
  if (!KILN_EXPECT_CLOSE(observe_maxpool_grad("a random x (1, 2, 5, 7) and g", r, 2, 2, g),
                         reference_maxpool_grad(r, 2, 2, g), 1e-6, "maxpool_grad_misrouted"))
    return;
  // Two images of three channels: argmax indexes the whole batch, so image 1's gradient stays in
  // image 1.
  const TensorData batch = data_of(random_tensor({2, 3, 4, 6}, 84));
  const TensorData batch_g = data_of(random_tensor({2, 3, 2, 3}, 85, 0.5f, 1.5f));
  if (!KILN_EXPECT_CLOSE(observe_maxpool_grad("a random x (2, 3, 4, 6) and g", batch, 2, 2, batch_g),
                         reference_maxpool_grad(batch, 2, 2, batch_g), 1e-6, "maxpool_grad_misrouted"))
    return;

  // A window of -infinity, in the second image's second channel at window (1, 1): no element is
  // larger than the others, and the first of them (row 2, column 2) takes the gradient.
  TensorData masked = data_of(random_tensor({2, 2, 4, 4}, 86));
  for (const std::size_t at : {58, 59, 62, 63}) masked.values[at] = -std::numeric_limits<float>::infinity();
  const TensorData masked_g = data_of(random_tensor({2, 2, 2, 2}, 87, 0.5f, 1.5f));
  if (!KILN_EXPECT_CLOSE(observe_maxpool_grad("a random x (2, 2, 4, 4) whose last window is -infinity, and g", masked, 2,
                                              2, masked_g),
                         reference_maxpool_grad(masked, 2, 2, masked_g), 1e-6, "maxpool_grad_misrouted"))
    return;

  // Overlapping windows (kernel 2, stride 1): the centre 9 is the maximum of all four windows,
  // so it receives the sum of their gradients, 1 + 2 + 3 + 4.
  if (!KILN_EXPECT_CLOSE(observe_maxpool_grad("x = [[1, 2, 3], [4, 9, 5], [6, 7, 8]] and g = [1, 2, 3, 4]",
                                              data_of({1, 1, 3, 3}, {1, 2, 3, 4, 9, 5, 6, 7, 8}), 2, 1,
                                              data_of({1, 1, 2, 2}, {1, 2, 3, 4})),
                         data_of({1, 1, 3, 3}, {0, 0, 0, 0, 10, 0, 0, 0, 0}), 1e-6, "maxpool_overlap_lost"))
    return;
  // A random image of the run, (7, 5) with 3×3 windows every 2 rows and columns, to (3, 2).
  const TensorData r2 = data_of(random_tensor({1, 1, 7, 5}, 82));
  const TensorData g2 = data_of(random_tensor({1, 1, 3, 2}, 83, 0.5f, 1.5f));
  if (!KILN_EXPECT_CLOSE(observe_maxpool_grad("a random x (1, 1, 7, 5) and g", r2, 3, 2, g2),
                         reference_maxpool_grad(r2, 3, 2, g2), 1e-5, "maxpool_overlap_lost"))
    return;
  // Windows of -infinity only that overlap (kernel 2, stride 1 on a 3×3 image of -infinity):
  // each window's first element, at row oh·stride and column ow·stride, takes its gradient, so
  // g = [1, 2, 3, 4] lands on (0, 0), (0, 1), (1, 0) and (1, 1). A fallback placed with the kernel
  // size instead of the stride puts it on the corners (0, 0), (0, 2), (2, 0) and (2, 2).
  const float inf = std::numeric_limits<float>::infinity();
  if (!KILN_EXPECT_CLOSE(observe_maxpool_grad("x a 3×3 image of -infinity, kernel 2, stride 1, and g = [1, 2, 3, 4]",
                                              data_of({1, 1, 3, 3}, std::vector<float>(9, -inf)), 2, 1,
                                              data_of({1, 1, 2, 2}, {1, 2, 3, 4})),
                         data_of({1, 1, 3, 3}, {1, 2, 0, 3, 4, 0, 0, 0, 0}), 1e-6, "maxpool_empty_window_misplaced"))
    return;
  // g a view that is not contiguous: backward(g) gets any tensor of the output's shape.
  const TensorData r3 = data_of(random_tensor({1, 2, 4, 6}, 88));
  const TensorData g3 = data_of(random_tensor({1, 2, 2, 3}, 89, 0.5f, 1.5f));
  if (!KILN_EXPECT_CLOSE(observe_maxpool_grad("a random x (1, 2, 4, 6) and g a transposed view (strides (12, 6, 1, 2))",
                                              r3, 2, 2, g3, GradAs::transposed),
                         reference_maxpool_grad(r3, 2, 2, g3), 1e-6, "maxpool_grad_view_unread"))
    return;
  // g a contiguous view at an offset: its contiguous() is the view itself, so backward must read
  // it from data(), where it starts, not from the storage's first float.
  const TensorData r4 = data_of(random_tensor({2, 2, 4, 6}, 96));
  const TensorData g4 = data_of(random_tensor({2, 2, 2, 3}, 97, 0.5f, 1.5f));
  const auto g4_fresh = observe_maxpool_grad("a random x (2, 2, 4, 6) and g", r4, 2, 2, g4);
  const auto g4_viewed = observe_maxpool_grad("a random x (2, 2, 4, 6) and g a contiguous view at offset 5", r4, 2, 2,
                                              g4, GradAs::at_offset);
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(g4_fresh, g4_viewed, reference_maxpool_grad(r4, 2, 2, g4), 1e-6, 0.0,
                               "maxpool_grad_misrouted", "maxpool_grad_view_offset_ignored");
  }
}

}  // namespace
}  // namespace kiln
