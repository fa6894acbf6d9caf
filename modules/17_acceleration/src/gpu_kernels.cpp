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
  // dimension, t = 0 .. ⌈k / kTile⌉ - 1 (k / kTile rounded up: one step for k = 16): load
  // a[row, t·kTile + tx] into a_tile[ty][tx] and b[t·kTile + ty, col] into b_tile[ty][tx] (0
  // outside; tx, ty = threadIdx.x, y), kiln_syncthreads(), add the products of the two tiles,
  // kiln_syncthreads() before the next load overwrites them. Read a and b from global memory
  // only into the tiles. Write c only if the element is inside.
  KILN_NOT_IMPLEMENTED();
}

// Challenge, worth no points: the next two rungs, register blocking (kiln/gpu.h has the layouts).
// Blocks of 64 × 8 and 8 × 8 threads each compute a 64 × 64 tile of c, so a thread holds several
// results; the grid is rounded up to whole 64 × 64 tiles.

KILN_GLOBAL void matmul_blocktile_1d_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  // KILN_SHARED(float) a_tile[kBlockM][kBlockK], b_tile[kBlockK][kBlockN]; float results[kThreadM]
  // = {}. For each step of kBlockK over the inner dimension: thread t = ty·64 + tx loads
  // a[row0 + t / 8, step·8 + t % 8] into a_tile[t / 8][t % 8] and b[step·8 + ty, col0 + tx] into
  // b_tile[ty][tx] (0 outside a or b; row0, col0 = the block's first row and column): a warp's
  // load of a is 4 rows of 8 neighbouring floats, whose transactions the counts check;
  // kiln_syncthreads(); then for each dot < kBlockK read b_tile[dot][tx] once into a float and add
  // a_tile[ty·8 + r][dot] times it to results[r] for r < 8; kiln_syncthreads(). At the end store
  // results[r] to c[row0 + ty·8 + r, col0 + tx] where that lies inside c.
  KILN_NOT_IMPLEMENTED();
}

KILN_GLOBAL void matmul_blocktile_2d_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  // The same tiles; float results[kThreadM][kThreadN] = {}, a_column[kThreadM], b_row[kThreadN].
  // For each step: thread t = ty·8 + tx loads elements t, t + 64, ... of each tile (element e of
  // a_tile is [e / 8][e % 8], of b_tile [e / 64][e % 64]; 0 outside), e stepping by 64, so that each
  // of a warp's loads of a is 4 rows of 8 neighbouring floats (the counts check its transactions;
  // a contiguous run of 8 elements per thread is not this pattern), kiln_syncthreads(); then for
  // each dot: a_column[i] = a_tile[ty·8 + i][dot], b_row[j] = b_tile[dot][tx·8 + j], and
  // results[i][j] += a_column[i] · b_row[j] for all 64 (i, j); kiln_syncthreads(). Store
  // results[i][j] to c[row0 + ty·8 + i, col0 + tx·8 + j] where that lies inside c.
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
