// Module 17 on a CUDA device: the kernels of kiln/gpu.h launched on a GPU with the emulator's
// launch shapes (blocks of kTile × kTile threads, the grid rounded up). Given code
// (device/launch.cu), built only where the CUDA Toolkit is installed; the device checks and
// `grader bench 17 --gpu` use it. Plain C++: no CUDA header is needed to call it.
//
// Every launch waits for the kernel. Outputs start as NaN, with a guard region behind them
// (kiln/gpu.h), and reading a result reports what a GPU does not report by itself:
//   a kernel still marked KILN_NOT_IMPLEMENTED  std::runtime_error "not written yet: kernel (file:line)"
//   a write past the end of an output           std::out_of_range
// A CUDA error (an illegal address, ...) throws std::runtime_error naming the kernel at the launch.
// Grids hold at most 65535 blocks in y, so at most 1,048,560 rows (std::length_error beyond).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/gpu.h"

namespace kiln::device {

// Empty when a CUDA device can run the kernels here; otherwise why not, starting "no CUDA device".
std::string unavailable_reason();

// The device the kernels run on, with its peak figures from the CUDA runtime's attributes.
struct Info {
  std::string name;            // "NVIDIA H200"
  int compute_capability = 0;  // 90 for 9.0
  int multiprocessors = 0;
  double peak_gflops = 0;      // FP32: multiprocessors × FP32 lanes × 2 × clock
  double bandwidth_gbs = 0;    // memory clock × bus width × 2 (double data rate)
  std::size_t memory_bytes = 0;
};
Info info();

// c = a·b for row-major a (n, k) and b (k, m), with the three matrices kept on the device so that
// a launch can be timed apart from the copies.
class Matmul {
 public:
  Matmul(const std::vector<float>& a, const std::vector<float>& b, int n, int k, int m);
  ~Matmul();
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  void clear();                       // c = NaN again: the next result shows only what was written
  void run(MatmulKernel kernel);      // one launch, waited for
  std::vector<float> result() const;  // c (n·m values), after the checks above

  // Device pointers, for a library to compute into the same buffers (cuBLAS in the bench).
  const float* a() const { return a_; }
  const float* b() const { return b_; }
  float* c() { return c_; }
  const int n, k, m;

 private:
  float* a_ = nullptr;
  float* b_ = nullptr;
  float* c_ = nullptr;
};

// An embedding table w (rows, dim), the ids looked up, and the gradient of the gathered rows, on
// the device: the forward gather and the backward scatter-add.
class Embedding {
 public:
  // g: the gradient of the gathered rows, (ids.size(), dim); empty when only gathering.
  Embedding(const std::vector<float>& w, int rows, int dim, const std::vector<std::int64_t>& ids,
            const std::vector<float>& g = {});
  ~Embedding();
  Embedding(const Embedding&) = delete;
  Embedding& operator=(const Embedding&) = delete;

  void clear();                           // out = NaN again
  void gather();                          // out = w[ids], one launch, waited for
  std::vector<float> gathered() const;    // (count, dim), after the checks above
  void scatter_add();                     // grad_w = 0, then grad_w[ids[i]] += g[i], waited for
  std::vector<float> grad_w() const;      // (rows, dim), after the checks above

  const float* w() const { return w_; }
  const float* g() const { return g_; }
  float* out() { return out_; }
  float* grad() { return grad_w_; }
  const int rows, dim, count;

 private:
  float* w_ = nullptr;
  std::int64_t* ids_ = nullptr;
  float* out_ = nullptr;
  float* g_ = nullptr;
  float* grad_w_ = nullptr;
};

}  // namespace kiln::device
