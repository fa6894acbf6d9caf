// Module 15 checks for the int8 product: the int32 sums exactly, including sums of 127·127 that
// overflow an int16 and that float cannot hold, and the rescaling to float. The trusted product
// here is a double loop over the codes, summed in int64.
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/quantization.h"
#include "kiln/testing.h"
#include "quantization_testing.h"

namespace kiln {
namespace {

using namespace quant_testing;
using testing::data_of;
using testing::observe;

// acc (M, N) of x (M, K) and w (N, K): Σ_k x[m, k]·w[n, k] in int64.
std::vector<std::int64_t> trusted_accumulate(const quant::QuantizedTensor& x, const quant::QuantizedWeight& w) {
  std::vector<std::int64_t> acc;
  for (std::int64_t m = 0; m < x.rows; ++m) {
    for (std::int64_t n = 0; n < w.rows; ++n) {
      std::int64_t total = 0;
      for (std::int64_t k = 0; k < x.cols; ++k) total += std::int64_t{x.codes[at(m * x.cols + k)]} * w.codes[at(n * w.cols + k)];
      acc.push_back(total);
    }
  }
  return acc;
}

// One product to judge: codes built here.
struct Product {
  std::string what;
  quant::QuantizedTensor x;
  quant::QuantizedWeight w;
};

std::string shapes_of(const Product& p) {
  return fmt::format("x {} and w {}", shape_text(p.x.rows, p.x.cols), shape_text(p.w.rows, p.w.cols));
}

// Codes of the run: x (M, K) and w (N, K), scales of the run.
Product drawn_product(std::int64_t m, std::int64_t k, std::int64_t n, std::uint64_t stream) {
  testing::Generator draw(stream);
  std::vector<float> scales;
  for (std::int64_t r = 0; r < n; ++r) scales.push_back(draw.uniform(1e-3f, 0.1f));
  Product p{"", tensor_of(m, k, random_codes(m * k, stream + 1), draw.uniform(1e-3f, 0.1f)),
            weight_of(n, k, random_codes(n * k, stream + 2), scales)};
  p.what = "codes of the run, " + shapes_of(p);
  return p;
}

// The awkward shapes (M, K, N) every check runs, the last drawn by the run.
std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> awkward_shapes(std::uint64_t stream) {
  testing::Generator draw(stream);
  return {{1, 1, 1}, {3, 7, 1}, {1, 33, 3}, {7, 31, 33}, {33, 3, 31}, {1 + draw.below(40), 1 + draw.below(70), 1 + draw.below(40)}};
}

// Judges the observed sums of `p` against the trusted ones; reports `failure_id`. Judging only:
// called inside KILN_JUDGE.
bool expect_sums(const char* file, int line, const testing::Observed<std::vector<std::int64_t>>& got, const Product& p,
                 const char* failure_id) {
  const testing::Params params = {{"shapes", shapes_of(p)}};
  if (!testing::expect_ok(file, line, got, failure_id, params)) return false;
  const std::vector<std::int64_t> expected = trusted_accumulate(p.x, p.w);
  if (got->size() != expected.size()) {
    testing::report_failure(file, line, failure_id, params,
                            fmt::format("{} gave {}, expected M·N = {}", got.call(), testing::counted(got->size(), "sum"),
                                        expected.size()));
    return false;
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if ((*got)[i] == expected[i]) continue;
    const std::int64_t n = p.w.rows;
    testing::report_failure(file, line, failure_id, params,
                            fmt::format("{}: acc[{}·{} + {}] is {}, expected {}", got.call(), static_cast<std::int64_t>(i) / n,
                                        n, static_cast<std::int64_t>(i) % n, (*got)[i], expected[i]));
    return false;
  }
  return true;
}

}  // namespace

TEST(Quantization, Int8Accumulate) {
  // Codes of the run, of awkward shapes, against the trusted double loop.
  std::uint64_t stream = 1560;
  for (const auto& [m, k, n] : awkward_shapes(1505)) {
    const Product p = drawn_product(m, k, n, stream += 3);
    const auto got = observe("int8_accumulate of " + p.what, [&] { return quant::int8_accumulate(p.x, p.w); });
    KILN_JUDGE {
      if (!expect_sums(__FILE__, __LINE__, got, p, "accumulate_wrong")) return;
    }
    if (!got.ok()) return;
  }

  // Then by hand, with codes ±127 and 1: row 0 of x is all 127, row 1 alternates 127, -127; the rows
  // of w are all 127, all -127 and all 1. For K = 4096, acc[0, 0] = 127·127·4096 = 66,064,384,
  // beyond float's 2^24 = 16,777,216 (where float stops counting in ones) and far beyond int16's
  // 32,767, which 127·127·3 = 48,387 already passes. Row 1 sums to 0 when K is even.
  for (const std::int64_t k : {1, 3, 33, 4096}) {
    std::vector<std::int64_t> x_codes, w_codes;
    for (std::int64_t i = 0; i < k; ++i) x_codes.push_back(127);
    for (std::int64_t i = 0; i < k; ++i) x_codes.push_back(i % 2 == 0 ? 127 : -127);
    for (const std::int64_t code : {127, -127, 1})
      for (std::int64_t i = 0; i < k; ++i) w_codes.push_back(code);
    Product p{"", tensor_of(2, k, x_codes, 1.0f), weight_of(3, k, w_codes, {1.0f, 1.0f, 1.0f})};
    p.what = fmt::format("codes ±127 and 1, {}", shapes_of(p));
    const auto got = observe("int8_accumulate of " + p.what, [&] { return quant::int8_accumulate(p.x, p.w); });
    KILN_JUDGE {
      if (!expect_sums(__FILE__, __LINE__, got, p, "accumulation_not_exact")) return;
    }
    if (!got.ok()) return;
  }

  // Empty operands: no rows of x (M = 0) or of w (N = 0) give M·N = 0 sums, but an inner size K = 0
  // with M and N of 2 and 3 gives M·N = 6 sums, each the empty sum Σ_k = 0.
  for (const auto& [m, k, n] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{{0, 3, 2}, {2, 3, 0}, {2, 0, 3}}) {
    Product p{"", tensor_of(m, k, random_codes(m * k, 1572), 0.5f),
              weight_of(n, k, random_codes(n * k, 1573), std::vector<float>(at(n), 0.25f))};
    p.what = fmt::format("empty codes, {}", shapes_of(p));
    const auto got = observe("int8_accumulate of " + p.what, [&] { return quant::int8_accumulate(p.x, p.w); });
    KILN_JUDGE {
      if (!expect_sums(__FILE__, __LINE__, got, p, k == 0 ? "empty_inner_not_zeros" : "accumulate_wrong")) return;
    }
    if (!got.ok()) return;
  }

  // Inner sizes that differ: x (2, 3) and w (4, 5).
  const quant::QuantizedTensor x = tensor_of(2, 3, random_codes(6, 1570), 0.5f);
  const quant::QuantizedWeight w = weight_of(4, 5, random_codes(20, 1571), {1, 1, 1, 1});
  KILN_EXPECT_THROWS(quant::int8_accumulate(x, w), ShapeError, "int8_shape_error", {"(2, 3)", "(4, 5)"});
  // int8_matmul promises the same error, whether or not it sums through int8_accumulate.
  KILN_EXPECT_THROWS(quant::int8_matmul(x, w), ShapeError, "int8_shape_error", {"(2, 3)", "(4, 5)"});
}

TEST(Quantization, Int8Matmul) {
  // By hand: x codes [[1, 2, 3], [-4, 5, -6]] with scale 0.5; w codes [[7, 8, 9], [10, -11, 12],
  // [0, 0, 0], [-127, 127, 1]] with scales 0.25, 2, 1, 0.125. The sums are [[50, 24, 0, 130],
  // [-42, -167, 0, 1137]], and y[m, n] = 0.5·scale[n]·sum: [[6.25, 24, 0, 8.125],
  // [-5.25, -167, 0, 71.0625]].
  const Product hand{"", tensor_of(2, 3, {1, 2, 3, -4, 5, -6}, 0.5f),
                     weight_of(4, 3, {7, 8, 9, 10, -11, 12, 0, 0, 0, -127, 127, 1}, {0.25f, 2.0f, 1.0f, 0.125f})};
  if (!KILN_EXPECT_CLOSE(observe("int8_matmul of the hand-worked x (2, 3) and w (4, 3)",
                                 [&] { return quant::int8_matmul(hand.x, hand.w); }),
                         data_of({2, 4}, {6.25f, 24, 0, 8.125f, -5.25f, -167, 0, 71.0625f}), 1e-6, "rescale_wrong"))
    return;

  // An inner size K = 0: x (2, 0) and w (3, 0) give y (2, 3) of zeros, the empty sums rescaled.
  const Product no_inner{"", tensor_of(2, 0, {}, 0.5f), weight_of(3, 0, {}, {0.25f, 2.0f, 1.0f})};
  if (!KILN_EXPECT_CLOSE(observe("int8_matmul of x (2, 0) and w (3, 0)", [&] { return quant::int8_matmul(no_inner.x, no_inner.w); }),
                         data_of({2, 3}, std::vector<float>(6, 0.0f)), 0.0, "rescale_wrong"))
    return;

  // Codes and scales of the run: y = sx·sw[n]·acc, computed here in double.
  std::uint64_t stream = 1580;
  for (const auto& [m, k, n] : awkward_shapes(1506)) {
    const Product p = drawn_product(m, k, n, stream += 3);
    const auto got = observe("int8_matmul of " + p.what, [&] { return quant::int8_matmul(p.x, p.w); });
    KILN_JUDGE {
      const std::vector<std::int64_t> acc = trusted_accumulate(p.x, p.w);
      std::vector<float> expected;
      for (std::int64_t row = 0; row < m; ++row)
        for (std::int64_t col = 0; col < n; ++col)
          expected.push_back(static_cast<float>(static_cast<double>(p.x.scale) * p.w.scales[at(col)] * static_cast<double>(acc[at(row * n + col)])));
      if (!KILN_EXPECT_CLOSE_REL(got, data_of({m, n}, expected), 1e-7, 1e-5, "rescale_wrong")) return;
    }
    if (!got.ok()) return;
  }

  // Scales far apart, each y inside float's range: x.scale 1e36 with w.scales 0.01 and 0.005 gives
  // y = 1e36·0.01·16129 = 1.6129e38 and 1e36·0.005·(-16129) = -8.06e37, where x.scale·acc alone,
  // 1.6e40, overflows to inf; and the same the other way round, w.scales 1e36 and 5e35 with
  // x.scale 0.01, where w.scales[n]·acc alone overflows. The product of the two scales, the value
  // of one step of y, is in range wherever y is: it goes first.
  const Product far_apart[] = {
      {"x codes [[127]] with scale 1e36 and w codes [[127], [-127]] with scales 0.01 and 0.005",
       tensor_of(1, 1, {127}, 1e36f), weight_of(2, 1, {127, -127}, {0.01f, 0.005f})},
      {"x codes [[127]] with scale 0.01 and w codes [[127], [-127]] with scales 1e36 and 5e35",
       tensor_of(1, 1, {127}, 0.01f), weight_of(2, 1, {127, -127}, {1e36f, 5e35f})}};
  for (const Product& p : far_apart) {
    const auto got = observe("int8_matmul of " + p.what, [&] { return quant::int8_matmul(p.x, p.w); });
    KILN_JUDGE {
      const std::vector<std::int64_t> acc = trusted_accumulate(p.x, p.w);
      std::vector<float> expected;
      for (std::int64_t col = 0; col < p.w.rows; ++col)
        expected.push_back(static_cast<float>(static_cast<double>(p.x.scale) * p.w.scales[at(col)] * static_cast<double>(acc[at(col)])));
      if (got.ok() && got->values.size() == expected.size()) {
        for (std::int64_t col = 0; col < p.w.rows; ++col) {
          const float y = got->values[at(col)];
          if (std::isfinite(y)) continue;
          KILN_FAIL("rescale_overflows",
                    {{"x_scale", fmt::format("{}", p.x.scale)}, {"column", std::to_string(col)},
                     {"w_scale", fmt::format("{}", p.w.scales[at(col)])}, {"got", fmt::format("{}", y)},
                     {"expected", fmt::format("{}", expected[at(col)])}},
                    fmt::format("{}: y[0, {}] is {}, expected {} (acc {})", got.call(), col, y, expected[at(col)], acc[at(col)]));
          return;
        }
      }
      if (!KILN_EXPECT_CLOSE_REL(got, data_of({1, p.w.rows}, expected), 0.0, 1e-5, "rescale_wrong")) return;
    }
    if (!got.ok()) return;
  }
}

}  // namespace kiln
