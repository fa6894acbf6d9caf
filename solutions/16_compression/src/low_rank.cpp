// Low-rank factorisation: the best rank-r approximation of a layer's weights, from its SVD.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/compression.h"

namespace kiln::compress {

LowRank low_rank(const Tensor& weight, std::int64_t rank) {
  if (weight.dim() != 2) throw std::invalid_argument("low_rank needs a (m, n) matrix, got shape " + to_string(weight.shape()));
  const std::int64_t m = weight.shape()[0], n = weight.shape()[1], k = std::min(m, n);
  if (rank < 1 || rank > k) {
    throw std::invalid_argument("low_rank of a matrix of shape " + to_string(weight.shape()) + " needs 1 <= rank <= " +
                                std::to_string(k) + ", got rank " + std::to_string(rank));
  }
  const Svd d = svd(weight);  // u (m, k), s (k) descending, vt (k, n), all contiguous
  const float* u_full = d.u.data();
  const float* sigma = d.s.data();
  const float* vt_full = d.vt.data();

  // u (m, r): the first r columns of U, column c scaled by σ_c.
  std::vector<float> u(static_cast<std::size_t>(m * rank));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t c = 0; c < rank; ++c) u[i * rank + c] = u_full[i * k + c] * sigma[c];
  // v (r, n): the first r rows of Vᵀ.
  std::vector<float> v(vt_full, vt_full + rank * n);
  return {Tensor({m, rank}, std::move(u)), Tensor({rank, n}, std::move(v))};
}

}  // namespace kiln::compress
