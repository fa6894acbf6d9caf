// Module 17, GPU part: kernels in the CUDA style of kiln/grid.h. Each thread computes one element.
// Its coordinates: row or col = blockIdx.? · blockDim.? + threadIdx.? (x or y as kiln/gpu.h says).
// Blocks are 16 × 16 and the grid is rounded up, so first check that the element is inside the
// output (row < n && col < m) and do nothing otherwise.
// KILN_NOT_IMPLEMENTED() marks what is still to write: replace each one with the kernel's body.
// These kernels also run on a CUDA device (kiln/gpu_device.h), where they cannot throw.
// Read and write a, b, c, w, ids, out, g and grad_w (global memory) through kiln_load(&a[i]) and
// kiln_store(&c[i], value): plain accesses on a GPU, and on the emulator counted, as the checks
// grade what the hardware would do (128-byte transactions per warp, reads of each element).
#include "kiln/gpu.h"

namespace kiln {

KILN_GLOBAL void matmul_naive_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  // row from x, col from y; if inside c: c[row·m + col] = Σ_i a[row·k + i] · b[i·m + col], summed
  // in a float and stored once.
  KILN_NOT_IMPLEMENTED();
}

KILN_GLOBAL void matmul_coalesced_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  // The same product with col from x and row from y.
  KILN_NOT_IMPLEMENTED();
}

KILN_GLOBAL void matmul_tiled_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  // KILN_SHARED(float) a_tile[kTile][kTile], b_tile[kTile][kTile]; for each step t over the inner
  // dimension: load a[row, t·kTile + tx] into a_tile[ty][tx] and b[t·kTile + ty, col] into
  // b_tile[ty][tx] (0 outside; tx, ty = threadIdx.x, y), kiln_syncthreads(), add the products of
  // the two tiles, kiln_syncthreads() before the next load overwrites them. Read a and b from
  // global memory only into the tiles. Write c only if the element is inside.
  KILN_NOT_IMPLEMENTED();
}

KILN_GLOBAL void embedding_gather_kernel(const float* w, const std::int64_t* ids, float* out, int count, int dim) {
  // i from y, j from x; if inside: out[i·dim + j] = w[ids[i]·dim + j].
  KILN_NOT_IMPLEMENTED();
}

KILN_GLOBAL void embedding_scatter_add_kernel(const float* g, const std::int64_t* ids, float* grad_w, int count,
                                              int dim) {
  // i from y, j from x; if inside: kiln_atomic_add(&grad_w[ids[i]·dim + j], g[i·dim + j]).
  KILN_NOT_IMPLEMENTED();
}

}  // namespace kiln
