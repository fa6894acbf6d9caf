// Given: the bench of module 03, `grader bench 03`. It times every rung of your matmul ladder
// beside Eigen's product (blas_matmul) on one pair of square matrices, after checking each result
// against a product computed here in double precision.
//
// Size: 256×256 by default. Every rung does 2·256³ ≈ 34 million floating-point operations per
// call, which takes the hand-written rungs tens of milliseconds on one core and Eigen under one:
// quick enough to repeat, big enough that the differences are not noise. With --full the same
// ladder runs at 512×512 as well, eight times the work, where the slowest rungs still stay under
// a second a call. There B alone is 1 MiB, more than many cores' L2 cache, and a column of it
// steps 2 KiB from one value to the next, so the rungs that walk B's columns wait on memory more
// and more: module 17 tiles the loops to fix that.
//
// The inputs are built inside the first timed call, not when the kernels are registered, so that a
// tensor function you have not written yet (module 01) is reported as "not written" for each
// kernel instead of stopping the whole bench.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kiln/bench.h"
#include "kiln/layers.h"

namespace {

using kiln::Tensor;
using kiln::bench::Role;
using kiln::bench::uniform_values;

// One size of the ladder: A and B are (n, n); the reference C = A·B was computed in double.
struct Problem {
  std::int64_t n = 0;
  std::vector<float> a_values, b_values;  // row-major (n, n)
  std::vector<float> expected;             // row-major (n, n), rounded from double
  std::optional<Tensor> a, b;              // built on first use (they need module 01's Tensor)

  explicit Problem(std::int64_t size) : n(size) {
    const auto count = static_cast<std::size_t>(n * n);
    a_values = uniform_values(count, 3);
    b_values = uniform_values(count, 11);
    // The reference, with loops in i, p, j order so that the innermost walks rows of B and C.
    std::vector<double> c(count, 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t p = 0; p < n; ++p) {
        const double a_ip = a_values[static_cast<std::size_t>(i * n + p)];
        const float* b_row = b_values.data() + p * n;
        double* c_row = c.data() + i * n;
        for (std::int64_t j = 0; j < n; ++j) c_row[j] += a_ip * b_row[j];
      }
    }
    expected.assign(c.begin(), c.end());
  }

  const Tensor& lhs() {
    if (!a) a = Tensor({n, n}, a_values);
    return *a;
  }
  const Tensor& rhs() {
    if (!b) b = Tensor({n, n}, b_values);
    return *b;
  }

  // "" when c is the (n, n) reference product, to float accuracy; otherwise what differs.
  std::string check(const Tensor& c) const {
    if (c.shape() != kiln::Shape{n, n}) {
      return "the product has shape " + kiln::to_string(c.shape()) + ", expected " + kiln::to_string({n, n});
    }
    // Sums of n products of values in [-1, 1): float rounding stays far below 1e-4 of the terms.
    const std::string difference = kiln::bench::compare(c.contiguous().data(), expected.data(), expected.size(), 1e-4);
    return difference.empty() ? "" : "the product: " + difference;
  }
};

using Matmul = Tensor (*)(const Tensor&, const Tensor&);

Tensor einsum_matmul(const Tensor& a, const Tensor& b) { return kiln::einsum("ik,kj->ij", a, b); }

void add_ladder(std::int64_t n) {
  auto problem = std::make_shared<Problem>(n);
  const std::string group = "matmul " + std::to_string(n) + "x" + std::to_string(n);
  const double size = static_cast<double>(n);

  struct Rung {
    const char* name;
    Role role;
    Matmul matmul;
  };
  const Rung rungs[] = {
      {"matmul_loops", Role::naive, kiln::matmul_loops},
      {"matmul_dot", Role::kernel, kiln::matmul_dot},
      {"matmul_broadcast", Role::kernel, kiln::matmul_broadcast},
      {"einsum(\"ik,kj->ij\")", Role::kernel, einsum_matmul},
      {"blas_matmul", Role::library, kiln::blas_matmul},
  };
  for (const Rung& rung : rungs) {
    auto result = std::make_shared<Tensor>();  // this kernel's last product
    kiln::bench::Kernel kernel;
    kernel.group = group;
    kernel.name = rung.name;
    kernel.role = rung.role;
    kernel.flops = 2 * size * size * size;  // n² outputs, n multiply-adds each
    kernel.bytes = 3 * size * size * 4;     // read A and B, write C, once each
    // matmul_broadcast's (k, m) temporary per row is freed before the next row is built.
    if (std::string(rung.name) == "matmul_broadcast") kernel.extra_bytes = size * size * 4;
    kernel.run = [problem, result, matmul = rung.matmul] { *result = matmul(problem->lhs(), problem->rhs()); };
    kernel.validate = [problem, result] { return problem->check(*result); };
    kiln::bench::add(std::move(kernel));
  }
}

}  // namespace

void register_benchmarks(const kiln::bench::Options& options) {
  add_ladder(256);
  if (options.full) add_ladder(512);
}
