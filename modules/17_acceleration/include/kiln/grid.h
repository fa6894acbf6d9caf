// A CPU emulator for CUDA-style kernels, so the GPU kernels of this module run, and are checked,
// on every machine. A kernel is an ordinary function that reads its coordinates from blockIdx,
// blockDim and threadIdx; launch(grid, block, kernel, args...) runs it once for every thread of
// every block. The same source compiles under nvcc, where these names are CUDA's own.
//
//   KILN_GLOBAL            marks a kernel (__global__ under nvcc)
//   kiln_load(p)           *p, a load from global memory (the kernel's pointer arguments): write
//                          kiln_load(&a[i]) for a[i], as CUDA's __ldg(&a[i]) reads
//   kiln_store(p, v)       *p = v, a store to global memory: kiln_store(&c[i], v)
//   kiln_atomic_add(p, v)  *p += v as one indivisible step (atomicAdd under nvcc)
//   KILN_SHARED(T) x[16];  block-shared memory (__shared__ T x[16] under nvcc; one copy per block
//                          here), read and written as an ordinary array, x[i]
//   kiln_syncthreads()     the block's barrier (__syncthreads under nvcc)
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
//
// What the emulator counts (last_launch()): every kiln_load, kiln_store and kiln_atomic_add of the
// buffers a launcher tracked, and every access to a KILN_SHARED array, grouped as the hardware
// groups them (a plain a[i] on a pointer argument reads the same value, uncounted). The threads
// of a block are numbered as CUDA numbers them (threadIdx.x first, then y, then z) and cut into
// warps of 32. The k-th load of buffer b by each thread of a warp counts as one warp-wide
// instruction, a *request* (a thread that skipped a load, at an edge, is simply not part of it).
// A global request costs one *transaction* per distinct 128-byte segment its threads touch
// (offsets from the start of the buffer, as cudaMalloc aligns buffers); a shared request costs as
// many *passes* as the most distinct 4-byte words its threads touch in one of the 32 banks (bank =
// word address mod 32; threads reading the same word share it, a broadcast). No caches, no
// timing, no occupancy: see the chapter.
#pragma once

#include <type_traits>

#if defined(__CUDACC__)

#define KILN_GLOBAL __global__
#define KILN_SHARED(type) __shared__ type
#define kiln_syncthreads() __syncthreads()
#define kiln_atomic_add(pointer, value) atomicAdd((pointer), (value))

template <class T>
__device__ __forceinline__ T kiln_load(const T* address) {
  return *address;
}
template <class T>
__device__ __forceinline__ void kiln_store(T* address, std::type_identity_t<T> value) {
  *address = value;
}

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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

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

// ---- Counting --------------------------------------------------------------------------------

// One kind of access (the loads of one buffer, say) over a launch.
struct AccessCounts {
  std::int64_t accesses = 0;         // by single threads
  std::int64_t requests = 0;         // warp-wide instructions: the k-th such access of a warp's threads
  std::int64_t transactions = 0;     // global: 128-byte segments, summed over requests; shared: passes
  std::int64_t max_per_request = 0;  // the most transactions (or passes) one request needed
};

// The accesses to one buffer in global memory, named by the launcher ("a", "b", "c", ...).
struct BufferCounts {
  std::string name;
  AccessCounts loads, stores, atomics;
  std::vector<std::int64_t> reads;  // how many threads loaded each element, in the buffer's order
  // The element each lane of block (0, 0, 0)'s first warp loaded in its first load of this
  // buffer, lane by lane (-1: that lane did not load it): what `grader bench 17 --emulator` draws.
  std::vector<std::int64_t> first_request;
};

// What one launch did.
struct LaunchCounts {
  std::int64_t blocks = 0, threads_per_block = 0, warps = 0;  // warps: over all blocks
  std::vector<BufferCounts> buffers;                          // in the order they were tracked
  AccessCounts shared_loads, shared_stores;
  std::int64_t barriers = 0;  // block-wide barriers passed, summed over blocks
  // The launch's first access of global memory outside a tensor's elements (past its end, into
  // the padding a launcher allocates, or outside every buffer it tracked), said in words: which
  // thread of which block loaded or stored which element. Empty when every access was inside.
  std::string stray;

  // The buffer of that name; std::out_of_range when there is none.
  const BufferCounts& buffer(std::string_view name) const;
};

// The counts of the last launch (while a launch runs: of that launch so far).
const LaunchCounts& last_launch();

enum class Access { load, store, atomic };

// Called by kiln_load, kiln_store, kiln_atomic_add and shared<T>; they count nothing outside a
// launch, and record_global nothing outside the buffers tracked for it.
void record_global(Access access, const void* address);
void record_shared(Access access, const void* address);
void register_buffer(std::string name, const void* data, std::size_t element_bytes, std::size_t count,
                     std::size_t allocated);

// Names the memory that the next launch passes to its kernel: `allocated` elements from data, of
// which the first `count` are the tensor's (the rest is padding). Accesses inside it are counted
// under `name`, and loads of the first `count` elements one by one (BufferCounts::reads).
// Returns data, to pass on to the kernel.
template <class T>
T* track(T* data, std::size_t count, std::size_t allocated, std::string name) {
  register_buffer(std::move(name), data, sizeof(T), count, allocated);
  return data;
}

// One element of a KILN_SHARED array: reading it and assigning to it are counted. It has the size
// of T, so the elements of an array lie where a GPU's would, and the banks come out right.
template <class T>
class shared {
 public:
  shared() = default;
  shared(const shared&) = delete;  // `auto x = tile[i][j]` would copy the slot: write `float x = ...`
  operator T() const {
    record_shared(Access::load, this);
    return value_;
  }
  shared& operator=(T value) {
    record_shared(Access::store, this);
    value_ = value;
    return *this;
  }
  shared& operator=(const shared& other) { return *this = T(other); }
  shared& operator+=(T value) { return *this = T(*this) + value; }
  shared& operator-=(T value) { return *this = T(*this) - value; }

 private:
  T value_;
};

}  // namespace kiln::grid

using kiln::grid::blockDim;
using kiln::grid::blockIdx;
using kiln::grid::gridDim;
using kiln::grid::threadIdx;

#define KILN_GLOBAL
#define KILN_SHARED(type) static ::kiln::grid::shared<type>
#define kiln_syncthreads() ::kiln::grid::syncthreads()
template <class T>
T kiln_load(const T* address) {
  ::kiln::grid::record_global(::kiln::grid::Access::load, address);
  return *address;
}
template <class T>
void kiln_store(T* address, std::type_identity_t<T> value) {
  ::kiln::grid::record_global(::kiln::grid::Access::store, address);
  *address = value;
}
// On shared memory they are its ordinary reads and writes (counted as such).
template <class T>
T kiln_load(const ::kiln::grid::shared<T>* address) {
  return *address;
}
// The emulator never runs two threads at the same moment, so a plain addition is indivisible.
inline void kiln_atomic_add(float* address, float value) {
  ::kiln::grid::record_global(::kiln::grid::Access::atomic, address);
  *address += value;
}

#define KILN_NOT_IMPLEMENTED() throw ::kiln::NotImplemented()

#endif
