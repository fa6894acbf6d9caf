// Module 14 checks for the cost formulas. Each function is called on a hand-worked case (the
// header's and the chapter's numbers), on sizes 1, 3, 7, 31 and 33, on the milestone models'
// layers, and on sizes drawn from the run's seed; every answer is an exact integer, judged
// against the formula written out again in profiling_testing.h.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/profiling.h"
#include "kiln/testing.h"
#include "profiling_testing.h"

namespace kiln {
namespace {

using namespace profiling_testing;
using testing::observe;
using testing::random_ints;

PlainCost plain(const Cost& cost) { return {cost.flops, cost.bytes}; }

// Three sizes in [low, high) from the run's seed.
std::vector<std::int64_t> drawn(std::uint64_t stream, std::int64_t low, std::int64_t high, std::size_t n = 3) {
  return random_ints(n, low, high, stream);
}

// Observes `call`, then judges it exactly against what `want` works out (in the judge only); false
// after a failure. In the observed program: whether the call returned.
template <class Call>
bool expect_cost(const char* file, int line, const std::string& name, Call call,
                 const std::function<PlainCost()>& want, const char* failure, const testing::Params& params) {
  const auto got = observe(name, [&] { return plain(call()); });
  KILN_JUDGE {
    if (!testing::expect_ok(file, line, got, failure, params)) return false;
    const PlainCost wanted = want();
    if (*got != wanted) {
      testing::report_failure(file, line, failure, params, got_expected(*got, wanted));
      return false;
    }
    return true;
  }
  return got.ok();
}

#define EXPECT_COST(name, call, want, failure, params) \
  expect_cost(__FILE__, __LINE__, name, [&] { return call; }, KILN_JUDGE_ONLY([&] { return want; }), failure, params)

}  // namespace

TEST(Profiling, MatmulCost) {
  const auto r = drawn(1401, 1, 300);
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> cases = {
      {2, 3, 4}, {1, 1, 1}, {31, 33, 7}, {33, 1, 31}, {64, 784, 256}, {r[0], r[1], r[2]},
      {4096, 4096, 4096}};  // 2·4096³ FLOPs: past 2³¹, which an int cannot hold
  for (const auto& [n, k, m] : cases) {
    const testing::Params params = {{"n", std::to_string(n)}, {"k", std::to_string(k)}, {"m", std::to_string(m)}};
    if (!EXPECT_COST(fmt::format("matmul_cost({}, {}, {})", n, k, m), matmul_cost(n, k, m), trusted_matmul(n, k, m),
                     "matmul_cost_wrong", params))
      return;
  }
}

TEST(Profiling, LinearCost) {
  const auto r = drawn(1402, 1, 300);
  const std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>> cases = {
      {2, 3, 4}, {1, 1, 1}, {7, 33, 31}, {64, 784, 256}, {64, 128, 10}, {r[0], r[1], r[2]},
      {2048, 4096, 4096}};  // past 2³¹ FLOPs
  for (const auto& [batch, in, out] : cases) {
    const testing::Params params = {
        {"batch", std::to_string(batch)}, {"in", std::to_string(in)}, {"out", std::to_string(out)}};
    if (!EXPECT_COST(fmt::format("linear_cost({}, {}, {})", batch, in, out), linear_cost(batch, in, out),
                     trusted_linear(batch, in, out), "linear_cost_wrong", params))
      return;
  }
}

TEST(Profiling, Conv2dCost) {
  struct Case {
    Shape input;
    std::int64_t out_channels, kernel, stride, padding;
    bool bias;
  };
  const auto r = drawn(1403, 1, 6, 4);       // batch, channels, out_channels, stride
  const auto side = drawn(1404, 5, 40, 2);   // H, W
  const auto k = drawn(1405, 1, 6, 2);       // kernel, padding
  std::vector<Case> cases = {
      {{1, 1, 4, 4}, 1, 3, 1, 0, false},     // the chapter's: 2×2 outputs of 9 multiply-adds
      {{1, 1, 4, 4}, 1, 3, 1, 1, true},      // padding 1 keeps 4×4
      {{2, 3, 7, 5}, 4, 3, 2, 1, true},      // stride 2, H ≠ W: (2, 4, 4, 3)
      {{1, 2, 31, 33}, 3, 5, 3, 2, false},   // (35 - 5) / 3 + 1 = 11, (37 - 5) / 3 + 1 = 11
      {{3, 1, 1, 1}, 2, 1, 1, 0, true},      // 1×1 images, 1×1 kernel
      {{64, 1, 28, 28}, 16, 3, 1, 1, true},  // the milestone CNN's first layer
      {{64, 16, 14, 14}, 32, 3, 1, 1, true}, // and its second
      {{1, 2, 3, 5}, 2, 5, 1, 1, false},     // a kernel exactly as tall as the padded image: (1, 2, 1, 3)
      {{1, 1, 4, 4}, 1, 4, 2, 0, false},     // and exactly as large with stride 2: one output
      {{64, 3, 224, 224}, 64, 7, 2, 3, true}, // a 7×7 stem on 224×224 images: 15 GFLOP, past 2³¹
      {{r[0], r[1], side[0], side[1]}, r[2], k[0], r[3], k[1], r[3] % 2 == 0}};
  for (const Case& c : cases) {
    const std::string args = fmt::format("{}, {}, {}, {}, {}", shape_text(c.input), c.out_channels, c.kernel, c.stride,
                                         c.padding);
    const testing::Params params = {{"input", shape_text(c.input)}, {"out_channels", std::to_string(c.out_channels)},
                                    {"kernel", std::to_string(c.kernel)}, {"stride", std::to_string(c.stride)},
                                    {"padding", std::to_string(c.padding)}};
    const auto shape = observe(fmt::format("conv2d_output_shape({})", args), [&] {
      return conv2d_output_shape(c.input, c.out_channels, c.kernel, c.stride, c.padding);
    });
    if (!KILN_EXPECT_OK(shape, "conv_shape_wrong", params)) return;
    KILN_JUDGE {
      const Shape want = trusted_conv_shape(c.input, c.out_channels, c.kernel, c.stride, c.padding);
      if (*shape != want) {
        KILN_FAIL("conv_shape_wrong", params, "got " + shape_text(*shape) + ", expected " + shape_text(want));
        return;
      }
    }
    testing::Params cost_params = params;
    cost_params.emplace_back("bias", c.bias ? "true" : "false");
    if (!EXPECT_COST(fmt::format("conv2d_cost({}, {})", args, c.bias),
                     conv2d_cost(c.input, c.out_channels, c.kernel, c.stride, c.padding, c.bias),
                     trusted_conv(c.input, c.out_channels, c.kernel, c.stride, c.padding, c.bias), "conv_cost_wrong",
                     cost_params))
      return;
  }
  // Arguments that describe no convolution are refused.
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 2, 2}, 1, 5, 1, 1), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 9, 3}, 1, 4, 1, 0), std::invalid_argument, "conv_arguments_unchecked");
  // One row or column more than the padding on both sides gives: padding counts twice, not once or three times.
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 3, 9}, 1, 6, 1, 1), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 9, 3}, 1, 6, 1, 1), std::invalid_argument, "conv_arguments_unchecked");
  // With stride 2 a kernel one pixel too large gives (-1) / 2 + 1 = 1 in C++'s integer division,
  // which rounds toward zero: the fit is a comparison before any division.
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 4, 4}, 1, 5, 2, 0), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 9, 4}, 1, 5, 2, 0), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 2, 2}, 1, 5, 3, 1), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_cost({1, 1, 4, 4}, 1, 5, 2, 0, false), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 3, 8}, 1, 3, 1, 0), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 8, 8}, 1, 3, 0, 0), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 8, 8}, 1, 3, 1, -1), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 0, 4}, 1, 1, 1, 1), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({0, 1, 4, 4}, 1, 3, 1, 0), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 4, 4}, 0, 3, 1, 0), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_output_shape({1, 1, 4, 4}, 1, 0, 1, 0), std::invalid_argument, "conv_arguments_unchecked");
  KILN_EXPECT_THROWS(conv2d_cost({1, 1, 2, 2}, 1, 5, 1, 1, true), std::invalid_argument, "conv_arguments_unchecked");
  if (::testing::Test::HasFailure()) return;

  // Images 2³¹ = 2,147,483,648 rows tall, the first height an int cannot hold: a 3×3 kernel with
  // padding 1 keeps the height, (1, 1, 2147483648, 5). The shape is computed, nothing allocated.
  const Shape tall = {1, 1, 2147483648, 5};
  const auto tall_shape = observe("conv2d_output_shape((1, 1, 2147483648, 5), 1, 3, 1, 1)",
                                  [&] { return conv2d_output_shape(tall, 1, 3, 1, 1); });
  const testing::Params tall_params = {{"input", shape_text(tall)}};
  if (!KILN_EXPECT_OK(tall_shape, "conv_shape_narrowed", tall_params)) return;
  KILN_JUDGE {
    const Shape want = trusted_conv_shape(tall, 1, 3, 1, 1);
    if (*tall_shape != want)
      KILN_FAIL("conv_shape_narrowed", tall_params, "got " + shape_text(*tall_shape) + ", expected " + shape_text(want));
  }
}

TEST(Profiling, ReluAndPoolCost) {
  const auto n = drawn(1406, 1, 100000, 1);
  for (const std::int64_t numel : std::vector<std::int64_t>{1, 7, 33, 64 * 256, n[0], 3288334336}) {
    const testing::Params params = {{"numel", std::to_string(numel)}};
    if (!EXPECT_COST(fmt::format("relu_cost({})", numel), relu_cost(numel), trusted_relu(numel), "relu_cost_wrong",
                     params))
      return;
  }
  struct Case {
    Shape input;
    std::int64_t kernel, stride;
  };
  const auto r = drawn(1407, 1, 5, 3);    // batch, channels, kernel
  const auto side = drawn(1408, 5, 33, 2);
  const std::vector<Case> cases = {
      {{1, 1, 4, 4}, 2, 2},       // the chapter's: 4 outputs of 3 comparisons
      {{2, 3, 7, 5}, 2, 2},       // odd sides: the last row and column are left out, (2, 3, 3, 2)
      {{1, 2, 7, 7}, 3, 2},       // overlapping windows: (2, 3, 3) outputs per image
      {{1, 1, 31, 33}, 3, 3},     // (10, 11)
      {{3, 2, 5, 5}, 1, 1},       // a 1×1 window compares nothing
      {{64, 16, 28, 28}, 2, 2},   // the milestone CNN's first pooling
      {{4096, 64, 224, 224}, 2, 2},  // 3,288,334,336 outputs: past 2³¹, which an int cannot hold
      {{2, 3, 4, 6}, 4, 2},       // a window exactly as tall as the image: (2, 3, 1, 2)
      {{1, 2, 5, 3}, 3, 2},       // and one exactly as wide: (1, 2, 2, 1)
      {{r[0], r[1], side[0], side[1]}, r[2], 1 + (side[0] % 3)}};
  for (const Case& c : cases) {
    const testing::Params params = {
        {"input", shape_text(c.input)}, {"kernel", std::to_string(c.kernel)}, {"stride", std::to_string(c.stride)}};
    if (!EXPECT_COST(fmt::format("maxpool2d_cost({}, {}, {})", shape_text(c.input), c.kernel, c.stride),
                     maxpool2d_cost(c.input, c.kernel, c.stride), trusted_pool(c.input, c.kernel, c.stride),
                     "pool_cost_wrong", params))
      return;
  }
  // A window that does not fit, or a stride of 0, describes no pooling.
  KILN_EXPECT_THROWS(maxpool2d_cost({1, 1, 3, 7}, 4, 1), std::invalid_argument, "pool_arguments_unchecked");
  KILN_EXPECT_THROWS(maxpool2d_cost({1, 1, 7, 3}, 4, 1), std::invalid_argument, "pool_arguments_unchecked");
  KILN_EXPECT_THROWS(maxpool2d_cost({1, 1, 8, 8}, 2, 0), std::invalid_argument, "pool_arguments_unchecked");
  KILN_EXPECT_THROWS(maxpool2d_cost({1, 8, 8}, 2, 2), std::invalid_argument, "pool_arguments_unchecked");
  KILN_EXPECT_THROWS(maxpool2d_cost({1, 0, 8, 8}, 2, 2), std::invalid_argument, "pool_arguments_unchecked");
  KILN_EXPECT_THROWS(maxpool2d_cost({1, 1, 8, 8}, 0, 1), std::invalid_argument, "pool_arguments_unchecked");
  if (::testing::Test::HasFailure()) return;

  // Images 2³¹ + 1 rows tall with a 2×2 window at stride 1: out_h = 2³¹ = 2,147,483,648, the first
  // output height an int cannot hold. The cost is computed, nothing allocated.
  const Shape tall = {1, 1, 2147483649, 2};
  const testing::Params tall_params = {{"input", shape_text(tall)}};
  EXPECT_COST("maxpool2d_cost((1, 1, 2147483649, 2), 2, 1)", maxpool2d_cost(tall, 2, 1), trusted_pool(tall, 2, 1),
              "pool_cost_narrowed", tall_params);
}

TEST(Profiling, CrossEntropyCost) {
  const auto r = drawn(1409, 1, 1000, 2);
  const std::vector<std::pair<std::int64_t, std::int64_t>> cases = {{2, 3}, {1, 1}, {1, 7}, {33, 31}, {64, 10},
                                                                    {r[0], r[1]}};
  for (const auto& [batch, classes] : cases) {
    const testing::Params params = {{"batch", std::to_string(batch)}, {"classes", std::to_string(classes)}};
    if (!EXPECT_COST(fmt::format("cross_entropy_cost({}, {})", batch, classes), cross_entropy_cost(batch, classes),
                     trusted_cross_entropy(batch, classes), "cross_entropy_cost_wrong", params))
      return;
  }
  // 65,536 rows of 65,536 classes: 2³² logits, which an int holds as 0.
  EXPECT_COST("cross_entropy_cost(65536, 65536)", cross_entropy_cost(65536, 65536),
              trusted_cross_entropy(65536, 65536), "cross_entropy_cost_narrowed", {});
}

}  // namespace kiln
