// The Linear layer: Kaiming initialisation, y = x·W + b, and its backward pass by hand.
// Every tensor a function here is given may be a view, also a contiguous one that starts inside
// its storage (contiguous() returns it as it is): read it through its offset and strides, or
// from data(), never from storage_data() as if it began at the storage's first float;
// linear_forward and linear_backward take views too.
#include <cmath>
#include <optional>
#include <vector>

#include "kiln/layers.h"

namespace kiln {

Linear::Linear(int in_features, int out_features, bool bias, WichmannHill& generator) {
  // Store in_features and out_features. Then Kaiming uniform, exactly:
  //   bound = std::sqrt(6.0 / in_features)                       (in double)
  //   weight (in_features, out_features), row-major, each value
  //     static_cast<float>(bound * (2.0 * generator.next() - 1.0)) in row-major order
  //   bias = zeros (out_features) when bias is true, else the empty Tensor(Shape{0}, {});
  //   no draws for the bias
  //   weight_grad and bias_grad = zeros of weight's and bias's shapes (zero_grad() does that)
  // (The parameter `bias` hides the member: write this->bias for the member.)
  throw kiln::NotImplemented();
}

Tensor linear_forward(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias) {
  // y = x·weight: (N, in)·(in, out) = (N, out). Use blas_matmul (or a rung of your ladder); its
  // shape check names both shapes when x does not fit. Then, when there is a bias, add *bias,
  // shape (out): module 01's + broadcasts it over the N rows.
  throw kiln::NotImplemented();
}

LinearGradients linear_backward(const Tensor& x, const Tensor& weight, const Tensor& grad_output,
                                bool has_bias) {
  // G = grad_output (N, out). Work out each gradient from y[n, o] = Σ_i x[n, i]·W[i, o] + b[o]:
  //   input  = G·weightᵀ   (N, out)·(out, in) = (N, in)
  //   weight = xᵀ·G        (in, N)·(N, out)   = (in, out)
  //   bias   = G summed over its rows (dimension 0) = (out) when has_bias, else Tensor(Shape{0}, {})
  // transpose(0, 1) gives a view; blas_matmul accepts views. Let the shapes check you: each
  // gradient has the shape of the tensor it belongs to.
  // An empty batch (N = 0) is allowed: linear_backward then gives an input gradient (0, in) and
  // weight and bias gradients of zeros, sums of no terms.
  throw kiln::NotImplemented();
}

}  // namespace kiln
