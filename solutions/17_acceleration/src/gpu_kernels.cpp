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

// Register blocking. Both kernels give a block the 64 × 64 tile of c at (row0, col0) and walk the
// inner dimension in steps of kBlockK = 8, through a 64 × 8 tile of a and an 8 × 64 tile of b.

// 1D: thread (tx, ty) of a 64 × 8 block owns column col0 + tx, rows row0 + 8·ty .. + 7.
KILN_GLOBAL void matmul_blocktile_1d_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  KILN_SHARED(float) a_tile[kBlockM][kBlockK];
  KILN_SHARED(float) b_tile[kBlockK][kBlockN];
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int row0 = static_cast<int>(blockIdx.y) * kBlockM, col0 = static_cast<int>(blockIdx.x) * kBlockN;
  const int t = ty * kBlockN + tx;                          // 0..511: one element of each tile
  const int a_row = t / kBlockK, a_col = t % kBlockK;       // of a_tile (64 × 8)
  const int col = col0 + tx;                                // this thread's column of c, and of b_tile
  float results[kThreadM] = {};
  for (int step = 0; step < (k + kBlockK - 1) / kBlockK; ++step) {
    const int inner = step * kBlockK;
    a_tile[a_row][a_col] =
        row0 + a_row < n && inner + a_col < k ? kiln_load(&a[(row0 + a_row) * k + inner + a_col]) : 0.0f;
    b_tile[ty][tx] = inner + ty < k && col < m ? kiln_load(&b[(inner + ty) * m + col]) : 0.0f;
    kiln_syncthreads();  // both tiles are loaded
    for (int dot = 0; dot < kBlockK; ++dot) {
      const float b_value = b_tile[dot][tx];  // one shared read for kThreadM products
      for (int r = 0; r < kThreadM; ++r) results[r] += a_tile[ty * kThreadM + r][dot] * b_value;
    }
    kiln_syncthreads();  // all threads are done with them before the next load
  }
  for (int r = 0; r < kThreadM; ++r) {
    const int row = row0 + ty * kThreadM + r;
    if (row < n && col < m) kiln_store(&c[row * m + col], results[r]);
  }
}

// 2D: thread (tx, ty) of an 8 × 8 block owns rows row0 + 8·ty .. + 7 and columns col0 + 8·tx .. + 7.
KILN_GLOBAL void matmul_blocktile_2d_kernel(const float* a, const float* b, float* c, int n, int k, int m) {
  KILN_SHARED(float) a_tile[kBlockM][kBlockK];
  KILN_SHARED(float) b_tile[kBlockK][kBlockN];
  constexpr int kThreads = (kBlockM / kThreadM) * (kBlockN / kThreadN);  // 64
  const int tx = static_cast<int>(threadIdx.x), ty = static_cast<int>(threadIdx.y);
  const int row0 = static_cast<int>(blockIdx.y) * kBlockM, col0 = static_cast<int>(blockIdx.x) * kBlockN;
  const int t = ty * (kBlockN / kThreadN) + tx;
  float results[kThreadM][kThreadN] = {};
  float a_column[kThreadM], b_row[kThreadN];  // register caches
  for (int step = 0; step < (k + kBlockK - 1) / kBlockK; ++step) {
    const int inner = step * kBlockK;
    for (int e = t; e < kBlockM * kBlockK; e += kThreads) {
      const int r = e / kBlockK, i = e % kBlockK;
      a_tile[r][i] = row0 + r < n && inner + i < k ? kiln_load(&a[(row0 + r) * k + inner + i]) : 0.0f;
    }
    for (int e = t; e < kBlockK * kBlockN; e += kThreads) {
      const int i = e / kBlockN, j = e % kBlockN;
      b_tile[i][j] = inner + i < k && col0 + j < m ? kiln_load(&b[(inner + i) * m + col0 + j]) : 0.0f;
    }
    kiln_syncthreads();  // both tiles are loaded
    for (int dot = 0; dot < kBlockK; ++dot) {
      for (int i = 0; i < kThreadM; ++i) a_column[i] = a_tile[ty * kThreadM + i][dot];
      for (int j = 0; j < kThreadN; ++j) b_row[j] = b_tile[dot][tx * kThreadN + j];
      for (int i = 0; i < kThreadM; ++i)
        for (int j = 0; j < kThreadN; ++j) results[i][j] += a_column[i] * b_row[j];
    }
    kiln_syncthreads();  // all threads are done with them before the next load
  }
  for (int i = 0; i < kThreadM; ++i)
    for (int j = 0; j < kThreadN; ++j) {
      const int row = row0 + ty * kThreadM + i, col = col0 + tx * kThreadN + j;
      if (row < n && col < m) kiln_store(&c[row * m + col], results[i][j]);
    }
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
