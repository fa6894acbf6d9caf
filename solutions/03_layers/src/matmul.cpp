// The ladder: the same matrix product written three ways, each doing less by hand.
#include <string>
#include <vector>

#include "kiln/layers.h"

namespace kiln {

namespace {

// Every rung checks its arguments first: (n, k) and (k, m), or nothing runs.
void check_matmul_shapes(const char* name, const Tensor& a, const Tensor& b) {
  if (a.dim() != 2 || b.dim() != 2 || a.shape()[1] != b.shape()[0]) {
    throw ShapeError(std::string(name) + " needs (n, k) and (k, m) matrices, got " + to_string(a.shape()) +
                     " and " + to_string(b.shape()));
  }
}

}  // namespace

float dot(const Tensor& u, const Tensor& v) {
  if (u.dim() != 1 || v.dim() != 1 || u.shape()[0] != v.shape()[0]) {
    throw ShapeError("dot needs two 1-D tensors of the same length, got " + to_string(u.shape()) + " and " +
                     to_string(v.shape()));
  }
  // Walk both through their strides: a column of a row-major matrix is a view with stride cols.
  const float* u_values = u.storage_data() + u.offset();
  const float* v_values = v.storage_data() + v.offset();
  const std::int64_t u_stride = u.strides()[0];
  const std::int64_t v_stride = v.strides()[0];
  float total = 0.0f;
  for (std::int64_t p = 0; p < u.shape()[0]; ++p) total += u_values[p * u_stride] * v_values[p * v_stride];
  return total;
}

Tensor matmul_loops(const Tensor& a, const Tensor& b) {
  check_matmul_shapes("matmul_loops", a, b);
  const std::int64_t n = a.shape()[0];
  const std::int64_t k = a.shape()[1];
  const std::int64_t m = b.shape()[1];
  // a and b may be views: element (i, p) of a is at a_values[i·a_row_step + p·a_col_step].
  const float* a_values = a.storage_data() + a.offset();
  const float* b_values = b.storage_data() + b.offset();
  const std::int64_t a_row_step = a.strides()[0], a_col_step = a.strides()[1];
  const std::int64_t b_row_step = b.strides()[0], b_col_step = b.strides()[1];
  // c (n, m), row-major: element (i, j) at i·m + j.
  Tensor c = Tensor::zeros({n, m});
  float* c_values = c.data();
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < m; ++j) {
      for (std::int64_t p = 0; p < k; ++p) {
        c_values[i * m + j] += a_values[i * a_row_step + p * a_col_step] * b_values[p * b_row_step + j * b_col_step];
      }
    }
  }
  return c;
}

Tensor matmul_dot(const Tensor& a, const Tensor& b) {
  check_matmul_shapes("matmul_dot", a, b);
  const std::int64_t n = a.shape()[0];
  const std::int64_t m = b.shape()[1];
  // c (n, m), row-major.
  std::vector<float> c(static_cast<std::size_t>(n * m));
  for (std::int64_t i = 0; i < n; ++i) {
    const Tensor a_row = row(a, i);
    for (std::int64_t j = 0; j < m; ++j) c[static_cast<std::size_t>(i * m + j)] = dot(a_row, column(b, j));
  }
  return Tensor({n, m}, std::move(c));
}

Tensor matmul_broadcast(const Tensor& a, const Tensor& b) {
  check_matmul_shapes("matmul_broadcast", a, b);
  const std::int64_t n = a.shape()[0];
  const std::int64_t m = b.shape()[1];
  // c (n, m), row-major: row i is the m values at i·m.
  std::vector<float> c;
  c.reserve(static_cast<std::size_t>(n * m));
  for (std::int64_t i = 0; i < n; ++i) {
    // (k, 1) times (k, m) broadcasts to (k, m): entry (p, j) is a[i, p]·b[p, j]; summing over p
    // (dimension 0) leaves the m values of row i.
    const Tensor products = row(a, i).unsqueeze(1) * b;
    const std::vector<float> c_row = products.sum(0).to_vector();
    c.insert(c.end(), c_row.begin(), c_row.end());
  }
  return Tensor({n, m}, std::move(c));
}

}  // namespace kiln
