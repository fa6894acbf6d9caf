// softmax, log_softmax and softmax's backward pass, along any dimension.
//
// Along dimension d of a shape (s0, ..., s_{k-1}), a contiguous tensor splits into
//   outer = s0·...·s_{d-1} blocks, length = s_d elements along d, inner = s_{d+1}·...·s_{k-1},
// and element j of the row (o, i) lies at (o·length + j)·inner + i. For dim 1 (the last) of a
// (3, 7) matrix: outer 3, length 7, inner 1, each row contiguous. For dim 0: outer 1, length 3,
// inner 7, each "row" a column whose elements lie 7 floats apart. Read x through
// x.contiguous().data() (a view is copied first; x itself is returned when it is contiguous, so
// write the result into a vector of its own) and loop over o, i, then j.
// Every tensor given here, y and grad_output included, may be a view, also a contiguous one that
// starts inside its storage (a row of a matrix, a slice of a batch): read it through to_vector(),
// or from data() after contiguous(), never from storage_data() as if it began at the storage's
// first float.
//
// A dimension of size 0 (x of shape (3, 0) along dim -1) makes rows of length 0: nothing to
// normalise and no first element to start a maximum from; return the empty result of x's shape.
//
// dim may be negative (-1 is the last dimension). A dim outside [-x.dim(), x.dim()) throws
// kiln::IndexError whose message names the dim and the shape ("dim 2 ... (3, 7)"), also a dim
// beyond 32 bits such as 4294967296: keep it a std::int64_t, never an int. A helper that checks
// and normalises dim, shared by the three functions, keeps that in one place.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kiln/activations.h"

namespace kiln {

Tensor softmax(const Tensor& x, std::int64_t dim) {
  // For every row: m = its maximum; total = Σ_k e^(x_k - m); y_j = e^(x_j - m) / total.
  // Subtracting m changes nothing mathematically and keeps every exponent <= 0: without it,
  // softmax of [1000, 1000] is inf/inf = NaN instead of [0.5, 0.5].
  // softmax([1, 2, 3]) = [0.0900306, 0.2447285, 0.6652410].
  throw kiln::NotImplemented();
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  // For every row: y_j = (x_j - m) - log(Σ_k e^(x_k - m)). Do not take the log of softmax: where
  // softmax rounds to 0 that is log(0) = -inf, while log_softmax of [1000, 0] is [0, -1000].
  // log_softmax([1, 2, 3]) = [-2.4076059, -1.4076059, -0.4076059].
  throw kiln::NotImplemented();
}

Tensor softmax_backward(const Tensor& y, const Tensor& grad_output, std::int64_t dim) {
  // y = softmax(x, dim), g = grad_output, of the same shape (else ShapeError naming both shapes),
  // compared before dim is checked: with both wrong, the ShapeError is the one thrown.
  // Every y_j depends on every x_k of its row, so a row's gradient needs the whole row:
  //   dL/dx_j = y_j·(g_j - Σ_k g_k·y_k).
  // One pass for the sum s = Σ_k g_k·y_k, one pass for y_j·(g_j - s).
  throw kiln::NotImplemented();
}

}  // namespace kiln
