// Low-rank factorisation: the best rank-r approximation of a layer's weights, from its SVD.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/compression.h"

namespace kiln::compress {

LowRank low_rank(const Tensor& weight, std::int64_t rank) {
  // Throw std::invalid_argument naming the rank and the shape unless 1 <= rank <= min(m, n),
  // with m, n from weight's shape, before calling svd() (which throws kiln::ShapeError for a
  // weight that is not 2-D, or has no rows or no columns: (0, 5) must get your error).
  // Svd d = svd(weight): d.u (m, k), d.s (k), d.vt (k, n), singular values largest first.
  //   u (m, r): u[i, c] = d.u[i, c] · d.s[c] for c < r    (each kept column scaled by its σ)
  //   v (r, n): v[c, j] = d.vt[c, j]          for c < r    (the first r rows of Vᵀ)
  throw kiln::NotImplemented();
}

}  // namespace kiln::compress
