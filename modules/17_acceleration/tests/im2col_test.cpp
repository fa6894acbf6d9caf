// Checks im2col and col2im: the worked examples of the chapter, and random batches of images that
// are not square (so that a height used for a width shows), against loops written out here.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/acceleration.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::compare;
using testing::data_of;
using testing::format_number;
using testing::format_pair;
using testing::observe;
using testing::Observed;
using testing::random_tensor;
using testing::TensorData;

// Image (N, C, H, W) holding first, first + 1, ... in row-major order.
Tensor counting_image(const Shape& shape, float first) {
  std::vector<float> values(static_cast<std::size_t>(numel(shape)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = first + static_cast<float>(i);
  return Tensor(shape, values);
}

std::int64_t out_size(std::int64_t size, int k, int stride, int padding) { return (size + 2 * padding - k) / stride + 1; }

// The shape of the patch matrix of an x of x_shape (N, C, H, W): (N·out_h·out_w, C·k·k).
Shape patch_shape(const Shape& x_shape, int k, int stride, int padding) {
  return {x_shape[0] * out_size(x_shape[2], k, stride, padding) * out_size(x_shape[3], k, stride, padding),
          x_shape[1] * k * k};
}

// Trusted: the chapter's formula, entry by entry. Calls visit(entry, pixel) for every entry of the
// patch matrix of an x of x_shape that lies on the image (row (n·out_h + oh)·out_w + ow, column
// (c·k + kh)·k + kw, flattened) with the flat index of the pixel of x it holds; entries over the
// padding are skipped. im2col reads each pixel into its entries, col2im adds the entries back.
template <class Visit>
void each_patch_entry(const Shape& x_shape, int k, int stride, int padding, Visit visit) {
  const std::int64_t batch = x_shape[0], channels = x_shape[1], height = x_shape[2], width = x_shape[3];
  const std::int64_t out_h = out_size(height, k, stride, padding), out_w = out_size(width, k, stride, padding);
  const std::int64_t columns = channels * k * k;
  for (std::int64_t n = 0; n < batch; ++n)
    for (std::int64_t oh = 0; oh < out_h; ++oh)
      for (std::int64_t ow = 0; ow < out_w; ++ow)
        for (std::int64_t c = 0; c < channels; ++c)
          for (std::int64_t kh = 0; kh < k; ++kh)
            for (std::int64_t kw = 0; kw < k; ++kw) {
              const std::int64_t ih = oh * stride - padding + kh, iw = ow * stride - padding + kw;
              if (ih < 0 || ih >= height || iw < 0 || iw >= width) continue;
              const std::int64_t row = (n * out_h + oh) * out_w + ow, column = (c * k + kh) * k + kw;
              visit(static_cast<std::size_t>(row * columns + column),
                    static_cast<std::size_t>(((n * channels + c) * height + ih) * width + iw));
            }
}

// Trusted: the patch matrix of x (N, C, H, W) by the chapter's formula, read straight out of x.
TensorData patches(const TensorData& x, int k, int stride, int padding) {
  const Shape shape = patch_shape(x.shape, k, stride, padding);
  std::vector<float> cols(static_cast<std::size_t>(numel(shape)), 0.0f);
  each_patch_entry(x.shape, k, stride, padding, [&](std::size_t entry, std::size_t pixel) { cols[entry] = x.values[pixel]; });
  return data_of(shape, cols);
}

// Whether every row of actual holds the same numbers as that row of expected, in any order.
bool rows_are_reordered(const TensorData& actual, const TensorData& expected) {
  if (actual.shape != expected.shape || expected.shape.size() != 2) return false;
  const auto columns = static_cast<std::ptrdiff_t>(expected.shape[1]);
  std::vector<float> a = actual.values, e = expected.values;
  for (std::ptrdiff_t start = 0; start < static_cast<std::ptrdiff_t>(e.size()); start += columns) {
    std::sort(a.begin() + start, a.begin() + start + columns);
    std::sort(e.begin() + start, e.begin() + start + columns);
  }
  return a == e;
}

// Compares an observed patch matrix with the expected one; tells a reordering apart from wrong
// numbers, and an error from both. Judging: called only inside KILN_JUDGE.
bool check_patches(const Observed<TensorData>& actual, const TensorData& expected) {
  if (!KILN_EXPECT_OK(actual, "im2col_values")) return false;
  const testing::Comparison result = compare(*actual, expected, 1e-6);
  if (result.close) return true;
  if (rows_are_reordered(*actual, expected)) {
    KILN_FAIL("im2col_column_order", {}, actual.call() + ": " + result.describe());
  } else if (!result.shapes_match) {
    KILN_FAIL("im2col_values", {{"difference", "inf"}, {"where", testing::shapes_where(actual->shape, expected.shape)}},
              fmt::format("{} has shape {}, expected {}", actual.call(), to_string(actual->shape),
                          to_string(expected.shape)));
  } else {
    KILN_FAIL("im2col_values", {{"difference", format_number(result.max_abs_diff)}, {"where", to_string(result.where)}},
              actual.call() + ": " + result.describe());
  }
  return false;
}

// A window or an image shape that im2col and col2im must refuse: ShapeError for the shapes,
// IndexError for the numbers.
struct WindowRefusal {
  Shape x_shape;
  int k, stride, padding;
  bool shape_error;
  std::string what;
};

// Judges a call that must have refused r. Whether the cases go on: not after a wrong answer, so
// that a later case cannot crash the program before the failure is reported.
template <class Observed>
bool refused_as_promised(const Observed& refused, const WindowRefusal& r, const char* failure_id) {
  const char* error = r.shape_error ? "kiln::ShapeError" : "kiln::IndexError";
  KILN_JUDGE {
    const testing::Params params = {{"case", r.what}, {"error", error}};
    if (r.shape_error) {
      testing::expect_throws<ShapeError>(__FILE__, __LINE__, refused, failure_id, {}, params);
    } else {
      testing::expect_throws<IndexError>(__FILE__, __LINE__, refused, failure_id, {}, params);
    }
  }
  return !refused.ok() && refused.error().is(error);
}

TEST(Acceleration, Im2col) {
  // The 3×3 image 1..9, k = 2: one row per 2×2 window, read row by row.
  const auto patches1 =
      observe("im2col(x, 2) of the 3x3 image 1..9", [] { return im2col(counting_image({1, 1, 3, 3}, 1.0f), 2); });
  KILN_JUDGE {
    if (!check_patches(patches1, data_of({4, 4}, {1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9}))) return;
  }
  if (!patches1.ok()) return;
  // A batch of two 2×2 images 0..7, k = 2: one row per image.
  const auto patches2 =
      observe("im2col(x, 2) of two 2x2 images 0..7", [] { return im2col(counting_image({2, 1, 2, 2}, 0.0f), 2); });
  KILN_JUDGE {
    if (!check_patches(patches2, data_of({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7}))) return;
  }
  if (!patches2.ok()) return;
  // The 4×4 image 0..15, k = 2, stride 2: four windows that do not overlap.
  const auto patches3 = observe("im2col(x, 2, 2) of the 4x4 image 0..15",
                                [] { return im2col(counting_image({1, 1, 4, 4}, 0.0f), 2, 2); });
  KILN_JUDGE {
    if (!check_patches(patches3, data_of({4, 4}, {0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15}))) return;
  }
  if (!patches3.ok()) return;
  // All ones, 3×3, padding 1, k = 3: a zero wherever the window hangs over the edge.
  const auto patches4 =
      observe("im2col(x, 3, 1, 1) of a 3x3 image of ones", [] { return im2col(Tensor::ones({1, 1, 3, 3}), 3, 1, 1); });
  KILN_JUDGE {
    const TensorData expected = data_of({9, 9}, {0, 0, 0, 0, 1, 1, 0, 1, 1,  //
                                                 0, 0, 0, 1, 1, 1, 1, 1, 1,  //
                                                 0, 0, 0, 1, 1, 0, 1, 1, 0,  //
                                                 0, 1, 1, 0, 1, 1, 0, 1, 1,  //
                                                 1, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                                 1, 1, 0, 1, 1, 0, 1, 1, 0,  //
                                                 0, 1, 1, 0, 1, 1, 0, 0, 0,  //
                                                 1, 1, 1, 1, 1, 1, 0, 0, 0,  //
                                                 1, 1, 0, 1, 1, 0, 0, 0, 0});
    if (!check_patches(patches4, expected)) return;
  }
  if (!patches4.ok()) return;
  // Two channels, 0..8 and 100..108, k = 2: each row holds channel 0's window, then channel 1's.
  std::vector<float> two_channels = counting_image({1, 1, 3, 3}, 0.0f).to_vector();
  const std::vector<float> second = counting_image({1, 1, 3, 3}, 100.0f).to_vector();
  two_channels.insert(two_channels.end(), second.begin(), second.end());
  const Tensor x2({1, 2, 3, 3}, two_channels);
  const auto patches5 = observe("im2col(x, 2) of two channels (0..8 and 100..108)", [&] { return im2col(x2, 2); });
  KILN_JUDGE {
    const TensorData expected = data_of({4, 8}, {0, 1, 3, 4, 100, 101, 103, 104,  //
                                                 1, 2, 4, 5, 101, 102, 104, 105,  //
                                                 3, 4, 6, 7, 103, 104, 106, 107,  //
                                                 4, 5, 7, 8, 104, 105, 107, 108});
    if (!check_patches(patches5, expected)) return;
  }
  if (!patches5.ok()) return;
  // Random batches whose images are not square, whose outputs are not square either, and whose
  // windows do not tile them evenly; the smallest window (1×1), and a 3×3 window that fits a 1×2
  // image only with its padding of 1 (both sides of the "window fits" bound).
  struct Case {
    Shape x_shape;
    int k, stride, padding;
  };
  // Then strides that do not divide H + 2·padding - k (nor W + 2·padding - k): the division rounds
  // down, so the last window that would hang past the padded image is no window. (1, 1, 6, 6) with
  // k = 3, stride 2, padding 1 has out_h = out_w = 5 / 2 + 1 = 3, 9 rows, not 4·4 = 16; then only
  // the height (6 × 9), only the width (4 × 7), and stride 3 (8 × 8, k = 3: 5 / 3 + 1 = 2).
  const std::vector<Case> cases{{{1, 2, 4, 6}, 2, 1, 0}, {{2, 3, 5, 7}, 3, 2, 1}, {{2, 1, 7, 4}, 3, 1, 2},
                                {{1, 3, 3, 2}, 1, 1, 0}, {{1, 2, 1, 2}, 3, 1, 1}, {{1, 1, 6, 6}, 3, 2, 1},
                                {{2, 2, 6, 9}, 3, 2, 1}, {{1, 2, 4, 7}, 2, 2, 0}, {{1, 1, 8, 8}, 3, 3, 0}};
  std::uint64_t stream = 61;
  for (const Case& c : cases) {
    const Tensor x = random_tensor(c.x_shape, stream++);
    const std::string what = fmt::format("im2col(x, {}, {}, {}) of a random {} batch", c.k, c.stride, c.padding,
                                         to_string(c.x_shape));
    const auto cols = observe(what, [&] { return im2col(x, c.k, c.stride, c.padding); });
    KILN_JUDGE {
      // A patch matrix with the rows a rounded-up division gives, ceil((H + 2·padding - k) / stride) + 1
      // windows down and the same across, where that differs from rounding down.
      const auto rounded_up = [&](std::int64_t size) {
        return (size + 2 * c.padding - c.k + c.stride - 1) / c.stride + 1;
      };
      const std::int64_t out_h = out_size(c.x_shape[2], c.k, c.stride, c.padding);
      const std::int64_t out_w = out_size(c.x_shape[3], c.k, c.stride, c.padding);
      const std::int64_t rows = c.x_shape[0] * out_h * out_w;
      const std::int64_t rounded_rows = c.x_shape[0] * rounded_up(c.x_shape[2]) * rounded_up(c.x_shape[3]);
      if (cols.ok() && rounded_rows != rows && cols->shape.size() == 2 && cols->shape[0] == rounded_rows) {
        KILN_FAIL("output_size_rounded_up",
                  {{"case", what}, {"out_h", std::to_string(out_h)}, {"out_w", std::to_string(out_w)},
                   {"expected", std::to_string(rows)}, {"got", std::to_string(cols->shape[0])}},
                  fmt::format("{} has shape {}, expected ({}, {}): out_h = ({} + 2·{} - {}) / {} + 1 = {}, "
                              "out_w = ({} + 2·{} - {}) / {} + 1 = {}",
                              cols.call(), to_string(cols->shape), rows, c.x_shape[1] * c.k * c.k, c.x_shape[2],
                              c.padding, c.k, c.stride, out_h, c.x_shape[3], c.padding, c.k, c.stride, out_w));
        return;
      }
      if (!check_patches(cols, patches(data_of(x), c.k, c.stride, c.padding))) return;
    }
    if (!cols.ok()) return;
  }

  // Arguments that describe no window: ShapeError for the shapes, IndexError for the numbers
  // (stride 0 last: without a check it divides by zero).
  const std::vector<WindowRefusal> refusals{
      {{1, 3, 3}, 2, 1, 0, true, "x is not 4-D"},
      {{1, 1, 2, 5}, 3, 1, 0, true, "a 3×3 window taller than the image"},
      {{1, 1, 5, 2}, 3, 1, 0, true, "a 3×3 window wider than the image"},
      {{1, 1, 3, 3}, 5, 1, 0, true, "a 5×5 window larger than the image padded by 0"},
      {{1, 1, 1, 2}, 4, 1, 1, true, "a 4×4 window larger than the image padded by 1"},
      {{1, 1, 4, 1}, 4, 1, 1, true, "a 4×4 window wider than the image padded by 1"},
      {{1, 1, 4, 4}, 0, 1, 0, false, "kernel_size 0"},
      {{1, 1, 4, 4}, 2, 1, -1, false, "padding -1"},
      {{1, 1, 4, 4}, 2, 0, 0, false, "stride 0"}};
  for (const WindowRefusal& r : refusals) {
    const Tensor x = random_tensor(r.x_shape, 69);
    const auto refused = observe(fmt::format("im2col(x, {}, {}, {}) with x {}: {}", r.k, r.stride, r.padding,
                                             to_string(r.x_shape), r.what),
                                 [&] { return im2col(x, r.k, r.stride, r.padding); });
    if (!refused_as_promised(refused, r, "im2col_arguments_unchecked")) return;
  }

  // A contiguous view at an offset: a (2, 3, 5, 4) batch 5 floats into a storage of other numbers.
  // contiguous() returns it as it is, and its values start at data(), not at the storage's first
  // float.
  const Tensor x_offset = testing::at_offset(data_of(random_tensor({2, 3, 5, 4}, 80)), 81);
  const TensorData x_offset_values = data_of(x_offset);
  // The same call on a fresh tensor of the same values: only patches that differ between the two
  // are the offset's fault; patches wrong on both are im2col's own.
  const auto fresh_cols = observe("im2col(x, 3, 1, 1) of the same (2, 3, 5, 4) values in a fresh tensor",
                                  [&] { return im2col(x_offset_values.tensor(), 3, 1, 1); });
  const auto offset_cols = observe("im2col(x, 3, 1, 1) of a (2, 3, 5, 4) contiguous view at offset 5",
                                   [&] { return im2col(x_offset, 3, 1, 1); });
  // Patches wrong on both are judged as every other case's are: check_patches tells a reordering
  // apart from wrong numbers.
  KILN_JUDGE {
    const TensorData expected = patches(x_offset_values, 3, 1, 1);
    const auto same = [](const TensorData& a, const TensorData& b) { return compare(a, b, 1e-6).close; };
    if (testing::offset_changes(offset_cols, fresh_cols, same))
      KILN_EXPECT_SAME_AT_OFFSET(fresh_cols, offset_cols, expected, 1e-6, 0.0, "", "im2col_offset_ignored");
    else
      check_patches(fresh_cols, expected);
  }
}

// Trusted: col2im by the chapter's formula, every row of cols added back where its window lay.
[[maybe_unused]] TensorData scattered(const TensorData& cols, const Shape& x_shape, int k, int stride, int padding) {
  std::vector<double> image(static_cast<std::size_t>(numel(x_shape)), 0.0);
  each_patch_entry(x_shape, k, stride, padding,
                   [&](std::size_t entry, std::size_t pixel) { image[pixel] += cols.values[entry]; });
  return data_of(x_shape, std::vector<float>(image.begin(), image.end()));
}

double dot(const TensorData& a, const TensorData& b) {
  double total = 0.0;
  for (std::size_t i = 0; i < a.values.size() && i < b.values.size(); ++i)
    total += static_cast<double>(a.values[i]) * b.values[i];
  return total;
}

TEST(Acceleration, Col2im) {
  // Ones (4, 4) back into a 3×3 image with k = 2: each pixel counts the windows that cover it.
  const auto counts = observe("col2im(ones (4, 4), (1, 1, 3, 3), 2)",
                              [] { return col2im(Tensor::ones({4, 4}), {1, 1, 3, 3}, 2); });
  if (!KILN_EXPECT_CLOSE(counts, data_of({1, 1, 3, 3}, {1, 2, 1, 2, 4, 2, 1, 2, 1}), 1e-6, "overlap_not_added")) return;

  // The adjoint identity ⟨im2col(x), y⟩ = ⟨x, col2im(y)⟩ for random x and y, with images and
  // outputs that are not square among them.
  struct Case {
    Shape x_shape;
    int k, stride, padding;
  };
  const std::vector<Case> cases{{{2, 2, 5, 5}, 3, 1, 1}, {{1, 3, 6, 6}, 2, 2, 0}, {{2, 1, 5, 6}, 3, 2, 1},
                                {{1, 2, 4, 4}, 2, 1, 0}, {{1, 1, 4, 5}, 3, 1, 2}, {{2, 2, 7, 4}, 2, 1, 1}};
  std::uint64_t stream = 71;
  for (const Case& c : cases) {
    const std::int64_t out_h = out_size(c.x_shape[2], c.k, c.stride, c.padding);
    const std::int64_t out_w = out_size(c.x_shape[3], c.k, c.stride, c.padding);
    const Tensor x = random_tensor(c.x_shape, stream++);
    const Tensor y = random_tensor({c.x_shape[0] * out_h * out_w, c.x_shape[1] * c.k * c.k}, stream++);
    const auto back = observe(fmt::format("col2im(y, {}, {}, {}, {})", to_string(c.x_shape), c.k, c.stride, c.padding),
                              [&] { return col2im(y, c.x_shape, c.k, c.stride, c.padding); });
    if (!KILN_EXPECT_OK(back, "col2im_not_adjoint")) return;
    KILN_JUDGE {
      if (back->shape != c.x_shape) {
        KILN_FAIL("col2im_not_adjoint", {{"difference", "inf"}},
                  fmt::format("{} returned shape {}", back.call(), to_string(back->shape)));
        return;
      }
      const double expected = dot(patches(data_of(x), c.k, c.stride, c.padding), data_of(y));
      const double actual = dot(data_of(x), *back);
      if (std::fabs(actual - expected) > 1e-4 * std::max(1.0, std::fabs(expected))) {
        const auto [got, want] = format_pair(actual, expected);
        KILN_FAIL("col2im_not_adjoint", {{"difference", format_number(std::fabs(actual - expected))}},
                  fmt::format("{}: <im2col(x), y> = {}, <x, col2im(y)> = {}", back.call(), want, got));
        return;
      }
    }
  }
  // cols of another shape than im2col gives for the image: ShapeError. The (4, 9) patch matrix of
  // a (1, 1, 4, 4) image with k = 3, transposed to (9, 4), holds as many numbers.
  for (const Shape& wrong : {Shape{9, 4}, Shape{5, 9}, Shape{4, 8}}) {
    const Tensor y = random_tensor(wrong, 77);
    const auto refused = observe(fmt::format("col2im(y, (1, 1, 4, 4), 3) with y {}", to_string(wrong)),
                                 [&] { return col2im(y, {1, 1, 4, 4}, 3); });
    KILN_JUDGE {
      testing::expect_throws<ShapeError>(__FILE__, __LINE__, refused, "col2im_shape_unchecked", {},
                                         {{"cols", to_string(wrong)}});
    }
    if (refused.ok()) return;
  }
  // The window and the image shape, refused as im2col refuses them (x not 4-D last: without a
  // check it reads sizes the shape does not have; stride 0 before it divides by zero).
  const std::vector<WindowRefusal> refusals{
      {{1, 1, 4, 4}, 0, 1, 0, false, "kernel_size 0"},
      {{1, 1, 4, 4}, 2, 1, -1, false, "padding -1"},
      {{1, 1, 2, 5}, 3, 1, 0, true, "a 3×3 window taller than the image"},
      {{1, 1, 1, 2}, 4, 1, 1, true, "a 4×4 window larger than the image padded by 1"},
      {{1, 1, 4, 4}, 2, 0, 0, false, "stride 0"},
      {{1, 4, 4}, 2, 1, 0, true, "x_shape is not 4-D"}};
  for (const WindowRefusal& r : refusals) {
    const Tensor y = random_tensor({4, 4}, 79);
    const auto refused = observe(fmt::format("col2im(y, {}, {}, {}, {}): {}", to_string(r.x_shape), r.k, r.stride,
                                             r.padding, r.what),
                                 [&] { return col2im(y, r.x_shape, r.k, r.stride, r.padding); });
    if (!refused_as_promised(refused, r, "col2im_arguments_unchecked")) return;
  }

  // cols as a contiguous view at an offset: the (20, 18) patch matrix of a (1, 2, 5, 4) image with
  // k = 3 and padding 1, 5 floats into a storage of other numbers. contiguous() returns it as it
  // is, and its values start at data(), not at the storage's first float.
  const Tensor y_offset = testing::at_offset(data_of(random_tensor({20, 18}, 82)), 83);
  const TensorData y_offset_values = data_of(y_offset);
  // The same call on a fresh tensor of the same values: only an image that differs between the two
  // is the offset's fault; one wrong on both is col2im's own (not the adjoint of im2col).
  const auto fresh_back = observe("col2im(cols, (1, 2, 5, 4), 3, 1, 1) of the same (20, 18) values in a fresh tensor",
                                  [&] { return col2im(y_offset_values.tensor(), {1, 2, 5, 4}, 3, 1, 1); });
  const auto offset_back = observe("col2im(cols, (1, 2, 5, 4), 3, 1, 1) of a (20, 18) contiguous view at offset 5",
                                   [&] { return col2im(y_offset, {1, 2, 5, 4}, 3, 1, 1); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(fresh_back, offset_back, scattered(y_offset_values, {1, 2, 5, 4}, 3, 1, 1), 1e-5, 0.0,
                               "col2im_not_adjoint", "col2im_offset_ignored");
  }
}

}  // namespace
}  // namespace kiln
