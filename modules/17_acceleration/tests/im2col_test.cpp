// Checks im2col and col2im.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/acceleration.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::compare;
using testing::format_number;

// Image (N, C, H, W) holding first, first + 1, ... in row-major order.
Tensor counting_image(const Shape& shape, float first) {
  std::vector<float> values(static_cast<std::size_t>(numel(shape)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = first + static_cast<float>(i);
  return Tensor(shape, values);
}

// Whether every row of actual holds the same numbers as that row of expected, in any order.
bool rows_are_reordered(const Tensor& actual, const Tensor& expected) {
  const std::int64_t columns = expected.shape()[1];
  std::vector<float> a = actual.to_vector();
  std::vector<float> e = expected.to_vector();
  for (std::size_t start = 0; start < e.size(); start += static_cast<std::size_t>(columns)) {
    std::sort(a.begin() + static_cast<std::ptrdiff_t>(start), a.begin() + static_cast<std::ptrdiff_t>(start + columns));
    std::sort(e.begin() + static_cast<std::ptrdiff_t>(start), e.begin() + static_cast<std::ptrdiff_t>(start + columns));
  }
  return a == e;
}

// Compares a patch matrix with the expected one; tells a reordering apart from wrong numbers.
bool check_patches(const Tensor& actual, const Tensor& expected, const std::string& example) {
  const testing::Comparison result = compare(actual, expected, 1e-6);
  if (result.close) return true;
  if (result.shapes_match && rows_are_reordered(actual, expected)) {
    KILN_FAIL("im2col_column_order", {}, example + ": " + result.describe());
  } else {
    KILN_FAIL("im2col_values", {{"difference", format_number(result.max_abs_diff)}, {"where", to_string(result.where)}},
              fmt::format("{}: got shape {}, expected {}; {}", example, to_string(actual.shape()),
                          to_string(expected.shape()), result.describe()));
  }
  return false;
}

TEST(Acceleration, Im2col) {
  // The 3×3 image 1..9, k = 2: one row per 2×2 window, read row by row.
  if (!check_patches(im2col(counting_image({1, 1, 3, 3}, 1.0f), 2),
                     Tensor({4, 4}, {1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9}),
                     "im2col of the 3x3 image 1..9 with k = 2")) {
    return;
  }
  // A batch of two 2×2 images 0..7, k = 2: one row per image.
  if (!check_patches(im2col(counting_image({2, 1, 2, 2}, 0.0f), 2), Tensor({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}),
                     "im2col of two 2x2 images 0..7 with k = 2")) {
    return;
  }
  // The 4×4 image 0..15, k = 2, stride 2: four windows that do not overlap.
  if (!check_patches(im2col(counting_image({1, 1, 4, 4}, 0.0f), 2, 2),
                     Tensor({4, 4}, {0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15}),
                     "im2col of the 4x4 image 0..15 with k = 2, stride 2")) {
    return;
  }
  // All ones, 3×3, padding 1, k = 3: a zero wherever the window hangs over the edge.
  if (!check_patches(im2col(Tensor::ones({1, 1, 3, 3}), 3, 1, 1),
                     Tensor({9, 9}, {0, 0, 0, 0, 1, 1, 0, 1, 1,  //
                                     0, 0, 0, 1, 1, 1, 1, 1, 1,  //
                                     0, 0, 0, 1, 1, 0, 1, 1, 0,  //
                                     0, 1, 1, 0, 1, 1, 0, 1, 1,  //
                                     1, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                     1, 1, 0, 1, 1, 0, 1, 1, 0,  //
                                     0, 1, 1, 0, 1, 1, 0, 0, 0,  //
                                     1, 1, 1, 1, 1, 1, 0, 0, 0,  //
                                     1, 1, 0, 1, 1, 0, 0, 0, 0}),
                     "im2col of a 3x3 image of ones with k = 3, padding 1")) {
    return;
  }
  // Two channels, 0..8 and 100..108, k = 2: each row holds channel 0's window, then channel 1's.
  std::vector<float> two_channels = counting_image({1, 1, 3, 3}, 0.0f).to_vector();
  const std::vector<float> second = counting_image({1, 1, 3, 3}, 100.0f).to_vector();
  two_channels.insert(two_channels.end(), second.begin(), second.end());
  check_patches(im2col(Tensor({1, 2, 3, 3}, two_channels), 2),
                Tensor({4, 8}, {0, 1, 3, 4, 100, 101, 103, 104,  //
                                1, 2, 4, 5, 101, 102, 104, 105,  //
                                3, 4, 6, 7, 103, 104, 106, 107,  //
                                4, 5, 7, 8, 104, 105, 107, 108}),
                "im2col of two channels (0..8 and 100..108) with k = 2");
}

// Trusted: ⟨im2col(x), y⟩ by reading the windows straight out of x, in double precision.
double patches_dot(const Tensor& x, const Tensor& y, int k, int stride, int padding) {
  const std::int64_t batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  const std::int64_t out_h = (height + 2 * padding - k) / stride + 1;
  const std::int64_t out_w = (width + 2 * padding - k) / stride + 1;
  double total = 0.0;
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t oh = 0; oh < out_h; ++oh)
      for (std::int64_t ow = 0; ow < out_w; ++ow)
        for (std::int64_t c = 0; c < channels; ++c)
          for (std::int64_t kh = 0; kh < k; ++kh)
            for (std::int64_t kw = 0; kw < k; ++kw) {
              const std::int64_t ih = oh * stride - padding + kh;
              const std::int64_t iw = ow * stride - padding + kw;
              if (ih < 0 || ih >= height || iw < 0 || iw >= width) continue;
              const std::int64_t row = (n * out_h + oh) * out_w + ow;
              const std::int64_t column = (c * k + kh) * k + kw;
              total += static_cast<double>(x.at({n, c, ih, iw})) * y.at({row, column});
            }
  return total;
}

double dot(const Tensor& a, const Tensor& b) {
  const std::vector<float> u = a.to_vector();
  const std::vector<float> v = b.to_vector();
  double total = 0.0;
  for (std::size_t i = 0; i < u.size(); ++i) total += static_cast<double>(u[i]) * v[i];
  return total;
}

TEST(Acceleration, Col2im) {
  // Ones (4, 4) back into a 3×3 image with k = 2: each pixel counts the windows that cover it.
  const Tensor counts = col2im(Tensor::ones({4, 4}), {1, 1, 3, 3}, 2);
  if (!KILN_EXPECT_CLOSE(counts, Tensor({1, 1, 3, 3}, {1, 2, 1, 2, 4, 2, 1, 2, 1}), 1e-6, "overlap_not_added")) {
    return;
  }

  // The adjoint identity ⟨im2col(x), y⟩ = ⟨x, col2im(y)⟩ for random x and y.
  struct Case {
    Shape x_shape;
    int k, stride, padding;
  };
  const std::vector<Case> cases{{{2, 2, 5, 5}, 3, 1, 1}, {{1, 3, 6, 6}, 2, 2, 0}, {{2, 1, 5, 6}, 3, 2, 1},
                                {{1, 2, 4, 4}, 2, 1, 0}, {{1, 1, 4, 5}, 3, 1, 2}};
  WichmannHill generator(2024);
  for (const Case& test : cases) {
    const std::int64_t out_h = (test.x_shape[2] + 2 * test.padding - test.k) / test.stride + 1;
    const std::int64_t out_w = (test.x_shape[3] + 2 * test.padding - test.k) / test.stride + 1;
    const Tensor x = Tensor::rand(test.x_shape, generator);
    const Tensor y = Tensor::rand({test.x_shape[0] * out_h * out_w, test.x_shape[1] * test.k * test.k}, generator);
    const Tensor back = col2im(y, test.x_shape, test.k, test.stride, test.padding);
    const std::string setting = fmt::format("x {}, k = {}, stride {}, padding {}", to_string(test.x_shape), test.k,
                                            test.stride, test.padding);
    if (back.shape() != test.x_shape) {
      KILN_FAIL("col2im_not_adjoint", {{"difference", "inf"}},
                fmt::format("{}: col2im returned shape {}", setting, to_string(back.shape())));
      return;
    }
    const double expected = patches_dot(x, y, test.k, test.stride, test.padding);
    const double actual = dot(x, back);
    if (std::fabs(actual - expected) > 1e-4 * std::max(1.0, std::fabs(expected))) {
      KILN_FAIL("col2im_not_adjoint", {{"difference", format_number(std::fabs(actual - expected))}},
                fmt::format("{}: <im2col(x), y> = {:.7g}, <x, col2im(y)> = {:.7g}", setting, expected, actual));
      return;
    }
  }
}

}  // namespace
}  // namespace kiln
