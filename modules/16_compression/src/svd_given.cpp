// Given: the singular value decomposition low_rank() starts from.
//
// Eigen's JacobiSVD (a QR step for a matrix that is not square, then two-sided Jacobi rotations)
// computes it in double; the factors are rounded to float32 once, at the end. (BDCSVD, Eigen's
// divide and conquer, is quicker on a large matrix, 0.05 s against 0.67 s for milestone 07's
// (784, 256) weight, but takes four times as long to compile, in every build.) This is the only
// file of the module that includes Eigen, so editing your own files never recompiles it.
#include <Eigen/SVD>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kiln/compression.h"

namespace kiln::compress {

Svd svd(const Tensor& matrix) {
  if (matrix.dim() != 2 || matrix.shape()[0] < 1 || matrix.shape()[1] < 1) {
    throw ShapeError("svd needs a (m, n) matrix with m, n >= 1, got shape " + to_string(matrix.shape()));
  }
  const std::int64_t m = matrix.shape()[0], n = matrix.shape()[1], k = std::min(m, n);
  // The matrix in double, element (i, j) read in row-major order of its own shape (views too).
  const std::vector<float> values = matrix.to_vector();
  Eigen::MatrixXd w(m, n);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) w(i, j) = values[static_cast<std::size_t>(i * n + j)];

  const Eigen::JacobiSVD<Eigen::MatrixXd> decomposition(w, Eigen::ComputeThinU | Eigen::ComputeThinV);
  const Eigen::MatrixXd& u = decomposition.matrixU();      // (m, k)
  const Eigen::VectorXd& s = decomposition.singularValues();  // (k), descending
  const Eigen::MatrixXd& v = decomposition.matrixV();      // (n, k): Vᵀ is its transpose

  // Row-major float32: u (m, k), s (k), vt (k, n).
  std::vector<float> u_values(static_cast<std::size_t>(m * k)), s_values(static_cast<std::size_t>(k)),
      vt_values(static_cast<std::size_t>(k * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t c = 0; c < k; ++c) u_values[static_cast<std::size_t>(i * k + c)] = static_cast<float>(u(i, c));
  for (std::int64_t c = 0; c < k; ++c) s_values[static_cast<std::size_t>(c)] = static_cast<float>(s(c));
  for (std::int64_t c = 0; c < k; ++c)
    for (std::int64_t j = 0; j < n; ++j) vt_values[static_cast<std::size_t>(c * n + j)] = static_cast<float>(v(j, c));
  return {Tensor({m, k}, std::move(u_values)), Tensor({k}, std::move(s_values)), Tensor({k, n}, std::move(vt_values))};
}

}  // namespace kiln::compress
