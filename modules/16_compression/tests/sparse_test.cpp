// Module 16 checks for compressed sparse rows: the conversion, the product and the bytes.
//
// The expected arrays come from a trusted conversion written here; the expected products from a
// plain double loop over the dense matrix (never through CSR); the CSR inputs of csr_matmul and
// csr_bytes are built here too, so that each check depends on one function of yours only.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/compression.h"
#include "compression_testing.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using compress::CsrMatrix;
using compress::csr_bytes;
using compress::csr_matmul;
using compress::to_csr;
using testing::data_of;
using testing::observe;
using testing::random_ints;
using testing::random_tensor;
using testing::TensorData;

using compression_testing::transposed;

// The CSR form of a matrix by trusted loops (read through data_of, which follows the strides): the
// CSR inputs of csr_matmul and csr_bytes, and, inside KILN_JUDGE only, the expected value of to_csr.
CsrMatrix csr_of(const Tensor& dense) {
  const TensorData d = data_of(dense);
  CsrMatrix a;
  a.rows = d.shape[0];
  a.cols = d.shape[1];
  a.row_offsets.push_back(0);
  for (std::int64_t i = 0; i < a.rows; ++i) {
    for (std::int64_t j = 0; j < a.cols; ++j) {
      const float v = d.values[i * a.cols + j];
      if (v != 0.0f) {
        a.column_indices.push_back(static_cast<std::int32_t>(j));
        a.values.push_back(v);
      }
    }
    a.row_offsets.push_back(static_cast<std::int32_t>(a.values.size()));
  }
  return a;
}

// A (rows, cols) matrix of the run with about 5 in 7 entries zero, and every row listed in
// `empty_rows` all zero.
Tensor sparse_tensor(std::int64_t rows, std::int64_t cols, std::uint64_t stream,
                     const std::vector<std::int64_t>& empty_rows = {}) {
  const std::vector<float> values = data_of(random_tensor({rows, cols}, stream)).values;
  const std::vector<std::int64_t> keep = random_ints(values.size(), 7, stream + 1000);
  std::vector<float> out(values.size());
  for (std::size_t k = 0; k < values.size(); ++k) out[k] = keep[k] < 2 ? values[k] : 0.0f;
  for (const std::int64_t i : empty_rows)
    for (std::int64_t j = 0; j < cols; ++j) out[i * cols + j] = 0.0f;
  return Tensor({rows, cols}, out);
}

// Equal lists of stored values, a NaN matching a NaN.
bool same_values(const std::vector<float>& got, const std::vector<float>& expected) {
  return std::equal(got.begin(), got.end(), expected.begin(), expected.end(),
                    [](float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); });
}

std::vector<std::int64_t> widened(const std::vector<std::int32_t>& v) { return {v.begin(), v.end()}; }

// "[0, 1, 1, 3]", at most 12 of them.
std::string list_of(const std::vector<std::int64_t>& v) {
  std::vector<float> f(v.begin(), v.end());
  return testing::list(f);
}

// Judging only (inside KILN_JUDGE): reports `id`, with the count csr_bytes gave (or that it threw)
// and `expected`, unless it gave `expected`. Returns whether it did.
bool expect_bytes(const char* file, int line, const testing::Observed<std::int64_t>& got, std::int64_t expected,
                  std::string_view id, testing::Params params) {
  params.emplace_back("expected", std::to_string(expected));
  if (!got.ok()) {
    params.emplace_back("got", "an error");
    return testing::expect_ok(file, line, got, id, params);
  }
  if (*got == expected) return true;
  params.emplace_back("got", std::to_string(*got));
  testing::report_failure(file, line, id, params);
  return false;
}

}  // namespace

TEST(Compression, ToCsr) {
  struct Case {
    std::string name;
    Tensor dense;
  };
  const std::vector<Case> cases = {
      {"[[0, 2, 0], [0, 0, 0], [5, 0, 7]]", Tensor({3, 3}, {0, 2, 0, 0, 0, 0, 5, 0, 7})},
      {"the (1, 1) matrix [[0]]", Tensor::zeros({1, 1})},
      {"an all-zero (3, 7) matrix", Tensor::zeros({3, 7})},
      {"a (7, 3) matrix whose rows 0, 3 and 6 are empty", sparse_tensor(7, 3, 1630, {0, 3, 6})},
      {"[[-0, 1.5], [-0, -0]] (negative zeros)", Tensor({2, 2}, {-0.0f, 1.5f, -0.0f, -0.0f})},
      // Tiny values are not zero: only entries equal to 0 are left out.
      {"[[1e-7, 1], [-1e-30, 1e-40]] (tiny values, the last a subnormal)",
       Tensor({2, 2}, {1e-7f, 1.0f, -1e-30f, 1e-40f})},
      // NaN is not equal to 0, nor are the infinities: all three are stored.
      {"[[NaN, 0], [inf, -inf]] (values that are not numbers or not finite)",
       Tensor({2, 2}, {std::numeric_limits<float>::quiet_NaN(), 0.0f, std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()})},
      {"a (31, 33) matrix, mostly zeros", sparse_tensor(31, 33, 1631)},
      {"a transposed (33, 31) view, mostly zeros", transposed(sparse_tensor(31, 33, 1632, {5}))},
      {"the rows 1 and 2 of [[0, 1], [2, 0], [0, 5]] (a view at offset 2)",
       make_view(Tensor({3, 2}, {0, 1, 2, 0, 0, 5}), {2, 2}, {2, 1}, 2)},
      {"the odd columns of a (9, 8) matrix, mostly zeros (strides (8, 2), offset 1)",
       make_view(sparse_tensor(9, 8, 1634, {2}), {9, 4}, {8, 2}, 1)},
      {"a dense (1, 7) row", random_tensor({1, 7}, 1633, 0.5f, 1.0f)},
  };
  for (const Case& c : cases) {
    const auto got = observe("to_csr(" + c.name + ")", [&] {
      const CsrMatrix a = to_csr(c.dense);
      return std::tuple(a.rows, a.cols, a.row_offsets, a.column_indices, a.values);
    });
    const testing::Params params = {{"case", c.name}};
    if (!KILN_EXPECT_OK(got, "csr_wrong", params)) return;
    KILN_JUDGE {
      const CsrMatrix expected = csr_of(c.dense);
      const auto& [rows, cols, row_offsets, column_indices, values] = *got;
      std::string problem;
      if (rows != expected.rows || cols != expected.cols) {
        problem = fmt::format("rows and cols are {} and {}, expected {} and {}", rows, cols, expected.rows, expected.cols);
      } else if (row_offsets != widened(expected.row_offsets)) {
        problem = fmt::format("row_offsets is {}, expected {}", list_of(row_offsets), list_of(widened(expected.row_offsets)));
      } else if (column_indices != widened(expected.column_indices)) {
        problem = fmt::format("column_indices is {}, expected {}", list_of(column_indices),
                              list_of(widened(expected.column_indices)));
      } else if (!same_values(values, expected.values)) {
        problem = fmt::format("values is {}, expected {}", testing::list(values), testing::list(expected.values));
      }
      if (!problem.empty()) {
        KILN_FAIL("csr_wrong", params, got.call() + ": " + problem);
        return;
      }
    }
  }
}

TEST(Compression, CsrMatmul) {
  struct Case {
    Tensor a;  // dense; its trusted CSR form is what csr_matmul receives
    Tensor b;
  };
  const std::vector<Case> cases = {
      {Tensor({3, 3}, {0, 2, 0, 0, 0, 0, 5, 0, 7}), Tensor({3, 2}, {1, 2, 3, 4, 5, 6})},
      {random_tensor({1, 1}, 1640), random_tensor({1, 1}, 1641)},
      {sparse_tensor(3, 7, 1642), random_tensor({7, 1}, 1643)},
      {sparse_tensor(7, 31, 1644), random_tensor({31, 33}, 1645)},
      {sparse_tensor(33, 31, 1646, {0, 1, 16, 32}), random_tensor({31, 3}, 1647)},
      {Tensor::zeros({3, 7}), random_tensor({7, 3}, 1648)},
      {sparse_tensor(31, 33, 1649), transposed(random_tensor({7, 33}, 1650))},
  };
  for (const Case& c : cases) {
    const CsrMatrix a = csr_of(c.a);
    const std::string a_shape = to_string(c.a.shape()), b_shape = to_string(c.b.shape());
    const auto got = observe(fmt::format("csr_matmul(a {}, b {})", a_shape, b_shape), [&] { return csr_matmul(a, c.b); });
    // Every case's shapes fit (b has a.cols rows): a ShapeError refuses a valid product.
    KILN_JUDGE {
      if (!got.ok() && got.error().is("kiln::ShapeError")) {
        KILN_FAIL("valid_product_refused", {{"a_shape", a_shape}, {"b_shape", b_shape}}, got.describe_error());
        return;
      }
    }
    if (!KILN_EXPECT_CLOSE_REL(got, testing::reference_matmul(c.a, c.b), 1e-5, 1e-5, "csr_matmul_wrong",
                               {{"a_shape", a_shape}, {"b_shape", b_shape}}))
      return;
  }

  // Only the stored entries multiply: where b holds inf or NaN in a row that only a's zeros meet,
  // the zeros CSR does not store never touch it (a dense product would give 0·inf = NaN there).
  // [[1, 0]]·[[2], [inf]] is [[2]]; [[1, 0, 0], [0, 0, -2]]·[[2, 3], [inf, NaN], [1, 5]] is
  // [[2, 3], [-2, -10]]. The expected rows are summed here over the stored entries, in double.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<Case> unstored = {
      {Tensor({1, 2}, {1, 0}), Tensor({2, 1}, {2, inf})},
      {Tensor({2, 3}, {1, 0, 0, 0, 0, -2}), Tensor({3, 2}, {2, 3, inf, nan, 1, 5})},
  };
  for (const Case& c : unstored) {
    const CsrMatrix a = csr_of(c.a);
    const std::string a_shape = to_string(c.a.shape()), b_shape = to_string(c.b.shape());
    const auto got = observe(fmt::format("csr_matmul(a {} = {}, b {} = {})", a_shape, testing::list(data_of(c.a).values),
                                         b_shape, testing::list(data_of(c.b).values)),
                             [&] { return csr_matmul(a, c.b); });
    const testing::Params shapes = {{"a_shape", a_shape}, {"b_shape", b_shape}};
    if (!KILN_EXPECT_OK(got, "csr_matmul_wrong", shapes)) return;
    KILN_JUDGE {
      const std::vector<float> b = data_of(c.b).values;
      const std::int64_t m = c.b.shape()[1];
      std::vector<float> expected(static_cast<std::size_t>(a.rows * m), 0.0f);
      for (std::int64_t i = 0; i < a.rows; ++i)
        for (std::int64_t j = 0; j < m; ++j) {
          double total = 0;
          for (std::int32_t p = a.row_offsets[i]; p < a.row_offsets[i + 1]; ++p)
            total += static_cast<double>(a.values[p]) * b[static_cast<std::size_t>(a.column_indices[p] * m + j)];
          expected[static_cast<std::size_t>(i * m + j)] = static_cast<float>(total);
        }
      if (got->values.size() == expected.size()) {
        for (std::size_t e = 0; e < expected.size(); ++e) {
          if (std::isfinite(got->values[e])) continue;
          const std::string row = std::to_string(e / m), col = std::to_string(e % m);
          KILN_FAIL("unstored_zeros_multiplied",
                    {{"a_shape", a_shape}, {"b_shape", b_shape}, {"got", std::isnan(got->values[e]) ? "NaN" : fmt::format("{}", got->values[e])},
                     {"row", row}, {"col", col}, {"expected", fmt::format("{}", expected[e])}},
                    fmt::format("{} gave {}, expected {}", got.call(), testing::list(got->values), testing::list(expected)));
          return;
        }
      }
      if (!KILN_EXPECT_CLOSE_REL(got, data_of({a.rows, m}, expected), 1e-6, 1e-6, "csr_matmul_wrong",
                                 shapes))
        return;
    }
  }

  // b as a contiguous view at an offset: a (7, 3) matrix of the run 5 floats into a storage of
  // other numbers. Its rows start at data(), not at the storage's first float.
  const Tensor dense_a = sparse_tensor(4, 7, 1651);
  const CsrMatrix offset_a = csr_of(dense_a);
  const Tensor offset_b = testing::at_offset(data_of(random_tensor({7, 3}, 1652)), 1653);
  // The same call with b a fresh tensor of the same values: only a product that differs between
  // the two is the offset's fault; one wrong on both is csr_matmul's own.
  const auto fresh_product = observe("csr_matmul(a (4, 7), the same b (7, 3) values in a fresh tensor)",
                                     [&] { return csr_matmul(offset_a, data_of(offset_b).tensor()); });
  const auto offset_product = observe("csr_matmul(a (4, 7), b (7, 3) a contiguous view at offset 5)",
                                      [&] { return csr_matmul(offset_a, offset_b); });
  KILN_JUDGE {
    const TensorData expected = testing::reference_matmul(dense_a, offset_b);
    KILN_EXPECT_SAME_AT_OFFSET(fresh_product, offset_product, expected, 1e-5, 1e-5, "csr_matmul_wrong",
                               "csr_matmul_offset_ignored", {{"a_shape", "(4, 7)"}, {"b_shape", "(7, 3)"}});
  }
}

TEST(Compression, CsrBytes) {
  struct Case {
    CsrMatrix a;
  };
  // A CSR matrix of the given shape with nnz entries (their values and columns do not matter here).
  const auto of_size = [](std::int64_t rows, std::int64_t cols, std::int64_t nnz) {
    CsrMatrix a;
    a.rows = rows;
    a.cols = cols;
    a.row_offsets.assign(static_cast<std::size_t>(rows + 1), 0);
    a.column_indices.assign(static_cast<std::size_t>(nnz), 0);
    a.values.assign(static_cast<std::size_t>(nnz), 1.0f);
    return a;
  };
  const std::int64_t run_nnz = random_ints(1, 1, 31 * 33, 1651)[0];
  const std::vector<CsrMatrix> cases = {
      csr_of(Tensor({3, 3}, {0, 2, 0, 0, 0, 0, 5, 0, 7})),  // 4·4 + 8·3 = 40
      csr_of(Tensor::zeros({1, 1})),                         // 4·2 = 8
      of_size(784, 256, 20070),                                   // 10% of 200,704: 3,140 + 160,560
      csr_of(sparse_tensor(31, 33, 1652)),
      of_size(31, 33, run_nnz),
  };
  for (const CsrMatrix& a : cases) {
    const std::string shape = to_string({a.rows, a.cols});
    const auto nnz = static_cast<std::int64_t>(a.values.size());
    const auto got = observe(fmt::format("csr_bytes of a {} CSR matrix with {}", shape, testing::counted(nnz, "non-zero")),
                             [&] { return csr_bytes(a); });
    KILN_JUDGE {
      if (!expect_bytes(__FILE__, __LINE__, got, 4 * (a.rows + 1) + 8 * nnz, "csr_bytes_wrong",
                        {{"shape", shape}, {"non_zeros", testing::counted(nnz, "non-zero")}}))
        return;
    }
    if (!got.ok()) return;
  }
  // The count is of the arrays themselves, whatever rows says: a default CsrMatrix{} holds no
  // array (0 bytes, where 4·(rows + 1) would give 4), and hand-built ones whose arrays do not
  // follow rows (offsets missing, columns and values of different counts), one drawn by the run.
  const auto of_arrays = [](std::int64_t rows, std::int64_t offsets, std::int64_t columns, std::int64_t values) {
    CsrMatrix a;
    a.rows = rows;
    a.cols = 5;
    a.row_offsets.assign(static_cast<std::size_t>(offsets), 0);
    a.column_indices.assign(static_cast<std::size_t>(columns), 0);
    a.values.assign(static_cast<std::size_t>(values), 1.0f);
    return a;
  };
  const std::vector<std::int64_t> drawn = random_ints(3, 0, 40, 1653);
  const std::vector<std::pair<std::string, CsrMatrix>> loose = {
      {"a default CsrMatrix{}", CsrMatrix{}},
      {"a CsrMatrix with rows 4, 2 row offsets, 3 column indices and 5 values", of_arrays(4, 2, 3, 5)},
      {fmt::format("a CsrMatrix with rows 7, {}, {} and {}",
                   testing::counted(drawn[0], "row offset"),
                   testing::counted(drawn[1], "column index", "column indices"),
                   testing::counted(drawn[2], "value")),
       of_arrays(7, drawn[0], drawn[1], drawn[2])},
  };
  for (const auto& [name, a] : loose) {
    const auto got = observe(fmt::format("csr_bytes of {}", name), [&] { return csr_bytes(a); });
    KILN_JUDGE {
      const auto elements = static_cast<std::int64_t>(a.row_offsets.size() + a.column_indices.size() + a.values.size());
      if (!expect_bytes(__FILE__, __LINE__, got, 4 * elements, "csr_bytes_not_from_arrays", {{"case", name}})) return;
    }
    if (!got.ok()) return;
  }
}

TEST(Compression, Errors) {
  // Sparsities outside [0, 1], and NaN, which is no sparsity (every comparison with it is false).
  // The message must name a sparsity outside [0, 1]; NaN's it need not, since libraries spell it
  // nan, NaN or -nan.
  const Tensor w = random_tensor({2, 3}, 1660);
  for (const double sparsity : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    const auto got = observe(fmt::format("magnitude_mask(w (2, 3), {})", sparsity),
                             [&] { return compress::magnitude_mask(w, sparsity); });
    KILN_JUDGE {
      const std::vector<std::string> named =
          std::isnan(sparsity) ? std::vector<std::string>{} : std::vector<std::string>{fmt::format("{}", sparsity)};
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, got, "sparsity_not_rejected", named,
                                                    {{"sparsity", fmt::format("{}", sparsity)}});
      if (::testing::Test::HasFailure()) return;
    }
  }
  // to_csr of tensors that are not matrices.
  const Tensor line = random_tensor({7}, 1661), cube = random_tensor({2, 3, 4}, 1662);
  KILN_EXPECT_THROWS(to_csr(line), ShapeError, "csr_shape_not_reported", {"(7)"},
                     {{"call", "to_csr of a (7) tensor"}, {"shapes", "(7)"}});
  KILN_EXPECT_THROWS(to_csr(cube), ShapeError, "csr_shape_not_reported", {"(2, 3, 4)"},
                     {{"call", "to_csr of a (2, 3, 4) tensor"}, {"shapes", "(2, 3, 4)"}});
  // csr_matmul with a b of the wrong number of rows: (3, 7) by (3, 2), and sizes of the run.
  const CsrMatrix a = csr_of(sparse_tensor(3, 7, 1663));
  const Tensor b = random_tensor({3, 2}, 1664);
  KILN_EXPECT_THROWS(csr_matmul(a, b), ShapeError, "csr_shape_not_reported", {"(3, 7)", "(3, 2)"},
                     {{"call", "csr_matmul of a (3, 7) CSR matrix by a (3, 2) matrix"}, {"shapes", "(3, 7) and (3, 2)"}});
  // A b with a third dimension, whose first size does match: (3, 7) by (7, 2, 1).
  const Tensor b3 = random_tensor({7, 2, 1}, 1670);
  KILN_EXPECT_THROWS(csr_matmul(a, b3), ShapeError, "csr_shape_not_reported", {"(3, 7)", "(7, 2, 1)"},
                     {{"call", "csr_matmul of a (3, 7) CSR matrix by a (7, 2, 1) tensor"},
                      {"shapes", "(3, 7) and (7, 2, 1)"}});
  const std::int64_t k = random_ints(1, 1, 9, 1665)[0], d = random_ints(1, 1, 4, 1666)[0];
  const CsrMatrix a_run = csr_of(sparse_tensor(5, k, 1667));
  const Tensor b_run = random_tensor({k + d, 3}, 1668);
  const std::string a_shape = to_string({5, k}), b_shape = to_string(b_run.shape());
  const auto run_got =
      observe(fmt::format("csr_matmul(a {}, b {})", a_shape, b_shape), [&] { return csr_matmul(a_run, b_run); });
  KILN_JUDGE {
    testing::expect_throws<ShapeError>(__FILE__, __LINE__, run_got, "csr_shape_not_reported", {a_shape, b_shape},
                                       {{"call", fmt::format("csr_matmul of a {} CSR matrix by a {} matrix", a_shape, b_shape)},
                                        {"shapes", a_shape + " and " + b_shape}});
  }
  // Ranks outside [1, min(m, n)].
  const Tensor m = random_tensor({3, 7}, 1669);
  for (const std::int64_t rank : {0, 4}) {
    const auto got = observe(fmt::format("low_rank(W (3, 7), {})", rank), [&] { return compress::low_rank(m, rank).u; });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, got, "rank_not_rejected",
                                                    {std::to_string(rank), "(3, 7)"},
                                                    {{"shape", "(3, 7)"}, {"rank", std::to_string(rank)}});
      if (::testing::Test::HasFailure()) return;
    }
  }
  // A matrix with no rows or no columns: min(m, n) = 0 leaves no valid rank, so low_rank's own
  // error, naming the rank and the shape, must come before svd(), which refuses such a matrix
  // with a ShapeError that names only the shape ("... m, n >= 1, got shape (0, 5)": rank 1 is in
  // it by chance, so the ranks are 2 and 3).
  for (const auto& [shape, rank] : std::vector<std::pair<Shape, std::int64_t>>{{{0, 5}, 2}, {{6, 0}, 3}}) {
    const std::string shape_text = to_string(shape);
    const Tensor empty(shape, std::vector<float>{});
    const auto got = observe(fmt::format("low_rank(W {}, {})", shape_text, rank), [&] { return compress::low_rank(empty, rank).u; });
    KILN_JUDGE {
      const testing::Params params = {{"shape", shape_text}, {"rank", std::to_string(rank)}};
      // Refused as an invalid_argument (a ShapeError is one) that names the shape but not the
      // rank: an error from past the rank check, svd()'s.
      if (!got.ok() && got.error().is(testing::error_kind_name<std::invalid_argument>()) &&
          got.error().message.find(std::to_string(rank)) == std::string::npos) {
        KILN_FAIL("rank_checked_after_svd", params,
                  fmt::format("{} threw {} ({}), expected low_rank's std::invalid_argument naming the rank {} and the shape {}",
                              got.call(), got.error().kind(), got.error().message, rank, shape_text));
        return;
      }
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, got, "rank_not_rejected",
                                                    {std::to_string(rank), shape_text}, params);
      if (::testing::Test::HasFailure()) return;
    }
  }
  // prune_magnitude refuses what magnitude_mask refuses, before it writes anything: after a
  // sparsity of 1.5 or -0.5 the weight (of the run) is as it was, every entry.
  const std::vector<float> before = data_of(random_tensor({2, 3}, 1671)).values;
  for (const double sparsity : {1.5, -0.5}) {
    const auto refused = observe(fmt::format("prune_magnitude(w (2, 3), {}), then w's values", sparsity), [&] {
      Tensor weight({2, 3}, before);
      bool threw = false;
      try {
        compress::prune_magnitude(weight, sparsity);
      } catch (const std::invalid_argument&) {
        threw = true;
      }
      return std::make_pair(threw, weight.to_vector());
    });
    const testing::Params params = {{"sparsity", fmt::format("{}", sparsity)}};
    if (!KILN_EXPECT_OK(refused, "prune_refusal_changed_weight", params)) return;
    KILN_JUDGE {
      if (!refused->first || refused->second != before) {
        KILN_FAIL("prune_refusal_changed_weight", params,
                  fmt::format("{}: {}; w is {}, was {}", refused.call(),
                              refused->first ? "raised std::invalid_argument" : "did not raise std::invalid_argument",
                              testing::list(refused->second), testing::list(before)));
        return;
      }
    }
  }
}

}  // namespace kiln
