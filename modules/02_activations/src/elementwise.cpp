// The elementwise activations and their backward passes.
//
// Every function here reads its tensors in row-major order, wherever a view keeps them: x may be
// a transposed matrix, a row of a matrix (an offset) or a broadcast (stride 0). x.contiguous()
// gives a row-major tensor whose data() you can walk from 0 to numel() - 1 (it copies a view
// and returns x itself when x is one already, so never write into its data(): that would change
// the caller's x); build the result with Tensor(x.shape(), values).
// A small helper that returns a tensor's values as a std::vector<float> serves every function.
// An empty x (of shape (0, 3), say) gives an empty result of its shape, as does a backward pass
// given an empty x (or y) and grad_output.
// Every tensor given here, y and grad_output included, may be a view, also a contiguous one that
// starts inside its storage (a row of a matrix, a slice of a batch): read it through to_vector(),
// or from data() after contiguous(), never from storage_data() as if it began at the storage's
// first float.
//
// Every backward function first checks that grad_output has exactly the shape of its other
// argument, and throws kiln::ShapeError naming both shapes (to_string(x.shape()) gives
// "(3, 7)") when it does not: a (7, 3) gradient for a (3, 7) input holds as many elements, and
// is still wrong.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "kiln/activations.h"

namespace kiln {

Tensor relu(const Tensor& x) {
  // max(x, 0) for every element: relu([-2, -0.5, 0, 0.5, 3]) = [0, 0, 0, 0.5, 3], and
  // relu(-inf) = 0 (x·[x > 0], the same for every finite x, gives -inf·0 = NaN there).
  throw kiln::NotImplemented();
}

Tensor relu_backward(const Tensor& x, const Tensor& grad_output) {
  // grad_output where x > 0, and 0 where x <= 0 (the gradient at the kink x = 0 is taken as 0).
  // Choose, don't multiply by the 0/1 mask: an inf or NaN gradient times 0 is NaN, not 0.
  throw kiln::NotImplemented();
}

Tensor sigmoid(const Tensor& x) {
  // σ(x) = 1 / (1 + e^(-x)), computed without ever taking e^t of a large positive t: with
  // e = std::exp(-std::fabs(x)), which lies in (0, 1],
  //   σ(x) = 1 / (1 + e) when x >= 0,   σ(x) = e / (1 + e) when x < 0.
  // sigmoid([-2, 0, 2]) = [0.1192029, 0.5, 0.8807971]; sigmoid(±1000) = 1 and 0, never NaN;
  // sigmoid(-20) = 2.06e-9, not 0 (1 - 1/(1 + e) would cancel it away).
  throw kiln::NotImplemented();
}

Tensor sigmoid_backward(const Tensor& y, const Tensor& grad_output) {
  // y = σ(x), the forward pass's output: dL/dx = grad_output·y·(1 - y) (0.25·grad at x = 0).
  throw kiln::NotImplemented();
}

Tensor tanh_activation(const Tensor& x) {
  // std::tanh of every element: tanh(1) = 0.7615942. (Inside namespace kiln, a function of ours
  // named tanh would hide std::tanh: hence the longer name.)
  throw kiln::NotImplemented();
}

Tensor tanh_backward(const Tensor& y, const Tensor& grad_output) {
  // y = tanh(x): dL/dx = grad_output·(1 - y²).
  throw kiln::NotImplemented();
}

Tensor gelu(const Tensor& x) {
  // Exact GELU: x·Φ(x) = 0.5·x·(1 + erf(x/√2)), with std::erf. gelu(1) = 0.8413447,
  // gelu(-1) = -0.1586553. std::numbers::sqrt2 (from <numbers>) is √2.
  throw kiln::NotImplemented();
}

Tensor gelu_tanh(const Tensor& x) {
  // The tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). gelu_tanh(1) = 0.8411920.
  // √(2/π) = std::numbers::sqrt2 · std::numbers::inv_sqrtpi.
  throw kiln::NotImplemented();
}

Tensor gelu_backward(const Tensor& x, const Tensor& grad_output) {
  // The exact form's derivative, by the product rule: d/dx x·Φ(x) = Φ(x) + x·φ(x), where
  // φ(x) = e^(-x²/2)/√(2π) is the normal density (1/√(2π) = inv_sqrtpi / sqrt2).
  // dL/dx = grad_output·(Φ(x) + x·φ(x)): 1.0833155·grad at x = 1, 0.5·grad at x = 0.
  throw kiln::NotImplemented();
}

}  // namespace kiln
