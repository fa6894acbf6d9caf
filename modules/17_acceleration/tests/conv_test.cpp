// Checks im2col_conv2d and Im2colConv2dFunction against a direct convolution written out here, in
// double precision, so that a mistake in module 09's Conv2d is never blamed on this module.
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/acceleration.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::compare;
using testing::format_number;

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

// Values in [-0.5, 0.5).
Tensor centred(const Shape& shape, WichmannHill& generator) { return Tensor::rand(shape, generator) - 0.5f; }

std::int64_t out_size(std::int64_t size, std::int64_t k, int stride, int padding) {
  return (size + 2 * padding - k) / stride + 1;
}

// Trusted: out[n, o, oh, ow] = bias[o] + Σ_{c, kh, kw} weight[o, c, kh, kw] · x[n, c, oh·s - p + kh, ow·s - p + kw].
Tensor direct_conv(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, int stride, int padding) {
  const std::int64_t batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  const std::int64_t out_channels = weight.shape()[0], k = weight.shape()[2];
  const std::int64_t out_h = out_size(height, k, stride, padding), out_w = out_size(width, k, stride, padding);
  Tensor out = Tensor::zeros({batch, out_channels, out_h, out_w});
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t o = 0; o < out_channels; ++o)
      for (std::int64_t oh = 0; oh < out_h; ++oh)
        for (std::int64_t ow = 0; ow < out_w; ++ow) {
          double total = bias ? bias->at({o}) : 0.0;
          for (std::int64_t c = 0; c < channels; ++c)
            for (std::int64_t kh = 0; kh < k; ++kh)
              for (std::int64_t kw = 0; kw < k; ++kw) {
                const std::int64_t ih = oh * stride - padding + kh, iw = ow * stride - padding + kw;
                if (ih < 0 || ih >= height || iw < 0 || iw >= width) continue;
                total += static_cast<double>(weight.at({o, c, kh, kw})) * x.at({n, c, ih, iw});
              }
          out.set({n, o, oh, ow}, static_cast<float>(total));
        }
  return out;
}

struct Gradients {
  Tensor x, weight, bias;
};

// Trusted: the gradients of Σ out · g, from the same loops as direct_conv.
Gradients direct_conv_gradients(const Tensor& x, const Tensor& weight, const Tensor& g, int stride, int padding) {
  const std::int64_t batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  const std::int64_t out_channels = weight.shape()[0], k = weight.shape()[2];
  const std::int64_t out_h = g.shape()[2], out_w = g.shape()[3];
  std::vector<double> dx(static_cast<std::size_t>(x.numel())), dw(static_cast<std::size_t>(weight.numel())),
      db(static_cast<std::size_t>(out_channels));
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
  auto to_tensor = [](const Shape& shape, const std::vector<double>& values) {
    return Tensor(shape, std::vector<float>(values.begin(), values.end()));
  };
  return {to_tensor(x.shape(), dx), to_tensor(weight.shape(), dw), to_tensor({out_channels}, db)};
}

// Reports failure_id with the largest difference and the case; returns whether it was close.
bool check_close(const Tensor& actual, const Tensor& expected, double tolerance, const char* failure_id,
                 const std::string& what) {
  const testing::Comparison result = compare(actual, expected, tolerance);
  if (result.close) return true;
  KILN_FAIL(failure_id, {{"difference", format_number(result.max_abs_diff)}, {"where", to_string(result.where)}},
            fmt::format("{}: got shape {}, expected {}; {}", what, to_string(actual.shape()),
                        to_string(expected.shape()), result.describe()));
  return false;
}

TEST(Acceleration, Im2colConv2d) {
  const std::vector<ConvCase> cases{{{2, 3, 5, 5}, {4, 3, 3, 3}, true, 1, 1},
                                    {{2, 3, 6, 6}, {2, 3, 2, 2}, false, 2, 0},
                                    {{1, 2, 5, 6}, {3, 2, 3, 3}, true, 2, 1}};
  struct Example {
    ConvCase setting;
    Tensor x, weight;
    std::optional<Tensor> bias;
    Tensor expected;
  };
  std::vector<Example> examples;
  WichmannHill generator(9);
  for (const ConvCase& test : cases) {
    const Tensor x = centred(test.x_shape, generator);
    const Tensor weight = centred(test.weight_shape, generator);
    const std::optional<Tensor> bias =
        test.has_bias ? std::optional<Tensor>(centred({test.weight_shape[0]}, generator)) : std::nullopt;
    examples.push_back({test, x, weight, bias, direct_conv(x, weight, bias, test.stride, test.padding)});
  }
  // im2col_conv2d first, then the Function's forward pass, which must give the same numbers.
  for (const Example& e : examples) {
    if (!check_close(im2col_conv2d(e.x, e.weight, e.bias, e.setting.stride, e.setting.padding), e.expected, 1e-5,
                     "conv_differs", "im2col_conv2d, " + describe(e.setting))) {
      return;
    }
  }
  for (const Example& e : examples) {
    if (!check_close(Im2colConv2dFunction::apply(e.x, e.weight, e.bias, e.setting.stride, e.setting.padding),
                     e.expected, 1e-5, "conv_differs", "Im2colConv2dFunction::apply, " + describe(e.setting))) {
      return;
    }
  }
}

TEST(Acceleration, Im2colConv2dFunction) {
  const std::vector<ConvCase> cases{{{2, 3, 5, 5}, {4, 3, 3, 3}, true, 1, 1},
                                    {{2, 2, 7, 6}, {3, 2, 3, 3}, false, 2, 0}};
  WichmannHill generator(6);
  for (const ConvCase& test : cases) {
    Tensor x = centred(test.x_shape, generator);
    Tensor weight = centred(test.weight_shape, generator);
    x.set_requires_grad(true);
    weight.set_requires_grad(true);
    std::optional<Tensor> bias;
    if (test.has_bias) {
      bias = centred({test.weight_shape[0]}, generator);
      bias->set_requires_grad(true);
    }
    const std::int64_t k = test.weight_shape[2];
    const Shape out_shape{test.x_shape[0], test.weight_shape[0], out_size(test.x_shape[2], k, test.stride, test.padding),
                          out_size(test.x_shape[3], k, test.stride, test.padding)};
    const Tensor g = centred(out_shape, generator);  // dL/d(out) for L = Σ out · g

    Tensor out = Im2colConv2dFunction::apply(x, weight, bias, test.stride, test.padding);
    if (out.shape() != out_shape) {
      KILN_FAIL("input_grad_differs", {{"difference", "inf"}},
                fmt::format("{}: the output has shape {}, expected {} (run the im2col_conv2d check first)",
                            describe(test), to_string(out.shape()), to_string(out_shape)));
      return;
    }
    out.backward(g);
    const Gradients expected = direct_conv_gradients(x, weight, g, test.stride, test.padding);
    const std::string what = describe(test);
    bool close = check_close(weight.grad(), expected.weight, 1e-4, "weight_grad_differs", "weight gradient, " + what);
    close = check_close(x.grad(), expected.x, 1e-4, "input_grad_differs", "input gradient, " + what) && close;
    if (bias) close = check_close(bias->grad(), expected.bias, 1e-4, "bias_grad_differs", "bias gradient, " + what) && close;
    if (!close) return;
  }
}

}  // namespace
}  // namespace kiln
