// Given: `grader bench 17 --gpu`, the kernels of kiln/gpu.h timed on a CUDA device beside the
// vendor library, in two groups:
//   matmul 4096x4096   the ladder (naive, coalesced, shared-memory tiled) against cuBLAS SGEMM:
//                      2·n³ flops per call, and 3·n² floats of compulsory traffic
//   embedding          module 11's question asked again on the GPU: the lookup and its
//                      scatter-add against the one-hot products (by cuBLAS), forward plus
//                      backward, at the source's full size, 1,000,000 ids into a 703 × 27 table
// Each call is one launch, waited for. Every kernel is checked before it is timed: the products
// against cuBLAS's (itself spot-checked here in double), the embedding against the one-hot route.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cublas.h"
#include "kiln/bench.h"
#include "kiln/gpu_device.h"

namespace {

using kiln::MatmulKernel;
using kiln::bench::Role;

std::vector<float> uniform_values(std::size_t count, unsigned seed) {
  std::mt19937 generator(seed);
  std::vector<float> values(count);
  for (float& v : values) v = static_cast<float>(generator() >> 8) / 8388608.0f - 1.0f;  // [-1, 1)
  return values;
}

void register_matmul() {
  const int n = 4096;
  const std::string group = fmt::format("matmul {}x{} (device)", n, n);
  const std::vector<float> a = uniform_values(std::size_t(n) * n, 1), b = uniform_values(std::size_t(n) * n, 2);
  auto product = std::make_shared<kiln::device::Matmul>(a, b, n, n, n);

  // The reference: cuBLAS's product, checked here at 64 places against dot products in double.
  kiln::device::cublas_matmul(product->a(), product->b(), product->c(), n, n, n);
  auto reference = std::make_shared<std::vector<float>>(product->result());
  std::mt19937 pick(3);
  for (int s = 0; s < 64; ++s) {
    const int i = static_cast<int>(pick() % n), j = static_cast<int>(pick() % n);
    double sum = 0;
    for (int p = 0; p < n; ++p) sum += double(a[std::size_t(i) * n + p]) * b[std::size_t(p) * n + j];
    if (std::fabs(sum - (*reference)[std::size_t(i) * n + j]) > 1e-3 * (1 + std::fabs(sum))) {
      std::fprintf(stderr, "cuBLAS's product differs from a dot product in double at [%d, %d]\n", i, j);
      std::exit(1);
    }
  }
  const double flops = 2.0 * n * n * n, bytes = 3.0 * n * n * sizeof(float);
  // Every kernel writes into the same c: each validation clears it (NaN) and runs its kernel once
  // more, so that what it finds is that kernel's own result, not an earlier one's.
  auto validated = [product, reference](std::function<void()> run) {
    return [product, reference, run] {
      product->clear();
      run();
      const std::vector<float> c = product->result();
      return kiln::bench::compare(c.data(), reference->data(), c.size(), 1e-3);
    };
  };
  const std::pair<MatmulKernel, const char*> ladder[] = {
      {MatmulKernel::naive, "naive_kernel"}, {MatmulKernel::coalesced, "coalesced_kernel"}, {MatmulKernel::tiled, "tiled_kernel"}};
  for (const auto& [kernel, name] : ladder) {
    const std::function<void()> run = [product, kernel] { product->run(kernel); };
    kiln::bench::add({group, name, kernel == MatmulKernel::naive ? Role::naive : Role::kernel, flops, bytes, 0, run,
                      validated(run)});
  }
  const std::function<void()> cublas = [product, n] {
    kiln::device::cublas_matmul(product->a(), product->b(), product->c(), n, n, n);
  };
  kiln::bench::add({group, "cublas_sgemm", Role::library, flops, bytes, 0, cublas, validated(cublas)});
}

void register_embedding() {
  const int rows = 703, dim = 27, count = 1000000;
  const std::string group = fmt::format("embedding {} ids, {}x{}, forward+backward (device)", count, rows, dim);
  std::mt19937 generator(4);
  std::vector<std::int64_t> ids(count);
  for (auto& id : ids) id = generator() % rows;
  auto table = std::make_shared<kiln::device::Embedding>(uniform_values(std::size_t(rows) * dim, 5), rows, dim, ids,
                                                          uniform_values(std::size_t(count) * dim, 6));
  auto one_hot = std::make_shared<kiln::device::OneHot>(ids, rows);

  // The reference: the one-hot route's results, computed once into the same buffers.
  one_hot->forward(table->w(), table->out(), dim);
  one_hot->backward(table->g(), table->grad(), dim);
  auto out = std::make_shared<std::vector<float>>(table->gathered());
  auto grad = std::make_shared<std::vector<float>>(table->grad_w());
  // As for the products: each validation clears the outputs and runs its route once more.
  auto validated = [table, out, grad](std::function<void()> run) {
    return [table, out, grad, run]() -> std::string {
      table->clear();
      run();
      const std::vector<float> gathered = table->gathered(), grad_w = table->grad_w();
      if (auto error = kiln::bench::compare(gathered.data(), out->data(), gathered.size(), 0); !error.empty())
        return "forward: " + error;
      if (auto error = kiln::bench::compare(grad_w.data(), grad->data(), grad_w.size(), 1e-3); !error.empty())
        return "backward: " + error;
      return "";
    };
  };
  // Flops as in module 11: the one-hot products count every multiply-add, the scatter-add its
  // additions, the lookup none. Traffic: ids, table and gradient, the gathered rows and G; the
  // one-hot route also writes nothing new per call but reads its count × rows matrix twice.
  const double task_bytes = count * 8.0 + 2.0 * rows * dim * 4 + 2.0 * count * dim * 4;
  const double one_hot_bytes = 2.0 * count * rows * 4;
  const std::function<void()> one_hot_route = [table, one_hot, dim] {
    one_hot->forward(table->w(), table->out(), dim);
    one_hot->backward(table->g(), table->grad(), dim);
  };
  const std::function<void()> lookup_route = [table] {
    table->gather();
    table->scatter_add();
  };
  kiln::bench::add({group, "one_hot_cublas", Role::naive, 2 * 2.0 * count * rows * dim, task_bytes + one_hot_bytes,
                    0, one_hot_route, validated(one_hot_route)});
  kiln::bench::add({group, "lookup_scatter_add", Role::kernel, double(count) * dim, task_bytes, 0, lookup_route,
                    validated(lookup_route)});
}

}  // namespace

void register_benchmarks(const kiln::bench::Options&) {
  if (const std::string why = kiln::device::unavailable_reason(); !why.empty()) {
    std::fprintf(stderr, "%s\n", why.c_str());
    std::exit(3);  // the grader's sign for "no device"
  }
  const kiln::device::Info device = kiln::device::info();
  benchmark::AddCustomContext("kiln_device", device.name);
  benchmark::AddCustomContext("kiln_peak_gflops", fmt::format("{}", device.peak_gflops));
  benchmark::AddCustomContext("kiln_bandwidth_gbs", fmt::format("{}", device.bandwidth_gbs));
  register_matmul();
  register_embedding();
}
