// Checks fused_gelu against GELU's tanh form evaluated here in double precision.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <numbers>
#include <vector>

#include "kiln/acceleration.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::format_pair;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;

// Trusted: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) in double.
double gelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

TensorData gelu_of(const TensorData& x) {
  TensorData y = data_of(x.shape, x.values);
  for (float& v : y.values) v = static_cast<float>(gelu(v));
  return y;
}

TEST(Acceleration, FusedGelu) {
  // Points worked out by hand: GELU(0) = 0, GELU(±1), the dip near -0.75, and ±3, where the erf
  // form differs from the tanh form by 4.1e-4.
  // Each input's values are read before its call, so that a call that writes into its input is
  // still judged against GELU of what it was given.
  const Tensor x({9}, {0.0f, 1.0f, -1.0f, 2.0f, -3.0f, -0.75f, 0.5f, -0.5f, 3.0f});
  const TensorData x_values = data_of(x);
  const auto y = KILN_OBSERVE(fused_gelu(x));
  if (!KILN_EXPECT_CLOSE(y, gelu_of(x_values), 1e-5, "gelu_values")) return;
  const std::vector<float>& v = y->values;
  KILN_EXPECT(v[0] == 0.0f, "gelu_values", {{"difference", testing::format_number(std::fabs(v[0]))}},
              "fused_gelu(0) gave " + format_pair(v[0], 0.0).first + ": GELU(0) must be exactly 0");

  // A (2, 3, 4) view of values in [-4, 4) that is not contiguous: the transpose of a (4, 3, 2) tensor.
  const Tensor view = make_view(random_tensor({4, 3, 2}, 1, -4.0f, 4.0f), {2, 3, 4}, {1, 2, 6}, 0);
  const auto fused = observe("fused_gelu(view) of a (2, 3, 4) view, strides (1, 2, 6)", [&] { return fused_gelu(view); });
  if (!KILN_EXPECT_OK(fused, "gelu_values")) return;
  KILN_JUDGE {
    if (fused->shape != view.shape()) {
      KILN_FAIL("gelu_shape", {{"shape", to_string(fused->shape)}},
                fused.call() + " returned shape " + to_string(fused->shape) + ", expected " + to_string(view.shape()));
      return;
    }
  }
  if (!KILN_EXPECT_CLOSE(fused, gelu_of(data_of(view)), 1e-5, "gelu_values")) return;

  // A sweep of [-6, 6] in steps of 0.01, each within 2e-6 + 1e-5·|GELU(x)|: a float evaluation of
  // the formula is within a few 1e-7 everywhere, while a constant off in its fourth digit
  // (0.0447 for 0.044715) is 9e-6 off near x = -1.85 and 0.1% off near x = -3.4.
  {
    std::vector<float> sweep;
    for (int k = -600; k <= 600; ++k) sweep.push_back(static_cast<float>(k) / 100.0f);
    const Tensor swept({static_cast<std::int64_t>(sweep.size())}, sweep);
    const TensorData swept_values = data_of(swept);
    const auto got = observe("fused_gelu(x) for x = -6, -5.99, ..., 6", [&] { return fused_gelu(swept); });
    if (!KILN_EXPECT_CLOSE_REL(got, gelu_of(swept_values), 2e-6, 1e-5, "gelu_values")) return;
  }

  // Far from 0, e^(2u) overflows to infinity (u ≈ 301 at x = 20) or underflows to 0: the result
  // must still be x for large positive x and 0 for large negative x, never NaN.
  const Tensor far({8}, {20.0f, -20.0f, 100.0f, -100.0f, 12.5f, -12.5f, 1e4f, -1e4f});
  const TensorData far_values = data_of(far);
  const auto tails = observe("fused_gelu(x) of [20, -20, 100, -100, 12.5, -12.5, 1e4, -1e4]", [&] { return fused_gelu(far); });
  if (!KILN_EXPECT_OK(tails, "gelu_overflow")) return;
  KILN_JUDGE {
    const TensorData expected = gelu_of(far_values);
    for (std::size_t i = 0; i < expected.values.size() && i < tails->values.size(); ++i) {
      const float got = tails->values[i], want = expected.values[i];
      if (!(std::fabs(got - want) <= 1e-5f * std::max(1.0f, std::fabs(want)))) {
        KILN_FAIL("gelu_overflow", {{"x", testing::format_number(far_values.values[i])}},
                  tails.call() + " gave " + format_pair(got, want).first + " at x = " +
                      testing::format_number(far_values.values[i]) + ", expected " + format_pair(got, want).second);
        return;
      }
    }
  }

  // Up to the largest float: 0.5·x·(1 + tanh(u)) halves x before 1 + tanh(u) = 2 doubles it, so
  // GELU(2e38) is 2e38 and GELU of the largest float is itself. Halved at the end instead,
  // x·(1 + tanh(u)) has already overflowed to infinity for every x above FLT_MAX/2 ≈ 1.7e38.
  const Tensor huge({4}, {2e38f, FLT_MAX, -2e38f, -FLT_MAX});
  const TensorData huge_values = data_of(huge);
  const auto largest = observe("fused_gelu(x) of [2e38, 3.4028235e38, -2e38, -3.4028235e38] (±FLT_MAX)",
                               [&] { return fused_gelu(huge); });
  if (!KILN_EXPECT_OK(largest, "gelu_values")) return;
  KILN_JUDGE {
    const TensorData expected = gelu_of(huge_values);
    if (largest->shape != huge.shape()) {
      KILN_FAIL("gelu_shape", {{"shape", to_string(largest->shape)}},
                largest.call() + " returned shape " + to_string(largest->shape) + ", expected (4)");
      return;
    }
    for (std::size_t i = 0; i < expected.values.size() && i < largest->values.size(); ++i) {
      const float got = largest->values[i], want = expected.values[i];
      if (got == want) continue;
      const std::string x_text = testing::format_number(huge_values.values[i]);
      const auto [got_text, want_text] = format_pair(got, want);
      const std::string detail = largest.call() + " gave " + got_text + " at x = " + x_text + ", expected " + want_text;
      if (std::isinf(got)) {
        KILN_FAIL("gelu_halved_last", {{"x", x_text}, {"got", got_text}}, detail);
      } else {
        KILN_FAIL("gelu_values", {{"difference", testing::format_number(std::fabs(double{got} - want))}}, detail);
      }
      return;
    }
  }

  // A new tensor: on a contiguous x, x.contiguous() is x itself, and a result written there is
  // written into the caller's input.
  KILN_CHECK_NEW_TENSOR("fused_gelu(x) for x = [1, -1, 2]", {{"x", data_of({3}, {1.0f, -1.0f, 2.0f})}},
                        [](const std::vector<Tensor>& in) { return fused_gelu(in[0]); }, "gelu_in_place");

  // A contiguous view at an offset: (3, 4) values in [-4, 4), 5 floats into a storage of other
  // numbers. contiguous() returns it as it is, and its values start at data(), not at the
  // storage's first float.
  const Tensor offset_x = testing::at_offset(data_of(random_tensor({3, 4}, 2, -4.0f, 4.0f)), 3);
  const TensorData offset_values = data_of(offset_x);
  // The same call on a fresh tensor of the same values: only values that differ between the two
  // are the offset's fault; values wrong on both are fused_gelu's own.
  const auto fresh = observe("fused_gelu(x) of the same (3, 4) values in a fresh tensor",
                             [&] { return fused_gelu(offset_values.tensor()); });
  const auto shifted = observe("fused_gelu(x) of a (3, 4) contiguous view at offset 5", [&] { return fused_gelu(offset_x); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(fresh, shifted, gelu_of(offset_values), 1e-5, 0.0, "gelu_values", "gelu_offset_ignored");
  }
}

}  // namespace
}  // namespace kiln
