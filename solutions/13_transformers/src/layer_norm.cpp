// Layer normalisation as one node of module 06's graph: its forward pass row by row, and the
// backward pass derived by hand.
#include <cmath>
#include <string>
#include <vector>

#include "kiln/transformer.h"

namespace kiln::nn {

Tensor layer_norm(const Tensor& x, const Tensor& gain, const Tensor& bias, double eps) {
  if (x.dim() < 1) throw ShapeError("layer_norm needs x (..., D), got " + to_string(x.shape()));
  const Shape row_shape{x.size(-1)};
  if (gain.shape() != row_shape) {
    throw ShapeError("layer_norm: x " + to_string(x.shape()) + " and gain " + to_string(gain.shape()));
  }
  if (bias.shape() != row_shape) {
    throw ShapeError("layer_norm: x " + to_string(x.shape()) + " and bias " + to_string(bias.shape()));
  }
  return LayerNormFunction::apply(x, gain, bias, eps);
}

Tensor LayerNormFunction::forward() {
  const Tensor x = inputs[0].contiguous();
  const std::vector<float> gain = inputs[1].to_vector();
  const std::vector<float> bias = inputs[2].to_vector();
  const std::int64_t width = x.size(-1);
  const std::int64_t rows = width == 0 ? 0 : x.numel() / width;
  // normalized (rows, D) and inv_std (rows), row-major; y has x's shape.
  normalized = Tensor::zeros({rows, width});
  inv_std = Tensor::zeros({rows});
  Tensor y = Tensor::zeros(x.shape());
  const float* in = x.data();
  float* x_hat = normalized.data();
  float* r = inv_std.data();
  float* out = y.data();
  for (std::int64_t row = 0; row < rows; ++row) {
    const float* x_row = in + row * width;
    double mean = 0.0;
    for (std::int64_t j = 0; j < width; ++j) mean += x_row[j];
    mean /= static_cast<double>(width);
    double variance = 0.0;
    for (std::int64_t j = 0; j < width; ++j) variance += (x_row[j] - mean) * (x_row[j] - mean);
    variance /= static_cast<double>(width);  // biased: 1/D, as PyTorch's LayerNorm
    const double inverse = 1.0 / std::sqrt(variance + eps);
    r[row] = static_cast<float>(inverse);
    for (std::int64_t j = 0; j < width; ++j) {
      const double normal = (x_row[j] - mean) * inverse;
      x_hat[row * width + j] = static_cast<float>(normal);
      out[row * width + j] = static_cast<float>(gain[j] * normal + bias[j]);
    }
  }
  return y;
}

std::vector<Tensor> LayerNormFunction::backward(const Tensor& grad_output) {
  const Tensor g = grad_output.contiguous();
  const std::vector<float> gain = inputs[1].to_vector();
  const std::int64_t rows = normalized.shape()[0];
  const std::int64_t width = normalized.shape()[1];
  Tensor grad_x = Tensor::zeros(inputs[0].shape());
  Tensor grad_gain = Tensor::zeros({width});
  Tensor grad_bias = Tensor::zeros({width});
  const float* g_values = g.data();
  const float* x_hat = normalized.data();
  const float* r = inv_std.data();
  float* dx = grad_x.data();
  float* dgain = grad_gain.data();
  float* dbias = grad_bias.data();
  for (std::int64_t row = 0; row < rows; ++row) {
    const float* g_row = g_values + row * width;
    const float* x_hat_row = x_hat + row * width;
    // The two means of the row: mean(ĝ) and mean(ĝ ⊙ x̂), with ĝ = g ⊙ gain.
    double mean_g = 0.0, mean_g_x = 0.0;
    for (std::int64_t j = 0; j < width; ++j) {
      const double g_hat = static_cast<double>(g_row[j]) * gain[j];
      mean_g += g_hat;
      mean_g_x += g_hat * x_hat_row[j];
    }
    mean_g /= static_cast<double>(width);
    mean_g_x /= static_cast<double>(width);
    for (std::int64_t j = 0; j < width; ++j) {
      const double g_hat = static_cast<double>(g_row[j]) * gain[j];
      dx[row * width + j] = static_cast<float>(r[row] * (g_hat - mean_g - x_hat_row[j] * mean_g_x));
      dgain[j] += g_row[j] * x_hat_row[j];
      dbias[j] += g_row[j];
    }
  }
  return {grad_x, grad_gain, grad_bias};
}

}  // namespace kiln::nn
