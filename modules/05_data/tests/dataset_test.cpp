// Module 05 checks for the dataset: bytes to floats, its count and shape checks, the mean and
// standard deviation, and normalisation. The IDX arrays are built here directly (no reader of
// yours is involved), and every expected value is computed by plain loops in double.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "data_testing.h"
#include "kiln/data.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using data_testing::Bytes;
using data_testing::list_of;
using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;

IdxArray array_of(Shape dims, Bytes values) { return IdxArray{std::move(dims), std::move(values)}; }

// The pixels float(b)/255 with the given shape.
TensorData scaled_pixels(const Bytes& bytes, const Shape& shape) {
  std::vector<float> values;
  for (const std::uint8_t b : bytes) values.push_back(static_cast<float>(b) / 255.0f);
  return data_of(shape, values);
}

// The transpose of a contiguous matrix as a view (strides (1, rows)), built with the given make_view.
Tensor transposed(const Tensor& m) { return make_view(m, {m.shape()[1], m.shape()[0]}, {1, m.shape()[1]}, 0); }

// Mean and population standard deviation of the elements, in double (trusted).
std::pair<double, double> reference_statistics(const TensorData& x) {
  double total = 0.0;
  for (const float v : x.values) total += v;
  const double mean = total / static_cast<double>(x.values.size());
  double squares = 0.0;
  for (const float v : x.values) squares += (v - mean) * (v - mean);
  return {mean, std::sqrt(squares / static_cast<double>(x.values.size()))};
}

}  // namespace

TEST(Data, Dataset) {
  // The hand-made 2×3×3 images with labels 7 and 3: pixel 255 becomes 1, 128 becomes 128/255.
  const IdxArray hand_images = array_of(data_testing::kHandDims, data_testing::kHandPixels);
  const IdxArray hand_labels = array_of({2}, {7, 3});
  // Seven images of 3 × 5 and labels of the run; one image of one white pixel.
  const Bytes run_pixels = data_testing::random_bytes(105, 551);
  Bytes run_label_bytes;
  for (const std::int64_t v : testing::random_ints(7, 10, 552)) run_label_bytes.push_back(static_cast<std::uint8_t>(v));
  const IdxArray run_images = array_of({7, 3, 5}, run_pixels);
  const IdxArray run_labels = array_of({7}, run_label_bytes);
  const IdxArray white = array_of({1, 1, 1}, {255});
  const IdxArray white_label = array_of({1}, {9});

  const std::vector<std::tuple<std::string, const IdxArray*, const IdxArray*, bool, Shape>> cases = {
      {"the hand-made (2, 3, 3) images", &hand_images, &hand_labels, false, {2, 3, 3}},
      {"the hand-made (2, 3, 3) images, flattened", &hand_images, &hand_labels, true, {2, 9}},
      {"(7, 3, 5) images of the run", &run_images, &run_labels, false, {7, 3, 5}},
      {"(7, 3, 5) images of the run, flattened", &run_images, &run_labels, true, {7, 15}},
      {"one (1, 1) image of 255", &white, &white_label, true, {1, 1}},
  };
  for (const auto& [what, images, labels, flatten, shape] : cases) {
    const testing::Params params = {{"shape", to_string(shape)}};
    const auto got = observe(fmt::format("make_dataset({}, flatten {})", what, flatten), [&] {
      const Dataset d = make_dataset(*images, *labels, flatten);
      return std::pair(d.images, d.labels);
    });
    if (!KILN_EXPECT_OK(got, "dataset_values_wrong", params)) return;
    KILN_JUDGE {
      const testing::Comparison c = testing::compare(got->first, scaled_pixels(images->values, shape), 1e-7);
      if (!c.close) {
        KILN_FAIL("dataset_values_wrong", params,
                  got.call() + ": the images " +
                      (c.shapes_match ? c.describe()
                                      : "have shape " + to_string(got->first.shape) + ", expected " + to_string(shape)));
        return;
      }
      const std::vector<std::int64_t> expected_labels(labels->values.begin(), labels->values.end());
      if (got->second != expected_labels) {
        KILN_FAIL("dataset_values_wrong", params,
                  fmt::format("{}: the labels are {}, expected {}", got.call(), list_of(got->second),
                              list_of(expected_labels)));
        return;
      }
    }
  }

  // What does not pair up: 7 images with 5 labels, and images (4, 9) that are not 3-D.
  const IdxArray five_labels = array_of({5}, {1, 2, 3, 4, 5});
  const IdxArray flat_images = array_of({4, 9}, data_testing::random_bytes(36, 553));
  const IdxArray four_labels = array_of({4}, {0, 1, 2, 3});
  const auto mismatch = observe("make_dataset(7 images (7, 3, 5), 5 labels (5), flatten false)",
                                [&] { return make_dataset(run_images, five_labels, false).size(); });
  KILN_JUDGE {
    testing::expect_throws<FormatError>(__FILE__, __LINE__, mismatch, "dataset_not_checked", {"7", "5"},
                                        {{"images", "(7, 3, 5)"}, {"labels", "(5)"}, {"names", "both counts, 7 and 5"}});
    if (::testing::Test::HasFailure()) return;
  }
  const auto flat = observe("make_dataset(images (4, 9), labels (4), flatten false)",
                            [&] { return make_dataset(flat_images, four_labels, false).size(); });
  KILN_JUDGE {
    testing::expect_throws<FormatError>(__FILE__, __LINE__, flat, "dataset_not_checked", {"(4, 9)"},
                                        {{"images", "(4, 9)"}, {"labels", "(4)"}, {"names", "the images' shape (4, 9)"}});
    if (::testing::Test::HasFailure()) return;
  }
  // Four-dimensional images, and labels that are not 1-D although their first size is 7.
  const IdxArray deep_images = array_of({7, 3, 5, 1}, run_pixels);
  const IdxArray column_labels = array_of({7, 1}, run_label_bytes);
  const auto deep = observe("make_dataset(images (7, 3, 5, 1), labels (7), flatten false)",
                            [&] { return make_dataset(deep_images, run_labels, false).size(); });
  KILN_JUDGE {
    testing::expect_throws<FormatError>(
        __FILE__, __LINE__, deep, "dataset_not_checked", {"(7, 3, 5, 1)"},
        {{"images", "(7, 3, 5, 1)"}, {"labels", "(7)"}, {"names", "the images' shape (7, 3, 5, 1)"}});
    if (::testing::Test::HasFailure()) return;
  }
  const auto column = observe("make_dataset(images (7, 3, 5), labels (7, 1), flatten false)",
                              [&] { return make_dataset(run_images, column_labels, false).size(); });
  KILN_JUDGE {
    testing::expect_throws<FormatError>(__FILE__, __LINE__, column, "dataset_not_checked", {"(7, 1)"},
                                        {{"images", "(7, 3, 5)"}, {"labels", "(7, 1)"}, {"names", "the labels' shape (7, 1)"}});
    if (::testing::Test::HasFailure()) return;
  }

  // No images: a file of (0, rows, cols) holds no bytes, and the dataset has no examples. Of
  // images 65536 × 65536 (sizes a damaged or a generated file can hold), rows·cols is 2^32,
  // which an int holds as 0: flattened, the shape is (0, 4294967296), not (0, 0).
  const IdxArray no_labels = array_of({0}, {});
  const std::vector<std::pair<Shape, bool>> empties = {{{0, 28, 28}, false}, {{0, 28, 28}, true},
                                                       {{0, 65536, 65536}, true}};
  for (const auto& [dims, flatten] : empties) {
    const IdxArray no_images = array_of(dims, {});
    const Shape expected = flatten ? Shape{0, dims[1] * dims[2]} : dims;
    const testing::Params params = {{"images", to_string(dims)}, {"expected", to_string(expected)}};
    const auto got = observe(fmt::format("make_dataset(images {}, labels (0), flatten {})", to_string(dims), flatten),
                             [&] {
                               const Dataset d = make_dataset(no_images, no_labels, flatten);
                               return std::pair(d.images.shape(), d.labels.size());
                             });
    // Where rows·cols is past an int, a wrong shape is that mistake; elsewhere the empty dataset's.
    const char* id = dims[1] * dims[2] > 2147483647 ? "dataset_size_narrowed" : "dataset_empty_wrong";
    if (!KILN_EXPECT_OK(got, id, params)) return;
    KILN_JUDGE {
      if (got->first != expected || got->second != 0) {
        KILN_FAIL(id, params,
                  fmt::format("{} gave images of shape {} and {}", got.call(), to_string(got->first),
                              testing::counted(got->second, "label")));
        return;
      }
    }
  }
}

TEST(Data, Normalisation) {
  // [2, 4, 4, 4, 5, 5, 7, 9]: mean 40/8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32, 32/8 = 4,
  // so the standard deviation is 2 (the sample one, √(32/7), is 2.138).
  const Tensor classic({2, 4}, {2, 4, 4, 4, 5, 5, 7, 9});
  const Tensor run_view = transposed(random_tensor({3, 5}, 561, 0.0f, 1.0f));  // (5, 3), strides (1, 5)
  const Tensor run_long = random_tensor({31}, 562, -2.0f, 3.0f);
  const Tensor seven({1, 7}, {0, 0, 0, 1, 1, 1, 1});
  // A spread of 0 (E[x²] - mean² in one pass comes out a little below 0 here, and its root NaN),
  // and a small spread about a large mean (where E[x²] - mean² has lost the digits of the spread).
  const Tensor constant = Tensor::full({100}, 0.1f);
  const Tensor far({3}, {10000001, 10000002, 10000003});
  // A mean no float holds: 10000000.5 rounds to 10000000 in float, which would make the std √0.5.
  const Tensor halfway({2}, {10000000, 10000001});
  const std::vector<std::pair<std::string, const Tensor*>> inputs = {
      {"[2, 4, 4, 4, 5, 5, 7, 9]", &classic},
      {"a (5, 3) transposed view of the run", &run_view},
      {"(31) values of the run", &run_long},
      {"[[0, 0, 0, 1, 1, 1, 1]]", &seven},
      {"100 copies of 0.1", &constant},
      {"[10000001, 10000002, 10000003]", &far},
      {"[10000000, 10000001]", &halfway},
  };
  for (const auto& [what, x] : inputs) {
    const testing::Params params = {{"what", what}};
    const auto got = observe("mean_and_std(" + what + ")", [&] { return mean_and_std(*x); });
    if (!KILN_EXPECT_OK(got, "statistics_wrong", params)) return;
    KILN_JUDGE {
      const auto [mean, std] = reference_statistics(data_of(*x));
      if (!(std::fabs(got->first - mean) <= 1e-6) || !(std::fabs(got->second - std) <= 1e-6)) {  // NaN fails
        KILN_FAIL("statistics_wrong", params,
                  fmt::format("{} gave ({}, {}), expected ({}, {})", got.call(), got->first, got->second, mean, std));
        return;
      }
    }
  }

  // normalize: the classic values with mean 5 and std 2 give [-1.5, -0.5, -0.5, -0.5, 0, 0, 1, 2];
  // a view and 31 values of the run with their own statistics, and Fashion-MNIST's. The run's own
  // mean and standard deviation are inputs here (as sigmoid(x) is given to sigmoid_backward),
  // computed after mean_and_std was observed on the same values, as reference_statistics does.
  std::pair<double, double> run_stats;
  {
    const TensorData in = data_of(run_long);
    double total = 0.0;
    for (const float v : in.values) total += v;
    run_stats.first = total / static_cast<double>(in.values.size());
    double squares = 0.0;
    for (const float v : in.values) squares += (v - run_stats.first) * (v - run_stats.first);
    run_stats.second = std::sqrt(squares / static_cast<double>(in.values.size()));
  }
  // Statistics no float holds, given as doubles: a std of 1e-50 (0 as a float) on subnormal
  // values, and a mean of 10000000.5 (a float rounds it to a whole number) with std 0.5.
  const Tensor tiny({4}, {0, 1e-45f, -1e-45f, 3e-45f});
  const Tensor large_pair({2}, {10000000, 10000001});
  const std::vector<std::tuple<std::string, const Tensor*, double, double>> normal = {
      {"[2, 4, 4, 4, 5, 5, 7, 9], mean 5, std 2", &classic, 5.0, 2.0},
      {"[0, 1e-45, -1e-45, 3e-45], mean 0, std 1e-50", &tiny, 0.0, 1e-50},
      {"[10000000, 10000001], mean 10000000.5, std 0.5", &large_pair, 10000000.5, 0.5},
      {"a (5, 3) transposed view of the run, mean 0.2860, std 0.3530", &run_view, 0.2860, 0.3530},
      {"(31) values of the run, with their mean and std", &run_long, run_stats.first, run_stats.second},
  };
  for (const auto& [what, x, mean, std] : normal) {
    const auto got = observe("normalize(" + what + ")", [&] { return normalize(*x, mean, std); });
    KILN_JUDGE {
      const TensorData in = data_of(*x);
      std::vector<float> expected;
      for (const float v : in.values) expected.push_back(static_cast<float>((v - mean) / std));
      if (!KILN_EXPECT_CLOSE_REL(got, data_of(in.shape, expected), 1e-5, 1e-5, "normalize_wrong")) return;
    }
    if (!got.ok()) return;
  }

  // What has no answer: the statistics of no elements, and a std of 0 or below.
  const Tensor empty = Tensor::zeros({0, 3});
  const auto no_elements = observe("mean_and_std(a (0, 3) tensor)", [&] { return mean_and_std(empty); });
  KILN_JUDGE {
    testing::expect_throws<ShapeError>(__FILE__, __LINE__, no_elements, "statistics_arguments_not_checked", {},
                                       {{"call", "mean_and_std of a (0, 3) tensor"}, {"kind", "kiln::ShapeError"}});
    if (::testing::Test::HasFailure()) return;
  }
  // NaN is not greater than 0 either: a guard written as std <= 0 lets it through.
  for (const double bad_std : {0.0, -2.0, std::numeric_limits<double>::quiet_NaN()}) {
    const std::string call = fmt::format("normalize([2, 4, 4, 4, 5, 5, 7, 9], 5, {})", bad_std);
    const auto got = observe(call, [&] { return normalize(classic, 5.0, bad_std); });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, got, "statistics_arguments_not_checked", {},
                                                    {{"call", call}, {"kind", "std::invalid_argument"}});
      if (::testing::Test::HasFailure()) return;
    }
  }

  // A contiguous view at an offset (images 5 to 7 of a batch, say): its elements start at data(),
  // 5 floats into a storage whose other floats are random numbers in [-8, 8). Its contiguous() is
  // the view itself, so code that reads it from storage_data() reads those other numbers.
  const Tensor shifted = testing::at_offset(data_of(random_tensor({4, 6}, 563, 0.0f, 1.0f)), 564);
  const std::string shifted_what = "a (4, 6) contiguous view at offset 5 of a larger storage";
  // The same call on a fresh tensor of the same values: a result wrong on both is the function's
  // own mistake (statistics_wrong, normalize_wrong), not the offset's.
  const Tensor fresh = data_of(shifted).tensor();
  const std::string fresh_what = "a fresh (4, 6) tensor of the same values";
  const auto fresh_stats = observe("mean_and_std(" + fresh_what + ")", [&] { return mean_and_std(fresh); });
  const auto shifted_stats = observe("mean_and_std(" + shifted_what + ")", [&] { return mean_and_std(shifted); });
  KILN_JUDGE {
    const auto [mean, std] = reference_statistics(data_of(shifted));
    using Stats = std::pair<double, double>;
    const auto show = [](const auto& s) { return fmt::format("({}, {})", s.first, s.second); };
    // Two results are the same within 1e-6, a NaN the same as a NaN.
    const auto same_number = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || std::fabs(a - b) <= 1e-6; };
    if (testing::offset_changes(shifted_stats, fresh_stats, [&](const Stats& a, const Stats& b) {
          return same_number(a.first, b.first) && same_number(a.second, b.second);
        })) {
      KILN_FAIL("statistics_offset_ignored", {{"what", shifted_what}},
                testing::offset_detail(shifted_stats, fresh_stats, show) + "; expected " + show(Stats(mean, std)));
      return;
    }
    if (!KILN_EXPECT_OK(fresh_stats, "statistics_wrong", {{"what", fresh_what}})) return;
    if (!(std::fabs(fresh_stats->first - mean) <= 1e-6) || !(std::fabs(fresh_stats->second - std) <= 1e-6)) {
      KILN_FAIL("statistics_wrong", {{"what", fresh_what}},
                fmt::format("{} gave ({}, {}), expected ({}, {})", fresh_stats.call(), fresh_stats->first,
                            fresh_stats->second, mean, std));
      return;
    }
  }
  if (!shifted_stats.ok() || !fresh_stats.ok()) return;
  const auto fresh_normal =
      observe("normalize(" + fresh_what + ", mean 0.5, std 0.25)", [&] { return normalize(fresh, 0.5, 0.25); });
  const auto shifted_normal =
      observe("normalize(" + shifted_what + ", mean 0.5, std 0.25)", [&] { return normalize(shifted, 0.5, 0.25); });
  KILN_JUDGE {
    const TensorData in = data_of(shifted);
    std::vector<float> expected;
    for (const float v : in.values) expected.push_back(static_cast<float>((v - 0.5) / 0.25));
    if (!KILN_EXPECT_SAME_AT_OFFSET(fresh_normal, shifted_normal, data_of(in.shape, expected), 1e-5, 1e-5,
                                    "normalize_wrong", "normalize_offset_ignored", {{"what", shifted_what}}))
      return;
  }
  if (!shifted_normal.ok() || !fresh_normal.ok()) return;
  // No elements: normalize of a (0, 3) tensor is a (0, 3) tensor (there is nothing to divide).
  const Tensor nothing = Tensor::zeros({0, 3});
  const auto normal_nothing = observe("normalize(a (0, 3) tensor, 0.5, 0.25)", [&] { return normalize(nothing, 0.5, 0.25); });
  KILN_JUDGE {
    KILN_EXPECT_CLOSE(normal_nothing, data_of({0, 3}, {}), 0.0, "normalize_wrong");
  }
}

}  // namespace kiln
