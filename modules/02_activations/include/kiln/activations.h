// Module 02, Activations: the nonlinear functions between layers, each with its backward pass.
//
// Every function here is a forward pass or the explicit backward pass of one. There is no
// autograd yet: module 06 records operations in a graph, and later modules wrap these functions
// as its nodes. A backward function takes what its forward pass saw or produced and
// grad_output = dL/dy (same shape as y), and returns dL/dx (same shape as x).
//
// Layouts, all float32:
//   The elementwise functions (relu, sigmoid, tanh_activation, gelu, gelu_tanh and their
//   backward passes) take tensors of any shape, views included: a transposed matrix, a row of a
//   matrix (an offset), a broadcast (stride 0). They read element i of the row-major order
//   wherever the view keeps it, and return a new contiguous tensor of the same shape. Every
//   function here leaves the tensors it is given as they were: for a contiguous x,
//   x.contiguous() is x itself, so the result must not be computed in its data().
//   An empty x (of shape (0, 3), say) gives an empty result of its shape, as does a backward pass
//   given an empty x (or y) and grad_output.
//   softmax, log_softmax and softmax_backward work along one dimension `dim` of any shape:
//   with shape (s0, ..., s_{k-1}) and d = dim, every "row" is the s_d elements that share all
//   other indices. For a contiguous tensor, row (outer, inner) holds the elements
//     (outer·s_d + j)·inner_size + inner,  j = 0 .. s_d - 1,
//   where outer runs over the product of the sizes before d and inner over inner_size, the
//   product of the sizes after d. dim = -1 (the last) is the usual case; dim 0 of a (3, 7)
//   matrix normalises each of its 7 columns.
//   Every tensor given here, y and grad_output included, may be a view, also a contiguous one that
//   starts inside its storage (a row of a matrix, a slice of a batch): read it through to_vector(),
//   or from data() after contiguous(), never from storage_data() as if it began at the storage's
//   first float.
//
// Errors:
//   ShapeError  a backward function whose two tensors differ in shape (the message names both
//               shapes); the same number of elements in another shape is still an error
//   IndexError  a dim outside [-x.dim(), x.dim()) (the message names the dim and the shape),
//               any std::int64_t, 2^32 = 4294967296 too (never narrowed to int); a 0-D x has
//               no dim at all, so every dim is refused for it
//   The shapes are compared first: softmax_backward given both a grad_output of another shape
//   and a dim out of range throws the ShapeError.
//
// Names: tanh_activation, not tanh, so that std::tanh stays visible inside namespace kiln.
// Module 06 has kiln::autograd::relu, the graph node; where both headers are included, call
// each by its qualified name. Module 17's fused_gelu computes gelu_tanh in one fused pass.
#pragma once

#include <cstdint>

#include "kiln/tensor.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Elementwise activations (yours: src/elementwise.cpp)

// relu(x) = max(x, 0), the infinities included: relu(-inf) = 0 and relu(inf) = inf.
Tensor relu(const Tensor& x);
// dL/dx = grad_output where x > 0, and 0 where x <= 0 (at the kink x = 0 the gradient is 0),
// whatever grad_output holds there: an infinite or NaN gradient where x <= 0 still gives 0.
Tensor relu_backward(const Tensor& x, const Tensor& grad_output);

// σ(x) = 1 / (1 + e^(-x)), in (0, 1). Stable for any x: it never computes e^t for a large
// positive t (e^89 already overflows float32); with e = e^(-|x|) in (0, 1],
//   σ(x) = 1 / (1 + e)  for x >= 0,      σ(x) = e / (1 + e)  for x < 0.
Tensor sigmoid(const Tensor& x);
// From the forward pass's output y = σ(x): σ'(x) = y·(1 - y), so dL/dx = grad_output·y·(1 - y).
Tensor sigmoid_backward(const Tensor& y, const Tensor& grad_output);

// tanh(x) = (e^x - e^(-x)) / (e^x + e^(-x)), in (-1, 1); std::tanh computes it without overflow.
Tensor tanh_activation(const Tensor& x);
// From y = tanh(x): tanh'(x) = 1 - y², so dL/dx = grad_output·(1 - y²).
Tensor tanh_backward(const Tensor& y, const Tensor& grad_output);

// GELU, exact: x·Φ(x) = 0.5·x·(1 + erf(x/√2)), Φ the standard normal distribution function.
Tensor gelu(const Tensor& x);
// GELU in tanh form: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), within 4.8e-4 of gelu.
Tensor gelu_tanh(const Tensor& x);
// The exact form's derivative: d/dx x·Φ(x) = Φ(x) + x·φ(x), with φ(x) = e^(-x²/2)/√(2π) the
// normal density; dL/dx = grad_output·(Φ(x) + x·φ(x)).
Tensor gelu_backward(const Tensor& x, const Tensor& grad_output);

// ---------------------------------------------------------------------------------------------
// Softmax along a dimension (yours: src/softmax.cpp)

// softmax(x)_j = e^(x_j - m) / Σ_k e^(x_k - m) along dim, m the row's maximum: the same value
// as without m (it cancels), but no e^t ever overflows: softmax of [1000, 1000] is [0.5, 0.5].
// Every row sums to 1. The result is a new contiguous tensor of x's shape. A row of length 0
// (x of shape (3, 0) along dim -1) has nothing to normalise: the result is then empty, of x's
// shape; the same holds for log_softmax and softmax_backward.
Tensor softmax(const Tensor& x, std::int64_t dim = -1);

// log softmax(x)_j = (x_j - m) - log Σ_k e^(x_k - m) along dim: finite wherever x is, even
// where softmax itself rounds to 0 (log_softmax of [1000, 0] is [0, -1000]).
Tensor log_softmax(const Tensor& x, std::int64_t dim = -1);

// From y = softmax(x, dim) and g = grad_output: along each row,
//   dL/dx_j = y_j·(g_j - Σ_k g_k·y_k),
// the product of g with the Jacobian diag(y) - y·yᵀ without building it.
Tensor softmax_backward(const Tensor& y, const Tensor& grad_output, std::int64_t dim = -1);

}  // namespace kiln
