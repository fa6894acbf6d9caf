// Given: blas_matmul, the yardstick every rung of your ladder is measured against.
//
// It hands the product to Eigen, whose kernels block for the caches, keep partial sums in vector
// registers and use SIMD instructions, as a BLAS library does. This is the only file of the
// module that includes Eigen, so editing your own files never recompiles it.
#include <Eigen/Core>

#include "kiln/layers.h"

namespace kiln {

namespace {

// Eigen's view of a contiguous row-major float buffer; nothing is copied.
using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixView = Eigen::Map<const RowMajorMatrix>;
using MatrixView = Eigen::Map<RowMajorMatrix>;

}  // namespace

Tensor blas_matmul(const Tensor& a, const Tensor& b) {
  if (a.dim() != 2 || b.dim() != 2 || a.shape()[1] != b.shape()[0]) {
    throw ShapeError("blas_matmul needs (n, k) and (k, m) matrices, got " + to_string(a.shape()) + " and " +
                     to_string(b.shape()));
  }
  const std::int64_t n = a.shape()[0];
  const std::int64_t k = a.shape()[1];
  const std::int64_t m = b.shape()[1];
  // Layouts (row-major): a is (n, k), b is (k, m), c is (n, m). Views are copied to rows first.
  const Tensor a_rows = a.contiguous();
  const Tensor b_rows = b.contiguous();
  Tensor c = Tensor::zeros({n, m});
  if (n == 0 || m == 0 || k == 0) return c;
  const ConstMatrixView a_view(a_rows.data(), n, k);
  const ConstMatrixView b_view(b_rows.data(), k, m);
  MatrixView c_view(c.data(), n, m);
  c_view.noalias() = a_view * b_view;
  return c;
}

}  // namespace kiln
