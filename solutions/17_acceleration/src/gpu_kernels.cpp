// Module 17, GPU part: kernels in the CUDA style of kiln/grid.h. Each thread computes one element.
#include "kiln/gpu.h"

namespace kiln {

KILN_GLOBAL void matmul_naive_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  const int row = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int col = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (row >= n || col >= m) return;
  float sum = 0.0f;
  for (int i = 0; i < k; ++i) sum += kiln_load(&a[row * k + i]) * kiln_load(&b[i * m + col]);
  kiln_store(&c[row * m + col], sum);
}

KILN_GLOBAL void matmul_coalesced_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  const int col = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int row = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (row < n && col < m) {
    float acc = 0.0f;
    for (int i = 0; i < k; ++i) acc += kiln_load(&a[row * k + i]) * kiln_load(&b[i * m + col]);
    kiln_store(&c[row * m + col], acc);
  }
}

KILN_GLOBAL void matmul_tiled_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  KILN_SHARED(float) a_tile[kTile][kTile];
  KILN_SHARED(float) b_tile[kTile][kTile];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int col = static_cast<int>(blockIdx.x) * kTile + tx;
  const int row = static_cast<int>(blockIdx.y) * kTile + ty;
  float total = 0.0f;
  for (int step = 0; step < (k + kTile - 1) / kTile; ++step) {
    const int a_col = step * kTile + tx, b_row = step * kTile + ty;
    a_tile[ty][tx] = row < n && a_col < k ? kiln_load(&a[row * k + a_col]) : 0.0f;
    b_tile[ty][tx] = b_row < k && col < m ? kiln_load(&b[b_row * m + col]) : 0.0f;
    kiln_syncthreads();  // the tiles are complete
    for (int i = 0; i < kTile; ++i) total += a_tile[ty][i] * b_tile[i][tx];
    kiln_syncthreads();  // everyone is done with them before the next load
  }
  if (row < n && col < m) kiln_store(&c[row * m + col], total);
}

KILN_GLOBAL void embedding_gather_kernel(const float* w, const std::int64_t* ids, float* out, int count, int dim) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int i = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (i < count && j < dim) kiln_store(&out[i * dim + j], kiln_load(&w[kiln_load(&ids[i]) * dim + j]));
}

KILN_GLOBAL void embedding_scatter_add_kernel(const float* g, const std::int64_t* ids, float* grad_w, int count,
                                              int dim) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  const int i = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y);
  if (i < count && j < dim) kiln_atomic_add(&grad_w[kiln_load(&ids[i]) * dim + j], kiln_load(&g[i * dim + j]));
}

}  // namespace kiln
