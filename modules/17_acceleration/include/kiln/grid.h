// A CPU emulator for CUDA-style kernels, so the GPU kernels of this module run, and are checked,
// on every machine. A kernel is an ordinary function that reads its coordinates from blockIdx,
// blockDim and threadIdx; launch(grid, block, kernel, args...) runs it once for every thread of
// every block. The same source compiles under nvcc, where these names are CUDA's own.
//
//   KILN_GLOBAL            marks a kernel (__global__ under nvcc)
//   KILN_SHARED            block-shared memory (__shared__ under nvcc; one copy per block here)
//   kiln_syncthreads()     the block's barrier (__syncthreads under nvcc)
//   kiln_atomic_add(p, v)  *p += v as one indivisible step (atomicAdd under nvcc)
//   KILN_NOT_IMPLEMENTED() marks a kernel still to write (in kernels only: it returns from a void
//                          function). On the emulator it throws kiln::NotImplemented; device code
//                          cannot throw, so on a GPU it records its line for the launcher
//                          (kiln/gpu_device.h) to report, and returns.
//
// How the emulator runs a block: every thread is a coroutine with a small stack of its own. The
// threads run one after another, each until it finishes or reaches kiln_syncthreads(); once every
// thread of the block waits at the barrier, they all go on. So a kernel that reads shared memory
// before the barrier that should protect it reads values not yet written, as a real GPU may, and
// gets wrong answers here every time instead of now and then.
#pragma once

#if defined(__CUDACC__)

#define KILN_GLOBAL __global__
#define KILN_SHARED __shared__
#define kiln_syncthreads() __syncthreads()
#define kiln_atomic_add(pointer, value) atomicAdd((pointer), (value))

namespace kiln::grid {
// The line of the first KILN_NOT_IMPLEMENTED() a kernel of this translation unit reached, or 0.
static __device__ int stub_line = 0;
}  // namespace kiln::grid

#define KILN_NOT_IMPLEMENTED()                       \
  do {                                               \
    atomicCAS(&::kiln::grid::stub_line, 0, __LINE__); \
    return;                                          \
  } while (0)

#else

#include <functional>

#include "kiln/errors.h"

namespace kiln::grid {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// The coordinates of the thread the emulator is running.
extern Dim3 threadIdx, blockIdx, blockDim, gridDim;

void syncthreads();

// Runs body once per thread of each block of the grid, in the way described above. Rethrows the
// first exception a thread throws. Blocks hold at most 1024 threads, as on CUDA devices.
void launch_body(Dim3 grid, Dim3 block, const std::function<void()>& body);

template <class Kernel, class... Args>
void launch(Dim3 grid, Dim3 block, Kernel kernel, Args... args) {
  launch_body(grid, block, [&] { kernel(args...); });
}

}  // namespace kiln::grid

using kiln::grid::blockDim;
using kiln::grid::blockIdx;
using kiln::grid::gridDim;
using kiln::grid::threadIdx;

#define KILN_GLOBAL
#define KILN_SHARED static
#define kiln_syncthreads() ::kiln::grid::syncthreads()
// The emulator never runs two threads at the same moment, so a plain addition is indivisible.
inline void kiln_atomic_add(float* pointer, float value) { *pointer += value; }

#define KILN_NOT_IMPLEMENTED() throw ::kiln::NotImplemented()

#endif
