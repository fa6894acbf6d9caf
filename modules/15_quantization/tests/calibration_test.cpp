// Module 15 checks for activations: the observer's running largest magnitude and its scale, and
// per-tensor codes with a calibrated scale, values beyond the range clamped.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
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

// After each batch: the observer's max_abs() and scale(); the first pair is before any batch.
using Readings = std::vector<std::pair<float, float>>;

// Feeds `batches` to one observer (inside the observation) and reads it before and after each.
Readings feed(const std::vector<Tensor>& batches) {
  quant::ActivationObserver observer;
  Readings readings{{observer.max_abs(), observer.scale()}};
  for (const Tensor& batch : batches) {
    observer.update(batch);
    readings.emplace_back(observer.max_abs(), observer.scale());
  }
  return readings;
}

// Judges the readings of `what` against the running max |x| computed here. Judging only: called
// inside KILN_JUDGE.
bool expect_readings(const char* file, int line, const testing::Observed<Readings>& got,
                     const std::vector<Tensor>& batches) {
  if (!testing::expect_ok(file, line, got, "observer_max_wrong", {{"batch", "after the batches it was fed"}})) return false;
  if (got->size() != batches.size() + 1) {
    testing::report_failure(file, line, "observer_max_wrong", {{"batch", "after the batches it was fed"}},
                            fmt::format("{} gave {}, expected {}", got.call(), testing::counted(got->size(), "reading"),
                                        batches.size() + 1));
    return false;
  }
  float largest = 0.0f;
  for (std::size_t b = 0; b <= batches.size(); ++b) {
    if (b > 0) {
      const TensorData batch = data_of(batches[b - 1]);
      largest = std::max(largest, largest_magnitude(batch.values, 0, batch.numel(), 1));
    }
    const auto [max_abs, scale] = (*got)[b];
    const std::string after = b == 0 ? "before any batch" : fmt::format("after batch {}", b);
    if (max_abs != largest) {
      testing::report_failure(file, line, "observer_max_wrong", {{"batch", after}},
                              fmt::format("{}: max_abs() is {} {}, expected {}", got.call(), max_abs, after, largest));
      return false;
    }
    const double expected = trusted_scale(largest);
    if (std::fabs(static_cast<double>(scale) - expected) > 1e-6 * expected) {
      // A scale kept above max/127 where that is below float's epsilon: a floor (as PyTorch's
      // observers have) that the header does not have.
      const bool floored = largest > 0.0f && expected < std::numeric_limits<float>::epsilon() && scale > expected;
      // A scale of 0 after magnitudes above 0: max/127 taken as it comes where it rounds to 0.
      const bool rounded_to_zero = largest > 0.0f && scale == 0.0f;
      const auto [a, e] = testing::format_pair(scale, expected);
      testing::report_failure(file, line,
                              rounded_to_zero ? "observer_scale_rounded_to_zero"
                              : floored       ? "observer_scale_floored"
                                              : "observer_scale_wrong",
                              {{"batch", after}, {"max_abs", fmt::format("{}", largest)}},
                              fmt::format("{}: scale() is {} {}, expected {}", got.call(), a, after, e));
      return false;
    }
    // Within a millionth, and yet not max_abs / 127 in float bit for bit: one rounding off, as
    // max_abs · (1/127) is (the reciprocal is rounded, then the product).
    if (scale != trusted_scale(largest)) {
      const float quotient = trusted_scale(largest);
      testing::report_failure(file, line, "observer_scale_not_divided",
                              {{"batch", after},
                               {"max_abs", fmt::format("{}", largest)},
                               {"scale", fmt::format("{}", scale)},
                               {"expected", fmt::format("{}", quotient)}},
                              fmt::format("{}: scale() is {} {}, expected {} (max_abs() / 127 in float)", got.call(), scale,
                                          after, quotient));
      return false;
    }
  }
  return true;
}

#define EXPECT_READINGS(got, batches) expect_readings(__FILE__, __LINE__, got, batches)

}  // namespace

TEST(Quantization, ActivationObserver) {
  // By hand: [[0.5, -2], [1, 1.5]] -> 2 (a negative value, by its size); [[-3.5]] -> 3.5; an
  // empty (0, 3) batch changes nothing; [[1, -1, 0.25]] -> still 3.5, whose scale is
  // 3.5/127 = 0.0275591.
  const std::vector<Tensor> hand = {Tensor({2, 2}, {0.5f, -2, 1, 1.5f}), Tensor({1, 1}, {-3.5f}), Tensor::zeros({0, 3}),
                                    Tensor({1, 3}, {1, -1, 0.25f})};
  {
    const auto got = observe("an ActivationObserver fed [[0.5, -2], [1, 1.5]], [[-3.5]], an empty (0, 3), [[1, -1, 0.25]]",
                             [&] { return feed(hand); });
    KILN_JUDGE {
      if (!EXPECT_READINGS(got, hand)) return;
    }
    if (!got.ok()) return;
  }

  // Only zeros: max_abs stays 0 and the scale 1.
  const std::vector<Tensor> zeros = {Tensor::zeros({3, 7})};
  {
    const auto got = observe("an ActivationObserver fed zeros (3, 7)", [&] { return feed(zeros); });
    KILN_JUDGE {
      if (!EXPECT_READINGS(got, zeros)) return;
    }
    if (!got.ok()) return;
  }

  // Small batches of the run, every magnitude below 1: the scale is still max/127, not 1 (1 is
  // only for a max_abs() of 0).
  const std::vector<Tensor> small = {testing::random_tensor({2, 5}, 1544, -0.9f, 0.9f),
                                     testing::random_tensor({3, 3}, 1545, -0.5f, 0.5f)};
  {
    const auto got = observe("an ActivationObserver fed (2, 5) and (3, 3) batches of the run, all below 1 in magnitude",
                             [&] { return feed(small); });
    KILN_JUDGE {
      if (!EXPECT_READINGS(got, small)) return;
    }
    if (!got.ok()) return;
  }

  // Activations below 127·float's epsilon (1.5e-5): the scale is still max/127 however small, no
  // floor: 1e-6 gives 7.874e-9 (and codes 1e-6 as 127). Then a batch of the run below 1e-5.
  const std::vector<Tensor> tiny = {Tensor({1, 2}, {1e-6f, -4e-7f}), testing::random_tensor({2, 3}, 1546, -1e-5f, 1e-5f)};
  {
    const auto got = observe("an ActivationObserver fed [[1e-06, -4e-07]] and a (2, 3) batch of the run below 1e-05 in magnitude",
                             [&] { return feed(tiny); });
    KILN_JUDGE {
      if (!EXPECT_READINGS(got, tiny)) return;
    }
    if (!got.ok()) return;
  }

  // Magnitudes below about 8.9e-44 (subnormal), where max/127 rounds to 0 in float: the scale is
  // then the smallest positive float, 1.4e-45, never 0. [[1.4e-45]]; 63 steps of it, the largest
  // whose quotient rounds to 0; and 64 steps, just past it, which rounds up to the same scale.
  const float step = std::numeric_limits<float>::denorm_min();
  const std::vector<Tensor> subnormal = {Tensor({1, 1}, {step}), Tensor({1, 2}, {-63 * step, 2 * step}),
                                         Tensor({1, 1}, {64 * step})};
  {
    const auto got = observe("an ActivationObserver fed [[1.4e-45]], [[-8.8e-44, 2.8e-45]] and [[9e-44]] (subnormal)",
                             [&] { return feed(subnormal); });
    KILN_JUDGE {
      if (!EXPECT_READINGS(got, subnormal)) return;
    }
    if (!got.ok()) return;
  }

  // Batches of the run, shrinking so that a later batch's maximum is below an earlier one's, one
  // of them a transposed view and one of them a (2, 3, 7) tensor.
  const std::vector<Tensor> drawn = {
      testing::random_tensor({3, 7}, 1540, -4.0f, 4.0f), transposed_view(testing::random_tensor({33, 31}, 1541, -3.0f, 3.0f)),
      testing::random_tensor({2, 3, 7}, 1542, -2.0f, 1.0f), testing::random_tensor({1, 1}, 1543, -1.0f, 1.0f)};
  {
    const auto got = observe("an ActivationObserver fed (3, 7), a (31, 33) view, (2, 3, 7) and (1, 1) batches of the run",
                             [&] { return feed(drawn); });
    KILN_JUDGE {
      if (!EXPECT_READINGS(got, drawn)) return;
    }
    if (!got.ok()) return;
  }

  // A (3, 4) view of part of a (5, 6) tensor, rows 1..3 and columns 1..4 (offset 7, strides
  // (6, 1)): inside it magnitudes up to 2.25, largest at its last element; outside it, in the same
  // storage, -10 down to -24. The observer sees the view's 12 values only.
  std::vector<float> grid(30);
  for (std::int64_t r = 0; r < 5; ++r)
    for (std::int64_t c = 0; c < 6; ++c) {
      const bool inside = r >= 1 && r <= 3 && c >= 1 && c <= 4;
      grid[static_cast<std::size_t>(r * 6 + c)] = inside ? 0.25f * static_cast<float>(r * 4 + c - 7) : -10.0f - static_cast<float>(r + 2 * c);
    }
  const std::vector<Tensor> part = {make_view(Tensor({5, 6}, grid), {3, 4}, {6, 1}, 7)};
  // The same 12 values in a fresh (3, 4) tensor: only readings that differ between the two are
  // the view's fault; readings wrong on both are the observer's own.
  const std::vector<Tensor> fresh_part = {data_of(part[0]).tensor()};
  const auto fresh = observe("an ActivationObserver fed the same 12 values in a fresh (3, 4) tensor",
                             [&] { return feed(fresh_part); });
  const auto got = observe("an ActivationObserver fed a (3, 4) view of rows 1 to 3 and columns 1 to 4 of a (5, 6) tensor",
                           [&] { return feed(part); });
  KILN_JUDGE {
    const auto text = [](const Readings& readings) {
      return readings.size() == 2 ? fmt::format("max_abs() {} and scale() {}", readings[1].first, readings[1].second)
                                  : testing::counted(readings.size(), "reading");
    };
    if (testing::offset_changes(got, fresh, [](const Readings& a, const Readings& b) { return a == b; })) {
      testing::report_failure(__FILE__, __LINE__, "observer_reads_outside_view",
                              {{"max_abs", got.ok() && got->size() == 2 ? fmt::format("{}", (*got)[1].first) : "not read"}},
                              testing::offset_detail(got, fresh, text));
      return;
    }
    if (!EXPECT_READINGS(fresh, fresh_part)) return;
  }
  if (!got.ok() || !fresh.ok()) return;

  // Maxima 2.25, 3.25 and 13, where max_abs / 127 in float and max_abs · (1/127) in float differ
  // in the last bit (0.0177165363 and 0.0177165344 for 2.25): the scale is the quotient, bit for bit.
  const std::vector<Tensor> rounded = {Tensor({1, 1}, {2.25f}), Tensor({1, 2}, {-3.25f, 1.0f}), Tensor({2, 1}, {0.5f, 13.0f})};
  {
    const auto twice = observe("an ActivationObserver fed [[2.25]], [[-3.25, 1]] and [[0.5], [13]]", [&] { return feed(rounded); });
    KILN_JUDGE {
      if (!EXPECT_READINGS(twice, rounded)) return;
    }
  }
}

TEST(Quantization, QuantizeActivations) {
  // By hand, scale 1/8 (range ±15.875): [[1, -0.25, 0.375], [20, -20, 0.0625]] -> [[8, -2, 3],
  // [127, -127, 1]]: 20 and -20 lie beyond the range and clamp, 0.0625 is half a step and goes up.
  struct Case {
    std::string what;
    Tensor x;
    float scale;
    std::vector<std::int64_t> expected;  // filled in the judge only
  };
  std::vector<Case> cases;
  cases.push_back({"quantize_activations([[1, -0.25, 0.375], [20, -20, 0.0625]], 0.125)",
                   Tensor({2, 3}, {1, -0.25f, 0.375f, 20, -20, 0.0625f}), 0.125f,
                   KILN_JUDGE_ONLY(std::vector<std::int64_t>{8, -2, 3, 127, -127, 1})});

  // Activations of the run: the scale covers 80% of the largest magnitude, so that some clamp.
  testing::Generator draw(1504);
  const std::pair<std::int64_t, std::int64_t> shapes[] = {{1, 1}, {3, 33}, {31, 7}, {1 + draw.below(20), 1 + draw.below(40)}};
  std::uint64_t stream = 1550;
  for (const auto& [rows, cols] : shapes) {
    std::vector<float> values = data_of(testing::random_tensor({rows, cols}, stream++, -3.0f, 3.0f)).values;
    const float scale = trusted_scale(0.8f * largest_magnitude(values, 0, rows * cols, 1));
    away_from_ties(values, 0, rows * cols, 1, scale);
    std::vector<std::int64_t> expected;
    KILN_JUDGE {
      for (const float v : values) expected.push_back(trusted_code(static_cast<double>(v) / scale));
    }
    // The (31, 7) case is a transposed view of values stored (7, 31).
    const bool view = rows == 31 && cols == 7;
    const Tensor x = view ? transposed_view(stored_transposed(values, rows, cols)) : Tensor({rows, cols}, values);
    cases.push_back({fmt::format("quantize_activations(x {}{}, {})", shape_text(rows, cols), view ? ", a transposed view" : "",
                                 scale),
                     x, scale, expected});
  }

  for (const Case& c : cases) {
    const std::int64_t rows = c.x.shape()[0], cols = c.x.shape()[1];
    const testing::Params params = {{"shape", shape_text(rows, cols)}, {"scale", fmt::format("{}", c.scale)}};
    const auto got = observe(c.what, [&] { return parts_of(quant::quantize_activations(c.x, c.scale)); });
    if (!KILN_EXPECT_OK(got, "activation_codes_wrong", params)) return;
    KILN_JUDGE {
      const auto& [codes, scale, got_rows, got_cols] = *got;
      if (got_rows != rows || got_cols != cols || scale != c.scale || static_cast<std::int64_t>(codes.size()) != rows * cols) {
        KILN_FAIL("activation_codes_wrong", params,
                  fmt::format("{} gave rows {}, cols {}, scale {} and {}", c.what, got_rows, got_cols, scale,
                              testing::counted(codes.size(), "code")));
        return;
      }
      for (std::int64_t i = 0; i < rows * cols; ++i) {
        if (codes[at(i)] == c.expected[at(i)]) continue;
        KILN_FAIL("activation_codes_wrong", params,
                  fmt::format("{}: codes[{}] (row {}, column {}) is {}, expected {}", c.what, i, i / cols, i % cols,
                              codes[at(i)], c.expected[at(i)]));
        return;
      }
    }
  }

  // Activations that are not a matrix: a (2, 2, 3) tensor, then a 3-D one of the run. Without the
  // check they are quantized as a (2, 2) matrix whose codes do not fit rows·cols. (A 1-D one would
  // be read out of bounds.)
  const Tensor cube({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  KILN_EXPECT_THROWS(quant::quantize_activations(cube, 0.1f), ShapeError, "activation_shape_error", {"(2, 2, 3)"});
  if (::testing::Test::HasFailure()) return;
  const std::int64_t a = 1 + draw.below(4), b = 1 + draw.below(4), d = 2 + draw.below(4);
  const Tensor run_cube = testing::random_tensor({a, b, d}, 1560);
  const std::string cube_shape = fmt::format("({}, {}, {})", a, b, d);
  const auto got = observe(fmt::format("quantize_activations(x {}, 0.01)", cube_shape),
                           [&] { return parts_of(quant::quantize_activations(run_cube, 0.01f)); });
  KILN_JUDGE { testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "activation_shape_error", {cube_shape}); }
  if (got.ok()) return;

  // A contiguous view at an offset: (3, 4) activations of the run in [-1, 1), 5 floats into a
  // storage of other numbers. Its values start at data(), not at the storage's first float.
  std::vector<float> shifted_values = data_of(testing::random_tensor({3, 4}, 1561)).values;
  away_from_ties(shifted_values, 0, 12, 1, 0.01f);
  const Tensor shifted = testing::at_offset(data_of({3, 4}, shifted_values), 1562);
  // The same call on a fresh tensor of the same values: only codes that differ between the two
  // are the offset's fault; codes wrong on both are quantize_activations' own.
  const auto fresh_codes = observe("quantize_activations(x, 0.01) of the same (3, 4) values in a fresh tensor",
                                   [&] { return parts_of(quant::quantize_activations(Tensor({3, 4}, shifted_values), 0.01f)); });
  const auto offset_codes = observe("quantize_activations(x, 0.01) of a (3, 4) contiguous view at offset 5",
                                    [&] { return parts_of(quant::quantize_activations(shifted, 0.01f)); });
  KILN_JUDGE {
    const auto text = [](const auto& parts) {
      const auto& codes = std::get<0>(parts);
      return fmt::format("codes {}", fmt::join(std::vector<std::int64_t>(codes.begin(), codes.end()), ", "));
    };
    if (testing::offset_changes(offset_codes, fresh_codes, [](const auto& x, const auto& y) { return x == y; })) {
      KILN_FAIL("activation_offset_ignored", {},
                testing::offset_detail(offset_codes, fresh_codes, text));
      return;
    }
    const testing::Params params = {{"shape", "(3, 4)"}, {"scale", "0.01"}};
    if (!KILN_EXPECT_OK(fresh_codes, "activation_codes_wrong", params)) return;
    const auto& codes = std::get<0>(*fresh_codes);
    std::vector<std::int64_t> expected, got_codes(codes.begin(), codes.end());
    for (const float v : shifted_values) expected.push_back(trusted_code(static_cast<double>(v) / 0.01f));
    if (got_codes != expected || std::get<2>(*fresh_codes) != 3 || std::get<3>(*fresh_codes) != 4) {
      KILN_FAIL("activation_codes_wrong", params,
                fmt::format("{} gave rows {}, cols {} and codes {}, expected (3, 4) and codes {}", fresh_codes.call(),
                            std::get<2>(*fresh_codes), std::get<3>(*fresh_codes), fmt::join(got_codes, ", "),
                            fmt::join(expected, ", ")));
    }
  }
}

}  // namespace kiln
