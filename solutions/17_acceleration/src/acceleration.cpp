// Module 17, Acceleration: reference solution.
#include "kiln/acceleration.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

namespace {

void require_matrices(const Tensor& a, const Tensor& b, const char* name) {
  if (a.dim() != 2 || b.dim() != 2 || a.shape()[1] != b.shape()[0]) {
    throw ShapeError(std::string(name) + " needs (n, k) and (k, m) matrices, got " + to_string(a.shape()) +
                     " and " + to_string(b.shape()));
  }
}

// Output height (or width) of a k×k window sliding with `stride` over `size` padded pixels.
std::int64_t output_size(std::int64_t size, int kernel_size, int stride, int padding) {
  return (size + 2 * padding - kernel_size) / stride + 1;
}

// Checks the window arguments against x_shape (N, C, H, W); names `function` in the errors.
void require_window(const Shape& x_shape, int kernel_size, int stride, int padding, const char* function) {
  if (kernel_size < 1 || stride < 1 || padding < 0) {
    throw IndexError(std::string(function) + " needs kernel_size >= 1, stride >= 1 and padding >= 0, got " +
                     std::to_string(kernel_size) + ", " + std::to_string(stride) + " and " +
                     std::to_string(padding));
  }
  if (x_shape.size() != 4) {
    throw ShapeError(std::string(function) + " needs an image batch (N, C, H, W), got " + to_string(x_shape));
  }
  if (x_shape[2] + 2 * padding < kernel_size || x_shape[3] + 2 * padding < kernel_size) {
    throw ShapeError(std::string(function) + ": a " + std::to_string(kernel_size) + "x" +
                     std::to_string(kernel_size) + " window does not fit in " + to_string(x_shape) +
                     " with padding " + std::to_string(padding));
  }
}

// Checks weight (out_ch, C, k, k) and bias (out_ch) against x (N, C, H, W).
void require_conv_parameters(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
  const Shape& w = weight.shape();
  if (x.dim() != 4 || w.size() != 4 || w[1] != x.shape()[1] || w[2] != w[3]) {
    throw ShapeError("im2col_conv2d needs x (N, C, H, W) and a square weight (out_ch, C, k, k), got " +
                     to_string(x.shape()) + " and " + to_string(w));
  }
  if (bias && bias->shape() != Shape{w[0]}) {
    throw ShapeError("im2col_conv2d needs a bias of shape (" + std::to_string(w[0]) + "), got " +
                     to_string(bias->shape()));
  }
}

// The convolution's output from its patch matrix: one matrix multiply, the bias, and a move of
// the channels to the second position.
Tensor conv_from_cols(const Tensor& cols, const Tensor& weight, const std::optional<Tensor>& bias,
                      std::int64_t batch, std::int64_t out_h, std::int64_t out_w) {
  const std::int64_t out_channels = weight.shape()[0];
  const std::int64_t patch_size = cols.shape()[1];
  // (out_ch, C, k, k) flattens to (out_ch, C·k·k), each row in (c, kh, kw) order like the columns
  // of cols; transposed it is (C·k·k, out_ch), so cols · weight_cols pairs the same (c, kh, kw).
  const Tensor weight_cols = weight.reshape({out_channels, patch_size}).transpose(0, 1);
  Tensor rows = vectorized_matmul(cols, weight_cols);  // (N·out_h·out_w, out_ch)
  if (bias) rows = rows + bias->reshape({1, out_channels});
  // (N·out_h·out_w, out_ch) is (N, out_h, out_w, out_ch); bring out_ch forward.
  return rows.reshape({batch, out_h, out_w, out_channels}).transpose(2, 3).transpose(1, 2).contiguous();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Matrix multiply

Tensor tiled_matmul(const Tensor& a, const Tensor& b, int tile_size) {
  require_matrices(a, b, "tiled_matmul");
  if (tile_size < 1) throw IndexError("tiled_matmul needs tile_size >= 1, got " + std::to_string(tile_size));
  const std::int64_t n = a.shape()[0];
  const std::int64_t inner = a.shape()[1];
  const std::int64_t m = b.shape()[1];
  const std::int64_t tile = tile_size;
  // Layouts (row-major): a is (n, inner), b is (inner, m), c is (n, m).
  const Tensor a_rows = a.contiguous();
  const Tensor b_rows = b.contiguous();
  const float* a_data = a_rows.data();
  const float* b_data = b_rows.data();
  Tensor c = Tensor::zeros({n, m});
  float* c_data = c.data();

  // One output tile C[i0:i_end, j0:j_end] at a time; it collects A_tile · B_tile from every tile
  // along the inner dimension. While it does, the three tiles in use (t² floats each) stay in L1.
  for (std::int64_t i0 = 0; i0 < n; i0 += tile) {
    const std::int64_t i_end = std::min(i0 + tile, n);
    for (std::int64_t j0 = 0; j0 < m; j0 += tile) {
      const std::int64_t j_end = std::min(j0 + tile, m);
      for (std::int64_t k0 = 0; k0 < inner; k0 += tile) {
        const std::int64_t k_end = std::min(k0 + tile, inner);
        // Inside the tiles, i-k-j order: the innermost loop walks rows of b and a row of c. It
        // takes four rows of b at a time, so that each element of c is loaded and stored once per
        // four products instead of once per product; a tile's inner loop is short (t values), and
        // without this its loads and stores of c cost more than the tiling saves at small sizes.
        for (std::int64_t i = i0; i < i_end; ++i) {
          float* c_row = c_data + i * m;
          const float* a_row = a_data + i * inner;
          std::int64_t k = k0;
          for (; k + 4 <= k_end; k += 4) {
            const float a0 = a_row[k], a1 = a_row[k + 1], a2 = a_row[k + 2], a3 = a_row[k + 3];
            const float* b0 = b_data + k * m;
            const float* b1 = b0 + m;
            const float* b2 = b1 + m;
            const float* b3 = b2 + m;
            for (std::int64_t j = j0; j < j_end; ++j) c_row[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
          }
          for (; k < k_end; ++k) {
            const float a_ik = a_row[k];
            const float* b_row = b_data + k * m;
            for (std::int64_t j = j0; j < j_end; ++j) c_row[j] += a_ik * b_row[j];
          }
        }
      }
    }
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Challenge: a packed, register-blocked matrix multiply (the GotoBLAS / BLIS design)

namespace {

// One vector register of floats, as wide as the machine the bench builds for (-march=native):
// 16 floats with AVX-512, 8 otherwise (one AVX register, a pair of SSE registers on a plain x86-64
// build, generic code elsewhere). Arithmetic works element by element; a float operand is
// broadcast to every lane.
#ifdef __AVX512F__
constexpr std::int64_t kLanes = 16;
#else
constexpr std::int64_t kLanes = 8;
#endif
typedef float vf __attribute__((vector_size(kLanes * sizeof(float))));

// The register block: the micro-kernel keeps kMR × kNR floats of C, two vectors per row, in
// 2·kMR = 12 vector registers, leaving 4 of AVX2's 16 for two vectors of B and one broadcast value
// of A (AVX-512 has 32 registers and twice the lanes: the same 12 registers hold twice the block).
constexpr std::int64_t kMR = 6;
constexpr std::int64_t kNR = 2 * kLanes;
// The cache blocks. One pass covers kKC values of the inner index: a packed panel of B,
// kKC × kNR floats (16 KiB, or 32 KiB with AVX-512), stays in L1 while the micro-kernel runs down
// a packed block of A, kMC × kKC floats (96 KiB), that stays in L2. B is packed kNC columns at a time (2 MiB, L3).
constexpr std::int64_t kKC = 256;
constexpr std::int64_t kMC = 96;    // a multiple of kMR
constexpr std::int64_t kNC = 2048;  // a multiple of kNR

// Packs B[k0 : k0 + kc, j0 : j0 + nc] (b is row-major with m columns) into panels of kNR
// columns. Panel q holds kc rows of kNR floats, row p at packed[(q·kc + p)·kNR], so that the
// micro-kernel reads it front to back. Columns past the edge of B are zeros: every panel is full.
void pack_b(const float* b, std::int64_t m, std::int64_t k0, std::int64_t kc, std::int64_t j0, std::int64_t nc,
            float* packed) {
  for (std::int64_t q = 0; q * kNR < nc; ++q) {
    const std::int64_t width = std::min(kNR, nc - q * kNR);
    for (std::int64_t p = 0; p < kc; ++p) {
      const float* b_row = b + (k0 + p) * m + j0 + q * kNR;
      float* out = packed + (q * kc + p) * kNR;
      for (std::int64_t col = 0; col < width; ++col) out[col] = b_row[col];
      for (std::int64_t col = width; col < kNR; ++col) out[col] = 0.0f;
    }
  }
}

// Packs A[i0 : i0 + mc, k0 : k0 + kc] (a is row-major with `inner` columns) into panels of kMR
// rows. Panel r holds kc columns of kMR floats, column p at packed[(r·kc + p)·kMR]: the kMR values
// of A that one step of the micro-kernel needs sit side by side. Rows past the edge are zeros.
void pack_a(const float* a, std::int64_t inner, std::int64_t i0, std::int64_t mc, std::int64_t k0, std::int64_t kc,
            float* packed) {
  for (std::int64_t r = 0; r * kMR < mc; ++r) {
    const std::int64_t height = std::min(kMR, mc - r * kMR);
    for (std::int64_t p = 0; p < kc; ++p) {
      float* out = packed + (r * kc + p) * kMR;
      for (std::int64_t row = 0; row < height; ++row) out[row] = a[(i0 + r * kMR + row) * inner + k0 + p];
      for (std::int64_t row = height; row < kMR; ++row) out[row] = 0.0f;
    }
  }
}

// C[0 : rows, 0 : cols] += (one packed panel of A, kMR × kc) · (one packed panel of B, kc × kNR),
// where c points at the block's top-left element and ldc is C's row length. The whole kMR × kNR
// block of C stays in registers for the loop over p: each step loads two vectors of B, broadcasts
// 6 floats of A, and does 12 vector multiply-adds (192 flops for 22 floats with 8 lanes).
void micro_kernel(std::int64_t kc, const float* a_panel, const float* b_panel, float* c, std::int64_t ldc,
                  std::int64_t rows, std::int64_t cols) {
  vf sum[kMR][2] = {};
  for (std::int64_t p = 0; p < kc; ++p) {
    vf b_left;
    vf b_right;
    std::memcpy(&b_left, b_panel + p * kNR, sizeof(vf));
    std::memcpy(&b_right, b_panel + p * kNR + kLanes, sizeof(vf));
    const float* a_column = a_panel + p * kMR;
    for (std::int64_t row = 0; row < kMR; ++row) {
      sum[row][0] += a_column[row] * b_left;
      sum[row][1] += a_column[row] * b_right;
    }
  }
  if (rows == kMR && cols == kNR) {
    // A full block: add the registers straight into C, two vectors per row.
    for (std::int64_t row = 0; row < kMR; ++row) {
      float* c_row = c + row * ldc;
      for (int half = 0; half < 2; ++half) {
        vf c_part;
        std::memcpy(&c_part, c_row + kLanes * half, sizeof(vf));
        c_part += sum[row][half];
        std::memcpy(c_row + kLanes * half, &c_part, sizeof(vf));
      }
    }
  } else {
    // An edge block: the panels were padded with zeros, so the extra rows and columns of `sum`
    // hold zeros too; add only the part that lies inside C.
    float block[kMR][kNR];
    std::memcpy(block, sum, sizeof(block));
    for (std::int64_t row = 0; row < rows; ++row) {
      for (std::int64_t col = 0; col < cols; ++col) c[row * ldc + col] += block[row][col];
    }
  }
}

}  // namespace

Tensor blocked_matmul(const Tensor& a, const Tensor& b) {
  require_matrices(a, b, "blocked_matmul");
  const std::int64_t n = a.shape()[0];
  const std::int64_t inner = a.shape()[1];
  const std::int64_t m = b.shape()[1];
  // Layouts (row-major): a is (n, inner), b is (inner, m), c is (n, m).
  const Tensor a_matrix = a.contiguous();
  const Tensor b_matrix = b.contiguous();
  Tensor c = Tensor::zeros({n, m});
  if (n == 0 || m == 0 || inner == 0) return c;
  const float* a_data = a_matrix.data();
  const float* b_data = b_matrix.data();
  float* c_data = c.data();

  // The packed copies, reused for every block: at most kMC × kKC floats of A, and kKC × kNC of B
  // (fewer when B is narrower).
  std::vector<float> a_packed(static_cast<std::size_t>(kMC * kKC));
  const std::int64_t b_width = std::min(kNC, (m + kNR - 1) / kNR * kNR);
  std::vector<float> b_packed(static_cast<std::size_t>(kKC * b_width));

  for (std::int64_t j0 = 0; j0 < m; j0 += kNC) {
    const std::int64_t nc = std::min(kNC, m - j0);
    for (std::int64_t k0 = 0; k0 < inner; k0 += kKC) {
      const std::int64_t kc = std::min(kKC, inner - k0);
      pack_b(b_data, m, k0, kc, j0, nc, b_packed.data());
      for (std::int64_t i0 = 0; i0 < n; i0 += kMC) {
        const std::int64_t mc = std::min(kMC, n - i0);
        pack_a(a_data, inner, i0, mc, k0, kc, a_packed.data());
        // The register blocks of this mc × nc block of C; the last in each direction may be cut
        // short by the edge of C, and round up so that it is not left out.
        const std::int64_t col_panels = (nc + kNR - 1) / kNR;
        const std::int64_t row_panels = (mc + kMR - 1) / kMR;
        for (std::int64_t q = 0; q < col_panels; ++q) {
          for (std::int64_t r = 0; r < row_panels; ++r) {
            micro_kernel(kc, a_packed.data() + r * kc * kMR, b_packed.data() + q * kc * kNR,
                         c_data + (i0 + r * kMR) * m + j0 + q * kNR, m, std::min(kMR, mc - r * kMR),
                         std::min(kNR, nc - q * kNR));
          }
        }
      }
    }
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// GELU

Tensor fused_gelu(const Tensor& x) {
  const float sqrt_2_over_pi = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  const Tensor input = x.contiguous();
  const float* in = input.data();
  std::vector<float> out(static_cast<std::size_t>(x.numel()));
  // One pass: each element is read once, transformed in registers and written once.
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float value = in[i];
    const float inner = sqrt_2_over_pi * (value + 0.044715f * value * value * value);
    const float tanh_inner = 1.0f - 2.0f / (std::exp(2.0f * inner) + 1.0f);
    out[i] = 0.5f * value * (1.0f + tanh_inner);
  }
  return Tensor(x.shape(), std::move(out));
}

// ---------------------------------------------------------------------------------------------
// im2col and col2im

Tensor im2col(const Tensor& x, int kernel_size, int stride, int padding) {
  require_window(x.shape(), kernel_size, stride, padding, "im2col");
  const std::int64_t batch = x.shape()[0];
  const std::int64_t channels = x.shape()[1];
  const std::int64_t height = x.shape()[2];
  const std::int64_t width = x.shape()[3];
  const std::int64_t k = kernel_size;
  const std::int64_t out_h = output_size(height, kernel_size, stride, padding);
  const std::int64_t out_w = output_size(width, kernel_size, stride, padding);
  const std::int64_t patch_size = channels * k * k;
  const Tensor image = x.contiguous();
  const float* x_data = image.data();
  // cols (N·out_h·out_w, C·k·k): row (n·out_h + oh)·out_w + ow, column (c·k + kh)·k + kw.
  Tensor cols = Tensor::zeros({batch * out_h * out_w, patch_size});
  float* cols_data = cols.data();

  // Caffe's loop order: channel, kernel row, kernel column, then the output positions.
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t kh = 0; kh < k; ++kh) {
        for (std::int64_t kw = 0; kw < k; ++kw) {
          const std::int64_t column = (c * k + kh) * k + kw;
          for (std::int64_t oh = 0; oh < out_h; ++oh) {
            const std::int64_t ih = oh * stride - padding + kh;
            if (ih < 0 || ih >= height) continue;  // a padding row: the zeros stay
            for (std::int64_t ow = 0; ow < out_w; ++ow) {
              const std::int64_t iw = ow * stride - padding + kw;
              if (iw < 0 || iw >= width) continue;
              const std::int64_t row = (n * out_h + oh) * out_w + ow;
              cols_data[row * patch_size + column] = x_data[((n * channels + c) * height + ih) * width + iw];
            }
          }
        }
      }
    }
  }
  return cols;
}

Tensor col2im(const Tensor& cols, const Shape& x_shape, int kernel_size, int stride, int padding) {
  require_window(x_shape, kernel_size, stride, padding, "col2im");
  const std::int64_t batch = x_shape[0];
  const std::int64_t channels = x_shape[1];
  const std::int64_t height = x_shape[2];
  const std::int64_t width = x_shape[3];
  const std::int64_t k = kernel_size;
  const std::int64_t out_h = output_size(height, kernel_size, stride, padding);
  const std::int64_t out_w = output_size(width, kernel_size, stride, padding);
  const std::int64_t patch_size = channels * k * k;
  const Shape cols_shape{batch * out_h * out_w, patch_size};
  if (cols.shape() != cols_shape) {
    throw ShapeError("col2im needs cols of shape " + to_string(cols_shape) + " for an image " +
                     to_string(x_shape) + ", got " + to_string(cols.shape()));
  }
  const Tensor patches = cols.contiguous();
  const float* cols_data = patches.data();
  // The image (N, C, H, W), starting from zeros: every patch adds its values where it came from.
  Tensor image = Tensor::zeros(x_shape);
  float* x_data = image.data();

  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t c = 0; c < channels; ++c) {
      for (std::int64_t kh = 0; kh < k; ++kh) {
        for (std::int64_t kw = 0; kw < k; ++kw) {
          const std::int64_t column = (c * k + kh) * k + kw;
          for (std::int64_t oh = 0; oh < out_h; ++oh) {
            const std::int64_t ih = oh * stride - padding + kh;
            if (ih < 0 || ih >= height) continue;  // it fell on the padding: dropped
            for (std::int64_t ow = 0; ow < out_w; ++ow) {
              const std::int64_t iw = ow * stride - padding + kw;
              if (iw < 0 || iw >= width) continue;
              const std::int64_t row = (n * out_h + oh) * out_w + ow;
              x_data[((n * channels + c) * height + ih) * width + iw] += cols_data[row * patch_size + column];
            }
          }
        }
      }
    }
  }
  return image;
}

// ---------------------------------------------------------------------------------------------
// Convolution as a matrix multiply

Tensor im2col_conv2d(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias, int stride,
                     int padding) {
  require_conv_parameters(x, weight, bias);
  const int kernel_size = static_cast<int>(weight.shape()[2]);
  const Tensor cols = im2col(x, kernel_size, stride, padding);  // (N·out_h·out_w, C·k·k)
  const std::int64_t out_h = output_size(x.shape()[2], kernel_size, stride, padding);
  const std::int64_t out_w = output_size(x.shape()[3], kernel_size, stride, padding);
  return conv_from_cols(cols, weight, bias, x.shape()[0], out_h, out_w);
}

// ---------------------------------------------------------------------------------------------
// The same convolution as an autograd Function

Tensor Im2colConv2dFunction::forward() {
  const Tensor& x = inputs[0];
  const Tensor& weight = inputs[1];
  const std::optional<Tensor> bias = inputs.size() > 2 ? std::optional<Tensor>(inputs[2]) : std::nullopt;
  require_conv_parameters(x, weight, bias);
  const int kernel_size = static_cast<int>(weight.shape()[2]);
  cols = im2col(x, kernel_size, stride, padding);  // (N·out_h·out_w, C·k·k), kept for backward
  const std::int64_t out_h = output_size(x.shape()[2], kernel_size, stride, padding);
  const std::int64_t out_w = output_size(x.shape()[3], kernel_size, stride, padding);
  return conv_from_cols(cols, weight, bias, x.shape()[0], out_h, out_w);
}

std::vector<Tensor> Im2colConv2dFunction::backward(const Tensor& grad_output) {
  const Tensor& x = inputs[0];
  const Tensor& weight = inputs[1];
  const int kernel_size = static_cast<int>(weight.shape()[2]);
  const std::int64_t out_channels = weight.shape()[0];
  const std::int64_t patch_size = cols.shape()[1];
  // grad_output (N, out_ch, out_h, out_w) moved to (N, out_h, out_w, out_ch), the layout of the
  // forward product's rows, then flattened: g is (N·out_h·out_w, out_ch).
  const Tensor g = grad_output.transpose(1, 2).transpose(2, 3).reshape({cols.shape()[0], out_channels});

  // The forward product was cols · weight_cols, weight_cols = weight flattened and transposed.
  // Its gradient colsᵀ · g is (C·k·k, out_ch): transpose it back before restoring the weight's shape.
  const Tensor grad_weight_cols = vectorized_matmul(cols.transpose(0, 1), g);
  const Tensor grad_weight = grad_weight_cols.transpose(0, 1).reshape(weight.shape());

  // The gradient of the patch matrix is g · weight_colsᵀ, with weight_colsᵀ the weight's rows
  // (out_ch, C·k·k); col2im adds each patch's share back where the patch came from.
  const Tensor weight_rows = weight.reshape({out_channels, patch_size});
  const Tensor grad_cols = vectorized_matmul(g, weight_rows);  // (N·out_h·out_w, C·k·k)
  const Tensor grad_x = col2im(grad_cols, x.shape(), kernel_size, stride, padding);

  if (inputs.size() == 2) return {grad_x, grad_weight};
  // Every output position added the bias once: its gradient sums g over the rows.
  return {grad_x, grad_weight, g.sum(0)};
}

}  // namespace kiln
