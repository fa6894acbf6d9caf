// Given: the bench of module 11, `grader bench 11`. It answers the question this module starts
// from, "is indexing slower than the redundant one-hot matmul?", by measuring both routes side by
// side: forward (one_hot(ids)·W against your embedding_lookup), backward (one_hot(ids)ᵀ·G against
// your embedding_backward), and the two together, as a training step runs them.
//
// Sizes: the table of the source, 703 rows (the trigram model's inputs) of 27 values (its
// outputs). With --full the 1,000,000 ids of the source, where the one-hot matrix alone is
// 1,000,000 × 703 floats = 2.8 GB and the product does 38 GFLOP per call; by default 100,000 ids,
// ten times less, so that the bench takes seconds. Every kernel is checked before it is timed:
// a lookup against rows copied here (exactly: a copy changes no bits, and the one-hot product
// adds only zeros to the one row it picks), a gradient against a scatter-add computed here in
// double.
//
// The counts, per call, for n ids, a table of V rows and D columns:
//   one-hot product  2·n·V·D flops, every multiply-add of the dense product (almost all by zero);
//                    its traffic includes the n·V one-hot matrix, written once and read once, which
//                    no cache holds: that temporary is the price of the route
//   lookup           no arithmetic at all: pure data movement, so its roofline is the bandwidth
//   scatter-add      n·D additions
// and the compulsory traffic of the task itself: the ids (8 bytes each), the table or its gradient
// (V·D floats), and the n·D floats of the output or of G.
//
// The inputs are built inside the first timed call, not when the kernels are registered, so that a
// tensor function you have not written yet (module 01) is reported as "not written" for each
// kernel instead of stopping the whole bench.
#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kiln/bench.h"
#include "kiln/embeddings.h"

namespace {

using kiln::Indices;
using kiln::Tensor;
using kiln::bench::Role;

constexpr std::int64_t kRows = 703;  // V: the table's rows, one per id
constexpr std::int64_t kDim = 27;    // D: the values of each row

// Uniform in [0, 1), from std::mt19937, whose sequence the C++ standard fixes.
double uniform(std::mt19937& generator) { return static_cast<double>(generator() >> 8) / 16777216.0; }

// Standard normal values (Box-Muller), like the source's torch.randn.
std::vector<float> normal_values(std::size_t count, std::mt19937& generator) {
  std::vector<float> values(count);
  for (float& v : values) {
    const double u1 = uniform(generator);
    const double u2 = uniform(generator);
    v = static_cast<float>(std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2));
  }
  return values;
}

// The results of one call: the forward rows and/or the table's gradient.
struct Results {
  Tensor rows;
  Tensor grad;
};

// One problem size: the table, the ids, a gradient G to send back, and the expected results.
struct Problem {
  std::int64_t n = 0;                   // number of ids
  Indices ids;                          // n ids in [0, V)
  std::vector<float> table_values;      // W (V, D), row-major
  std::vector<float> grad_values;       // G (n, D), row-major: the gradient of the lookup's output
                                        // (released once the tensor grad holds a copy)
  std::vector<float> expected_rows;     // (n, D): row k is row ids[k] of W
  std::vector<float> expected_grad;     // (V, D): Σ of G's rows per id, summed in double
  std::optional<Tensor> table, grad;    // built on first use (they need module 01's Tensor)
  // The last call's results, whichever kernel made them. The bench runs one kernel at a time and
  // checks each call's results before the next call, so one place is enough, and it keeps a single
  // output (108 MB at full size) alive instead of one per kernel.
  Results last;

  explicit Problem(std::int64_t count) : n(count) {
    std::mt19937 generator(703);
    table_values = normal_values(static_cast<std::size_t>(kRows * kDim), generator);
    ids.resize(static_cast<std::size_t>(n));
    for (auto& id : ids) id = static_cast<std::int64_t>(generator() % kRows);
    grad_values = normal_values(static_cast<std::size_t>(n * kDim), generator);

    expected_rows.resize(static_cast<std::size_t>(n * kDim));
    std::vector<double> sums(static_cast<std::size_t>(kRows * kDim), 0.0);
    for (std::int64_t k = 0; k < n; ++k) {
      const std::int64_t id = ids[static_cast<std::size_t>(k)];
      for (std::int64_t d = 0; d < kDim; ++d) {
        expected_rows[static_cast<std::size_t>(k * kDim + d)] = table_values[static_cast<std::size_t>(id * kDim + d)];
        sums[static_cast<std::size_t>(id * kDim + d)] += grad_values[static_cast<std::size_t>(k * kDim + d)];
      }
    }
    expected_grad.assign(sums.begin(), sums.end());
  }

  const Tensor& weight() {
    if (!table) table = Tensor({kRows, kDim}, table_values);
    return *table;
  }
  const Tensor& grad_output() {
    if (!grad) {
      grad = Tensor({n, kDim}, grad_values);
      std::vector<float>().swap(grad_values);  // 108 MB at full size: keep one copy of G, not two
    }
    return *grad;
  }
};

// "" when actual has the expected shape and values (within tolerance), otherwise what differs.
std::string check(const char* what, const Tensor& actual, const kiln::Shape& shape, const std::vector<float>& expected,
                  double tolerance) {
  if (actual.shape() != shape) {
    return std::string(what) + " has shape " + kiln::to_string(actual.shape()) + ", expected " + kiln::to_string(shape);
  }
  const std::string difference =
      kiln::bench::compare(actual.contiguous().data(), expected.data(), expected.size(), tolerance);
  return difference.empty() ? "" : std::string(what) + ": " + difference;
}

// A lookup is a copy: exact.
std::string check_rows(const Problem& p, const Tensor& rows) {
  return check("the looked-up rows", rows, {p.n, kDim}, p.expected_rows, 0.0);
}

// A gradient sums ~n/V rows of G per id in float, in some order: close to the double sum, not equal.
std::string check_grad(const Problem& p, const Tensor& grad) {
  return check("the table's gradient", grad, {kRows, kDim}, p.expected_grad, 1e-4);
}

using Call = std::function<void(Problem&, Results&)>;                          // one call, into Results
using Verdict = std::function<std::string(const Problem&, const Results&)>;  // "" or what differs

void add_kernel(const std::string& group, const char* name, Role role, double flops, double bytes, double extra_bytes,
                Call call, Verdict verdict, const std::shared_ptr<Problem>& problem) {
  kiln::bench::Kernel kernel;
  kernel.group = group;
  kernel.name = name;
  kernel.role = role;
  kernel.flops = flops;
  kernel.bytes = bytes;
  kernel.extra_bytes = extra_bytes;
  kernel.run = [problem, call = std::move(call)] {
    problem->last = Results{};  // free the last call's output before this one allocates its own
    call(*problem, problem->last);
  };
  kernel.validate = [problem, verdict = std::move(verdict)] { return verdict(*problem, problem->last); };
  kiln::bench::add(std::move(kernel));
}

}  // namespace

void register_benchmarks(const kiln::bench::Options& options) {
#ifdef __GLIBC__
  // Keep freed memory in the process, so that a call reuses the pages of the last call's output
  // (and one-hot matrix) instead of asking the operating system for fresh ones, which it zero-fills
  // and maps one page fault at a time: at 1,000,000 ids that costs more than the lookup itself,
  // and it would time the operating system rather than the kernels. (Big blocks otherwise go
  // straight back to the system when freed.)
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
#endif
  const std::int64_t n = options.full ? 1'000'000 : 100'000;
  auto problem = std::make_shared<Problem>(n);
  const std::string size = " " + std::to_string(kRows) + "x" + std::to_string(kDim) + ", " + std::to_string(n) + " ids";

  const double ids = static_cast<double>(n), rows = kRows, dim = kDim;
  const double id_bytes = ids * sizeof(std::int64_t);
  const double table_bytes = rows * dim * 4;         // W, or its gradient
  const double output_bytes = ids * dim * 4;         // the looked-up rows, or G
  const double one_hot_bytes = ids * rows * 4;       // the (n, V) one-hot matrix
  const double product_flops = 2 * ids * rows * dim;  // one dense (n, V)·(V, D) product
  const double scatter_flops = ids * dim;             // one addition per value of G

  // Forward: the rows of W for the ids.
  const std::string forward = "embedding forward" + size;
  add_kernel(forward, "one_hot_matmul", Role::naive, product_flops,
             id_bytes + table_bytes + output_bytes + 2 * one_hot_bytes, one_hot_bytes,
             [](Problem& p, Results& r) { r.rows = kiln::one_hot_matmul(p.weight(), p.ids); },
             [](const Problem& p, const Results& r) { return check_rows(p, r.rows); }, problem);
  add_kernel(forward, "embedding_lookup", Role::kernel, 0, id_bytes + table_bytes + output_bytes, 0,
             [](Problem& p, Results& r) { r.rows = kiln::embedding_lookup(p.weight(), p.ids); },
             [](const Problem& p, const Results& r) { return check_rows(p, r.rows); }, problem);

  // Backward: the table's gradient from G.
  const std::string backward = "embedding backward" + size;
  add_kernel(backward, "one_hot_matmul_backward", Role::naive, product_flops,
             id_bytes + output_bytes + table_bytes + 2 * one_hot_bytes, one_hot_bytes,
             [](Problem& p, Results& r) { r.grad = kiln::one_hot_matmul_backward(p.grad_output(), p.ids, kRows); },
             [](const Problem& p, const Results& r) { return check_grad(p, r.grad); }, problem);
  add_kernel(backward, "embedding_backward", Role::kernel, scatter_flops, id_bytes + output_bytes + table_bytes, 0,
             [](Problem& p, Results& r) { r.grad = kiln::embedding_backward(p.grad_output(), p.ids, kRows); },
             [](const Problem& p, const Results& r) { return check_grad(p, r.grad); }, problem);

  // Both, as one training step runs them (with a fixed G standing in for the loss's gradient). The
  // one-hot route builds its matrix twice, once per pass, but holds only one at a time.
  const std::string both = "embedding forward+backward" + size;
  add_kernel(both, "one_hot_matmul+backward", Role::naive, 2 * product_flops,
             2 * (id_bytes + table_bytes + output_bytes + 2 * one_hot_bytes), one_hot_bytes,
             [](Problem& p, Results& r) {
               r.rows = kiln::one_hot_matmul(p.weight(), p.ids);
               r.grad = kiln::one_hot_matmul_backward(p.grad_output(), p.ids, kRows);
             },
             [](const Problem& p, const Results& r) {
               const std::string rows = check_rows(p, r.rows);
               return rows.empty() ? check_grad(p, r.grad) : rows;
             },
             problem);
  add_kernel(both, "embedding_lookup+backward", Role::kernel, scatter_flops,
             2 * (id_bytes + table_bytes + output_bytes), 0,
             [](Problem& p, Results& r) {
               r.rows = kiln::embedding_lookup(p.weight(), p.ids);
               r.grad = kiln::embedding_backward(p.grad_output(), p.ids, kRows);
             },
             [](const Problem& p, const Results& r) {
               const std::string rows = check_rows(p, r.rows);
               return rows.empty() ? check_grad(p, r.grad) : rows;
             },
             problem);
}
