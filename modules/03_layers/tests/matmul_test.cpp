// Module 03 checks for the ladder: dot, matmul_loops, matmul_dot, matmul_broadcast and their
// shape errors. Every rung is compared with a trusted triple loop summed in double
// (testing::reference_matmul), so a rung is judged on its own, never against another rung you
// wrote. The cases include the course's sizes: a batch of 5 MNIST-sized inputs (5, 784) times a
// (784, 10) weight matrix, as in fast.ai's "matrix multiplication from foundations", and sizes
// drawn from the run's seed.
//
// Every value taken from the module's functions passes through observe() (kiln/observe.h). The
// inputs are built with module 01's Tensor and the given row() and column() views.
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/layers.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::reference_matmul;
using testing::TensorData;

// The transpose of a contiguous matrix as a view (strides (1, rows)), built with the given
// make_view so that the inputs depend on none of module 01's written functions.
Tensor transposed(const Tensor& m) { return make_view(m, {m.shape()[1], m.shape()[0]}, {1, m.shape()[1]}, 0); }

using Product = std::function<Tensor(const Tensor&, const Tensor&)>;

// One product to check: its inputs, the expected values (none: reference_matmul(a, b), computed
// by the judge) and how close they must be.
struct Case {
  std::string what;
  Tensor a, b;
  std::optional<TensorData> expected;
  double tolerance;
};

// The cases every rung must pass, in order of difficulty.
std::vector<Case> ladder_cases() {
  std::vector<Case> cases;
  // [[1, 2, 3], [4, 5, 6]]·[[7, 8], [9, 10], [11, 12]]: 1·7 + 2·9 + 3·11 = 58, and so on.
  cases.push_back({"(2, 3)·(3, 2) worked by hand", Tensor({2, 3}, {1, 2, 3, 4, 5, 6}),
                   Tensor({3, 2}, {7, 8, 9, 10, 11, 12}), data_of({2, 2}, {58, 64, 139, 154}), 0.0});
  // Five "images" of 784 pixels in [0, 1) times a (784, 10) weight matrix in [-1, 1).
  const Tensor images = random_tensor({5, 784}, 457428938475ULL, 0.0f, 1.0f);
  const Tensor weights = random_tensor({784, 10}, 2023, -1.0f, 1.0f);
  cases.push_back({"(5, 784)·(784, 10)", images, weights, std::nullopt, 1e-3});
  // Transposed views: (4, 3) and (3, 5) matrices whose elements are not where a fresh tensor's
  // would be (strides (1, 4) and (1, 3)).
  const Tensor a_view = transposed(random_tensor({3, 4}, 31));
  const Tensor b_view = transposed(random_tensor({5, 3}, 32));
  cases.push_back({"transposed views (4, 3)·(3, 5)", a_view, b_view, std::nullopt, 1e-5});
  // One row times one column, and one column times one row.
  const Tensor r = random_tensor({1, 6}, 33);
  const Tensor c = random_tensor({6, 1}, 34);
  cases.push_back({"(1, 6)·(6, 1)", r, c, std::nullopt, 1e-5});
  cases.push_back({"(6, 1)·(1, 6)", c, r, std::nullopt, 1e-5});
  // Windows that start inside their storage (offset 7 and 9): a (3, 4) of a (5, 6) matrix from
  // (1, 1) times a (4, 2) of a (6, 7) one from (1, 2).
  const Tensor a_window = make_view(random_tensor({5, 6}, 28), {3, 4}, {6, 1}, 7);
  const Tensor b_window = make_view(random_tensor({6, 7}, 29), {4, 2}, {7, 1}, 9);
  cases.push_back({"windows (3, 4)·(4, 2) that start inside their storage", a_window, b_window, std::nullopt, 1e-5});
  // An empty inner size: every entry is a sum of no terms, 0.
  cases.push_back({"(3, 0)·(0, 2), an empty inner size", Tensor::zeros({3, 0}), Tensor::zeros({0, 2}),
                   data_of({3, 2}, {0, 0, 0, 0, 0, 0}), 0.0});
  // Sizes of the run's own, n from 2 to 9, k from 1 to 16 and m = n + 1 to n + 4 (never square).
  testing::Generator sizes(35);
  const std::int64_t n = 2 + sizes.below(8), k = 1 + sizes.below(16), m = n + 1 + sizes.below(4);
  const Tensor a_run = random_tensor({n, k}, 36), b_run = random_tensor({k, m}, 37);
  cases.push_back({fmt::format("({}, {})·({}, {}) of this run", n, k, k, m), a_run, b_run,
                   std::nullopt, 1e-5});
  // Empty outputs: no rows, (0, 3)·(3, 2) is (0, 2); no columns, (2, 3)·(3, 0) is (2, 0).
  cases.push_back({"(0, 3)·(3, 2), no rows", Tensor::zeros({0, 3}), random_tensor({3, 2}, 85), data_of(Shape{0, 2}, {}),
                   0.0});
  cases.push_back({"(2, 3)·(3, 0), no columns", random_tensor({2, 3}, 86), Tensor::zeros({3, 0}), data_of(Shape{2, 0}, {}),
                   0.0});
  return cases;
}

// Runs every case through `product`; reports `failure_id` for the first case that is wrong or
// throws (an unwritten stub's NotImplemented ends the check as not written), and stops there.
void check_ladder(const char* file, int line, const std::string& name, const Product& product,
                  const std::string& failure_id) {
  for (const Case& c : ladder_cases()) {
    const auto got = observe(name + "(a, b) on " + c.what, [&] { return product(c.a, c.b); });
    KILN_JUDGE {
      const TensorData expected = c.expected ? *c.expected : reference_matmul(c.a, c.b);
      if (!testing::expect_close(file, line, got, expected, c.tolerance, failure_id, 1e-5)) return;
    }
    if (!got.ok()) return;
  }
}

// Reports dot_wrong unless the observed dot product is within tolerance of the expected one.
bool expect_dot(const char* file, int line, const testing::Observed<float>& got, double expected,
                double tolerance) {
  if (!testing::expect_ok(file, line, got, "dot_wrong")) return false;
  if (std::fabs(*got - expected) <= tolerance) return true;
  const auto [actual, wanted] = testing::format_pair(*got, expected);
  testing::report_failure(file, line, "dot_wrong", {}, got.call() + " gave " + actual + ", expected " + wanted);
  return false;
}

// Σ_p u[p]·v[p] in double, read through each tensor's own strides (trusted).
double reference_dot(const Tensor& u, const Tensor& v) {
  const TensorData ud = data_of(u), vd = data_of(v);
  double total = 0.0;
  for (std::size_t p = 0; p < ud.values.size(); ++p) total += static_cast<double>(ud.values[p]) * vd.values[p];
  return total;
}

}  // namespace

TEST(Layers, Dot) {
  // fast.ai's example: [1, 2, 3]·[2, 3, 4] = 2 + 6 + 12 = 20.
  const Tensor u3({3}, {1, 2, 3}), v3({3}, {2, 3, 4});
  const auto small = KILN_OBSERVE(dot(u3, v3));
  KILN_JUDGE {
    if (!expect_dot(__FILE__, __LINE__, small, 20.0, 0.0)) return;
  }
  if (!small.ok()) return;

  // Views: with m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], row 2 is [7, 8, 9] (stride 1) and column 2
  // is [3, 6, 9] (stride 3): 21 + 48 + 81 = 150. Columns 0 and 1: 1·2 + 4·5 + 7·8 = 78.
  const Tensor m({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor m_row2 = row(m, 2), m_column0 = column(m, 0), m_column1 = column(m, 1), m_column2 = column(m, 2);
  const auto row_column = observe("dot(row(m, 2), column(m, 2))", [&] { return dot(m_row2, m_column2); });
  KILN_JUDGE {
    if (!expect_dot(__FILE__, __LINE__, row_column, 150.0, 0.0)) return;
  }
  if (!row_column.ok()) return;
  const auto columns = observe("dot(column(m, 0), column(m, 1))", [&] { return dot(m_column0, m_column1); });
  KILN_JUDGE {
    if (!expect_dot(__FILE__, __LINE__, columns, 78.0, 0.0)) return;
  }
  if (!columns.ok()) return;

  // A non-square matrix r (5, 7) of the run: its column 3 (5 values, 7 floats apart) with a
  // plain vector, and its row 4 with column 1 of a (7, 3) matrix s (7 values, 3 floats apart).
  const Tensor r = random_tensor({5, 7}, 9), s = random_tensor({7, 3}, 10), w = random_tensor({5}, 11);
  const Tensor r_column3 = column(r, 3), r_row4 = row(r, 4), s_column1 = column(s, 1);
  const auto column_vector = observe("dot(column(r, 3), w) with r (5, 7) and w (5)", [&] { return dot(r_column3, w); });
  KILN_JUDGE {
    if (!expect_dot(__FILE__, __LINE__, column_vector, reference_dot(r_column3, w), 1e-5)) return;
  }
  if (!column_vector.ok()) return;
  const auto row_by_column = observe("dot(row(r, 4), column(s, 1)) with r (5, 7) and s (7, 3)",
                                     [&] { return dot(r_row4, s_column1); });
  KILN_JUDGE {
    if (!expect_dot(__FILE__, __LINE__, row_by_column, reference_dot(r_row4, s_column1), 1e-5)) return;
  }
  if (!row_by_column.ok()) return;

  // Two empty vectors: a sum of no terms, 0.
  const Tensor none_u = Tensor::zeros({0}), none_v = Tensor::zeros({0});
  const auto empty = observe("dot(u, v) of two empty vectors", [&] { return dot(none_u, none_v); });
  KILN_JUDGE {
    if (!expect_dot(__FILE__, __LINE__, empty, 0.0, 0.0)) return;
  }
  if (!empty.ok()) return;

  // 784 products, against a sum in double.
  const Tensor u = random_tensor({784}, 7), v = random_tensor({784}, 8);
  const auto long_dot = observe("dot(u, v) of two length-784 vectors", [&] { return dot(u, v); });
  KILN_JUDGE expect_dot(__FILE__, __LINE__, long_dot, reference_dot(u, v), 1e-3);
}

TEST(Layers, MatmulLoops) {
  check_ladder(__FILE__, __LINE__, "matmul_loops", [](const Tensor& a, const Tensor& b) { return matmul_loops(a, b); },
               "loops_wrong");
  KILN_JUDGE {
    if (::testing::Test::HasFailure()) return;  // a wrong product: named above
  }
  // Contiguous views that start inside their storage: a random (3, 4) and (4, 2), each 5 floats
  // into a storage of other numbers (kiln/testing.h). contiguous() returns each as it is, so its
  // first element is at storage_data() + offset(), not at storage_data().
  const TensorData a = data_of(random_tensor({3, 4}, 90)), b = data_of(random_tensor({4, 2}, 91));
  const Tensor a_view = testing::at_offset(a, 92), b_view = testing::at_offset(b, 93);
  // Observed on fresh a and b of the same values too: the offset failure only where the views'
  // product differs from the fresh one's.
  const auto fresh = observe("matmul_loops(a, b) on the same (3, 4)·(4, 2) as fresh tensors",
                             [&] { return matmul_loops(a.tensor(), b.tensor()); });
  const auto got = observe("matmul_loops(a, b) on (3, 4)·(4, 2), both contiguous views at storage offset 5",
                           [&] { return matmul_loops(a_view, b_view); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(fresh, got, reference_matmul(a.tensor(), b.tensor()), 1e-5, 1e-5, "loops_wrong",
                               "loops_offset_ignored");
  }
}

TEST(Layers, MatmulDot) {
  check_ladder(__FILE__, __LINE__, "matmul_dot", [](const Tensor& a, const Tensor& b) { return matmul_dot(a, b); },
               "matmul_dot_wrong");
}

TEST(Layers, MatmulBroadcast) {
  check_ladder(__FILE__, __LINE__, "matmul_broadcast",
               [](const Tensor& a, const Tensor& b) { return matmul_broadcast(a, b); }, "broadcast_wrong");
}

TEST(Layers, MatmulShapeErrors) {
  // (2, 3)·(4, 2): the inner sizes 3 and 4 differ. A 1-D (3) on either side, or a 3-D, is not a
  // matrix. Then shapes of the
  // run's own: (n, k) by (k + d, m), the inner sizes apart by d = 1 to 3.
  testing::Generator sizes(38);
  const std::int64_t n = 1 + sizes.below(6), k = 1 + sizes.below(6), d = 1 + sizes.below(3), m = 1 + sizes.below(6);
  const std::vector<std::pair<Tensor, Tensor>> pairs = {
      {Tensor::ones({2, 3}), Tensor::ones({4, 2})},
      {Tensor::ones({3}), Tensor::ones({3, 2})},
      {Tensor::ones({2, 3}), Tensor::ones({3})},
      {Tensor::ones({2, 2, 3}), Tensor::ones({3, 2})},
      {random_tensor({n, k}, 39), random_tensor({k + d, m}, 40)},
  };
  const std::vector<std::pair<std::string, Product>> rungs = {
      {"matmul_loops", [](const Tensor& a, const Tensor& b) { return matmul_loops(a, b); }},
      {"matmul_dot", [](const Tensor& a, const Tensor& b) { return matmul_dot(a, b); }},
      {"matmul_broadcast", [](const Tensor& a, const Tensor& b) { return matmul_broadcast(a, b); }},
  };
  for (const auto& [a, b] : pairs) {
    const std::vector<std::string> both = {to_string(a.shape()), to_string(b.shape())};
    for (const auto& [name, product] : rungs) {
      const auto got = observe(name + "(a, b) on " + both[0] + " and " + both[1], [&] { return product(a, b); });
      KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "shape_not_reported", both);
    }
  }
  KILN_JUDGE {
    if (::testing::Test::HasFailure()) return;  // a rung without its check, or a message without a shape: named above
  }
  // A 3-D operand whose sizes would fit: a (2, 3, 4) a has a.shape()[1] = 3 = b.shape()[0] for a
  // (3, 5) b, and a (3, 2, 2) b starts with the 3 of a (2, 3) a. Only "exactly 2-D" refuses them.
  const std::vector<std::pair<Tensor, Tensor>> three_d = {
      {random_tensor({2, 3, 4}, 43), random_tensor({3, 5}, 44)},
      {random_tensor({2, 3}, 45), random_tensor({3, 2, 2}, 46)},
  };
  for (const auto& [a, b] : three_d) {
    const std::vector<std::string> both = {to_string(a.shape()), to_string(b.shape())};
    for (const auto& [name, product] : rungs) {
      const auto got = observe(name + "(a, b) on " + both[0] + " and " + both[1], [&] { return product(a, b); });
      KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "not_2d_accepted", both);
    }
  }
  // dot: lengths 3 and 4, a matrix on either side, and lengths k and k + d.
  const std::vector<std::pair<Tensor, Tensor>> vectors = {
      {Tensor::ones({3}), Tensor::ones({4})},
      {Tensor::ones({3}), Tensor::ones({3, 2})},
      {Tensor::ones({1, 3}), Tensor::ones({3})},
      {random_tensor({k}, 41), random_tensor({k + d}, 42)},
  };
  for (const auto& [u, v] : vectors) {
    const std::vector<std::string> both = {to_string(u.shape()), to_string(v.shape())};
    const auto got = observe("dot(u, v) on " + both[0] + " and " + both[1], [&] { return dot(u, v); });
    KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "shape_not_reported", both);
  }
}

}  // namespace kiln
