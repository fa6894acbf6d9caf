// Checks im2col_conv2d and Im2colConv2dFunction against a direct convolution written out here, in
// double precision, so that a mistake in module 09's Conv2d is never blamed on this module. Some
// images and some outputs are not square, so that a height used for a width fails the forward
// check itself.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/acceleration.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;

struct ConvCase {
  Shape x_shape;       // (N, C, H, W)
  Shape weight_shape;  // (out_ch, C, k, k)
  bool has_bias;
  int stride;
  int padding;
};

std::string describe(const ConvCase& test) {
  return fmt::format("x {}, weight {}, {}, stride {}, padding {}", to_string(test.x_shape),
                     to_string(test.weight_shape), test.has_bias ? "bias" : "no bias", test.stride, test.padding);
}

std::int64_t out_size(std::int64_t size, std::int64_t k, int stride, int padding) {
  return (size + 2 * padding - k) / stride + 1;
}

Shape output_shape(const ConvCase& test) {
  const std::int64_t k = test.weight_shape[2];
  return {test.x_shape[0], test.weight_shape[0], out_size(test.x_shape[2], k, test.stride, test.padding),
          out_size(test.x_shape[3], k, test.stride, test.padding)};
}

// A case's inputs, values in [-0.5, 0.5) drawn from the run's seed: the same tensors every time
// they are asked for, so that a call that changes its inputs gets fresh ones.
struct Inputs {
  Tensor x, weight;
  std::optional<Tensor> bias;
};
Inputs inputs_of(const ConvCase& test, std::uint64_t stream) {
  Inputs in{random_tensor(test.x_shape, stream, -0.5f, 0.5f), random_tensor(test.weight_shape, stream + 1, -0.5f, 0.5f),
            std::nullopt};
  if (test.has_bias) in.bias = random_tensor({test.weight_shape[0]}, stream + 2, -0.5f, 0.5f);
  return in;
}

// Trusted: out[n, o, oh, ow] = bias[o] + Σ_{c, kh, kw} weight[o, c, kh, kw] · x[n, c, oh·s - p + kh, ow·s - p + kw].
TensorData direct_conv(const TensorData& x, const TensorData& weight, const std::optional<TensorData>& bias,
                       int stride, int padding) {
  const std::int64_t batch = x.shape[0], channels = x.shape[1], height = x.shape[2], width = x.shape[3];
  const std::int64_t out_channels = weight.shape[0], k = weight.shape[2];
  const std::int64_t out_h = out_size(height, k, stride, padding), out_w = out_size(width, k, stride, padding);
  std::vector<float> out;
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t o = 0; o < out_channels; ++o)
      for (std::int64_t oh = 0; oh < out_h; ++oh)
        for (std::int64_t ow = 0; ow < out_w; ++ow) {
          double total = bias ? bias->values[static_cast<std::size_t>(o)] : 0.0;
          for (std::int64_t c = 0; c < channels; ++c)
            for (std::int64_t kh = 0; kh < k; ++kh)
              for (std::int64_t kw = 0; kw < k; ++kw) {
                const std::int64_t ih = oh * stride - padding + kh, iw = ow * stride - padding + kw;
                if (ih < 0 || ih >= height || iw < 0 || iw >= width) continue;
                total += static_cast<double>(weight.at({o, c, kh, kw})) * x.at({n, c, ih, iw});
              }
          out.push_back(static_cast<float>(total));
        }
  return data_of({batch, out_channels, out_h, out_w}, out);
}

struct Gradients {
  TensorData x, weight, bias;
};

// Trusted: the gradients of Σ out · g, from the same loops as direct_conv.
Gradients direct_conv_gradients(const TensorData& x, const TensorData& weight, const TensorData& g, int stride,
                                int padding) {
  const std::int64_t batch = x.shape[0], channels = x.shape[1], height = x.shape[2], width = x.shape[3];
  const std::int64_t out_channels = weight.shape[0], k = weight.shape[2];
  const std::int64_t out_h = g.shape[2], out_w = g.shape[3];
  std::vector<double> dx(x.values.size()), dw(weight.values.size()), db(static_cast<std::size_t>(out_channels));
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t o = 0; o < out_channels; ++o)
      for (std::int64_t oh = 0; oh < out_h; ++oh)
        for (std::int64_t ow = 0; ow < out_w; ++ow) {
          const double upstream = g.at({n, o, oh, ow});
          db[static_cast<std::size_t>(o)] += upstream;
          for (std::int64_t c = 0; c < channels; ++c)
            for (std::int64_t kh = 0; kh < k; ++kh)
              for (std::int64_t kw = 0; kw < k; ++kw) {
                const std::int64_t ih = oh * stride - padding + kh, iw = ow * stride - padding + kw;
                if (ih < 0 || ih >= height || iw < 0 || iw >= width) continue;
                dw[static_cast<std::size_t>(((o * channels + c) * k + kh) * k + kw)] += upstream * x.at({n, c, ih, iw});
                dx[static_cast<std::size_t>(((n * channels + c) * height + ih) * width + iw)] +=
                    upstream * weight.at({o, c, kh, kw});
              }
        }
  auto to_data = [](const Shape& shape, const std::vector<double>& values) {
    return data_of(shape, std::vector<float>(values.begin(), values.end()));
  };
  return {to_data(x.shape, dx), to_data(weight.shape, dw), to_data({out_channels}, db)};
}

// KILN_EXPECT_CLOSE with more values for the message: {function} as well as {difference} and
// {where}. An error the call threw is reported under the same id, naming the call.
bool expect_close_as(const char* file, int line, const testing::Observed<TensorData>& actual,
                     const TensorData& expected, double tolerance, const char* failure_id, testing::Params params) {
  if (!actual.ok()) {
    params.insert(params.end(), {{"difference", testing::kThrewDifference}, {"where", testing::kThrewWhere}});
    testing::report_failure(file, line, failure_id, params, "unexpected error: " + actual.describe_error());
    return false;
  }
  const testing::Comparison c = testing::compare(*actual, expected, tolerance);
  if (c.close) return true;
  if (!c.shapes_match) {
    params.insert(params.end(), {{"difference", "inf"}, {"where", testing::shapes_where(actual->shape, expected.shape)}});
    testing::report_failure(file, line, failure_id, params,
                            fmt::format("{} has shape {}, expected shape {}", actual.call(), to_string(actual->shape),
                                        to_string(expected.shape)));
  } else {
    params.insert(params.end(),
                  {{"difference", testing::format_number(c.max_abs_diff)}, {"where", to_string(c.where)}});
    testing::report_failure(file, line, failure_id, params, actual.call() + ": " + c.describe());
  }
  return false;
}
#define EXPECT_CLOSE_AS(actual, expected, tolerance, id, ...) \
  expect_close_as(__FILE__, __LINE__, (actual), (expected), (tolerance), id, __VA_ARGS__)

TEST(Acceleration, Im2colConv2d) {
  // Square and not: (5, 5) images to (5, 5) outputs, (5, 6) to (3, 3), (4, 7) to (4, 7), (7, 5)
  // to (3, 2), with strides 1 and 2, paddings 0 and 1, with and without a bias.
  const std::vector<ConvCase> cases{{{2, 3, 5, 5}, {4, 3, 3, 3}, true, 1, 1},
                                    {{2, 3, 6, 6}, {2, 3, 2, 2}, false, 2, 0},
                                    {{1, 2, 5, 6}, {3, 2, 3, 3}, true, 2, 1},
                                    {{2, 3, 4, 7}, {5, 3, 3, 3}, true, 1, 1},
                                    {{1, 2, 7, 5}, {3, 2, 2, 2}, false, 2, 0}};
  // im2col_conv2d first, then the Function's forward pass, which must give the same numbers.
  for (const bool function : {false, true}) {
    std::uint64_t stream = 81;
    for (const ConvCase& test : cases) {
      const Inputs in = inputs_of(test, stream);
      stream += 3;
      const auto out =
          function ? observe("Im2colConv2dFunction::apply(x, weight, bias, stride, padding) with " + describe(test),
                             [&] { return Im2colConv2dFunction::apply(in.x, in.weight, in.bias, test.stride, test.padding); })
                   : observe("im2col_conv2d(x, weight, bias, stride, padding) with " + describe(test),
                             [&] { return im2col_conv2d(in.x, in.weight, in.bias, test.stride, test.padding); });
      KILN_JUDGE {
        const std::optional<TensorData> bias = in.bias ? std::optional<TensorData>(data_of(*in.bias)) : std::nullopt;
        const TensorData expected = direct_conv(data_of(in.x), data_of(in.weight), bias, test.stride, test.padding);
        if (!EXPECT_CLOSE_AS(out, expected, 1e-5, "conv_differs",
                             {{"function", function ? "Im2colConv2dFunction's forward" : "im2col_conv2d"}}))
          return;
      }
      if (!out.ok()) return;
    }
  }
  // Shapes that do not fit: ShapeError. A (1, 2) bias holds the two numbers of a (2) one.
  struct Refusal {
    Shape x, weight;
    std::optional<Shape> bias;
    std::string what;
  };
  const std::vector<Refusal> refusals{
      {{1, 2, 4, 4}, {2, 2, 3, 3}, Shape{1, 2}, "a bias of shape (1, 2) for 2 output channels"},
      {{1, 2, 4, 4}, {2, 2, 3, 3}, Shape{3}, "a bias of shape (3) for 2 output channels"},
      {{1, 2, 4, 4}, {2, 3, 3, 3}, std::nullopt, "a weight for 3 input channels on images of 2"},
      {{2, 4, 4}, {2, 2, 3, 3}, std::nullopt, "x of shape (2, 4, 4), not 4-D"}};
  for (const bool function : {false, true}) {
    for (const Refusal& r : refusals) {
      const Tensor x = random_tensor(r.x, 97), weight = random_tensor(r.weight, 98);
      const std::optional<Tensor> bias = r.bias ? std::optional<Tensor>(random_tensor(*r.bias, 99)) : std::nullopt;
      const std::string name = function ? "Im2colConv2dFunction::apply" : "im2col_conv2d";
      const auto refused = observe(fmt::format("{}(x, weight, bias) with {}", name, r.what), [&] {
        return function ? Im2colConv2dFunction::apply(x, weight, bias) : im2col_conv2d(x, weight, bias);
      });
      KILN_JUDGE {
        testing::expect_throws<ShapeError>(__FILE__, __LINE__, refused, "conv_shape_unchecked", {},
                                           {{"function", name}, {"case", r.what}});
      }
      if (refused.ok()) return;
    }
  }
  // x (1, 2, 5, 4), weight (3, 2, 3, 3) and bias (3), each a contiguous view at an offset, 5
  // floats into a storage of other numbers, as slices of larger tensors are: each starts at
  // data(), not at the storage's first float.
  const Tensor x_offset = testing::at_offset(data_of(random_tensor({1, 2, 5, 4}, 100, -0.5f, 0.5f)), 101);
  const Tensor w_offset = testing::at_offset(data_of(random_tensor({3, 2, 3, 3}, 102, -0.5f, 0.5f)), 103);
  const Tensor b_offset = testing::at_offset(data_of(random_tensor({3}, 104, -0.5f, 0.5f)), 105);
  // The same call on fresh tensors of the same values: only a result that differs between the two
  // is the offset's fault; one wrong on both is im2col_conv2d's own.
  const auto fresh = observe("im2col_conv2d(x, weight, bias, 1, 1) of the same x (1, 2, 5, 4), weight (3, 2, 3, 3) and bias (3) "
                             "values in fresh tensors",
                             [&] {
                               return im2col_conv2d(data_of(x_offset).tensor(), data_of(w_offset).tensor(),
                                                    data_of(b_offset).tensor(), 1, 1);
                             });
  const auto offsets = observe("im2col_conv2d(x, weight, bias, 1, 1) of x (1, 2, 5, 4), weight (3, 2, 3, 3) and bias (3), "
                               "each a contiguous view at offset 5",
                               [&] { return im2col_conv2d(x_offset, w_offset, b_offset, 1, 1); });
  KILN_JUDGE {
    const TensorData expected = direct_conv(data_of(x_offset), data_of(w_offset), data_of(b_offset), 1, 1);
    KILN_EXPECT_SAME_AT_OFFSET(fresh, offsets, expected, 1e-5, 0.0, "conv_differs", "conv_offset_ignored",
                               {{"function", "im2col_conv2d"}});
  }
}

TEST(Acceleration, Im2colConv2dFunction) {
  // (5, 5) to (5, 5) with a bias; (7, 6) to (3, 2) without; (4, 7) to (5, 8) with a bias.
  const std::vector<ConvCase> cases{{{2, 3, 5, 5}, {4, 3, 3, 3}, true, 1, 1},
                                    {{2, 2, 7, 6}, {3, 2, 3, 3}, false, 2, 0},
                                    {{1, 3, 4, 7}, {2, 3, 2, 2}, true, 1, 1}};
  std::uint64_t stream = 101;
  for (const ConvCase& test : cases) {
    const std::uint64_t inputs_stream = stream;
    const Shape out_shape = output_shape(test);
    const std::uint64_t g_stream = stream + 3;  // g = dL/d(out) for L = Σ out · g
    stream += 4;
    // Forward and backward in one call, on inputs made for it: the output, then the gradients of
    // x, the weight and (when there is one) the bias.
    const auto run = observe("Im2colConv2dFunction::apply(x, weight, bias, stride, padding), then out.backward(g), with " +
                                 describe(test),
                             [&] {
                               Inputs in = inputs_of(test, inputs_stream);
                               in.x.set_requires_grad(true);
                               in.weight.set_requires_grad(true);
                               if (in.bias) in.bias->set_requires_grad(true);
                               Tensor out = Im2colConv2dFunction::apply(in.x, in.weight, in.bias, test.stride, test.padding);
                               out.backward(random_tensor(out_shape, g_stream, -0.5f, 0.5f));
                               std::vector<Tensor> grads{in.x.grad(), in.weight.grad()};
                               if (in.bias) grads.push_back(in.bias->grad());
                               return std::make_pair(out, grads);
                             });
    if (!KILN_EXPECT_OK(run, "input_grad_differs")) return;
    KILN_JUDGE {
      const auto& [out, grads] = *run;
      if (out.shape != out_shape || grads.size() != (test.has_bias ? 3u : 2u)) {
        KILN_FAIL("input_grad_differs", {{"difference", "inf"}},
                  fmt::format("{}: the output has shape {}, expected {} (run the im2col_conv2d check first), and {} "
                              "gradients came back, expected {}",
                              describe(test), to_string(out.shape), to_string(out_shape), grads.size(),
                              test.has_bias ? 3 : 2));
        return;
      }
      const Inputs in = inputs_of(test, inputs_stream);
      const TensorData g = data_of(random_tensor(out_shape, g_stream, -0.5f, 0.5f));
      const Gradients expected = direct_conv_gradients(data_of(in.x), data_of(in.weight), g, test.stride, test.padding);
      // Each gradient as the observation of its own, named for the report.
      const auto gradient = [&](std::size_t i, const std::string& of) {
        return testing::Observed<TensorData>("the " + of + " gradient with " + describe(test), grads[i]);
      };
      bool close = KILN_EXPECT_CLOSE(gradient(1, "weight"), expected.weight, 1e-4, "weight_grad_differs");
      close = KILN_EXPECT_CLOSE(gradient(0, "input"), expected.x, 1e-4, "input_grad_differs") && close;
      if (in.bias) close = KILN_EXPECT_CLOSE(gradient(2, "bias"), expected.bias, 1e-4, "bias_grad_differs") && close;
      if (!close) return;
    }
  }
}

}  // namespace
}  // namespace kiln
