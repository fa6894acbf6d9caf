// Given: the kernels of kiln/gpu.h launched on a CUDA device (kiln/gpu_device.h). nvcc compiles
// this file in one translation unit with the student's src/gpu_kernels.cpp, so the launches below
// run the student's kernels, and can read the line of a KILN_NOT_IMPLEMENTED a kernel reached.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kiln/gpu_device.h"

#ifndef KILN_KERNELS_FILE
#define KILN_KERNELS_FILE "src/gpu_kernels.cpp"
#endif

namespace kiln::device {

namespace {

void check(cudaError_t error, const std::string& what) {
  if (error != cudaSuccess) throw std::runtime_error("CUDA error in " + what + ": " + cudaGetErrorString(error));
}

template <class T>
T* allocate(std::size_t count) {
  void* pointer = nullptr;
  check(cudaMalloc(&pointer, count * sizeof(T)), "cudaMalloc");
  return static_cast<T*>(pointer);
}

// values, then `padding` zeros (stray reads stay inside the allocation), on the device.
template <class T>
T* upload(const std::vector<T>& values, std::size_t padding = kGuardFloats) {
  T* pointer = allocate<T>(values.size() + padding);
  check(cudaMemset(pointer, 0, (values.size() + padding) * sizeof(T)), "cudaMemset");
  if (!values.empty())
    check(cudaMemcpy(pointer, values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
  return pointer;
}

// An output of n floats: n times `initial`, then the guard.
float* guarded(std::size_t n, float initial) {
  std::vector<float> host(n + kGuardFloats, initial);
  std::fill(host.begin() + static_cast<std::ptrdiff_t>(n), host.end(), kGuard);
  return upload(host, 0);
}

void fill(float* output, std::size_t n, float value) {
  const std::vector<float> host(n, value);
  check(cudaMemcpy(output, host.data(), n * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
}

// The kernel launched last, for the stub report.
const char* last_kernel = "a kernel";

// A kernel still marked KILN_NOT_IMPLEMENTED ran: report it as the emulator would.
void check_stub() {
  int line = 0;
  check(cudaMemcpyFromSymbol(&line, ::kiln::grid::stub_line, sizeof line), "reading the stub mark");
  if (line == 0) return;
  const int none = 0;
  check(cudaMemcpyToSymbol(::kiln::grid::stub_line, &none, sizeof none), "clearing the stub mark");
  throw std::runtime_error(std::string("not written yet: ") + last_kernel + " (" + KILN_KERNELS_FILE + ":" +
                           std::to_string(line) + ")");
}

// The first n floats of an output, after checking for a stub and that the guard still holds.
std::vector<float> download(const float* output, std::size_t n, const char* kernel) {
  check_stub();
  std::vector<float> host(n + kGuardFloats);
  check(cudaMemcpy(host.data(), output, host.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (std::size_t i = n; i < host.size(); ++i) {
    if (host[i] != kGuard) {
      throw std::out_of_range(std::string(kernel) + " wrote " + std::to_string(i - n + 1) +
                              " floats past the end of its output on the device: a thread outside the output did "
                              "not stop");
    }
  }
  host.resize(n);
  return host;
}

// After a launch: the launch's own errors, then the kernel's, waited for. (The stub mark is read
// with the results, so that a timed launch pays for nothing else.)
void finish(const char* kernel) {
  last_kernel = kernel;
  check(cudaGetLastError(), std::string("launching ") + kernel);
  check(cudaDeviceSynchronize(), kernel);
}

unsigned blocks(std::int64_t size, int per_block = kTile) {
  return static_cast<unsigned>((size + per_block - 1) / per_block);
}

// The grid's y size is at most 65535 blocks on CUDA devices: 1,048,560 rows of 16.
unsigned blocks_y(std::int64_t size, int per_block = kTile) {
  const unsigned count = blocks(size, per_block);
  if (count > 65535)
    throw std::length_error("a grid of " + std::to_string(count) +
                            " blocks in y is more than a CUDA device launches (65535): at most 1,048,560 rows");
  return count;
}

// The sizes a constructor is given must fit together; checked before anything is allocated.
int checked_count(const std::vector<float>& w, int rows, int dim, const std::vector<std::int64_t>& ids,
                  const std::vector<float>& g) {
  if (w.size() != std::size_t(rows) * dim)
    throw std::invalid_argument("the table holds " + std::to_string(w.size()) + " values, not rows × dim = " +
                                std::to_string(std::size_t(rows) * dim));
  if (!g.empty() && g.size() != ids.size() * dim)
    throw std::invalid_argument("g holds " + std::to_string(g.size()) + " values, not ids × dim = " +
                                std::to_string(ids.size() * dim));
  for (std::int64_t id : ids)
    if (id < 0 || id >= rows)
      throw std::out_of_range("id " + std::to_string(id) + " is outside the table of " + std::to_string(rows) +
                              " rows");
  return static_cast<int>(ids.size());
}

int checked_rows(const std::vector<float>& a, const std::vector<float>& b, int n, int k, int m) {
  if (a.size() != std::size_t(n) * k || b.size() != std::size_t(k) * m)
    throw std::invalid_argument("a and b must hold n × k and k × m values");
  return n;
}

int attribute(cudaDeviceAttr which, int device) {
  int value = 0;
  check(cudaDeviceGetAttribute(&value, which, device), "cudaDeviceGetAttribute");
  return value;
}

// FP32 lanes per multiprocessor, by architecture (the CUDA C++ Programming Guide's throughput table).
int fp32_lanes(int major, int minor) {
  if (major == 8 && minor == 0) return 64;  // A100
  if (major >= 7 && major <= 12) return major == 7 ? 64 : 128;
  return 64;
}

}  // namespace

std::string unavailable_reason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error == cudaErrorNoDevice || (error == cudaSuccess && count == 0))
    return "no CUDA device: the CUDA runtime found no GPU on this machine";
  if (error == cudaErrorInsufficientDriver) {
    int driver = 0;
    cudaDriverGetVersion(&driver);
    if (driver == 0) return "no CUDA device: no NVIDIA driver is loaded on this machine";
    return "no CUDA device: the NVIDIA driver here runs CUDA up to " + std::to_string(driver / 1000) + "." +
           std::to_string(driver % 1000 / 10) + ", and these kernels were built with CUDA " +
           std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
           " (a newer driver, or NVIDIA's cuda-compat package, would run them)";
  }
  if (error != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(error);
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess)
    return "no CUDA device: the CUDA runtime could not read the GPU's compute capability";
  if (major < 7 || (major == 7 && attribute(cudaDevAttrComputeCapabilityMinor, 0) < 5))
    return "no CUDA device: the GPU here is older than compute capability 7.5, the oldest these kernels are built for";
  return "";
}

Info info() {
  Info i;
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  i.name = properties.name;
  i.compute_capability = properties.major * 10 + properties.minor;
  i.multiprocessors = properties.multiProcessorCount;
  i.memory_bytes = properties.totalGlobalMem;
  const double clock_khz = attribute(cudaDevAttrClockRate, 0);
  const double memory_khz = attribute(cudaDevAttrMemoryClockRate, 0);
  const double bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, 0);
  i.peak_gflops = i.multiprocessors * fp32_lanes(properties.major, properties.minor) * 2.0 * clock_khz / 1e6;
  i.bandwidth_gbs = memory_khz * 1e3 * (bus_bits / 8) * 2 / 1e9;
  return i;
}

Matmul::Matmul(const std::vector<float>& a, const std::vector<float>& b, int n, int k, int m)
    : n(checked_rows(a, b, n, k, m)), k(k), m(m), a_(upload(a)), b_(upload(b)), c_(guarded(std::size_t(n) * m, kUnwritten)) {}

Matmul::~Matmul() {
  cudaFree(a_);
  cudaFree(b_);
  cudaFree(c_);
}

void Matmul::clear() { fill(c_, std::size_t(n) * m, kUnwritten); }

void Matmul::run(MatmulKernel kernel) {
  const dim3 block(kTile, kTile);
  switch (kernel) {
    case MatmulKernel::naive:
      matmul_naive_kernel<<<dim3(blocks(n), blocks_y(m)), block>>>(a_, b_, c_, n, k, m);
      finish("matmul_naive_kernel");
      break;
    case MatmulKernel::coalesced:
      matmul_coalesced_kernel<<<dim3(blocks(m), blocks_y(n)), block>>>(a_, b_, c_, n, k, m);
      finish("matmul_coalesced_kernel");
      break;
    case MatmulKernel::tiled:
      matmul_tiled_kernel<<<dim3(blocks(m), blocks_y(n)), block>>>(a_, b_, c_, n, k, m);
      finish("matmul_tiled_kernel");
      break;
    // The challenge's register-blocked kernels: one block per 64 × 64 tile of c.
    case MatmulKernel::blocktile_1d:
      matmul_blocktile_1d_kernel<<<dim3(blocks(m, kBlockN), blocks_y(n, kBlockM)), dim3(kBlockN, kBlockM / kThreadM)>>>(
          a_, b_, c_, n, k, m);
      finish("matmul_blocktile_1d_kernel");
      break;
    case MatmulKernel::blocktile_2d:
      matmul_blocktile_2d_kernel<<<dim3(blocks(m, kBlockN), blocks_y(n, kBlockM)),
                                   dim3(kBlockN / kThreadN, kBlockM / kThreadM)>>>(a_, b_, c_, n, k, m);
      finish("matmul_blocktile_2d_kernel");
      break;
  }
}

std::vector<float> Matmul::result() const { return download(c_, std::size_t(n) * m, "the matmul kernel"); }

Embedding::Embedding(const std::vector<float>& w, int rows, int dim, const std::vector<std::int64_t>& ids,
                     const std::vector<float>& g)
    : rows(rows),
      dim(dim),
      count(checked_count(w, rows, dim, ids, g)),
      w_(upload(w)),
      ids_(upload(ids)),
      out_(guarded(std::size_t(count) * dim, kUnwritten)),
      g_(g.empty() ? nullptr : upload(g)),
      grad_w_(guarded(std::size_t(rows) * dim, 0.0f)) {}

Embedding::~Embedding() {
  cudaFree(w_);
  cudaFree(ids_);
  cudaFree(out_);
  cudaFree(g_);
  cudaFree(grad_w_);
}

void Embedding::clear() { fill(out_, std::size_t(count) * dim, kUnwritten); }

void Embedding::gather() {
  embedding_gather_kernel<<<dim3(blocks(dim), blocks_y(count)), dim3(kTile, kTile)>>>(w_, ids_, out_, count, dim);
  finish("embedding_gather_kernel");
}

std::vector<float> Embedding::gathered() const {
  return download(out_, std::size_t(count) * dim, "embedding_gather_kernel");
}

void Embedding::scatter_add() {
  if (g_ == nullptr) throw std::logic_error("scatter_add: this Embedding was built without g");
  check(cudaMemset(grad_w_, 0, std::size_t(rows) * dim * sizeof(float)), "cudaMemset");
  embedding_scatter_add_kernel<<<dim3(blocks(dim), blocks_y(count)), dim3(kTile, kTile)>>>(g_, ids_, grad_w_, count,
                                                                                          dim);
  finish("embedding_scatter_add_kernel");
}

std::vector<float> Embedding::grad_w() const {
  return download(grad_w_, std::size_t(rows) * dim, "embedding_scatter_add_kernel");
}

}  // namespace kiln::device
