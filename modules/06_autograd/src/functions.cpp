// The backward formulas of the differentiable operations, and the broadcasting reduction they
// share. Yours to write. Each backward() receives grad_output = dL/d(output), with the output's
// shape, and returns dL/d(input) for every input, in the order of `inputs`, each with that
// input's shape. The operation's inputs are inputs[0], inputs[1]; its settings (dim, keepdim,
// dim0, dim1) are members of the node. Module 01's plain operations (+, -, *, kiln::matmul,
// sum, reshape, transpose, unsqueeze, expand, greater) are all you need.
#include <vector>

#include "kiln/autograd.h"

namespace kiln::autograd {

Tensor reduce_to_shape(const Tensor& grad, const Shape& shape) {
  // Broadcasting read some input values many times, so their gradients must be summed.
  // 1. While grad has more dimensions than shape, sum away dimension 0 (added by broadcasting).
  // 2. Then for every dimension d where shape[d] == 1 but grad's size is larger, sum over d with
  //    keepdim = true. Example: (2, 3, 4) to (3, 1) sums dimension 0, then dimension 1 of (3, 4).
  // The result has exactly `shape`.
  // grad may be a view, at an offset too: read it through tensor operations or data(), never
  // storage_data().
  throw kiln::NotImplemented();
}

std::vector<Tensor> AddFunction::backward(const Tensor& grad_output) {
  // d(a + b)/da = d(a + b)/db = 1: both receive grad_output, reduced to their own shapes.
  throw kiln::NotImplemented();
}

std::vector<Tensor> SubFunction::backward(const Tensor& grad_output) {
  // d(a - b)/da = 1, d(a - b)/db = -1. Reduce each to its input's shape.
  throw kiln::NotImplemented();
}

std::vector<Tensor> MulFunction::backward(const Tensor& grad_output) {
  // d(a·b)/da = b and d(a·b)/db = a, elementwise: multiply grad_output by the OTHER input, then
  // reduce to the input's shape.
  throw kiln::NotImplemented();
}

std::vector<Tensor> MatmulFunction::backward(const Tensor& grad_output) {
  // C = A·B with A (n, k), B (k, m); grad_output G = dL/dC is (n, m).
  //   dL/dA = G·Bᵀ: (n, m)·(m, k) = (n, k)      dL/dB = Aᵀ·G: (k, n)·(n, m) = (k, m)
  // Use kiln::matmul (module 01's) and transpose(0, 1).
  throw kiln::NotImplemented();
}

std::vector<Tensor> SumFunction::backward(const Tensor& grad_output) {
  // Every element enters the sum with weight 1: each receives the scalar grad_output. Broadcast
  // it to the input's shape (expand) and make it contiguous.
  throw kiln::NotImplemented();
}

std::vector<Tensor> SumDimFunction::backward(const Tensor& grad_output) {
  // Every element along `dim` receives the gradient of the sum it went into. Without keepdim the
  // summed dimension is missing from grad_output: put it back with unsqueeze(dim), then expand
  // to the input's shape. Example: x (2, 3), dim 1: grad_output (2,) -> (2, 1) -> (2, 3).
  throw kiln::NotImplemented();
}

std::vector<Tensor> ReshapeFunction::backward(const Tensor& grad_output) {
  // A reshape moves no values: the gradient is grad_output with the input's shape.
  throw kiln::NotImplemented();
}

std::vector<Tensor> TransposeFunction::backward(const Tensor& grad_output) {
  // Swapping dim0 and dim1 once more undoes the transpose.
  throw kiln::NotImplemented();
}

std::vector<Tensor> ReluFunction::backward(const Tensor& grad_output) {
  // relu'(x) is 1 where the INPUT x > 0 and 0 elsewhere (take 0 at x = 0, and at a NaN x, where
  // relu gave 0): multiply grad_output by that mask (greater(x, 0) gives 1.0 and 0.0).
  // x and grad_output may be views at an offset: read them through tensor operations or data(),
  // never storage_data().
  throw kiln::NotImplemented();
}

}  // namespace kiln::autograd
