// Given: vectorized_matmul, the baseline your tiled_matmul is measured against.
//
// It hands the multiply to Eigen (kiln/eigen.h), whose kernels block for the caches, keep partial
// sums in vector registers and use SIMD instructions: the same ideas a BLAS library uses. This is
// the only file of the module that includes Eigen, so editing your own file never recompiles it.
#include "kiln/acceleration.h"
#include "kiln/eigen.h"

namespace kiln {

Tensor vectorized_matmul(const Tensor& a, const Tensor& b) { return eigen::product(a, b, "vectorized_matmul"); }

}  // namespace kiln
