// Module 15 checks for int8 weights: quantize_value, quantize_per_channel, dequantize and
// weight_bytes. Expected codes and scales come from quantization_testing.h, written out again in
// double; random weights are moved off the exact ties (x.5 steps) so that any correct way of
// dividing gives the same codes, and the ties themselves are tested on hand-worked values whose
// scales are powers of two, where the division is exact.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/quantization.h"
#include "kiln/testing.h"
#include "quantization_testing.h"

namespace kiln {
namespace {

using namespace quant_testing;
using testing::data_of;
using testing::observe;

// Judges an observed quantize_per_channel(weight) against the trusted codes and scales: scales to
// 1e-6 relative, codes exactly. Reports scales_wrong, zero_row_scale or codes_wrong; returns
// whether all held. Judging only: called inside KILN_JUDGE.
bool expect_quantized(const char* file, int line, const testing::Observed<ObservedWeight>& got, const TensorData& weight) {
  if (!testing::expect_ok(file, line, got, "scales_wrong", {{"shape", to_string(weight.shape)}, {"row", "any (the call threw)"}})) return false;
  const auto& [codes, scales, rows, cols] = *got;
  const std::string shape = to_string(weight.shape);
  if (rows != weight.shape[0] || cols != weight.shape[1] || static_cast<std::int64_t>(scales.size()) != rows ||
      static_cast<std::int64_t>(codes.size()) != rows * cols) {
    testing::report_failure(file, line, "scales_wrong", {{"shape", shape}, {"row", "any (the result has the wrong size)"}},
                            fmt::format("{} gave rows {}, cols {}, {} and {}, expected {} of {}", got.call(), rows, cols,
                                        testing::counted(scales.size(), "scale"), testing::counted(codes.size(), "code"),
                                        testing::counted(weight.shape[0], "row"),
                                        weight.shape[1]));
    return false;
  }
  const Quantized expected = trusted_quantize(weight);
  for (std::int64_t r = 0; r < rows; ++r) {
    const double want = expected.scales[at(r)], have = scales[at(r)];
    if (std::fabs(have - want) <= 1e-6 * want) continue;
    const bool zero_row = largest_magnitude(weight.values, r * cols, cols, 1) == 0.0f;
    // A scale kept above max/127 where that is below float's epsilon: a floor the header does
    // not have.
    const bool floored = !zero_row && want < std::numeric_limits<float>::epsilon() && have > want;
    // A scale of 0 for a row that is not zeros: max/127 taken as it comes where it rounds to 0.
    const bool rounded_to_zero = !zero_row && have == 0.0;
    const auto [a, b] = testing::format_pair(have, want);
    testing::report_failure(file, line,
                            zero_row          ? "zero_row_scale"
                            : rounded_to_zero ? "row_scale_rounded_to_zero"
                            : floored         ? "row_scale_floored"
                                              : "scales_wrong",
                            {{"shape", shape}, {"row", std::to_string(r)}},
                            fmt::format("{}: scales[{}] is {}, expected {}", got.call(), r, a, b));
    return false;
  }
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    if (codes[at(i)] == expected.codes[at(i)]) continue;
    const std::int64_t r = i / cols, c = i % cols;
    // A quotient past ±127.5 whose code is not ±127: the clamp is missing. (Only a subnormal row's
    // scale, a coarse step, lets a weight of the row pass 127 steps.)
    const double quotient = static_cast<double>(weight.values[at(i)]) / expected.scales[at(r)];
    if (std::fabs(quotient) > 127.5) {
      testing::report_failure(
          file, line, "codes_not_clamped", {{"shape", shape}, {"row", std::to_string(r)}, {"col", std::to_string(c)}},
          fmt::format("{}: codes[{}·{} + {}] is {}, expected {}: weight {} over the row's scale {} is {}, past 127",
                      got.call(), r, cols, c, codes[at(i)], expected.codes[at(i)], weight.values[at(i)],
                      expected.scales[at(r)], quotient));
      return false;
    }
    testing::report_failure(
        file, line, "codes_wrong", {{"shape", shape}, {"row", std::to_string(r)}, {"col", std::to_string(c)}},
        fmt::format("{}: codes[{}·{} + {}] is {}, expected {} (weight {}, scale {})", got.call(), r, cols, c,
                    codes[at(i)], expected.codes[at(i)], weight.values[at(i)], expected.scales[at(r)]));
    return false;
  }
  return true;
}

// quantize_per_channel(weight), observed under the name `call`, judged against the trusted
// quantizer of `values` (the weight's values, read before the call). False when it fails.
bool expect_per_channel(const char* file, int line, const std::string& call, const Tensor& weight,
                        const TensorData& values) {
  const auto got = observe(call, [&] { return parts_of(quant::quantize_per_channel(weight)); });
  KILN_JUDGE { return expect_quantized(file, line, got, values); }
  return got.ok();
}
#define EXPECT_PER_CHANNEL(call, weight, values) expect_per_channel(__FILE__, __LINE__, call, weight, values)

// The hand-worked (3, 5) weight of the chapter:
//   row 0: max 127, scale 1:        127, 2.5, -2.5, 0.5, -0.7  ->  127, 3, -3, 1, -1
//   row 1: zeros, scale 1:          all codes 0
//   row 2: max 15.875, scale 1/8:   -15.875, 0.3125, 1, -0.0625, 3  ->  -127, 3, 8, -1, 24
const Tensor hand_weight({3, 5}, {127, 2.5f, -2.5f, 0.5f, -0.7f, 0, 0, 0, 0, 0, -15.875f, 0.3125f, 1, -0.0625f, 3});

}  // namespace

TEST(Quantization, QuantizeWeights) {
  // One value at a time: ties go away from zero, in both directions. Then values beyond the range
  // clamp to ±127, and -127.5, which rounds to -128, to -127: the codes are symmetric. Last, halves
  // of scales that are not powers of two, where value / scale in float and value · (1 / scale)
  // land on the two sides of a half (126.499992 and 126.5; -26.5 and -26.4999981) and round apart.
  const std::tuple<float, float, std::int64_t> values[] = {
      {2.5f, 1.0f, 3}, {-2.5f, 1.0f, -3}, {0.5f, 1.0f, 1},   {-0.5f, 1.0f, -1}, {0.49f, 1.0f, 0},
      {1.0f, 0.125f, 8}, {-0.7f, 1.0f, -1}, {0.0f, 0.5f, 0}, {63.5f, 0.5f, 127}, {1.4375f, 0.125f, 12},
      {200.0f, 1.0f, 127}, {-200.0f, 1.0f, -127}, {-127.5f, 1.0f, -127}, {127.5f, 1.0f, 127},
      {4.15960836f, 0.0328822806f, 126}, {-0.194568947f, 0.00734222447f, -27}, {0.565164566f, 0.00676843803f, 84},
      {-3.03492141f, 0.0589305125f, -52},
      // Far past the range, where a quotient no integer type holds (1e30), or one that overflows
      // float itself (3e38 / 0.01), or an infinity, still clamps: round in float, then clamp.
      {1e30f, 1.0f, 127}, {-1e30f, 1.0f, -127}, {3e38f, 0.01f, 127},
      {std::numeric_limits<float>::infinity(), 1.0f, 127}, {-std::numeric_limits<float>::infinity(), 1.0f, -127},
  };
  for (const auto& [value, scale, code] : values) {
    const auto got = observe(fmt::format("quantize_value({}, {})", value, scale),
                             [&] { return quant::quantize_value(value, scale); });
    const testing::Params params = {{"value", fmt::format("{}", value)}, {"scale", fmt::format("{}", scale)},
                                    {"expected", std::to_string(code)}};
    if (!KILN_EXPECT_OK(got, "value_code_wrong", params)) return;
    KILN_JUDGE {
      if (*got != code) {
        KILN_FAIL("value_code_wrong", params, fmt::format("{} gave {}", got.call(), *got));
        return;
      }
    }
  }

  // The hand-worked (3, 5) weight: a row of zeros between two others.
  if (!EXPECT_PER_CHANNEL("quantize_per_channel(the chapter's (3, 5) weight)", hand_weight, data_of(hand_weight)))
    return;

  // Weights of the run, of awkward shapes; one row scaled down to show that each row has its own scale.
  testing::Generator draw(1501);
  const std::int64_t drawn_rows = 2 + draw.below(40), drawn_cols = 2 + draw.below(40);
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {1, 33}, {7, 3}, {31, 33}, {drawn_rows, drawn_cols}};
  std::uint64_t stream = 1510;
  for (const auto& [rows, cols] : shapes) {
    std::vector<float> values = data_of(tie_free_weight(rows, cols, stream++)).values;
    if (rows > 1) {
      for (std::int64_t c = 0; c < cols; ++c) values[at(cols + c)] *= 0.01f;  // row 1: a hundredth of the others
      away_from_ties(values, cols, cols, 1, trusted_scale(largest_magnitude(values, cols, cols, 1)));
    }
    const Tensor weight({rows, cols}, values);
    if (!EXPECT_PER_CHANNEL(fmt::format("quantize_per_channel(weight {})", shape_text(rows, cols)), weight,
                            data_of(weight)))
      return;
  }

  // A nearly dead output channel: row 0's largest magnitude, 1e-6, is below 127·float's epsilon,
  // and its scale is still 1e-6/127 = 7.874e-9, no floor: codes 127, -51, 32. Row 1 is ordinary.
  {
    const Tensor faint({2, 3}, {1e-6f, -4e-7f, 2.5e-7f, 2.0f, -0.7f, 0.25f});
    if (!EXPECT_PER_CHANNEL("quantize_per_channel(weight (2, 3)) with rows [1e-06, -4e-07, 2.5e-07] and [2, -0.7, 0.25]",
                            faint, data_of(faint)))
      return;
  }

  // Rows whose largest magnitude is below about 8.9e-44 (subnormal), where max/127 rounds to 0 in
  // float: the scale is then the smallest positive float, 1.4e-45, never 0, and the codes count
  // steps of it. [1.4e-45, -1.4e-45] gives [1, -1]; 1e-44 is 7 steps; 63 steps is the largest
  // magnitude whose quotient rounds to 0, and 64 steps, just past it, rounds up to the same scale.
  {
    const float step = std::numeric_limits<float>::denorm_min();
    const Tensor subnormal({4, 2}, {step, -step, 7 * step, -2 * step, -63 * step, 5 * step, 64 * step, 3 * step});
    if (!EXPECT_PER_CHANNEL("quantize_per_channel(weight (4, 2)) with rows [1.4e-45, -1.4e-45], [1e-44, -2.8e-45], "
                            "[-8.8e-44, 7e-45] and [9e-44, 4.2e-45] (subnormal)",
                            subnormal, data_of(subnormal)))
      return;
  }

  // Subnormal rows past 127 steps: 150/127 and 190/127 steps both round to a scale of 1 step, so
  // 150 and -190 steps are 150 and 190 scales from zero and clamp to ±127, as quantize_value clamps
  // any code (converting 150 to int8 straight would wrap, -106 on x86). 191 steps rounds up to a
  // scale of 2 steps, its codes 96 and -95 inside the range.
  {
    const float step = std::numeric_limits<float>::denorm_min();
    const Tensor coarse({3, 2}, {150 * step, -3 * step, -190 * step, 127 * step, 191 * step, -190 * step});
    if (!EXPECT_PER_CHANNEL("quantize_per_channel(weight (3, 2)) with rows [2.1e-43, -4.2e-45], [-2.66e-43, 1.78e-43] "
                            "and [2.68e-43, -2.66e-43] (150, -3; -190, 127; 191, -190 steps of 1.4e-45, subnormal)",
                            coarse, data_of(coarse)))
      return;
  }

  // Rows of no values, (2, 0): the largest of nothing is 0, so each row gets scale 1 and no codes;
  // and no rows at all, (0, 3).
  for (const auto& [rows, cols] : {std::pair<std::int64_t, std::int64_t>{2, 0}, {0, 3}}) {
    const Tensor empty = Tensor::zeros({rows, cols});
    if (!EXPECT_PER_CHANNEL(fmt::format("quantize_per_channel(weight {})", shape_text(rows, cols)), empty,
                            data_of(empty)))
      return;
  }

  // A transposed view: w stored (33, 7), seen (7, 33); read through the strides. w is built as the
  // transpose of a tie-free (7, 33) weight, so that the view's rows are tie-free.
  const Tensor rows_first = tie_free_weight(7, 33, 1520);
  const Tensor stored = stored_transposed(data_of(rows_first).values, 7, 33);  // (33, 7)
  const Tensor seen = transposed_view(stored);                                  // (7, 33), a view
  if (!EXPECT_PER_CHANNEL("quantize_per_channel(w.transpose(0, 1)) of a (33, 7) w", seen, data_of(rows_first))) return;

  // A weight that is not a matrix has no rows to give scales to. The (2, 2, 3) one first: without
  // the check it is quantized as a wrong (2, 2) matrix, where a (6) one would be read out of bounds.
  const Tensor cube({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  KILN_EXPECT_THROWS(quant::quantize_per_channel(cube), ShapeError, "quantize_shape_error", {"(2, 2, 3)"});
  if (::testing::Test::HasFailure()) return;
  const Tensor flat({6}, {1, 2, 3, 4, 5, 6});
  KILN_EXPECT_THROWS(quant::quantize_per_channel(flat), ShapeError, "quantize_shape_error", {"(6)"});
  if (::testing::Test::HasFailure()) return;

  // A contiguous view at an offset: a tie-free (3, 5) weight of the run 5 floats into a storage of
  // other numbers (in [-8, 8), so that a read before the view changes scales and codes). Its
  // values start at data(), not at the storage's first float.
  const Tensor shifted = testing::at_offset(data_of(tie_free_weight(3, 5, 1521)), 1522);
  const TensorData shifted_values = data_of(shifted);
  // The same call on a fresh tensor of the same values: only a result that differs between the
  // two is the offset's fault; one wrong on both is quantize_per_channel's own.
  const auto fresh_parts = observe("quantize_per_channel(weight) of the same (3, 5) values in a fresh tensor",
                                   [&] { return parts_of(quant::quantize_per_channel(shifted_values.tensor())); });
  const auto offset_parts = observe("quantize_per_channel(weight) of a (3, 5) contiguous view at offset 5",
                                    [&] { return parts_of(quant::quantize_per_channel(shifted)); });
  KILN_JUDGE {
    const auto text = [](const ObservedWeight& parts) {
      const auto& [codes, scales, rows, cols] = parts;
      std::vector<std::int64_t> got_codes(codes.begin(), codes.end());
      return fmt::format("scales {} and codes {}", testing::list(scales), fmt::join(got_codes, ", "));
    };
    if (testing::offset_changes(offset_parts, fresh_parts, [](const auto& a, const auto& b) { return a == b; })) {
      KILN_FAIL("quantize_offset_ignored", {},
                testing::offset_detail(offset_parts, fresh_parts, text));
      return;
    }
    expect_quantized(__FILE__, __LINE__, fresh_parts, shifted_values);
  }
}

TEST(Quantization, Dequantize) {
  // Codes and scales written here: (2, 3), rows of scale 0.5 and 0.25.
  //   [127, -3, 0] · 0.5 = [63.5, -1.5, 0];  [5, -127, 64] · 0.25 = [1.25, -31.75, 16]
  const quant::QuantizedWeight hand = weight_of(2, 3, {127, -3, 0, 5, -127, 64}, {0.5f, 0.25f});
  if (!KILN_EXPECT_CLOSE(KILN_OBSERVE(quant::dequantize(hand)), data_of({2, 3}, {63.5f, -1.5f, 0, 1.25f, -31.75f, 16}), 0,
                         "dequantize_wrong"))
    return;

  // Codes and scales of the run, of awkward shapes.
  testing::Generator draw(1502);
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {3, 7}, {33, 31}, {1 + draw.below(9), 1 + draw.below(40)}};
  std::uint64_t stream = 1530;
  for (const auto& [rows, cols] : shapes) {
    const std::vector<std::int64_t> codes = random_codes(rows * cols, stream++);
    std::vector<float> scales;
    for (std::int64_t r = 0; r < rows; ++r) scales.push_back(draw.uniform(1e-3f, 0.1f));
    const quant::QuantizedWeight q = weight_of(rows, cols, codes, scales);
    const auto got = observe(fmt::format("dequantize of {} codes with one scale per row", shape_text(rows, cols)),
                             [&] { return quant::dequantize(q); });
    KILN_JUDGE {
      std::vector<float> expected;
      for (std::int64_t i = 0; i < rows * cols; ++i)
        expected.push_back(static_cast<float>(static_cast<double>(codes[at(i)]) * scales[at(i / cols)]));
      if (!KILN_EXPECT_CLOSE_REL(got, data_of({rows, cols}, expected), 0, 1e-6, "dequantize_wrong")) return;
    }
    if (!got.ok()) return;
  }

  // The round trip: every weight within half a step of its row's scale.
  //   hand-worked: row 0 comes back as 127, 3, -3, 1, -1 (errors 0, 0.5, 0.5, 0.5, 0.3 of scale 1)
  const std::pair<std::int64_t, std::int64_t> trips[] = {{3, 5}, {7, 33}, {1, 31}, {2 + draw.below(30), 2 + draw.below(30)}};
  for (const auto& [rows, cols] : trips) {
    const Tensor weight = rows == 3 && cols == 5 ? hand_weight : testing::random_tensor({rows, cols}, stream++);
    const auto got = observe(fmt::format("dequantize(quantize_per_channel(weight {}))", shape_text(rows, cols)),
                             [&] { return quant::dequantize(quant::quantize_per_channel(weight)); });
    if (!KILN_EXPECT_OK(got, "round_trip_error", {{"shape", shape_text(rows, cols)}, {"row", "any (the call threw)"}})) return;
    KILN_JUDGE {
      const TensorData w = data_of(weight);
      if (got->shape != w.shape) {
        KILN_FAIL("round_trip_error", {{"shape", shape_text(rows, cols)}, {"row", "any (the result has the wrong shape)"}},
                  got.call() + " has shape " + to_string(got->shape));
        return;
      }
      for (std::int64_t r = 0; r < rows; ++r) {
        const double half_step = trusted_scale(largest_magnitude(w.values, r * cols, cols, 1)) / 2.0;
        for (std::int64_t c = 0; c < cols; ++c) {
          const double error = std::fabs(static_cast<double>(got->values[at(r * cols + c)]) - w.values[at(r * cols + c)]);
          // A float rounding of the product code·scale on top of the half step.
          if (error <= half_step * (1 + 1e-5)) continue;
          KILN_FAIL("round_trip_error", {{"shape", shape_text(rows, cols)}, {"row", std::to_string(r)}},
                    fmt::format("{}: element [{}, {}] is {}, the weight {}: off by {}, more than half the scale, {}",
                                got.call(), r, c, got->values[at(r * cols + c)], w.values[at(r * cols + c)], error,
                                half_step));
          return;
        }
      }
    }
  }
}

TEST(Quantization, WeightBytes) {
  // (256, 784): 200,704 codes and 256 scales, 200,704 + 1,024 = 201,728 bytes, where float32
  // takes 802,816: a quarter, plus the scales.
  testing::Generator draw(1503);
  const std::pair<std::int64_t, std::int64_t> shapes[] = {
      {256, 784}, {1, 1}, {3, 7}, {10, 128}, {1 + draw.below(300), 1 + draw.below(300)}};
  for (const auto& [rows, cols] : shapes) {
    const quant::QuantizedWeight q = weight_of(rows, cols, std::vector<std::int64_t>(at(rows * cols), 0),
                                               std::vector<float>(at(rows), 1.0f));
    const auto got = observe(fmt::format("weight_bytes of a {} QuantizedWeight", shape_text(rows, cols)),
                             [&] { return quant::weight_bytes(q); });
    KILN_JUDGE {
      const std::int64_t expected = rows * cols + 4 * rows;
      const testing::Params params = {{"shape", shape_text(rows, cols)}, {"expected", std::to_string(expected)}};
      if (!KILN_EXPECT_OK(got, "weight_bytes_wrong", params)) return;
      if (*got != expected) {
        KILN_FAIL("weight_bytes_wrong", params, fmt::format("{} gave {}", got.call(), *got));
        return;
      }
    }
    if (!got.ok()) return;
  }
}

}  // namespace kiln
