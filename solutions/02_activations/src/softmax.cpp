// softmax, log_softmax and softmax's backward pass, along any dimension.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kiln/activations.h"

namespace kiln {

namespace {

// dim in [-rank, rank), counted from the end when negative.
std::int64_t checked_dim(const char* name, const Tensor& x, std::int64_t dim) {
  const std::int64_t rank = x.dim();
  if (dim < -rank || dim >= rank) {
    throw IndexError(std::string(name) + ": dim " + std::to_string(dim) + " is out of range for shape " +
                     to_string(x.shape()));
  }
  return dim < 0 ? dim + rank : dim;
}

// How a contiguous tensor splits around dimension d: `outer` rows before it, `length` elements
// along it, `inner` positions after it. Element j of row (o, i) is at (o·length + j)·inner + i.
struct Rows {
  std::int64_t outer = 1, length = 1, inner = 1;
};

Rows rows_along(const Shape& shape, std::int64_t d) {
  Rows rows;
  for (std::int64_t k = 0; k < d; ++k) rows.outer *= shape[k];
  rows.length = shape[d];
  for (std::size_t k = d + 1; k < shape.size(); ++k) rows.inner *= shape[k];
  return rows;
}

// Writes softmax (or log_softmax) of every row of x along dimension d into out.
void softmax_rows(const std::vector<float>& x, std::vector<float>& out, const Rows& rows, bool take_log) {
  // Rows of length 0 (a (3, 0) x along dim -1) have nothing to normalise, and no x[first] to
  // start the maximum from: out is already the empty result.
  if (rows.length == 0) return;
  for (std::int64_t o = 0; o < rows.outer; ++o) {
    for (std::int64_t i = 0; i < rows.inner; ++i) {
      const std::int64_t first = o * rows.length * rows.inner + i;  // element j at first + j·inner
      float row_max = x[first];
      for (std::int64_t j = 1; j < rows.length; ++j) row_max = std::max(row_max, x[first + j * rows.inner]);
      // Every exponent x_j - max is <= 0, so no e^t overflows, and the largest term is e^0 = 1.
      float total = 0.0f;
      for (std::int64_t j = 0; j < rows.length; ++j) total += std::exp(x[first + j * rows.inner] - row_max);
      const float log_total = std::log(total);
      for (std::int64_t j = 0; j < rows.length; ++j) {
        const float shifted = x[first + j * rows.inner] - row_max;
        out[first + j * rows.inner] = take_log ? shifted - log_total : std::exp(shifted) / total;
      }
    }
  }
}

}  // namespace

Tensor softmax(const Tensor& x, std::int64_t dim) {
  const std::int64_t d = checked_dim("softmax", x, dim);
  const std::vector<float> values = x.to_vector();
  std::vector<float> out(values.size());
  softmax_rows(values, out, rows_along(x.shape(), d), false);
  return Tensor(x.shape(), std::move(out));
}

Tensor log_softmax(const Tensor& x, std::int64_t dim) {
  const std::int64_t d = checked_dim("log_softmax", x, dim);
  const std::vector<float> values = x.to_vector();
  std::vector<float> out(values.size());
  softmax_rows(values, out, rows_along(x.shape(), d), true);
  return Tensor(x.shape(), std::move(out));
}

Tensor softmax_backward(const Tensor& y, const Tensor& grad_output, std::int64_t dim) {
  if (y.shape() != grad_output.shape()) {
    throw ShapeError("softmax_backward needs grad_output of y's shape, got " + to_string(y.shape()) + " and " +
                     to_string(grad_output.shape()));
  }
  const std::int64_t d = checked_dim("softmax_backward", y, dim);
  const Rows rows = rows_along(y.shape(), d);
  const std::vector<float> probs = y.to_vector();
  const std::vector<float> grad = grad_output.to_vector();
  std::vector<float> out(probs.size());
  for (std::int64_t o = 0; o < rows.outer; ++o) {
    for (std::int64_t i = 0; i < rows.inner; ++i) {
      const std::int64_t first = o * rows.length * rows.inner + i;
      // dL/dx_j = y_j·(g_j - Σ_k g_k·y_k): the Jacobian diag(y) - y·yᵀ applied to g.
      float weighted = 0.0f;
      for (std::int64_t j = 0; j < rows.length; ++j) weighted += grad[first + j * rows.inner] * probs[first + j * rows.inner];
      for (std::int64_t j = 0; j < rows.length; ++j) {
        const std::int64_t at = first + j * rows.inner;
        out[at] = probs[at] * (grad[at] - weighted);
      }
    }
  }
  return Tensor(y.shape(), std::move(out));
}

}  // namespace kiln
