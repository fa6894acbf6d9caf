// Convolution and max pooling by direct loops, forward and backward.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kiln/conv.h"

namespace kiln {

std::int64_t conv_output_size(std::int64_t size, int kernel_size, int stride, int padding) {
  return (size + 2 * static_cast<std::int64_t>(padding) - kernel_size) / stride + 1;
}

Conv2d::Conv2d(int in_channels, int out_channels, int kernel_size, int stride, int padding,
               bool with_bias, WichmannHill& generator)
    : in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(kernel_size),
      stride(stride),
      padding(padding) {
  // Kaiming-uniform style: every output sums C·k·k products, so drawing each weight from
  // [-1/√(C·k·k), 1/√(C·k·k)] keeps the outputs' spread independent of the layer's size.
  const double fan_in = static_cast<double>(in_channels) * kernel_size * kernel_size;
  const double bound = 1.0 / std::sqrt(fan_in);
  const auto draw = [&] { return static_cast<float>(bound * (2.0 * generator.next() - 1.0)); };

  // weight (out_ch, C, k, k), drawn in row-major order.
  std::vector<float> weights(static_cast<std::size_t>(out_channels) * in_channels * kernel_size * kernel_size);
  for (float& w : weights) w = draw();
  weight = Tensor({out_channels, in_channels, kernel_size, kernel_size}, weights);
  weight.set_requires_grad(true);

  if (with_bias) {
    std::vector<float> biases(static_cast<std::size_t>(out_channels));
    for (float& b : biases) b = draw();
    bias = Tensor({out_channels}, biases);
    bias.set_requires_grad(true);
  } else {
    bias = Tensor(Shape{0}, {});
  }
}

Tensor Conv2dFunction::forward() {
  const Tensor x = inputs[0].contiguous();  // (N, C, H, W)
  const Tensor w = inputs[1].contiguous();  // (out_ch, C, k, k)
  if (x.size(1) != w.size(1)) {
    throw ShapeError("conv2d: input " + to_string(x.shape()) + " has " + std::to_string(x.size(1)) +
                     " channels but weight " + to_string(w.shape()) + " expects " +
                     std::to_string(w.size(1)));
  }
  const bool has_bias = inputs.size() == 3;
  const Tensor b = has_bias ? inputs[2].contiguous() : Tensor();
  const std::int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const std::int64_t out_ch = w.size(0), k = w.size(2);
  const std::int64_t out_h = conv_output_size(H, static_cast<int>(k), stride, padding);
  const std::int64_t out_w = conv_output_size(W, static_cast<int>(k), stride, padding);

  // out (N, out_ch, out_h, out_w), row-major.
  Tensor out = Tensor::zeros({N, out_ch, out_h, out_w});
  const float* x_data = x.data();
  const float* w_data = w.data();
  float* out_data = out.data();
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t oc = 0; oc < out_ch; ++oc) {
      for (std::int64_t oh = 0; oh < out_h; ++oh) {
        for (std::int64_t ow = 0; ow < out_w; ++ow) {
          float total = has_bias ? b.data()[oc] : 0.0f;
          for (std::int64_t c = 0; c < C; ++c) {
            for (std::int64_t kh = 0; kh < k; ++kh) {
              const std::int64_t ih = oh * stride - padding + kh;
              if (ih < 0 || ih >= H) continue;  // zero padding above or below
              for (std::int64_t kw = 0; kw < k; ++kw) {
                const std::int64_t iw = ow * stride - padding + kw;
                if (iw < 0 || iw >= W) continue;  // zero padding left or right
                total += x_data[((n * C + c) * H + ih) * W + iw] * w_data[((oc * C + c) * k + kh) * k + kw];
              }
            }
          }
          out_data[((n * out_ch + oc) * out_h + oh) * out_w + ow] = total;
        }
      }
    }
  }
  return out;
}

std::vector<Tensor> Conv2dFunction::backward(const Tensor& grad_output) {
  const Tensor x = inputs[0].contiguous();       // (N, C, H, W)
  const Tensor w = inputs[1].contiguous();       // (out_ch, C, k, k)
  const Tensor g = grad_output.contiguous();     // (N, out_ch, out_h, out_w)
  const bool has_bias = inputs.size() == 3;
  const std::int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const std::int64_t out_ch = w.size(0), k = w.size(2);
  const std::int64_t out_h = g.size(2), out_w = g.size(3);

  // The gradients have the shapes of x, weight and bias.
  Tensor grad_x = Tensor::zeros(x.shape());
  Tensor grad_w = Tensor::zeros(w.shape());
  Tensor grad_b = Tensor::zeros({out_ch});
  const float* x_data = x.data();
  const float* w_data = w.data();
  const float* g_data = g.data();
  float* gx = grad_x.data();
  float* gw = grad_w.data();
  float* gb = grad_b.data();

  // Each output element out[n, oc, oh, ow] was bias[oc] plus a sum of x·w products: send its
  // gradient back along every one of them.
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t oc = 0; oc < out_ch; ++oc) {
      for (std::int64_t oh = 0; oh < out_h; ++oh) {
        for (std::int64_t ow = 0; ow < out_w; ++ow) {
          const float go = g_data[((n * out_ch + oc) * out_h + oh) * out_w + ow];
          gb[oc] += go;
          for (std::int64_t c = 0; c < C; ++c) {
            for (std::int64_t kh = 0; kh < k; ++kh) {
              const std::int64_t ih = oh * stride - padding + kh;
              if (ih < 0 || ih >= H) continue;
              for (std::int64_t kw = 0; kw < k; ++kw) {
                const std::int64_t iw = ow * stride - padding + kw;
                if (iw < 0 || iw >= W) continue;
                const std::int64_t x_index = ((n * C + c) * H + ih) * W + iw;
                const std::int64_t w_index = ((oc * C + c) * k + kh) * k + kw;
                gx[x_index] += go * w_data[w_index];
                gw[w_index] += go * x_data[x_index];
              }
            }
          }
        }
      }
    }
  }
  if (has_bias) return {grad_x, grad_w, grad_b};
  return {grad_x, grad_w};
}

Tensor MaxPool2dFunction::forward() {
  const Tensor x = inputs[0].contiguous();  // (N, C, H, W)
  const std::int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const std::int64_t out_h = (H - kernel_size) / stride + 1;
  const std::int64_t out_w = (W - kernel_size) / stride + 1;

  // out (N, C, out_h, out_w), row-major; argmax has one entry per output element, same order.
  Tensor out = Tensor::zeros({N, C, out_h, out_w});
  argmax.assign(static_cast<std::size_t>(out.numel()), 0);
  const float* x_data = x.data();
  float* out_data = out.data();
  for (std::int64_t n = 0; n < N; ++n) {
    for (std::int64_t c = 0; c < C; ++c) {
      for (std::int64_t oh = 0; oh < out_h; ++oh) {
        for (std::int64_t ow = 0; ow < out_w; ++ow) {
          // The window covers rows oh·stride .. oh·stride + k - 1 and the same for columns.
          float best = -std::numeric_limits<float>::infinity();
          std::int64_t best_index = ((n * C + c) * H + oh * stride) * W + ow * stride;
          for (std::int64_t kh = 0; kh < kernel_size; ++kh) {
            for (std::int64_t kw = 0; kw < kernel_size; ++kw) {
              const std::int64_t ih = oh * stride + kh;
              const std::int64_t iw = ow * stride + kw;
              const std::int64_t x_index = ((n * C + c) * H + ih) * W + iw;
              // Strictly greater: on a tie the first maximum keeps the gradient.
              if (x_data[x_index] > best) {
                best = x_data[x_index];
                best_index = x_index;
              }
            }
          }
          const std::int64_t out_index = ((n * C + c) * out_h + oh) * out_w + ow;
          out_data[out_index] = best;
          argmax[static_cast<std::size_t>(out_index)] = best_index;
        }
      }
    }
  }
  return out;
}

std::vector<Tensor> MaxPool2dFunction::backward(const Tensor& grad_output) {
  const Tensor g = grad_output.contiguous();  // (N, C, out_h, out_w), the order of argmax
  Tensor grad_x = Tensor::zeros(inputs[0].shape());
  const float* go = g.data();
  float* gx = grad_x.data();
  // Only the element a window took influenced the output; overlapping windows may take the same
  // element, so its gradients add up.
  for (std::size_t i = 0; i < argmax.size(); ++i) gx[argmax[i]] += go[i];
  return {grad_x};
}

}  // namespace kiln
