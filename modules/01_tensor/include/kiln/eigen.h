// For given code only: Eigen's view of a tensor's memory, and the matrix product through Eigen
// that later modules measure their own against (blas_matmul in 03, vectorized_matmul in 17) or
// use for the redundant one-hot route (11). It includes Eigen, whose headers take seconds to
// compile: include it from given files only, never from a file students edit.
#pragma once

#include <Eigen/Core>

#include <cstdint>
#include <string>

#include "kiln/tensor.h"

namespace kiln::eigen {

// A contiguous row-major float buffer as an Eigen matrix; nothing is copied.
using RowMajorMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMatrixView = Eigen::Map<const RowMajorMatrix>;
using MatrixView = Eigen::Map<RowMajorMatrix>;

// a·b for an (n, k) and a (k, m) tensor by Eigen, whose kernels block for the caches, keep partial
// sums in vector registers and use SIMD instructions, as a BLAS library does. Other shapes throw
// ShapeError naming `function` and both shapes.
inline Tensor product(const Tensor& a, const Tensor& b, const std::string& function) {
  if (a.dim() != 2 || b.dim() != 2 || a.shape()[1] != b.shape()[0]) {
    throw ShapeError(function + " needs (n, k) and (k, m) matrices, got " + to_string(a.shape()) + " and " +
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
  MatrixView(c.data(), n, m).noalias() = ConstMatrixView(a_rows.data(), n, k) * ConstMatrixView(b_rows.data(), k, m);
  return c;
}

}  // namespace kiln::eigen
