// Given: cuBLAS for `grader bench 17 --gpu`. cuBLAS stores matrices column by column; a row-major
// matrix read that way is its transpose, so the row-major product c = a·b is computed as
// cᵀ = bᵀ·aᵀ, which needs no copy: the arguments are b, then a.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "cublas.h"

namespace kiln::device {

namespace {

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess) throw std::runtime_error(std::string("CUDA error in ") + what + ": " + cudaGetErrorString(error));
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error in ") + what + ": " + cublasGetStatusString(status));
}

// One handle for the process, in the default math mode: FP32 throughout, no TF32.
cublasHandle_t handle() {
  static cublasHandle_t h = [] {
    cublasHandle_t made = nullptr;
    check(cublasCreate(&made), "cublasCreate");
    check(cublasSetMathMode(made, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    return made;
  }();
  return h;
}

}  // namespace

void cublas_matmul(const float* a, const float* b, float* c, int n, int k, int m) {
  const float one = 1.0f, zero = 0.0f;
  check(cublasSgemm(handle(), CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, b, m, a, k, &zero, c, m), "cublasSgemm");
  check(cudaDeviceSynchronize(), "cublasSgemm");
}

OneHot::OneHot(const std::vector<std::int64_t>& ids, int rows) : count_(static_cast<int>(ids.size())), rows_(rows) {
  std::vector<float> host(std::size_t(count_) * rows_, 0.0f);
  for (int i = 0; i < count_; ++i) host[std::size_t(i) * rows_ + ids[i]] = 1.0f;
  void* pointer = nullptr;
  check(cudaMalloc(&pointer, host.size() * sizeof(float)), "cudaMalloc (the one-hot matrix)");
  matrix_ = static_cast<float*>(pointer);
  check(cudaMemcpy(matrix_, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
}

OneHot::~OneHot() { cudaFree(matrix_); }

void OneHot::forward(const float* w, float* out, int dim) { cublas_matmul(matrix_, w, out, count_, rows_, dim); }

void OneHot::backward(const float* g, float* grad_w, int dim) {
  // grad_wᵀ (dim, rows) = gᵀ (dim, count) · one_hot (count, rows); the one-hot matrix, read column
  // by column, is its transpose, so it is used transposed.
  const float one = 1.0f, zero = 0.0f;
  check(cublasSgemm(handle(), CUBLAS_OP_N, CUBLAS_OP_T, dim, rows_, count_, &one, g, dim, matrix_, rows_, &zero, grad_w,
                    dim),
        "cublasSgemm");
  check(cudaDeviceSynchronize(), "cublasSgemm");
}

}  // namespace kiln::device
