// Compressed sparse rows: storing and multiplying only the non-zero entries of a matrix.
#include <cstdint>
#include <vector>

#include "kiln/compression.h"

namespace kiln::compress {

CsrMatrix to_csr(const Tensor& dense) {
  if (dense.dim() != 2) throw ShapeError("to_csr needs a (rows, cols) matrix, got shape " + to_string(dense.shape()));
  CsrMatrix a;
  a.rows = dense.shape()[0];
  a.cols = dense.shape()[1];
  const float* storage = dense.storage_data();
  a.row_offsets.push_back(0);
  for (std::int64_t i = 0; i < a.rows; ++i) {
    for (std::int64_t j = 0; j < a.cols; ++j) {
      const float value = storage[dense.offset() + i * dense.strides()[0] + j * dense.strides()[1]];
      if (value != 0.0f) {
        a.column_indices.push_back(static_cast<std::int32_t>(j));
        a.values.push_back(value);
      }
    }
    // Row i ends where the values end; an empty row repeats the last offset.
    a.row_offsets.push_back(static_cast<std::int32_t>(a.values.size()));
  }
  return a;
}

Tensor csr_matmul(const CsrMatrix& a, const Tensor& b) {
  if (b.dim() != 2 || b.shape()[0] != a.cols) {
    throw ShapeError("csr_matmul needs a (rows, cols) CSR matrix and a (cols, m) matrix, got " +
                     to_string({a.rows, a.cols}) + " and " + to_string(b.shape()));
  }
  const std::int64_t m = b.shape()[1];
  // Layouts (row-major): b_rows (cols, m), c (rows, m).
  const Tensor b_rows = b.contiguous();
  const float* b_values = b_rows.data();
  Tensor c = Tensor::zeros({a.rows, m});
  float* c_values = c.data();
  for (std::int64_t i = 0; i < a.rows; ++i) {
    float* c_row = c_values + i * m;
    for (std::int32_t p = a.row_offsets[i]; p < a.row_offsets[i + 1]; ++p) {
      const float value = a.values[p];
      const float* b_row = b_values + static_cast<std::int64_t>(a.column_indices[p]) * m;
      for (std::int64_t j = 0; j < m; ++j) c_row[j] += value * b_row[j];
    }
  }
  return c;
}

std::int64_t csr_bytes(const CsrMatrix& a) {
  return static_cast<std::int64_t>(a.row_offsets.size() * sizeof(std::int32_t) +
                                   a.column_indices.size() * sizeof(std::int32_t) + a.values.size() * sizeof(float));
}

}  // namespace kiln::compress
