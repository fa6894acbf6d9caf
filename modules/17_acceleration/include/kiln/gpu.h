// Module 17, GPU part: the matrix-multiply ladder and the embedding kernels, written as CUDA-style
// kernels (kiln/grid.h). On every machine they run on the CPU emulator and are checked there;
// the same source compiles for a CUDA device under nvcc.
//
// Layouts, all row-major float32: a (n, k), b (k, m), c (n, m); an embedding table w (rows, dim),
// ids (count), gathered out (count, dim). The kernels read and write them (global memory) with
// kiln_load and kiln_store (kiln/grid.h): plain accesses under nvcc, counted on the emulator.
// Launch shape: blocks of kTile × kTile = 16 × 16 threads, and enough blocks to cover the output,
// rounded up; so threads past the edge exist whenever a size is not a multiple of 16, and each
// kernel must check that its element lies inside the output before it writes. The two
// register-blocked kernels (challenge) give each block a kBlockM × kBlockN = 64 × 64 tile of c
// instead, again with the grid rounded up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "kiln/grid.h"
#include "kiln/tensor.h"

namespace kiln {

inline constexpr int kTile = 16;

// One thread per element c[row, col], computed as a dot product of row `row` of a and column
// `col` of b. Naive mapping: row = blockIdx.x·blockDim.x + threadIdx.x, col from y; neighbouring
// threads (consecutive threadIdx.x) then read rows of a that lie k floats apart.
KILN_GLOBAL void matmul_naive_kernel(const float* a, const float* b, float* c, int n, int k, int m);

// The same, with col = blockIdx.x·blockDim.x + threadIdx.x and row from y: neighbouring threads
// read neighbouring elements of b and write neighbouring elements of c (coalesced accesses).
KILN_GLOBAL void matmul_coalesced_kernel(const float* a, const float* b, float* c, int n, int k, int m);

// The coalesced mapping with shared memory: each block walks the inner dimension in kTile steps,
// ⌈k / kTile⌉ of them (one for k = 16, none past the end), and in each step the block's threads
// load a kTile × kTile tile of a and of b into KILN_SHARED arrays (zeros outside the matrices),
// kiln_syncthreads(), multiply the tiles, kiln_syncthreads() again.
KILN_GLOBAL void matmul_tiled_kernel(const float* a, const float* b, float* c, int n, int k, int m);

// ---- Challenge: register blocking ----------------------------------------------------------------
// A block computes a kBlockM × kBlockN tile of c, c[64·by .. 64·by + 63, 64·bx .. 64·bx + 63] for
// (bx, by) = blockIdx, walking the inner dimension in steps of kBlockK: its threads load a 64 × 8
// tile of a into a_tile[kBlockM][kBlockK] and an 8 × 64 tile of b into b_tile[kBlockK][kBlockN]
// (0 outside the matrices), kiln_syncthreads(), multiply, kiln_syncthreads(). Each thread keeps
// several results in registers (a local float array), so that one read of shared memory serves
// several multiply-adds.
inline constexpr int kBlockM = 64, kBlockN = 64, kBlockK = 8, kThreadM = 8, kThreadN = 8;

// 1D block tiling: blocks of kBlockN × (kBlockM / kThreadM) = 64 × 8 threads. Thread (tx, ty)
// computes kThreadM = 8 results of one column: rows 8·ty .. 8·ty + 7 of the block's tile, column
// tx. The 512 threads load one element of each tile apiece: thread t = 64·ty + tx loads
// a_tile[t / 8][t % 8] and b_tile[ty][tx], so that a warp's load of a is 4 rows of 8 neighbouring
// floats (the counts check its transactions against this pattern). Per inner index,
// b_tile[dot][tx] is read once, into a register, for 8 products.
KILN_GLOBAL void matmul_blocktile_1d_kernel(const float* a, const float* b, float* c, int n, int k, int m);

// 2D block tiling: blocks of (kBlockN / kThreadN) × (kBlockM / kThreadM) = 8 × 8 threads. Thread
// (tx, ty) computes a kThreadM × kThreadN = 8 × 8 block of results: rows 8·ty .. 8·ty + 7, columns
// 8·tx .. 8·tx + 7 of the block's tile. The 64 threads load 8 elements of each tile apiece:
// thread t = 8·ty + tx loads elements t, t + 64, t + 128, ... of each tile, in row-major order,
// so that each of a warp's loads of a is 4 rows of 8 neighbouring floats (the counts check its
// transactions against this pattern; a contiguous run of 8 elements per thread is not it).
// Per inner index, it copies 8 values of a_tile's column and 8 of b_tile's row into registers and
// does the 64 products from there.
KILN_GLOBAL void matmul_blocktile_2d_kernel(const float* a, const float* b, float* c, int n, int k, int m);

// out[i, :] = w[ids[i], :], one thread per element of out (x over dim, y over i).
KILN_GLOBAL void embedding_gather_kernel(const float* w, const std::int64_t* ids, float* out, int count, int dim);

// grad_w[ids[i], :] += g[i, :] for every i, one thread per element of g (x over dim, y over i).
// Several threads add into the same row when ids repeat: use kiln_atomic_add.
KILN_GLOBAL void embedding_scatter_add_kernel(const float* g, const std::int64_t* ids, float* grad_w, int count,
                                              int dim);

// What the launchers (the emulator's below, the device's in kiln/gpu_device.h) put in the
// buffers: an output starts as NaN (kUnwritten), so an element no thread wrote never passes, and
// a gradient the scatter-add adds into starts at zero; behind every output lie kGuardFloats floats
// holding kGuard, a value no kernel computes, so a write past the end is seen.
inline constexpr float kGuard = -7.77e30f;
inline constexpr std::size_t kGuardFloats = 4096;
inline constexpr float kUnwritten = std::numeric_limits<float>::quiet_NaN();

// Given (src/gpu_given.cpp): each kernel launched on the emulator for tensors, with the launch
// shapes above. A kernel that writes past the end of its output makes these throw
// std::out_of_range; one that loads or stores any other element outside the tensors (a load past
// the edge, which a GPU would not report) makes them throw kiln::IndexError naming the thread,
// the buffer and the element. After each, grid::last_launch() holds the launch's counts
// (kiln/grid.h), with the buffers named "a", "b", "c" for a product, "w", "ids", "out" for the gather, and "g",
// "ids", "grad_w" for the scatter-add.
enum class MatmulKernel { naive, coalesced, tiled, blocktile_1d, blocktile_2d };
Tensor emulate_matmul(const Tensor& a, const Tensor& b, MatmulKernel kernel);
Tensor emulate_embedding_gather(const Tensor& w, const std::vector<std::int64_t>& ids);
Tensor emulate_embedding_scatter_add(const Tensor& g, const std::vector<std::int64_t>& ids, std::int64_t rows);

}  // namespace kiln
