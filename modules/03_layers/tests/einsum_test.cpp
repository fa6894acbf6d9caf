// Module 03 checks for einsum: values for every spec the chapter uses, and its errors.
// Expected values are worked out by hand (fast.ai's 3×3 matrix m and vector c) or computed here
// by trusted loops summed in double. Every result of einsum passes through observe().
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
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

// Reports einsum_wrong, naming the spec, unless the observed result is within tolerance of the
// expected one. Returns false after reporting, so that the test can stop.
bool expect_einsum(const char* file, int line, const std::string& spec, const testing::Observed<TensorData>& got,
                   const TensorData& expected, double tolerance) {
  const testing::Params params = {{"spec", spec}};
  if (!testing::expect_ok(file, line, got, "einsum_wrong", params)) return false;
  const testing::Comparison c = testing::compare(*got, expected, tolerance, 1e-5);
  if (c.close) return true;
  testing::report_failure(file, line, "einsum_wrong", params,
                          got.call() + ": " +
                              (c.shapes_match ? c.describe()
                                              : "got shape " + to_string(got->shape) + ", expected " +
                                                    to_string(expected.shape)));
  return false;
}

// EXPECT_EINSUM(spec, expected, tolerance, operands...): observes einsum(spec, operands...),
// named after the call, and stops the test when it is wrong. `expected` is computed by the judge
// only; the observed program stops when the call threw.
#define EXPECT_EINSUM(spec, expected, tolerance, ...)                                                          \
  do {                                                                                                         \
    const auto einsum_got =                                                                                    \
        observe("einsum(\"" spec "\", " #__VA_ARGS__ ")", [&] { return einsum(spec, __VA_ARGS__); });         \
    KILN_JUDGE {                                                                                               \
      if (!expect_einsum(__FILE__, __LINE__, spec, einsum_got, expected, tolerance)) return;                   \
    }                                                                                                          \
    if (!einsum_got.ok()) return;                                                                              \
  } while (0)

// EXPECT_EINSUM_OF_VIEWS(spec, expected, tolerance, what, operands...): as EXPECT_EINSUM, for
// operands that are views (`what` says which kind), also observing einsum of contiguous copies of
// them: wrong on the views and right on their copies is a view read as if it were contiguous.
// `expected` is computed in the judge only.
template <class... Operands>
bool einsum_of_views(const char* file, int line, const std::string& spec, const std::string& names,
                     const std::string& what, const TensorData& expected, double tolerance,
                     const Operands&... operands) {
  const auto got = observe(fmt::format("einsum(\"{}\", {}) with {}", spec, names, what),
                           [&] { return einsum(spec, operands...); });
  const auto copies = observe(fmt::format("einsum(\"{}\", {}) with contiguous copies of {}", spec, names, what),
                              [&] { return einsum(spec, data_of(operands).tensor()...); });
  KILN_JUDGE {
    const auto close = [&](const testing::Observed<TensorData>& result) {
      return result.ok() && testing::compare(*result, expected, tolerance, 1e-5).close;
    };
    if (!close(got) && close(copies)) {
      testing::report_failure(
          file, line, "einsum_view_misread", {{"spec", spec}, {"what", what}},
          got.ok() ? got.call() + ": " + testing::compare(*got, expected, tolerance, 1e-5).describe()
                   : got.describe_error());
      return false;
    }
    // Judged both: a check never stops without saying why.
    if (!expect_einsum(file, line, spec, got, expected, tolerance)) return false;
    if (!expect_einsum(file, line, spec, copies, expected, tolerance)) return false;
  }
  return got.ok() && copies.ok();
}
#define EXPECT_EINSUM_OF_VIEWS(spec, expected, tolerance, what, ...)                                         \
  do {                                                                                                       \
    if (!einsum_of_views(__FILE__, __LINE__, spec, #__VA_ARGS__, what, KILN_JUDGE_ONLY(expected), tolerance, \
                         __VA_ARGS__))                                                                       \
      return;                                                                                                \
  } while (0)

// The (n, m) elements of a matrix, read through its strides (trusted).
std::vector<float> values_of(const Tensor& t) { return data_of(t).values; }

// The transpose, the row sums, the column sums and the total of an (n, m) matrix, summed in double
// (trusted).
struct MatrixSums {
  std::vector<float> transposed, row_sums, column_sums;
  double total = 0.0;
};
MatrixSums sums_of(const Tensor& r) {
  const std::int64_t rows = r.shape()[0], columns = r.shape()[1];
  const std::vector<float> rv = values_of(r);
  MatrixSums out;
  out.transposed.resize(rows * columns);
  out.row_sums.assign(rows, 0.0f);
  out.column_sums.assign(columns, 0.0f);
  for (std::int64_t i = 0; i < rows; ++i) {
    double row_sum = 0.0;
    for (std::int64_t j = 0; j < columns; ++j) {
      out.transposed[j * rows + i] = rv[i * columns + j];
      row_sum += rv[i * columns + j];
      out.total += rv[i * columns + j];
    }
    out.row_sums[i] = static_cast<float>(row_sum);
  }
  for (std::int64_t j = 0; j < columns; ++j) {
    double column_sum = 0.0;
    for (std::int64_t i = 0; i < rows; ++i) column_sum += rv[i * columns + j];
    out.column_sums[j] = static_cast<float>(column_sum);
  }
  return out;
}

// Every product of an (n, k) and a (k, m) matrix kept: (n, k, m), element (i, k, j) = a[i, k]·b[k, j]
// (trusted).
TensorData all_products(const Tensor& a, const Tensor& b) {
  const std::int64_t n = a.shape()[0], inner = a.shape()[1], m = b.shape()[1];
  const std::vector<float> av = values_of(a), bv = values_of(b);
  std::vector<float> products(n * inner * m);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < inner; ++k)
      for (std::int64_t j = 0; j < m; ++j) products[(i * inner + k) * m + j] = av[i * inner + k] * bv[k * m + j];
  return data_of({n, inner, m}, products);
}

// A batch of (2, 4)·(4, 5) products of (3, 2, 4) and (3, 4, 5) tensors, by reference_matmul (trusted).
TensorData batched_products(const Tensor& batch_a, const Tensor& batch_b) {
  const std::vector<float> av = values_of(batch_a), bv = values_of(batch_b);
  std::vector<float> batched;
  for (std::size_t b = 0; b < 3; ++b) {
    const TensorData a_b = data_of({2, 4}, std::vector<float>(av.begin() + b * 8, av.begin() + (b + 1) * 8));
    const TensorData b_b = data_of({4, 5}, std::vector<float>(bv.begin() + b * 20, bv.begin() + (b + 1) * 20));
    const std::vector<float> c_b = reference_matmul(a_b, b_b).values;
    batched.insert(batched.end(), c_b.begin(), c_b.end());
  }
  return data_of({3, 2, 5}, batched);
}

}  // namespace

TEST(Layers, Einsum) {
  const Tensor m({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor c({3}, {10, 20, 30});
  const Tensor x({2, 3}, {1, 2, 3, 4, 5, 6});

  // Transposes: nothing multiplied, nothing summed. Also of a view (a transposed matrix).
  EXPECT_EINSUM("ij->ji", data_of({3, 2}, {1, 4, 2, 5, 3, 6}), 0.0, x);
  const Tensor m_transposed = transposed(m);
  EXPECT_EINSUM_OF_VIEWS("ij->ji", data_of(m), 0.0, "a transposed view", m_transposed);
  // A (3, 5) matrix of the run: its transpose is (5, 3), element (j, i) = r[i, j].
  const Tensor r = random_tensor({3, 5}, 45);
  EXPECT_EINSUM("ij->ji", data_of({5, 3}, sums_of(r).transposed), 0.0, r);

  // Elementwise: m·m = [[1, 4, 9], [16, 25, 36], [49, 64, 81]].
  EXPECT_EINSUM("ij,ij->ij", data_of({3, 3}, {1, 4, 9, 16, 25, 36, 49, 64, 81}), 0.0, m, m);
  // Outer product: c[i]·c[j] = [[100, 200, 300], [200, 400, 600], [300, 600, 900]].
  EXPECT_EINSUM("i,j->ij", data_of({3, 3}, {100, 200, 300, 200, 400, 600, 300, 600, 900}), 0.0, c, c);
  // Sums: a letter left out of the output is summed over. [1, 2, 3]·[2, 3, 4] = 20; m's rows sum
  // to 6, 15, 24 and all of m to 45 (scalars have shape ()). Then the rows, the columns and the
  // whole of r.
  const Tensor u3({3}, {1, 2, 3}), v3({3}, {2, 3, 4});
  EXPECT_EINSUM("i,i->", data_of({}, {20}), 0.0, u3, v3);
  EXPECT_EINSUM("ij->i", data_of({3}, {6, 15, 24}), 0.0, m);
  EXPECT_EINSUM("ij->", data_of({}, {45}), 0.0, m);
  EXPECT_EINSUM("ij->i", data_of({3}, sums_of(r).row_sums), 1e-6, r);
  EXPECT_EINSUM("ij->j", data_of({5}, sums_of(r).column_sums), 1e-6, r);
  EXPECT_EINSUM("ij->", data_of({}, {static_cast<float>(sums_of(r).total)}), 1e-5, r);
  // A summed letter that only the second operand has, or each operand one of its own: every
  // letter gets a loop, whichever operand it is in. (1 + 2)·(3 + 4) = 21; x·(m's row sums 6, 15,
  // 24) = [108, 243]; x's row sums 6 and 15 times c's sum 60 = [360, 900].
  const Tensor u2({2}, {1, 2}), v2({2}, {3, 4});
  EXPECT_EINSUM("i,j->", data_of({}, {21}), 0.0, u2, v2);
  EXPECT_EINSUM("ij,jk->i", data_of({2}, {108, 243}), 0.0, x, m);
  EXPECT_EINSUM("ik,j->i", data_of({2}, {360, 900}), 0.0, x, c);

  // The matrix product on the course's sizes, (5, 784)·(784, 10).
  const Tensor images = random_tensor({5, 784}, 457428938475ULL, 0.0f, 1.0f);
  const Tensor weights = random_tensor({784, 10}, 2023);
  EXPECT_EINSUM("ik,kj->ij", reference_matmul(images, weights), 1e-3, images, weights);
  // Every product kept, nothing summed: (5, 784, 10), element (i, k, j) = images[i, k]·weights[k, j]
  // (summed over k it is the matrix product).
  EXPECT_EINSUM("ik,kj->ikj", all_products(images, weights), 0.0, images, weights);
  // Products of views.
  const Tensor a_view = transposed(random_tensor({3, 4}, 41));
  const Tensor b_view = transposed(random_tensor({2, 3}, 42));
  EXPECT_EINSUM_OF_VIEWS("ik,kj->ij", reference_matmul(a_view, b_view), 1e-5, "transposed views", a_view, b_view);

  // A batch of three (2, 4)·(4, 5) products.
  const Tensor batch_a = random_tensor({3, 2, 4}, 43);
  const Tensor batch_b = random_tensor({3, 4, 5}, 44);
  EXPECT_EINSUM("bik,bkj->bij", batched_products(batch_a, batch_b), 1e-5, batch_a, batch_b);

  // Windows that start inside their storage: a (3, 4) of a (5, 6) matrix from (1, 1), and a (4, 2)
  // of a (6, 7) one from (1, 2).
  const Tensor a_window = make_view(random_tensor({5, 6}, 51), {3, 4}, {6, 1}, 7);
  const Tensor b_window = make_view(random_tensor({6, 7}, 52), {4, 2}, {7, 1}, 9);
  EXPECT_EINSUM_OF_VIEWS("ik,kj->ij", reference_matmul(a_window, b_window), 1e-5,
                         "windows that start inside their storage", a_window, b_window);
  // The first and the last letter of the alphabet are letters too.
  EXPECT_EINSUM("az,zy->ay", reference_matmul(a_window, b_window), 1e-5, a_window, b_window);
  // One product of length 1, and scalars with no letters at all: 3·4 = 12 and 2.5·-2 = -5.
  const Tensor three({1}, {3}), four({1}, {4});
  EXPECT_EINSUM("i,i->", data_of({}, {12}), 0.0, three, four);
  const Tensor s1 = Tensor::scalar(2.5f), s2 = Tensor::scalar(-2.0f);
  EXPECT_EINSUM(",->", data_of({}, {-5}), 0.0, s1, s2);
  // Empty sizes: an empty sum is 0, and an output with no elements has none to compute.
  const Tensor wide_empty(Shape{2, 0}, {}), tall_empty(Shape{0, 3}, {});
  EXPECT_EINSUM("ik,kj->ij", data_of({2, 3}, {0, 0, 0, 0, 0, 0}), 0.0, wide_empty, tall_empty);
  const Tensor b3 = random_tensor({3, 2}, 53);
  EXPECT_EINSUM("ik,kj->ij", data_of(Shape{0, 2}, {}), 0.0, tall_empty, b3);

  // The result is a new tensor also where nothing is multiplied, summed or moved: after a write
  // into einsum("ij->ij", x)'s first element, x is as it was. Returning the operand (or its
  // contiguous(), which is the operand itself) would hand the caller a second handle to x.
  const std::vector<std::tuple<std::string, Shape, std::vector<float>>> identities = {
      {"ij->ij", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"i->i", {4}, {7, 8, 9, 10}}, {"->", {}, {2.5f}}};
  for (const auto& [spec, shape, values] : identities) {
    const auto operand = observe(fmt::format("y = einsum(\"{}\", x) for x = {} of shape {}, then y's first element "
                                             "set to 42, then x",
                                             spec, testing::list(values), to_string(shape)),
                                 [&] {
                                   const Tensor x(shape, values);
                                   Tensor y = einsum(spec, x);
                                   y.storage_data()[y.offset()] = 42.0f;
                                   return x;
                                 });
    if (!KILN_EXPECT_OK(operand, "einsum_wrong", {{"spec", spec}})) return;
    KILN_JUDGE {
      if (operand->values != values) {
        KILN_FAIL("einsum_shares_operand", {{"spec", spec}},
                  fmt::format("after {}: x holds {}, expected {}", operand.call(), testing::list(operand->values),
                              testing::list(values)));
        return;
      }
    }
  }
  // Contiguous views that start inside their storage: a random (3, 4) and (4, 2), each 5 floats
  // into a storage of other numbers (kiln/testing.h). contiguous() returns each as it is, so its
  // first element is at storage_data() + offset(), not at storage_data().
  const TensorData a_values = data_of(random_tensor({3, 4}, 94)), b_values = data_of(random_tensor({4, 2}, 95));
  const Tensor a_offset = testing::at_offset(a_values, 96), b_offset = testing::at_offset(b_values, 97);
  // Observed on fresh a and b of the same values too: the offset failure only where the views'
  // result differs from the fresh one's.
  const auto fresh = observe("einsum(\"ik,kj->ij\", a, b) with the same (3, 4) a and (4, 2) b as fresh tensors",
                             [&] { return einsum("ik,kj->ij", a_values.tensor(), b_values.tensor()); });
  const auto shifted = observe("einsum(\"ik,kj->ij\", a, b) with a (3, 4) and b (4, 2) contiguous views at storage offset 5",
                               [&] { return einsum("ik,kj->ij", a_offset, b_offset); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(fresh, shifted, reference_matmul(a_values.tensor(), b_values.tensor()), 1e-5, 1e-5,
                               "einsum_wrong", "einsum_offset_ignored", {{"spec", "ik,kj->ij"}});
  }
}

TEST(Layers, EinsumErrors) {
  const Tensor a = random_tensor({2, 3}, 46);
  const Tensor b = random_tensor({3, 2}, 47);
  const Tensor square = random_tensor({2, 2}, 48);

  // Malformed specs: each must be rejected with an error that quotes the spec.
  const auto expect_rejected = [&](const std::string& spec, const std::string& operands,
                                   const std::function<Tensor()>& run) {
    const auto got = observe("einsum(\"" + spec + "\", " + operands + ")", [&] { return run(); });
    KILN_JUDGE testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, got, "einsum_bad_spec", {spec});
  };
  expect_rejected("ik,kj", "a, b", [&] { return einsum("ik,kj", a, b); });                   // no "->"
  expect_rejected("ik,kj->iz", "a, b", [&] { return einsum("ik,kj->iz", a, b); });           // z is in no operand
  expect_rejected("ik,kj->ii", "a, b", [&] { return einsum("ik,kj->ii", a, b); });           // i twice in the output
  expect_rejected("ii,ij->ij", "s, s", [&] { return einsum("ii,ij->ij", square, square); });  // i twice in one operand
  expect_rejected("iK,Kj->ij", "a, b", [&] { return einsum("iK,Kj->ij", a, b); });           // not lowercase
  expect_rejected("ik,kj,jl->il", "a, b", [&] { return einsum("ik,kj,jl->il", a, b); });     // three operands, two tensors
  expect_rejected("ij->ji", "a, b", [&] { return einsum("ij->ji", a, b); });                 // one operand, two tensors
  expect_rejected("ik,kj->ij", "a", [&] { return einsum("ik,kj->ij", a); });                 // two operands, one tensor
  expect_rejected("ik, kj->ij", "a, b", [&] { return einsum("ik, kj->ij", a, b); });         // a space
  expect_rejected("ij", "a", [&] { return einsum("ij", a); });                               // no "->", one operand
  expect_rejected("ij->i1", "a", [&] { return einsum("ij->i1", a); });                       // a digit in the output
  expect_rejected("ij,kk->ij", "a, s", [&] { return einsum("ij,kk->ij", a, square); });     // k twice in the second operand
  // A '-' without its '>' is no arrow: a parser that looks for the '-' alone and skips two
  // characters would compute "ij-ji" as "ij->i" and "ik,kj-ij" as "ik,kj->j", and cut "ij-" past
  // its end (std::out_of_range).
  const auto expect_no_arrow = [&](const std::string& spec, const std::string& operands,
                                   const std::function<Tensor()>& run) {
    const auto got = observe("einsum(\"" + spec + "\", " + operands + ")", [&] { return run(); });
    KILN_JUDGE testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, got, "einsum_half_arrow", {spec});
  };
  expect_no_arrow("ij-ji", "a", [&] { return einsum("ij-ji", a); });
  expect_no_arrow("ik,kj-ij", "a, b", [&] { return einsum("ik,kj-ij", a, b); });
  expect_no_arrow("ij-", "a", [&] { return einsum("ij-", a); });

  // Sizes that disagree: ShapeError quoting the spec and naming both shapes.
  const Tensor wide = random_tensor({4, 2}, 49);
  KILN_EXPECT_THROWS(einsum("ik,kj->ij", a, wide), ShapeError, "einsum_size_mismatch", {"ik,kj->ij", "(2, 3)", "(4, 2)"});
  KILN_EXPECT_THROWS(einsum("ij,ij->ij", a, b), ShapeError, "einsum_size_mismatch", {"ij,ij->ij", "(2, 3)", "(3, 2)"});
  // A size of 1 does not broadcast in einsum: a letter's sizes must be equal, 1 and 2 included,
  // either way round.
  const Tensor row13 = random_tensor({1, 3}, 1330);
  KILN_EXPECT_THROWS(einsum("ij,ij->ij", row13, a), ShapeError, "einsum_size_mismatch", {"ij,ij->ij", "(1, 3)", "(2, 3)"});
  KILN_EXPECT_THROWS(einsum("ij,ij->ij", a, row13), ShapeError, "einsum_size_mismatch", {"ij,ij->ij", "(2, 3)", "(1, 3)"});
  // A size of 0 is a size like any other: 0 and 3 disagree, either way round. (Each case has an
  // empty output, so that code which took the 0 for "not known yet" returns instead of reading
  // the empty operand.)
  const std::vector<std::tuple<std::string, Shape, Shape>> empty_pairs = {
      {"ij,jk->ik", {2, 0}, {3, 0}}, {"ij,ij->ij", {0, 0}, {2, 0}}, {"ij,ij->ij", {2, 0}, {0, 0}}};
  for (const auto& [spec, first, second] : empty_pairs) {
    const Tensor x0 = Tensor::zeros(first), y0 = Tensor::zeros(second);
    const auto refused = observe(fmt::format("einsum(\"{}\", x, y) on {} and {}", spec, to_string(first), to_string(second)),
                                 [&] { return einsum(spec, x0, y0); });
    KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, refused, "einsum_size_mismatch",
                                                  {spec, to_string(first), to_string(second)});
  }
  // Three letters for a 2-D operand.
  KILN_EXPECT_THROWS(einsum("ijk,kj->ij", a, b), ShapeError, "einsum_rank_mismatch", {"ijk,kj->ij", "(2, 3)"});
  // One letter for a 2-D operand.
  KILN_EXPECT_THROWS(einsum("i,kj->ik", a, b), ShapeError, "einsum_rank_mismatch", {"i,kj->ik", "(2, 3)"});
  // Shapes of the run's own: (n, k) and (k + d, m), the inner sizes apart by d = 1 to 3.
  testing::Generator sizes(50);
  const std::int64_t n = 1 + sizes.below(6), k = 1 + sizes.below(6), d = 1 + sizes.below(3), m = 1 + sizes.below(6);
  const Tensor x = random_tensor({n, k}, 51), y = random_tensor({k + d, m}, 52);
  const auto got =
      observe(fmt::format("einsum(\"ik,kj->ij\", x, y) on {} and {}", to_string(x.shape()), to_string(y.shape())),
              [&] { return einsum("ik,kj->ij", x, y); });
  KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "einsum_size_mismatch",
                                                {"ik,kj->ij", to_string(x.shape()), to_string(y.shape())});
}

}  // namespace kiln
