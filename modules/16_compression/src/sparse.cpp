// Compressed sparse rows: storing and multiplying only the non-zero entries of a matrix.
#include <cstdint>
#include <vector>

#include "kiln/compression.h"

namespace kiln::compress {

CsrMatrix to_csr(const Tensor& dense) {
  // Throw ShapeError naming the shape unless dense is 2-D.
  // Walk the rows in order; within row i, the columns left to right, reading element (i, j)
  // through the strides (at({i, j}) does that). Every entry != 0 appends its column to
  // column_indices and its value to values. row_offsets starts as [0] and gets values.size()
  // appended after each row, so an empty row repeats the last offset.
  throw kiln::NotImplemented();
}

Tensor csr_matmul(const CsrMatrix& a, const Tensor& b) {
  // Throw ShapeError naming "(a.rows, a.cols)" and b's shape unless b is 2-D with a.cols rows.
  // c (a.rows, m) starts at zeros. For each row i, for p in [row_offsets[i], row_offsets[i + 1]):
  //   c[i, :] += values[p] · b[column_indices[p], :]
  // the stored entries only: never the zeros CSR leaves out (0·inf would add NaN where b is inf).
  // Read b through its strides, or make it contiguous once before the loops. A contiguous view at
  // an offset (a slice of a larger tensor) is read from data(), where its values start, not from
  // storage_data(), the storage's first float.
  throw kiln::NotImplemented();
}

std::int64_t csr_bytes(const CsrMatrix& a) {
  // The bytes of the three arrays: each element is 4 bytes (std::int32_t or float). Count the
  // arrays' own sizes, not rows: a default CsrMatrix{} holds nothing.
  throw kiln::NotImplemented();
}

}  // namespace kiln::compress
