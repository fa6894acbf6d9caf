// The backward formulas of the differentiable operations, and the broadcasting reduction they
// share. Each backward() receives dL/d(output) and returns dL/d(input) for every input, in order.
#include <vector>

#include "kiln/autograd.h"

namespace kiln::autograd {

Tensor reduce_to_shape(const Tensor& grad, const Shape& shape) {
  Tensor result = grad;
  // Leading dimensions that broadcasting added: every one of them read the same input values.
  while (result.dim() > static_cast<std::int64_t>(shape.size())) result = result.sum(0);
  // Dimensions of size 1 that broadcasting stretched: sum them but keep them, with size 1.
  for (std::int64_t d = 0; d < result.dim(); ++d) {
    if (shape[d] == 1 && result.size(d) != 1) result = result.sum(d, /*keepdim=*/true);
  }
  return result;
}

std::vector<Tensor> AddFunction::backward(const Tensor& grad_output) {
  // d(a + b)/da = d(a + b)/db = 1.
  return {reduce_to_shape(grad_output, inputs[0].shape()),
          reduce_to_shape(grad_output, inputs[1].shape())};
}

std::vector<Tensor> SubFunction::backward(const Tensor& grad_output) {
  // d(a - b)/da = 1, d(a - b)/db = -1.
  return {reduce_to_shape(grad_output, inputs[0].shape()),
          reduce_to_shape(-grad_output, inputs[1].shape())};
}

std::vector<Tensor> MulFunction::backward(const Tensor& grad_output) {
  // d(a·b)/da = b, d(a·b)/db = a.
  const Tensor& a = inputs[0];
  const Tensor& b = inputs[1];
  return {reduce_to_shape(grad_output * b, a.shape()), reduce_to_shape(grad_output * a, b.shape())};
}

std::vector<Tensor> MatmulFunction::backward(const Tensor& grad_output) {
  // C = A·B with A (n, k), B (k, m), G = dL/dC (n, m):
  //   dL/dA = G·Bᵀ (n, m)·(m, k) = (n, k);   dL/dB = Aᵀ·G (k, n)·(n, m) = (k, m).
  const Tensor& a = inputs[0];
  const Tensor& b = inputs[1];
  return {kiln::matmul(grad_output, b.transpose(0, 1)), kiln::matmul(a.transpose(0, 1), grad_output)};
}

std::vector<Tensor> SumFunction::backward(const Tensor& grad_output) {
  // Every element adds into the sum with weight 1: each receives the scalar gradient.
  const Tensor& x = inputs[0];
  return {grad_output.expand(x.shape()).contiguous()};
}

std::vector<Tensor> SumDimFunction::backward(const Tensor& grad_output) {
  // Every element along dim received the same upstream gradient: put the summed dimension back
  // (size 1) if it was dropped, then broadcast it along that dimension.
  const Tensor& x = inputs[0];
  const Tensor grad = keepdim ? grad_output : grad_output.unsqueeze(dim);
  return {grad.expand(x.shape()).contiguous()};
}

std::vector<Tensor> ReshapeFunction::backward(const Tensor& grad_output) {
  // Reshaping moves no values: give the gradient the input's shape back.
  return {grad_output.reshape(inputs[0].shape())};
}

std::vector<Tensor> TransposeFunction::backward(const Tensor& grad_output) {
  // Swapping the same two dimensions again undoes the transpose.
  return {grad_output.transpose(dim0, dim1)};
}

std::vector<Tensor> ReluFunction::backward(const Tensor& grad_output) {
  // relu'(x) is 1 where x > 0 and 0 elsewhere (we take 0 at x = 0).
  const Tensor mask = greater(inputs[0], Tensor::scalar(0.0f));
  return {grad_output * mask};
}

}  // namespace kiln::autograd
