// Module 11 checks: one TEST per check in module.yaml.
//
// The sizes follow the notebook "is indexing slower than the one-hot matmul?": a 703×27 table
// (a trigram model: 703 two-letter contexts, 27 letters), indexed here by 1,000 ids rather than
// its 1,000,000 so that the checks stay fast (`grader bench 11` runs the full size). Expected
// values are worked out by hand or computed by trusted loops written in this file; tables, ids
// and gradients are drawn from the run's seed.
//
// Every value taken from the module's functions passes through observe() (kiln/observe.h). The
// layers are built, given a table of the test's own, used and read inside one call, so that no
// check depends on the tables the constructors draw.
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/autograd.h"
#include "kiln/embeddings.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;

// The transpose of a contiguous matrix as a view (strides (1, rows)), built with the given
// make_view so that the inputs depend on none of module 01's written functions.
Tensor transposed(const Tensor& m) { return make_view(m, {m.shape()[1], m.shape()[0]}, {1, m.shape()[1]}, 0); }

constexpr std::int64_t kRows = 703;  // the notebook's table: 703 contexts...
constexpr std::int64_t kDim = 27;    // ...by 27 letters

// `count` ids uniform in [0, rows), drawn from the run's seed.
Indices random_ids(std::size_t count, std::int64_t rows, std::uint64_t stream) {
  return testing::random_ints(count, rows, stream);
}

// "{1, 3, 1, 9}", or "1,000 ids" for a long list.
std::string ids_text(const Indices& ids) {
  if (ids.size() > 12) return fmt::format("{} ids", ids.size());
  std::string text = "{";
  for (std::size_t k = 0; k < ids.size(); ++k) text += (k ? ", " : "") + std::to_string(ids[k]);
  return text + "}";
}

// Trusted: the one-hot product written out, one_hot(ids)·W with every one of the rows·dim
// multiply-adds done in float. Each sum is w·1 plus zeros, so it is exact.
TensorData trusted_one_hot_product(const TensorData& weight, const Indices& ids) {
  const std::int64_t rows = weight.shape[0], dim = weight.shape[1];
  const std::vector<float>& w = weight.values;
  std::vector<float> out(ids.size() * static_cast<std::size_t>(dim), 0.0f);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    float* out_row = out.data() + k * static_cast<std::size_t>(dim);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float entry = r == ids[k] ? 1.0f : 0.0f;  // one_hot(ids)[k, r]
      const float* w_row = w.data() + r * dim;
      for (std::int64_t d = 0; d < dim; ++d) out_row[d] += entry * w_row[d];
    }
  }
  return data_of({static_cast<std::int64_t>(ids.size()), dim}, out);
}
TensorData trusted_one_hot_product(const Tensor& weight, const Indices& ids) {
  return trusted_one_hot_product(data_of(weight), ids);
}

// Trusted: the one-hot matrix, (n, classes).
TensorData trusted_one_hot(const Indices& ids, std::int64_t classes) {
  std::vector<float> out(ids.size() * static_cast<std::size_t>(classes), 0.0f);
  for (std::size_t k = 0; k < ids.size(); ++k) out[k * static_cast<std::size_t>(classes) + ids[k]] = 1.0f;
  return data_of({static_cast<std::int64_t>(ids.size()), classes}, out);
}

// Trusted: the scatter-add, summed in double.
TensorData trusted_scatter(const Tensor& grad_output, const Indices& ids, std::int64_t rows) {
  const std::int64_t dim = grad_output.shape()[1];
  const std::vector<float> g = data_of(grad_output).values;
  std::vector<double> sums(static_cast<std::size_t>(rows * dim), 0.0);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    for (std::int64_t d = 0; d < dim; ++d) {
      sums[static_cast<std::size_t>(ids[k] * dim + d)] += g[k * static_cast<std::size_t>(dim) + static_cast<std::size_t>(d)];
    }
  }
  return data_of({rows, dim}, std::vector<float>(sums.begin(), sums.end()));
}

// Reports `failure_id` unless the observed tensor has the expected shape.
bool expect_shape(const char* file, int line, const testing::Observed<TensorData>& t, const Shape& expected,
                  const std::string& failure_id) {
  if (!testing::expect_ok(file, line, t, failure_id)) return false;
  if (t->shape == expected) return true;
  testing::report_failure(file, line, failure_id, {},
                          t.call() + " has shape " + to_string(t->shape) + ", expected " + to_string(expected));
  return false;
}

// Reports `failure_id` unless `actual` (named `what`) is within tolerance of `expected`.
bool expect_part(const char* file, int line, const std::string& what, const TensorData& actual,
                 const TensorData& expected, double tolerance, const std::string& failure_id) {
  const testing::Comparison c = testing::compare(actual, expected, tolerance, tolerance);
  if (c.close) return true;
  testing::report_failure(file, line, failure_id, {},
                          what + ": " +
                              (c.shapes_match ? c.describe()
                                              : "got shape " + to_string(actual.shape) + ", expected " +
                                                    to_string(expected.shape)));
  return false;
}

}  // namespace

TEST(Embeddings, OneHot) {
  // Three ids, four classes: one 1 per row, in the id's column.
  if (!KILN_EXPECT_CLOSE(KILN_OBSERVE(one_hot({3, 0, 2}, 4)),
                         data_of({3, 4}, {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0}), 0.0, "one_hot_wrong"))
    return;
  if (!KILN_EXPECT_CLOSE(KILN_OBSERVE(one_hot({}, 4)), data_of({0, 4}, {}), 0.0, "one_hot_wrong")) return;
  // Ids of the run: n from 2 to 9 ids, n + 1 to n + 6 classes (never square).
  testing::Generator sizes(1101);
  const std::int64_t n = 2 + sizes.below(8), classes = n + 1 + sizes.below(6);
  const Indices run_ids = random_ids(static_cast<std::size_t>(n), classes, 1102);
  if (!KILN_EXPECT_CLOSE(observe(fmt::format("one_hot({}, {})", ids_text(run_ids), classes),
                                 [&] { return one_hot(run_ids, classes); }),
                         trusted_one_hot(run_ids, classes), 0.0, "one_hot_wrong"))
    return;

  // On the notebook's table: one_hot(ids)·W picks W's rows exactly (here through the given
  // one_hot_matmul, which multiplies your one-hot matrix with Eigen), and one_hot(ids)ᵀ·G
  // scatters G's rows back.
  const Tensor weight = random_tensor({kRows, kDim}, 703);
  const Indices ids = random_ids(1000, kRows, 27);
  const Tensor grad_output = random_tensor({1000, kDim}, 1000);
  if (!KILN_EXPECT_CLOSE(observe("one_hot_matmul(W, ids) with W (703, 27) and 1,000 ids",
                                 [&] { return one_hot_matmul(weight, ids); }),
                         trusted_one_hot_product(weight, ids), 0.0, "one_hot_wrong"))
    return;
  KILN_EXPECT_CLOSE_REL(observe("one_hot_matmul_backward(G, ids, 703) with G (1000, 27)",
                                [&] { return one_hot_matmul_backward(grad_output, ids, kRows); }),
                        trusted_scatter(grad_output, ids, kRows), 1e-5, 1e-5, "one_hot_wrong");
}

TEST(Embeddings, Lookup) {
  // W = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]; ids {3, 0, 2, 3} take rows 3, 0, 2, 3.
  const Tensor small({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  if (!KILN_EXPECT_CLOSE(observe("embedding_lookup(W, {3, 0, 2, 3}) with W (4, 3)",
                                 [&] { return embedding_lookup(small, {3, 0, 2, 3}); }),
                         data_of({4, 3}, {9, 10, 11, 0, 1, 2, 6, 7, 8, 9, 10, 11}), 0.0, "lookup_wrong"))
    return;

  // The notebook's table and 1,000 ids: exactly one_hot(ids)·W, not just close to it.
  const Tensor weight = random_tensor({kRows, kDim}, 703);
  const Indices ids = random_ids(1000, kRows, 27);
  if (!KILN_EXPECT_CLOSE(observe("embedding_lookup(W, ids) with W (703, 27) and 1,000 ids",
                                 [&] { return embedding_lookup(weight, ids); }),
                         trusted_one_hot_product(weight, ids), 0.0, "lookup_wrong"))
    return;

  // A table that is a view (the transpose of a (27, 703) matrix): its rows are not contiguous.
  const Tensor view = transposed(random_tensor({kDim, kRows}, 704));
  if (!KILN_EXPECT_CLOSE(observe("embedding_lookup(W, ids) with W a transposed (703, 27) view and 1,000 ids",
                                 [&] { return embedding_lookup(view, ids); }),
                         trusted_one_hot_product(view, ids), 0.0, "lookup_wrong"))
    return;

  // No ids: no rows.
  const auto no_rows =
      observe("embedding_lookup(W, {}) with W (703, 27)", [&] { return embedding_lookup(weight, {}); });
  KILN_JUDGE {
    if (!expect_shape(__FILE__, __LINE__, no_rows, {0, kDim}, "lookup_wrong")) return;
  }

  // A table of width 0: (5, 0) has 5 rows of no values, so ids {0, 4} give an empty (2, 0).
  // Its rows are its first size; counted as numel / dim they would be 0 / 0.
  const Tensor no_columns = Tensor::zeros({5, 0});
  const auto narrow =
      observe("embedding_lookup(W, {0, 4}) with W (5, 0)", [&] { return embedding_lookup(no_columns, {0, 4}); });
  KILN_JUDGE {
    if (!expect_shape(__FILE__, __LINE__, narrow, {2, 0}, "lookup_wrong")) return;
  }

  // A table that is not a matrix: (2, 3, 4), and one of the run's own with a third dimension.
  // Without the check it would be read as a (2, 3) table and return rows of the wrong size.
  const Tensor cube = random_tensor({2, 3, 4}, 707);
  KILN_EXPECT_THROWS(embedding_lookup(cube, {1, 0}), ShapeError, "lookup_shape_error");
  if (::testing::Test::HasFailure()) return;
  // A vector has one dimension too few: it has no row length to read.
  const Tensor line = random_tensor({6}, 708);
  KILN_EXPECT_THROWS(embedding_lookup(line, {0}), ShapeError, "lookup_shape_error");
  if (::testing::Test::HasFailure()) return;
  testing::Generator draw(1117);
  const std::int64_t a = 2 + draw.below(6), b = 2 + draw.below(6), c = 2 + draw.below(6);
  const Tensor run_cube = random_tensor({a, b, c}, 1118);
  const auto run_cube_lookup = observe(fmt::format("embedding_lookup(W, {{0, 1}}) with W ({}, {}, {})", a, b, c),
                                       [&] { return embedding_lookup(run_cube, {0, 1}); });
  KILN_JUDGE {
    testing::expect_throws<ShapeError>(__FILE__, __LINE__, run_cube_lookup, "lookup_shape_error");
    if (::testing::Test::HasFailure()) return;
  }

  // A table that is a contiguous view at an offset (testing::at_offset: 5 random floats before
  // its values, as rows 1 to n of a larger matrix are): its contiguous() is the view itself, so
  // its rows must be read from data(), where it starts, not from storage_data().
  const TensorData offset_values = data_of(random_tensor({9, 5}, 1119));
  const Indices offset_ids = random_ids(12, 9, 1120);
  // Judged against the same call on a fresh table: only a difference between the two is the
  // offset's failure.
  const auto offset_fresh = observe("embedding_lookup(W, ids) with W (9, 5) a fresh tensor and 12 ids",
                                    [&] { return embedding_lookup(offset_values.tensor(), offset_ids); });
  const auto offset_viewed = observe("embedding_lookup(W, ids) with W (9, 5) a contiguous view at offset 5 and 12 ids",
                                     [&] { return embedding_lookup(testing::at_offset(offset_values, 1121), offset_ids); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(offset_fresh, offset_viewed, trusted_one_hot_product(offset_values, offset_ids), 0.0,
                               0.0, "lookup_wrong", "lookup_view_offset_ignored");
  }
}

TEST(Embeddings, IndexOutOfRange) {
  // The table is the first 703 rows of a 704-row buffer, so that reading "row 703" by mistake
  // reads memory that exists instead of crashing: the check must still refuse it.
  const Tensor buffer = random_tensor({kRows + 1, kDim}, 705);
  const Tensor table = make_view(buffer, {kRows, kDim}, {kDim, 1}, 0);
  KILN_EXPECT_THROWS(embedding_lookup(table, {5, 703}), IndexError, "index_not_checked", {"703"});
  KILN_EXPECT_THROWS(embedding_lookup(table, {705}), IndexError, "index_not_checked", {"705", "703"});
  KILN_EXPECT_THROWS(embedding_lookup(table, {0, -1}), IndexError, "index_not_checked", {"-1", "703"});
  KILN_EXPECT_THROWS(one_hot({1, 7}, 4), IndexError, "index_not_checked", {"7", "4"});
  // A table of width 0 still has its rows: 5 of them in a (5, 0) table, so id 5 is out of range.
  const Tensor no_columns = Tensor::zeros({5, 0});
  const auto narrow_lookup =
      observe("embedding_lookup(W, {4, 5}) with W (5, 0)", [&] { return embedding_lookup(no_columns, {4, 5}); });
  KILN_JUDGE { testing::expect_throws<IndexError>(__FILE__, __LINE__, narrow_lookup, "index_not_checked", {"5"}); }
  // Ids that are 1 in 32 bits: 2^32 + 1 and -2^32 + 1, in each of the three functions.
  const std::int64_t wide = (std::int64_t{1} << 32) + 1;
  KILN_EXPECT_THROWS(embedding_lookup(table, {0, wide}), IndexError, "index_not_checked", {"4294967297", "703"});
  KILN_EXPECT_THROWS(embedding_lookup(table, {2 - wide}), IndexError, "index_not_checked", {"-4294967295", "703"});
  KILN_EXPECT_THROWS(one_hot({wide}, 4), IndexError, "index_not_checked", {"4294967297", "4"});
  const Tensor one_row = random_tensor({1, kDim}, 706);
  KILN_EXPECT_THROWS(embedding_backward(one_row, {800}, kRows), IndexError, "index_not_checked", {"800", "703"});
  KILN_EXPECT_THROWS(embedding_backward(one_row, {wide}, kRows), IndexError, "index_not_checked", {"4294967297", "703"});

  // A table of the run's own, (rows, dim) with rows from 20 to 59 and dim from 2 to 9, again the
  // first rows of a longer buffer; an id from rows to rows + 2, and one from -5 to -1. one_hot and
  // embedding_backward write into a result of their own, which has no spare rows: for them the
  // id is from rows + 1 to rows + 20, so that a bound off by one fails here rather than crashing
  // (id == rows is the lookup's case).
  testing::Generator draw(1103);
  const std::int64_t rows = 20 + draw.below(40), dim = 2 + draw.below(8);
  const std::int64_t too_big = rows + draw.below(3), negative = -1 - draw.below(5);
  const std::int64_t beyond = rows + 1 + draw.below(20);
  const Tensor run_buffer = random_tensor({rows + 3, dim}, 1104);
  const Tensor run_table = make_view(run_buffer, {rows, dim}, {dim, 1}, 0);
  const std::string shape = to_string(run_table.shape());
  const auto too_big_lookup = observe(fmt::format("embedding_lookup(W, {{0, {}}}) with W {}", too_big, shape),
                                      [&] { return embedding_lookup(run_table, {0, too_big}); });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, too_big_lookup, "index_not_checked",
                                       {std::to_string(too_big), std::to_string(rows)});
  }
  const auto negative_lookup = observe(fmt::format("embedding_lookup(W, {{{}}}) with W {}", negative, shape),
                                       [&] { return embedding_lookup(run_table, {negative}); });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, negative_lookup, "index_not_checked",
                                       {std::to_string(negative), std::to_string(rows)});
  }
  const auto beyond_one_hot =
      observe(fmt::format("one_hot({{{}}}, {})", beyond, rows), [&] { return one_hot({beyond}, rows); });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, beyond_one_hot, "index_not_checked",
                                       {std::to_string(beyond), std::to_string(rows)});
  }
  const Tensor run_g = random_tensor({2, dim}, 1105);
  const auto beyond_backward =
      observe(fmt::format("embedding_backward(G, {{1, {}}}, {}) with G (2, {})", beyond, rows, dim),
              [&] { return embedding_backward(run_g, {1, beyond}, rows); });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, beyond_backward, "index_not_checked",
                                       {std::to_string(beyond), std::to_string(rows)});
  }

  // Both edges for one_hot: an id equal to the number of classes in the first of two rows, and
  // -1 in the second. Unchecked, each would land inside the (2, classes) result (at row 1,
  // column 0 and at row 0, column classes - 1), so only the check can tell.
  const auto edge_one_hot =
      observe(fmt::format("one_hot({{{}, 0}}, {})", rows, rows), [&] { return one_hot({rows, 0}, rows); });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, edge_one_hot, "index_not_checked",
                                       {std::to_string(rows)});
  }
  const auto minus_one_hot =
      observe(fmt::format("one_hot({{0, -1}}, {})", rows), [&] { return one_hot({0, -1}, rows); });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, minus_one_hot, "index_not_checked",
                                       {"-1", std::to_string(rows)});
  }
}

TEST(Embeddings, BackwardScatterAdd) {
  // Distinct ids first: G = [[1, 2], [3, 4], [5, 6]] with ids {2, 0, 3} into 5 rows puts G's
  // rows at 2, 0 and 3, and leaves rows 1 and 4 at zero.
  const Tensor g({3, 2}, {1, 2, 3, 4, 5, 6});
  if (!KILN_EXPECT_CLOSE(observe("embedding_backward(G, {2, 0, 3}, 5) with G (3, 2)",
                                 [&] { return embedding_backward(g, {2, 0, 3}, 5); }),
                         data_of({5, 2}, {3, 4, 0, 0, 1, 2, 5, 6, 0, 0}), 0.0, "scatter_wrong"))
    return;
  // Distinct ids of the run: n of the rows of a (rows, dim) table, in a shuffled order.
  testing::Generator draw(1106);
  const std::int64_t rows = 8 + draw.below(8), dim = 2 + draw.below(5), n = 2 + draw.below(5);
  Indices all(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) all[static_cast<std::size_t>(r)] = r;
  for (std::size_t r = all.size(); r-- > 1;) std::swap(all[r], all[static_cast<std::size_t>(draw.below(r + 1))]);
  const Indices distinct(all.begin(), all.begin() + n);
  const Tensor distinct_g = random_tensor({n, dim}, 1107);
  if (!KILN_EXPECT_CLOSE(observe(fmt::format("embedding_backward(G, {}, {}) with G ({}, {})", ids_text(distinct), rows,
                                             n, dim),
                                 [&] { return embedding_backward(distinct_g, distinct, rows); }),
                         trusted_scatter(distinct_g, distinct, rows), 0.0, "scatter_wrong"))
    return;

  // Repeated ids: {1, 3, 1, 1} with G = [[1, 2], [3, 4], [5, 6], [7, 8]]: row 1 was used three
  // times and gets 1 + 5 + 7 = 13 and 2 + 6 + 8 = 16; row 3 gets [3, 4].
  const Tensor repeated_g({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  if (!KILN_EXPECT_CLOSE(observe("embedding_backward(G, {1, 3, 1, 1}, 4) with G (4, 2)",
                                 [&] { return embedding_backward(repeated_g, {1, 3, 1, 1}, 4); }),
                         data_of({4, 2}, {0, 0, 13, 16, 0, 0, 3, 4}), 0.0, "repeated_indices_not_added"))
    return;

  // 1,000 ids into 703 rows must repeat: every row receives the sum of its rows of G.
  const Indices ids = random_ids(1000, kRows, 27);
  const Tensor grad_output = random_tensor({1000, kDim}, 1000);
  if (!KILN_EXPECT_CLOSE_REL(observe("embedding_backward(G, ids, 703) with G (1000, 27) and 1,000 ids",
                                     [&] { return embedding_backward(grad_output, ids, kRows); }),
                             trusted_scatter(grad_output, ids, kRows), 1e-5, 1e-5, "repeated_indices_not_added"))
    return;

  // A gradient that is a view, as the graph hands back through a transpose: the transpose of a
  // (dim, n) matrix, whose rows are not contiguous.
  const Tensor g_view = transposed(random_tensor({dim, n}, 1121));
  if (!KILN_EXPECT_CLOSE(observe(fmt::format("embedding_backward(G, {}, {}) with G a transposed ({}, {}) view",
                                             ids_text(distinct), rows, n, dim),
                                 [&] { return embedding_backward(g_view, distinct, rows); }),
                         trusted_scatter(g_view, distinct, rows), 0.0, "backward_view_unread"))
    return;
  // A contiguous view that does not start its storage: rows 1 to n of an (n + 1, dim) matrix, at
  // offset dim. Its values start at data(), not at storage_data().
  // Judged against the same call on a fresh G of the same values: only a difference between the
  // two is the view's failure.
  const Tensor g_rows = make_view(random_tensor({n + 1, dim}, 1122), {n, dim}, {dim, 1}, dim);
  const TensorData g_rows_values = data_of(g_rows);
  const auto rows_fresh = observe(fmt::format("embedding_backward(G, {}, {}) with G ({}, {}) a fresh tensor",
                                              ids_text(distinct), rows, n, dim),
                                  [&] { return embedding_backward(g_rows_values.tensor(), distinct, rows); });
  const auto rows_viewed = observe(fmt::format("embedding_backward(G, {}, {}) with G rows 1 to {} of a ({}, {}) matrix",
                                               ids_text(distinct), rows, n, n + 1, dim),
                                   [&] { return embedding_backward(g_rows, distinct, rows); });
  if (!KILN_EXPECT_SAME_AT_OFFSET(rows_fresh, rows_viewed, trusted_scatter(g_rows, distinct, rows), 0.0, 0.0,
                                  "scatter_wrong", "backward_view_unread"))
    return;

  // A gradient that does not have one row per id: (3, 2) for 2 ids, a (2, 1, 2) one, and one of
  // the run's own with 1 to 4 rows too many. (Never too few: without the check, the loop would
  // then read past G.)
  const Tensor three_rows({3, 2}, {1, 2, 3, 4, 5, 6});
  KILN_EXPECT_THROWS(embedding_backward(three_rows, {0, 1}, 4), ShapeError, "backward_shape_error");
  if (::testing::Test::HasFailure()) return;
  const Tensor cube({2, 1, 2}, {1, 2, 3, 4});
  KILN_EXPECT_THROWS(embedding_backward(cube, {0, 1}, 4), ShapeError, "backward_shape_error");
  if (::testing::Test::HasFailure()) return;
  // No ids: G must then be (0, dim), which gives the zero gradient; a (3, 4), a 1-D (4) or a 0-D G
  // for no ids is refused like any other (a shortcut for an empty id list comes after the check).
  const Tensor no_rows = Tensor::zeros({0, 4});
  if (!KILN_EXPECT_CLOSE(observe("embedding_backward(G, {}, 5) with G (0, 4)",
                                 [&] { return embedding_backward(no_rows, {}, 5); }),
                         data_of({5, 4}, std::vector<float>(20, 0.0f)), 0.0, "scatter_wrong"))
    return;
  const Tensor three_rows_no_ids({3, 4}, std::vector<float>(12, 1.0f));
  KILN_EXPECT_THROWS(embedding_backward(three_rows_no_ids, {}, 5), ShapeError, "backward_shape_error");
  if (::testing::Test::HasFailure()) return;
  const Tensor flat({4}, {1, 2, 3, 4});
  KILN_EXPECT_THROWS(embedding_backward(flat, {}, 5), ShapeError, "backward_shape_error");
  if (::testing::Test::HasFailure()) return;
  const Tensor scalar({}, {1});
  KILN_EXPECT_THROWS(embedding_backward(scalar, {}, 5), ShapeError, "backward_shape_error");
  if (::testing::Test::HasFailure()) return;
  const Indices few = random_ids(static_cast<std::size_t>(n), rows, 1119);
  const std::int64_t extra = 1 + draw.below(4);
  const Tensor tall = random_tensor({n + extra, dim}, 1120);
  const auto tall_backward = observe(fmt::format("embedding_backward(G, {}, {}) with G ({}, {})", ids_text(few), rows,
                                                 n + extra, dim),
                                     [&] { return embedding_backward(tall, few, rows); });
  KILN_JUDGE { testing::expect_throws<ShapeError>(__FILE__, __LINE__, tall_backward, "backward_shape_error"); }
}

TEST(Embeddings, EmbeddingLayer) {
  // Embedding(rows, dim) with a table of the test's own: y = forward(ids), L = Σ w ⊙ y. y is
  // linear in the table, so the central difference of L is exact up to rounding. First
  // Embedding(10, 4) with ids {1, 3, 1, 9}, then a layer and ids of the run's own.
  testing::Generator draw(1108);
  const std::int64_t rows = 6 + draw.below(10), dim = 2 + draw.below(5);
  struct Case {
    std::int64_t rows, dim;
    Indices ids;
    std::uint64_t stream;
  };
  const std::vector<Case> cases = {
      {10, 4, {1, 3, 1, 9}, 1109},
      {rows, dim, random_ids(static_cast<std::size_t>(3 + draw.below(6)), rows, 1110), 1111},
  };
  for (const Case& c : cases) {
    const Shape table_shape = {c.rows, c.dim};
    const Shape y_shape = {static_cast<std::int64_t>(c.ids.size()), c.dim};
    const auto run = observe(
        fmt::format("Embedding({}, {}) with a random table: y = forward({}), y.backward(w), and the table's grad()",
                    c.rows, c.dim, ids_text(c.ids)),
        [&] {
          Embedding layer(c.rows, c.dim);
          layer.weight = random_tensor(table_shape, c.stream);
          layer.weight.set_requires_grad(true);
          Tensor y = layer.forward(c.ids);
          y.backward(random_tensor(y_shape, c.stream + 100, 0.5f, 1.5f));
          return std::pair(y, layer.weight.grad());
        });
    if (!KILN_EXPECT_OK(run, "embedding_grad_wrong")) return;
    KILN_JUDGE {
      const TensorData table = data_of(random_tensor(table_shape, c.stream));
      if (!expect_part(__FILE__, __LINE__, "the output y of " + run.call(), run->first,
                       trusted_one_hot_product(table, c.ids), 0.0, "embedding_grad_wrong"))
        return;
      const Indices ids = c.ids;
      const TensorData numeric = testing::numeric_gradient(
          [ids](const std::vector<TensorData>& in) { return trusted_one_hot_product(in[0], ids); }, {table}, 0,
          data_of(random_tensor(y_shape, c.stream + 100, 0.5f, 1.5f)));
      if (!expect_part(__FILE__, __LINE__, "the table's gradient from " + run.call(), run->second, numeric, 1e-3,
                       "embedding_grad_wrong"))
        return;
    }
  }
}

TEST(Embeddings, LearnedPositional) {
  // A table for 8 positions of 3 values: forward(5) is its first 5 rows, and the gradient of
  // Σ forward(5) is 1 on those rows and 0 on rows 5, 6 and 7. forward(8) is the whole table,
  // forward(0) has no rows. Then a table and a length of the run's own.
  testing::Generator draw(1112);
  const std::int64_t max_length = 4 + draw.below(12), dim = 2 + draw.below(6);
  const std::int64_t length = 1 + draw.below(max_length);
  struct Case {
    std::int64_t max_length, dim, length;
    std::uint64_t stream;
  };
  for (const Case& c : std::vector<Case>{{8, 3, 5, 1113}, {max_length, dim, length, 1114}}) {
    const Shape table_shape = {c.max_length, c.dim};
    const auto run = observe(fmt::format("LearnedPositionalEmbedding({}, {}) with a random table: y = forward({}), "
                                         "y.backward(ones), and the table's grad()",
                                         c.max_length, c.dim, c.length),
                             [&] {
                               LearnedPositionalEmbedding positions(c.max_length, c.dim);
                               positions.weight = random_tensor(table_shape, c.stream);
                               positions.weight.set_requires_grad(true);
                               Tensor y = positions.forward(c.length);
                               y.backward(Tensor::ones({c.length, c.dim}));
                               return std::pair(y, positions.weight.grad());
                             });
    if (!KILN_EXPECT_OK(run, "positions_wrong")) return;
    KILN_JUDGE {
      const TensorData table = data_of(random_tensor(table_shape, c.stream));
      Indices first(static_cast<std::size_t>(c.length));
      for (std::int64_t p = 0; p < c.length; ++p) first[static_cast<std::size_t>(p)] = p;
      if (!expect_part(__FILE__, __LINE__, "the output y of " + run.call(), run->first,
                       trusted_one_hot_product(table, first), 0.0, "positions_wrong"))
        return;
      std::vector<float> ones_on_first(static_cast<std::size_t>(c.max_length * c.dim), 0.0f);
      for (std::int64_t i = 0; i < c.length * c.dim; ++i) ones_on_first[static_cast<std::size_t>(i)] = 1.0f;
      if (!expect_part(__FILE__, __LINE__, "the table's gradient from " + run.call(), run->second,
                       data_of(table_shape, ones_on_first), 0.0, "positions_wrong"))
        return;
    }
  }
  const auto full = observe("LearnedPositionalEmbedding(8, 3).forward(8) with a random table", [] {
    LearnedPositionalEmbedding positions(8, 3);
    positions.weight = random_tensor({8, 3}, 1115);
    return positions.forward(8);
  });
  if (!KILN_EXPECT_CLOSE(full, trusted_one_hot_product(random_tensor({8, 3}, 1115), {0, 1, 2, 3, 4, 5, 6, 7}), 0.0,
                         "positions_wrong"))
    return;
  const auto empty = observe("LearnedPositionalEmbedding(8, 3).forward(0)",
                             [] { return LearnedPositionalEmbedding(8, 3).forward(0); });
  KILN_JUDGE {
    if (!expect_shape(__FILE__, __LINE__, empty, {0, 3}, "positions_wrong")) return;
  }
  // Length 0 is a length like any other: its empty result comes from EmbeddingFunction too, so it
  // requires grad (the table does) and carries the node, as forward(1) does.
  const auto recorded = observe(
      "whether LearnedPositionalEmbedding(8, 3).forward(0) and .forward(1) require grad and have a grad_fn", [] {
        const LearnedPositionalEmbedding positions(8, 3);
        std::vector<std::int64_t> seen;  // 1 for yes, 0 for no
        for (const std::int64_t length : {std::int64_t{0}, std::int64_t{1}}) {
          const Tensor y = positions.forward(length);
          seen.push_back(y.requires_grad() ? 1 : 0);
          seen.push_back(y.autograd() != nullptr && y.autograd()->grad_fn != nullptr ? 1 : 0);
        }
        return seen;
      });
  if (!KILN_EXPECT_OK(recorded, "empty_positions_not_recorded")) return;
  KILN_JUDGE {
    const std::vector<std::int64_t> expected(4, 1);
    if (*recorded != expected) {
      const auto yes_no = [&](std::size_t k) { return k < recorded->size() && (*recorded)[k] == 1 ? "yes" : "no"; };
      KILN_FAIL("empty_positions_not_recorded", {},
                fmt::format("{}: forward(0) requires grad: {}, has a grad_fn: {}; forward(1): {}, {}", recorded.call(),
                            yes_no(0), yes_no(1), yes_no(2), yes_no(3)));
      return;
    }
  }

  // Longer than the table: an IndexError naming the length and max_length.
  const auto too_long = [](std::int64_t max, std::int64_t asked) {
    return observe(fmt::format("LearnedPositionalEmbedding({}, 3).forward({})", max, asked),
                   [=] { return LearnedPositionalEmbedding(max, 3).forward(asked); });
  };
  const auto nine = too_long(8, 9);
  KILN_JUDGE { testing::expect_throws<IndexError>(__FILE__, __LINE__, nine, "positions_too_long", {"9", "8"}); }
  const auto minus_one = too_long(8, -1);
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, minus_one, "positions_too_long", {"-1", "8"});
  }
  const std::int64_t beyond = max_length + 1 + draw.below(3);
  const auto run_beyond = too_long(max_length, beyond);
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, run_beyond, "positions_too_long",
                                       {std::to_string(beyond), std::to_string(max_length)});
    if (::testing::Test::HasFailure()) return;
  }
  // length is an std::int64_t: 2^32 + 3 is far beyond max_length 8 (in 32 bits it would be 3, a
  // length the table holds).
  const auto wide = too_long(8, 4294967299);
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, wide, "positions_length_narrowed", {"4294967299", "8"});
  }
}

TEST(Embeddings, Sinusoidal) {
  // dim 4: columns 0 and 1 have frequency 1, columns 2 and 3 have 1/10000^(2/4) = 1/100.
  //   row 0: [sin 0, cos 0, sin 0, cos 0] = [0, 1, 0, 1]
  //   row 1: [sin 1, cos 1, sin 0.01, cos 0.01], row 2: [sin 2, cos 2, sin 0.02, cos 0.02]
  if (!KILN_EXPECT_CLOSE(KILN_OBSERVE(sinusoidal_positional_embedding(3, 4)),
                         data_of({3, 4}, {0, 1, 0, 1, 0.8414709848f, 0.5403023059f, 0.0099998333f, 0.9999500004f,
                                          0.9092974268f, -0.4161468365f, 0.0199986667f, 0.9998000067f}),
                         1e-6, "sinusoid_wrong"))
    return;
  // dim 5 (odd): the pairs (0, 1), (2, 3) and a lone sine in column 4, at 1/10000^(4/5).
  const auto odd = KILN_OBSERVE(sinusoidal_positional_embedding(2, 5));
  const TensorData odd_expected = data_of({2, 5}, {0, 1, 0, 1, 0, 0.8414709848f, 0.5403023059f, 0.0251162229f,
                                                   0.9996845379f, 0.0006309573f});
  KILN_JUDGE {
    // Right but for the lone sine, left at 0: a loop over whole (sin, cos) pairs only.
    if (odd.ok() && odd->shape == odd_expected.shape) {
      TensorData without_lone = odd_expected;
      without_lone.values[9] = 0;
      const testing::Comparison right = testing::compare(*odd, odd_expected, 1e-6);
      if (!right.close && testing::compare(*odd, without_lone, 1e-6).close) {
        KILN_FAIL("sinusoid_odd_column_missing", {}, odd.call() + ": " + right.describe());
        return;
      }
    }
  }
  if (!KILN_EXPECT_CLOSE(odd, odd_expected, 1e-6, "sinusoid_wrong")) return;
  // Larger tables against the formula, computed here in double and stored as float: 50×16, a
  // length from 20 to 59 and a dim from 3 to 22 of the run's own, within 1e-5; then positions into
  // the thousands, as a long context has, within 1e-6: the angle p / 10000^(2i/dim) taken in float
  // is off by about p·6e-8, 1e-4 at p = 2047, where the table computed in double is within 6e-8.
  // Of dim 12 too, whose exponents 2i/12 are not exact in binary (those of dim 16 are): in float
  // they put the angle at 2047 2e-5 off.
  const auto table = [](std::int64_t rows, std::int64_t columns) {
    std::vector<float> expected;
    for (std::int64_t p = 0; p < rows; ++p) {
      for (std::int64_t d = 0; d < columns; ++d) {
        const double angle = static_cast<double>(p) / std::pow(10000.0, static_cast<double>(d - d % 2) / columns);
        expected.push_back(static_cast<float>(d % 2 == 0 ? std::sin(angle) : std::cos(angle)));
      }
    }
    return data_of({rows, columns}, expected);
  };
  testing::Generator draw(1116);
  const std::int64_t length = 20 + draw.below(40), dim = 3 + draw.below(20);
  struct Table {
    std::int64_t rows, columns;
    double atol;
    const char* failure_id;
  };
  for (const Table& t : {Table{50, 16, 1e-5, "sinusoid_wrong"}, Table{length, dim, 1e-5, "sinusoid_wrong"},
                         Table{2048, 16, 1e-6, "sinusoid_precision"}, Table{2048, 12, 1e-6, "sinusoid_precision"}}) {
    const auto got = observe(fmt::format("sinusoidal_positional_embedding({}, {})", t.rows, t.columns),
                             [&] { return sinusoidal_positional_embedding(t.rows, t.columns); });
    KILN_JUDGE {
      if (!KILN_EXPECT_CLOSE(got, table(t.rows, t.columns), t.atol, t.failure_id)) return;
    }
    if (!got.ok()) return;
  }

  // The bounds: length 0 is an empty (0, dim) table and dim 1 a single column of sines, sin p;
  // a negative length, or a dim of 0 or less, raises IndexError.
  const std::int64_t empty_dim = 1 + draw.below(8);
  if (!KILN_EXPECT_CLOSE(observe(fmt::format("sinusoidal_positional_embedding(0, {})", empty_dim),
                                 [&] { return sinusoidal_positional_embedding(0, empty_dim); }),
                         data_of({0, empty_dim}, {}), 0.0, "sinusoid_bounds"))
    return;
  const std::int64_t sines = 2 + draw.below(10);
  const auto one_column = observe(fmt::format("sinusoidal_positional_embedding({}, 1)", sines),
                                  [&] { return sinusoidal_positional_embedding(sines, 1); });
  KILN_JUDGE {
    std::vector<float> expected;
    for (std::int64_t p = 0; p < sines; ++p) expected.push_back(static_cast<float>(std::sin(static_cast<double>(p))));
    if (!KILN_EXPECT_CLOSE(one_column, data_of({sines, 1}, expected), 1e-6, "sinusoid_bounds")) return;
  }
  if (!one_column.ok()) return;
  KILN_EXPECT_THROWS(sinusoidal_positional_embedding(3, 0), IndexError, "sinusoid_bounds");
  if (::testing::Test::HasFailure()) return;
  KILN_EXPECT_THROWS(sinusoidal_positional_embedding(-1, 4), IndexError, "sinusoid_bounds");
  if (::testing::Test::HasFailure()) return;
  const std::int64_t bad_dim = -draw.below(3), bad_length = -1 - draw.below(5);
  const auto zero_dim = observe(fmt::format("sinusoidal_positional_embedding({}, {})", sines, bad_dim),
                                [&] { return sinusoidal_positional_embedding(sines, bad_dim); });
  KILN_JUDGE {
    testing::expect_throws<IndexError>(__FILE__, __LINE__, zero_dim, "sinusoid_bounds");
    if (::testing::Test::HasFailure()) return;
  }
  const auto negative_length = observe(fmt::format("sinusoidal_positional_embedding({}, {})", bad_length, empty_dim),
                                       [&] { return sinusoidal_positional_embedding(bad_length, empty_dim); });
  KILN_JUDGE { testing::expect_throws<IndexError>(__FILE__, __LINE__, negative_length, "sinusoid_bounds"); }
}

}  // namespace kiln
