// Given: the vendor library's side of `grader bench 17 --gpu`, in device/bench/cublas.cu.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::device {

// c = a·b for row-major device matrices a (n, k) and b (k, m), by cuBLAS in plain FP32 (no TF32
// tensor cores), waited for.
void cublas_matmul(const float* a, const float* b, float* c, int n, int k, int m);

// The one-hot route of module 11 on the device: the (count, rows) one-hot matrix of the ids, and
// the two products that replace the lookup and its scatter-add.
class OneHot {
 public:
  OneHot(const std::vector<std::int64_t>& ids, int rows);
  ~OneHot();
  OneHot(const OneHot&) = delete;
  OneHot& operator=(const OneHot&) = delete;

  void forward(const float* w, float* out, int dim);      // out = one_hot · w, waited for
  void backward(const float* g, float* grad_w, int dim);  // grad_w = one_hotᵀ · g, waited for

 private:
  float* matrix_ = nullptr;
  int count_, rows_;
};

}  // namespace kiln::device
