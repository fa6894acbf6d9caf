// Given: blas_matmul, the yardstick every rung of your ladder is measured against.
//
// It hands the product to Eigen (kiln/eigen.h), whose kernels block for the caches, keep partial
// sums in vector registers and use SIMD instructions, as a BLAS library does. This is the only
// file of the module that includes Eigen, so editing your own files never recompiles it.
#include "kiln/eigen.h"
#include "kiln/layers.h"

namespace kiln {

Tensor blas_matmul(const Tensor& a, const Tensor& b) { return eigen::product(a, b, "blas_matmul"); }

}  // namespace kiln
