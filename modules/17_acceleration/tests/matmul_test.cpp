// Checks vectorized_matmul, tiled_matmul and the challenge, blocked_matmul. Every product is
// compared with a plain triple loop summed in double (reference_matmul), never with another of
// the module's products, so that a failure always names the function that is wrong. Inputs are
// drawn from the run's seed.
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/acceleration.h"
#include "kiln/testing.h"
#include "matmul_counts.h"

namespace kiln {
namespace {

using testing::compare;
using testing::format_number;
using testing::observe;
using testing::Observed;
using testing::Params;
using testing::random_tensor;
using testing::reference_matmul;
using testing::report_failure;
using testing::TensorData;
using matmul_counts::inner_counts;
using matmul_counts::values_counted;

// "(5, 7) by (7, 3)"
std::string by(const Shape& a, const Shape& b) { return to_string(a) + " by " + to_string(b); }

// The transpose of a random (cols, rows) matrix: a (rows, cols) view whose rows are not
// contiguous in memory. Built with make_view, so that the input depends on no student code.
Tensor transposed_view(std::int64_t rows, std::int64_t cols, std::uint64_t stream) {
  return make_view(random_tensor({cols, rows}, stream), {rows, cols}, {1, rows}, 0);
}

// Reports failure_id, with the params for its message and {difference} and {where}, unless the
// observed product is within atol + rtol·|expected| of the plain loop's. An error names the call.
// Judging, like expect_shape_error: called only inside KILN_JUDGE.
bool expect_product(const char* file, int line, const Observed<TensorData>& product, const TensorData& expected,
                    double atol, double rtol, const char* failure_id, Params params) {
  if (!product.ok()) {
    params.insert(params.end(), {{"difference", testing::kThrewDifference}, {"where", testing::kThrewWhere}});
    report_failure(file, line, failure_id, params, "unexpected error: " + product.describe_error());
    return false;
  }
  const testing::Comparison c = compare(*product, expected, atol, rtol);
  if (c.close) return true;
  if (!c.shapes_match) {
    params.insert(params.end(), {{"difference", "inf"}, {"where", testing::shapes_where(product->shape, expected.shape)}});
    report_failure(file, line, failure_id, params,
                   fmt::format("{} has shape {}, expected {}", product.call(), to_string(product->shape),
                               to_string(expected.shape)));
  } else {
    params.insert(params.end(), {{"difference", format_number(c.max_abs_diff)}, {"where", to_string(c.where)}});
    report_failure(file, line, failure_id, params, product.call() + ": " + c.describe());
  }
  return false;
}
#define EXPECT_PRODUCT(product, expected, atol, rtol, id, ...) \
  expect_product(__FILE__, __LINE__, (product), (expected), (atol), (rtol), id, __VA_ARGS__)

// Reports failure_id (with params) unless the call threw kiln::ShapeError mentioning every string
// in must_mention.
void expect_shape_error(const char* file, int line, const Observed<TensorData>& product, const char* failure_id,
                        const Params& params, const std::vector<std::string>& must_mention) {
  if (product.ok()) {
    report_failure(file, line, failure_id, params,
                   product.call() + " returned a tensor of shape " + to_string(product->shape) +
                       " instead of throwing kiln::ShapeError");
    return;
  }
  if (!product.error().is("kiln::ShapeError")) {
    report_failure(file, line, failure_id, params, product.describe_error() + ", expected kiln::ShapeError");
    return;
  }
  for (const auto& needle : must_mention) {
    if (product.error().message.find(needle) == std::string::npos) {
      report_failure(file, line, failure_id, params,
                     product.call() + ": the error message should mention " + needle + ", but it says: " +
                         product.error().message);
      return;
    }
  }
}
#define EXPECT_SHAPE_ERROR(product, id, params, ...) \
  expect_shape_error(__FILE__, __LINE__, (product), id, params, __VA_ARGS__)

TEST(Acceleration, VectorizedMatmul) {
  // The given product: a (5, 7) by (7, 3) product, then one of transposed views.
  const Tensor a = random_tensor({5, 7}, 1), b = random_tensor({7, 3}, 2);
  const auto ab = KILN_OBSERVE(vectorized_matmul(a, b));
  KILN_JUDGE {
    if (!EXPECT_PRODUCT(ab, reference_matmul(a, b), 1e-5, 0.0, "products_differ",
                        {{"function", "vectorized_matmul"}, {"inputs", by(a.shape(), b.shape())}}))
      return;
  }
  if (!ab.ok()) return;
  const Tensor a_view = transposed_view(5, 7, 3), b_view = transposed_view(7, 3, 4);
  const auto views = observe("vectorized_matmul(a_view, b_view) of transposed (5, 7) and (7, 3) views",
                             [&] { return vectorized_matmul(a_view, b_view); });
  KILN_JUDGE {
    if (!EXPECT_PRODUCT(views, reference_matmul(a_view, b_view), 1e-5, 0.0, "products_differ",
                        {{"function", "vectorized_matmul"}, {"inputs", "transposed (5, 7) and (7, 3) views"}}))
      return;
  }
  if (!views.ok()) return;
  // Yours, on the same views: data() refuses a view, so it needs contiguous() first.
  const auto tiled_views = observe("tiled_matmul(a_view, b_view) of transposed (5, 7) and (7, 3) views",
                                   [&] { return tiled_matmul(a_view, b_view); });
  KILN_JUDGE {
    EXPECT_PRODUCT(tiled_views, reference_matmul(a_view, b_view), 1e-5, 0.0, "products_differ",
                   {{"function", "tiled_matmul"}, {"inputs", "transposed (5, 7) and (7, 3) views"}});
  }

  // (2, 3) by (4, 2): the inner sizes 3 and 4 differ; and a vector is no matrix.
  const Tensor left = random_tensor({2, 3}, 5), right = random_tensor({4, 2}, 6), vector = random_tensor({3}, 7);
  const auto vectorized_mismatch = KILN_OBSERVE(vectorized_matmul(left, right));
  KILN_JUDGE {
    EXPECT_SHAPE_ERROR(vectorized_mismatch, "shape_error_missing",
                       {{"function", "vectorized_matmul"}, {"inputs", "(2, 3) by (4, 2)"}}, {"(2, 3)", "(4, 2)"});
  }
  const auto tiled_mismatch = KILN_OBSERVE(tiled_matmul(left, right));
  KILN_JUDGE {
    EXPECT_SHAPE_ERROR(tiled_mismatch, "shape_error_missing",
                       {{"function", "tiled_matmul"}, {"inputs", "(2, 3) by (4, 2)"}}, {"(2, 3)", "(4, 2)"});
  }
  const auto tiled_vector = KILN_OBSERVE(tiled_matmul(vector, right));
  KILN_JUDGE {
    EXPECT_SHAPE_ERROR(tiled_vector, "shape_error_missing",
                       {{"function", "tiled_matmul"}, {"inputs", "(3) by (4, 2)"}}, {"(3)", "(4, 2)"});
  }
  // Contiguous views at an offset, (5, 7) by (7, 3), each 5 floats into a storage of other
  // numbers: contiguous() returns each as it is, and its values start at data(), not at the
  // storage's first float.
  const Tensor a_offset = testing::at_offset(testing::data_of(random_tensor({5, 7}, 8)), 9);
  const Tensor b_offset = testing::at_offset(testing::data_of(random_tensor({7, 3}, 10)), 11);
  // The same call on fresh tensors of the same values: only a product that differs between the
  // two is the offset's fault; one wrong on both is tiled_matmul's own.
  const auto fresh = observe("tiled_matmul(a, b, 4) of the same (5, 7) and (7, 3) values in fresh tensors", [&] {
    return tiled_matmul(testing::data_of(a_offset).tensor(), testing::data_of(b_offset).tensor(), 4);
  });
  const auto offsets = observe("tiled_matmul(a, b, 4) of (5, 7) and (7, 3) contiguous views at offset 5",
                               [&] { return tiled_matmul(a_offset, b_offset, 4); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(fresh, offsets, reference_matmul(a_offset, b_offset), 1e-5, 0.0, "products_differ",
                               "tiled_offset_ignored",
                               {{"function", "tiled_matmul"},
                                {"inputs", "(5, 7) and (7, 3) fresh tensors"},
                                {"views", "(5, 7) and (7, 3) contiguous views at offset 5"}});
  }
}

TEST(Acceleration, TiledMatmul) {
  // (n, inner, m): square, odd sizes no tile divides, tall and thin, a single row and column, a
  // single inner value, and sizes just past the default tile of 64 in every direction.
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> sizes{
      {6, 6, 6}, {5, 7, 3}, {9, 4, 2}, {1, 8, 1}, {3, 1, 4}, {70, 67, 66}};
  std::uint64_t stream = 11;
  for (const auto& [n, inner, m] : sizes) {
    const Tensor a = random_tensor({n, inner}, stream++), b = random_tensor({inner, m}, stream++);
    for (int tile_size : {1, 2, 3, 4, 64}) {
      const auto c = observe(fmt::format("tiled_matmul(a, b, {}) of {}", tile_size, by(a.shape(), b.shape())),
                             [&] { return tiled_matmul(a, b, tile_size); });
      // The call, naming the tile size and the shapes, and the largest difference go in the detail.
      // A product that adds some inner values' products no times or twice, the same in every output,
      // is named by which: the last inner tile alone is an output tile overwritten, not added to.
      KILN_JUDGE {
        const TensorData expected = reference_matmul(a, b);
        if (c.ok() && !compare(*c, expected, 1e-4, 1e-5).close) {
          const std::vector<std::int64_t> counts = inner_counts(testing::data_of(a), testing::data_of(b), *c);
          const std::int64_t last_tile = (inner - 1) / tile_size * tile_size;
          bool last_tile_only = !counts.empty() && last_tile > 0;
          // Every count 0 or 1 with some 0: values left out; every count 1 or more with some 2 or
          // more: values repeated. (Counts that are negative, or of both kinds, are neither.)
          bool none_twice = !counts.empty(), none_missing = !counts.empty();
          for (std::int64_t k = 0; k < static_cast<std::int64_t>(counts.size()); ++k) {
            const std::int64_t count = counts[static_cast<std::size_t>(k)];
            last_tile_only = last_tile_only && count == (k >= last_tile ? 1 : 0);
            none_twice = none_twice && count >= 0 && count <= 1;
            none_missing = none_missing && count >= 1;
          }
          const Params params{{"tile", std::to_string(tile_size)}, {"last", std::to_string(inner - 1)}};
          const std::string detail = fmt::format("{} differs from a plain loop's product by up to {}", c.call(),
                                                 format_number(compare(*c, expected, 1e-4, 1e-5).max_abs_diff));
          if (last_tile_only) {
            KILN_FAIL("tiles_not_accumulated", {},
                      detail + fmt::format("; it is the product of the last inner tile alone, values {}–{}", last_tile,
                                           inner - 1));
            return;
          }
          if (none_twice && !values_counted(counts, 0).empty()) {
            Params missing = params;
            missing.push_back({"values", values_counted(counts, 0)});
            KILN_FAIL("inner_products_missing", missing, detail);
            return;
          }
          if (none_missing && !values_counted(counts, 2).empty()) {
            Params repeated = params;
            repeated.push_back({"values", values_counted(counts, 2)});
            KILN_FAIL("inner_products_repeated", repeated, detail);
            return;
          }
          // The one square case comes first and passed at every tile size: right there and wrong
          // here is one size used for another.
          if (n != inner || inner != m) {
            KILN_FAIL("sizes_mixed_up", {{"shapes", by(a.shape(), b.shape())}, {"tile", std::to_string(tile_size)}},
                      detail);
            return;
          }
        }
        if (!EXPECT_PRODUCT(c, expected, 1e-4, 1e-5, "tiles_not_accumulated", {})) return;
      }
      if (!c.ok()) return;
    }
  }
  // Values that are not finite go through as in a plain loop, and as in vectorized_matmul: 0·inf
  // and 0·NaN are NaN, so a row of zeros (a relu's output, say) times a column holding an inf or a
  // NaN is NaN, not 0. Skipping the products of an a value of 0 is right for finite b only. Tile
  // size 4 reaches a loop unrolled by four, 1 one without it, 64 the default.
  const Tensor zero_row({1, 4}, {0.0f, 0.0f, 0.0f, 0.0f});
  const Tensor not_finite({4, 2}, {INFINITY, 1.0f, 1.0f, NAN, 1.0f, 1.0f, 1.0f, 1.0f});
  const std::string not_finite_inputs = "[[0, 0, 0, 0]] by [[inf, 1], [1, nan], [1, 1], [1, 1]]";
  for (const int tile_size : {1, 4, 64}) {
    const auto c = observe(fmt::format("tiled_matmul(a, b, {}) of {}", tile_size, not_finite_inputs),
                           [&] { return tiled_matmul(zero_row, not_finite, tile_size); });
    KILN_JUDGE {
      const Params params{{"tile", std::to_string(tile_size)}, {"got", "?"}};
      if (!testing::expect_ok(__FILE__, __LINE__, c, "zero_products_skipped", params)) return;
      // Both outputs must be NaN; the comparisons call no NaN close to another, so look at each.
      const bool both_nan = c->shape == Shape{1, 2} && std::isnan(c->values[0]) && std::isnan(c->values[1]);
      if (!both_nan) {
        const std::string got = c->shape == Shape{1, 2} ? testing::list(c->values) : "of shape " + to_string(c->shape);
        KILN_FAIL("zero_products_skipped", {{"tile", std::to_string(tile_size)}, {"got", got}},
                  fmt::format("{} gave {}; a plain loop gives [nan, nan] (0·inf = nan, 0·nan = nan)", c.call(), got));
        return;
      }
    }
    if (!c.ok()) return;
  }
  // A tile size below 1 tiles nothing: IndexError.
  const Tensor a = random_tensor({3, 4}, 31), b = random_tensor({4, 2}, 32);
  for (const int tile_size : {0, -1}) {
    const auto refused = observe(fmt::format("tiled_matmul(a, b, {}) of {}", tile_size, by(a.shape(), b.shape())),
                                 [&] { return tiled_matmul(a, b, tile_size); });
    KILN_JUDGE {
      testing::expect_throws<IndexError>(__FILE__, __LINE__, refused, "tile_size_unchecked", {},
                                         {{"tile", std::to_string(tile_size)}});
    }
    if (refused.ok()) return;
  }
}

// Challenge. The reference blocks C in 6 × 16 register blocks, 96 rows, 256 inner values and 2048
// columns at a time; a student's blocks may differ, so the sizes below cross many boundaries:
// few multiples of 6 or 16 (the (6, 16, 16) case and those below), and 97 rows, 257 inner values and 2049
// columns, one past a block each.
TEST(Acceleration, BlockedMatmul) {
  // (n, inner, m). Also full panels of columns (m a multiple of 32, so of 16 and 32 lanes' panels)
  // over a last panel of rows that is not full (n = 7), and blocks that fill the packing buffers
  // exactly (n = 96 rows, inner = 256): one panel or block too many then reads past them. And the
  // other way round: a last panel of rows that is full (n = 24, a multiple of 4, 6 and 8) beside a
  // last panel of columns that is not (m = 17): a full block's store there writes past C.
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> sizes{
      {1, 1, 1}, {5, 7, 3}, {6, 16, 16}, {13, 37, 35}, {97, 20, 33}, {7, 257, 17}, {3, 5, 2049}, {7, 5, 32},
      {96, 256, 32}, {24, 9, 17}};
  std::uint64_t stream = 31;
  for (const auto& [n, inner, m] : sizes) {
    const Tensor a = random_tensor({n, inner}, stream++), b = random_tensor({inner, m}, stream++);
    const auto c = observe("blocked_matmul(a, b) of " + by(a.shape(), b.shape()), [&] { return blocked_matmul(a, b); });
    KILN_JUDGE {
      if (!EXPECT_PRODUCT(c, reference_matmul(a, b), 1e-4, 1e-5, "blocked_differs",
                          {{"inputs", by(a.shape(), b.shape())}}))
        return;
    }
    if (!c.ok()) return;
  }

  // Transposed views, (13, 37) by (37, 35): their rows are not contiguous in memory.
  const Tensor a_view = transposed_view(13, 37, 51), b_view = transposed_view(37, 35, 52);
  const auto views = observe("blocked_matmul(a_view, b_view) of transposed (13, 37) and (37, 35) views",
                             [&] { return blocked_matmul(a_view, b_view); });
  KILN_JUDGE {
    if (!EXPECT_PRODUCT(views, reference_matmul(a_view, b_view), 1e-4, 1e-5, "blocked_differs",
                        {{"inputs", "transposed (13, 37) and (37, 35) views"}}))
      return;
  }
  if (!views.ok()) return;

  // (2, 3) by (4, 2): the inner sizes 3 and 4 differ.
  const Tensor left = random_tensor({2, 3}, 53), right = random_tensor({4, 2}, 54);
  const auto mismatch = KILN_OBSERVE(blocked_matmul(left, right));
  KILN_JUDGE { EXPECT_SHAPE_ERROR(mismatch, "blocked_shape_error", {}, {"(2, 3)", "(4, 2)"}); }
  if (mismatch.ok()) return;

  // Contiguous views at an offset, (13, 37) by (37, 35), each 5 floats into a storage of other
  // numbers: their values start at data(), not at the storage's first float.
  const Tensor a_offset = testing::at_offset(testing::data_of(random_tensor({13, 37}, 55)), 56);
  const Tensor b_offset = testing::at_offset(testing::data_of(random_tensor({37, 35}, 57)), 58);
  // The same call on fresh tensors of the same values: only a product that differs between the
  // two is the offset's fault; one wrong on both is blocked_matmul's own.
  const auto fresh = observe("blocked_matmul(a, b) of the same (13, 37) and (37, 35) values in fresh tensors", [&] {
    return blocked_matmul(testing::data_of(a_offset).tensor(), testing::data_of(b_offset).tensor());
  });
  const auto offsets = observe("blocked_matmul(a, b) of (13, 37) and (37, 35) contiguous views at offset 5",
                               [&] { return blocked_matmul(a_offset, b_offset); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(fresh, offsets, reference_matmul(a_offset, b_offset), 1e-4, 1e-5, "blocked_differs",
                               "blocked_offset_ignored",
                               {{"inputs", "(13, 37) and (37, 35) fresh tensors"},
                                {"views", "(13, 37) and (37, 35) contiguous views at offset 5"}});
  }
}

}  // namespace
}  // namespace kiln
