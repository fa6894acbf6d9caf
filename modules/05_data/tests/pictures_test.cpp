// Module 05 checks for pictures: image_svg, judged by reading back the squares of the SVG text it
// returns (their places, sizes and gray levels), and histogram, judged by counting here.
#include <functional>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data_testing.h"
#include "kiln/data.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using data_testing::list_of;
using data_testing::TrustedWichmannHill;
using testing::data_of;
using testing::observe;
using testing::TensorData;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c) || c == '-' || c == '.'; }
std::size_t skip_spaces(const std::string& s, std::size_t at) {
  while (at < s.size() && is_space(s[at])) ++at;
  return at;
}

// The attributes name="value" of one tag: at each place, from the left, a name, "=" and a value
// in double or single quotes (XML allows both), spaces allowed around the "=".
std::map<std::string, std::string> attributes(const std::string& tag) {
  std::map<std::string, std::string> out;
  std::size_t at = 0;
  while (at < tag.size()) {
    if (!is_name_start(tag[at])) {
      ++at;
      continue;
    }
    std::size_t end = at + 1;
    while (end < tag.size() && is_name_char(tag[end])) ++end;
    std::size_t next = skip_spaces(tag, end);
    if (next < tag.size() && tag[next] == '=') next = skip_spaces(tag, next + 1);
    else next = tag.size();
    const bool quoted = next < tag.size() && (tag[next] == '"' || tag[next] == '\'');
    const std::size_t close = quoted ? tag.find(tag[next], next + 1) : std::string::npos;
    if (close == std::string::npos) {
      ++at;
      continue;
    }
    out[tag.substr(at, end - at)] = tag.substr(next + 1, close - next - 1);
    at = close + 1;
  }
  return out;
}

// The gray level G of a fill "rgb(G,G,G)" (spaces allowed, levels of up to 9 digits and a minus
// sign: one outside 0..255 is read, and judged a wrong gray), or nothing.
std::optional<int> gray_of(const std::string& fill) {
  if (fill.rfind("rgb(", 0) != 0) return std::nullopt;
  std::size_t at = 4;
  std::vector<std::string> levels;
  for (const char after : {',', ',', ')'}) {
    at = skip_spaces(fill, at);
    const std::size_t start = at;
    if (at < fill.size() && fill[at] == '-') ++at;
    const std::size_t digits = at;
    while (at < fill.size() && is_digit(fill[at])) ++at;
    if (at == digits || at - digits > 9) return std::nullopt;
    levels.push_back(fill.substr(start, at - start));
    at = skip_spaces(fill, at);
    if (at >= fill.size() || fill[at] != after) return std::nullopt;
    ++at;
  }
  if (at != fill.size() || levels[0] != levels[1] || levels[1] != levels[2]) return std::nullopt;
  return std::stoi(levels[0]);
}

std::optional<double> number(const std::map<std::string, std::string>& attrs, const std::string& name) {
  const auto it = attrs.find(name);
  if (it == attrs.end()) return std::nullopt;
  try {
    std::size_t used = 0;
    const double v = std::stod(it->second, &used);
    if (used != it->second.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

struct Square {
  double x, y, width, height;
  int gray;
};

// The <svg> element's width and height and its <rect> squares, or what is wrong with the text.
struct Picture {
  std::string problem;
  double width = 0, height = 0;
  std::vector<Square> squares;
};

Picture read_svg(const std::string& svg) {
  Picture p;
  const auto open = svg.find("<svg");
  if (open == std::string::npos) {
    p.problem = "there is no <svg> element";
    return p;
  }
  const std::string root_tag = svg.substr(open, svg.find('>', open) - open);
  const auto root = attributes(root_tag);
  const auto width = number(root, "width"), height = number(root, "height");
  if (!width || !height) {
    p.problem = "no width and height could be read as numbers (width=\"W\" height=\"H\") from the <svg> element: " +
                svg.substr(open, std::min<std::size_t>(120, root_tag.size() + 1));
    return p;
  }
  p.width = *width;
  p.height = *height;
  for (auto at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) {
    const auto tag = attributes(svg.substr(at, svg.find('>', at) - at));
    const auto x = number(tag, "x"), y = number(tag, "y"), w = number(tag, "width"), h = number(tag, "height");
    const auto fill = tag.find("fill");
    const auto gray = fill == tag.end() ? std::nullopt : gray_of(fill->second);
    if (!x || !y || !w || !h || !gray) {
      p.problem = "a <rect> has no numeric x, y, width and height, or no fill=\"rgb(G,G,G)\": " +
                  svg.substr(at, std::min<std::size_t>(120, svg.find('>', at) - at + 1));
      return p;
    }
    p.squares.push_back({*x, *y, *w, *h, *gray});
  }
  return p;
}

// Whether `gray` is right for the value v: round(255·v) of v clipped to [0, 1]. Where 255·v lies
// within 0.001 of a half (but not exactly on it), rounding in float may go either way.
bool gray_ok(int gray, float v) {
  const double scaled = 255.0 * std::clamp(static_cast<double>(v), 0.0, 1.0);
  if (gray == std::lround(scaled)) return true;
  const double to_half = std::fabs(scaled - std::floor(scaled) - 0.5);
  return to_half < 1e-3 && to_half > 0.0 && (gray == std::floor(scaled) || gray == std::ceil(scaled));
}

// Judges the observed SVG of `image` (rows, cols) at cell size `cell`. Reports svg_layout_wrong or
// svg_gray_wrong; returns false after reporting. Judging only: called inside KILN_JUDGE.
bool expect_svg(const char* file, int line, const testing::Observed<std::string>& got, const TensorData& image,
                std::int64_t cell, std::string_view layout_id = "svg_layout_wrong",
                std::string_view gray_id = "svg_gray_wrong") {
  if (!testing::expect_ok(file, line, got, layout_id)) return false;
  const Picture p = read_svg(*got);
  const std::int64_t rows = image.shape[0], cols = image.shape[1];
  auto layout = [&](const std::string& what) {
    testing::report_failure(file, line, layout_id, {}, got.call() + ": " + what);
    return false;
  };
  if (!p.problem.empty()) return layout(p.problem);
  if (p.width != static_cast<double>(cols * cell) || p.height != static_cast<double>(rows * cell)) {
    return layout(
        fmt::format("the svg is {} wide and {} high, expected {} and {}", p.width, p.height, cols * cell, rows * cell));
  }
  if (static_cast<std::int64_t>(p.squares.size()) != rows * cols) {
    return layout(fmt::format("it has {}, expected {} (one per pixel)", testing::counted(p.squares.size(), "square"), rows * cols));
  }
  std::map<std::pair<double, double>, const Square*> at;
  for (const Square& s : p.squares) at[{s.x, s.y}] = &s;
  // Every square in its place first, then the gray levels: a picture drawn transposed is a
  // layout mistake even where a square of the wrong pixel happens to sit in a right place.
  std::vector<const Square*> square_of(static_cast<std::size_t>(rows * cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const double x = static_cast<double>(c * cell), y = static_cast<double>(r * cell);
      const auto it = at.find({x, y});
      if (it == at.end() || it->second->width != cell || it->second->height != cell) {
        return layout(fmt::format("pixel ({}, {}) has no {}×{} square at x = {}, y = {}", r, c, cell, cell, x, y));
      }
      square_of[static_cast<std::size_t>(r * cols + c)] = it->second;
    }
  }
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = image.values[static_cast<std::size_t>(r * cols + c)];
      const int gray = square_of[static_cast<std::size_t>(r * cols + c)]->gray;
      if (!gray_ok(gray, v)) {
        testing::report_failure(
            file, line, gray_id, {},
            fmt::format("{}: pixel ({}, {}) of value {} has gray {}, expected {}", got.call(), r, c, v, gray,
                        std::lround(255.0 * std::clamp(static_cast<double>(v), 0.0, 1.0))));
        return false;
      }
    }
  }
  return true;
}

// The transpose of a contiguous matrix as a view (strides (1, rows)), built with the given make_view.
Tensor transposed(const Tensor& m) { return make_view(m, {m.shape()[1], m.shape()[0]}, {1, m.shape()[1]}, 0); }

// Counts of the values in bins over [low, high) (trusted).
std::vector<std::int64_t> reference_histogram(const std::vector<double>& values, int bins, double low, double high) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(bins), 0);
  for (const double v : values) {
    if (v < low || v >= high) continue;
    const auto b = static_cast<std::int64_t>(std::floor((v - low) / (high - low) * bins));
    ++counts[static_cast<std::size_t>(std::min<std::int64_t>(b, bins - 1))];
  }
  return counts;
}

}  // namespace

TEST(Data, ImageSvg) {
  // By hand, (2, 3) at cell size 10: 0 is black (0), 1 white (255), 0.5 is 127.5 which rounds to
  // 128, 0.25 is 63.75 which rounds to 64, 2 is clipped to 255 and -1 to 0. The picture is 30
  // wide and 20 high; pixel (1, 2) is the square at x = 20, y = 10.
  const Tensor hand({2, 3}, {0.0f, 1.0f, 0.5f, 0.25f, 2.0f, -1.0f});
  const Tensor view = transposed(testing::random_tensor({3, 7}, 591, 0.0f, 1.0f));  // (7, 3), strides (1, 7)
  const Tensor one({1, 1}, {0.75f});
  const Tensor digit = testing::random_tensor({28, 28}, 592, -0.2f, 1.2f);
  // Values whose 255·v is past 2^63, so that std::lround cannot hold it (x86 gives LONG_MIN):
  // only v clipped to [0, 1] before rounding draws inf, 1e17 and 3e38 white and -inf and -1e17
  // black. 1e16 (255·v below 2^63) is the other side: white however the clipping is done.
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor huge({2, 3}, {inf, 1e17f, 1e16f, -inf, -1e17f, 3e38f});
  const std::vector<std::tuple<std::string, const Tensor*, int>> cases = {
      {"the (2, 3) image [[0, 1, 0.5], [0.25, 2, -1]]", &hand, 10},
      {"the (2, 3) image [[inf, 1e17, 1e16], [-inf, -1e17, 3e38]]", &huge, 1},
      {"a (7, 3) transposed view of the run", &view, 3},
      {"the (1, 1) image [[0.75]]", &one, 1},
      {"a 28×28 image of the run, values in [-0.2, 1.2)", &digit, 2},
  };
  for (const auto& [what, image, cell] : cases) {
    const auto got = observe(fmt::format("image_svg({}, {})", what, cell), [&] { return image_svg(*image, cell); });
    KILN_JUDGE {
      if (!expect_svg(__FILE__, __LINE__, got, data_of(*image), cell)) return;
    }
    if (!got.ok()) return;
  }

  // What is not an image, or not a size: a (2, 3, 3) and a flat (784) tensor, and cells of 0 and -2.
  const Tensor cube = testing::random_tensor({2, 3, 3}, 593, 0.0f, 1.0f);
  const Tensor flat = testing::random_tensor({784}, 594, 0.0f, 1.0f);
  for (const auto& [what, image] : {std::pair(std::string("a (2, 3, 3) tensor"), &cube),
                                    std::pair(std::string("a flat (784) tensor"), &flat)}) {
    const std::string call = fmt::format("image_svg({}, 2)", what);
    const auto got = observe(call, [&] { return image_svg(*image, 2); });
    KILN_JUDGE {
      testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "svg_arguments_not_checked", {},
                                         {{"call", call}, {"kind", "kiln::ShapeError"}});
      if (::testing::Test::HasFailure()) return;
    }
  }
  for (const int bad_cell : {0, -2}) {
    const std::string call = fmt::format("image_svg(the (2, 3) image, {})", bad_cell);
    const auto got = observe(call, [&] { return image_svg(hand, bad_cell); });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, got, "svg_arguments_not_checked", {},
                                                    {{"call", call}, {"kind", "std::invalid_argument"}});
      if (::testing::Test::HasFailure()) return;
    }
  }

  // A contiguous view at an offset (one image of a batch): its pixels start 5 floats into a
  // storage whose other floats are random numbers in [-8, 8), so reading from storage_data()
  // draws those numbers (clipped black or white) instead of the image.
  const Tensor shifted = testing::at_offset(data_of(testing::random_tensor({3, 4}, 595, 0.0f, 1.0f)), 596);
  // The same call on a fresh tensor of the same values: a picture wrong on both is image_svg's own
  // mistake (svg_layout_wrong, svg_gray_wrong), not the offset's.
  const Tensor fresh = data_of(shifted).tensor();
  const auto fresh_svg = observe("image_svg(a fresh (3, 4) image of the same values, 2)", [&] { return image_svg(fresh, 2); });
  const auto shifted_svg = observe("image_svg(a (3, 4) image that is a view at offset 5 of a larger storage, 2)",
                                   [&] { return image_svg(shifted, 2); });
  KILN_JUDGE {
    if (!testing::offset_changes(shifted_svg, fresh_svg, std::equal_to<std::string>())) {
      if (!expect_svg(__FILE__, __LINE__, fresh_svg, data_of(shifted), 2)) return;
    } else {
      if (!expect_svg(__FILE__, __LINE__, shifted_svg, data_of(shifted), 2, "svg_layout_wrong", "svg_offset_ignored"))
        return;
      KILN_FAIL("svg_offset_ignored", {},
                fresh_svg.ok() ? shifted_svg.call() + " and " + fresh_svg.call() + " gave different svgs"
                               : fresh_svg.describe_error() + ", but " + shifted_svg.call() + " returned an svg");
      return;
    }
  }
  if (!shifted_svg.ok() || !fresh_svg.ok()) return;
  // A cell size of 2^30, which the int parameter holds: a (1, 3) image is 3·2^30 = 3221225472
  // wide and its last square is at x = 2^31, past what an int holds. Three squares, a short text.
  const int huge_cell = 1 << 30;
  const Tensor wide = testing::random_tensor({1, 3}, 597, 0.0f, 1.0f);
  const auto wide_svg = observe(fmt::format("image_svg(a (1, 3) image of the run, {})", huge_cell),
                                [&] { return image_svg(wide, huge_cell); });
  KILN_JUDGE {
    if (!expect_svg(__FILE__, __LINE__, wide_svg, data_of(wide), huge_cell, "svg_size_narrowed")) return;
  }
  if (!wide_svg.ok()) return;
  // An image of no rows, (0, 3), is still 2-D: an svg 3·cell_size wide and 0 high, with no squares.
  const Tensor no_rows = Tensor::zeros({0, 3});
  const auto empty_svg = observe("image_svg(a (0, 3) image, 2)", [&] { return image_svg(no_rows, 2); });
  KILN_JUDGE {
    expect_svg(__FILE__, __LINE__, empty_svg, data_of(no_rows), 2);
  }
}

TEST(Data, Histogram) {
  // Ten bins over [0, 1): 0 and 0.05 in bin 0, 0.1 and 0.15 in bin 1, 0.5 and 0.55 in bin 5, 0.95
  // and 0.999 in bin 9.
  struct Case {
    std::string what;
    std::vector<double> values;
    int bins;
    double low, high;
    bool golden = false;  // whether the judge holds counts computed in Python for it
  };
  std::vector<Case> in_range = {
      {"8 values by hand", {0.0, 0.05, 0.1, 0.15, 0.95, 0.999, 0.5, 0.55}, 10, 0.0, 1.0},
      // Four bins of width 1 over [1, 5): 1 and 1.5 in bin 0, 2 and 2.999 in bin 1, 3 in 2, 4.5 and 4.999 in 3.
      {"7 values by hand", {1.0, 1.5, 2.0, 2.999, 3.0, 4.5, 4.999}, 4, 1.0, 5.0},
      // One bin holds everything in range.
      {"4 values in a single bin", {0.0, 0.25, 0.5, 0.999}, 1, 0.0, 1.0},
      // The largest double below 1, over [-1, 1): (v + 1)/2 rounds to 1, but v < high, so it is
      // counted in the last bin, not one past it.
      {"-1, 0, 0.5 and the largest double below 1, over [-1, 1)", {-1.0, 0.0, 0.5, std::nextafter(1.0, 0.0)}, 4, -1.0,
       1.0},
      // The ten lower edges 0, 0.1, ..., 0.9 (as doubles), one in each bin by the header's
      // formula: 0.3·10 is 3.0000000000000004. Dividing by the width instead, 0.3/0.1 is
      // 2.9999999999999996, and 0.3, 0.6 and 0.7 fall one bin low.
      {"the ten bin edges 0, 0.1, ..., 0.9", {0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}, 10, 0.0, 1.0},
  };
  // 10,000 draws of WichmannHill(457428938475) and of a seed of the run, in 10 bins over [0, 1).
  testing::Generator draw(601);
  for (const std::uint64_t seed : {std::uint64_t{457428938475ULL}, draw.next() >> 16}) {
    TrustedWichmannHill g(seed);
    std::vector<double> draws(10000);
    for (double& u : draws) u = g.next();
    in_range.push_back({fmt::format("10,000 draws of WichmannHill({})", seed), draws, 10, 0.0, 1.0});
    if (seed == 457428938475ULL) in_range.back().golden = true;
  }
  // The widest range there is: high - low is the largest double, DBL_MAX, over [-DBL_MAX/2,
  // DBL_MAX/2). Its fractions (v - low)/(high - low) are finite, so each value finds its bin.
  const double widest = std::numeric_limits<double>::max() / 2;
  in_range.push_back({"-DBL_MAX/2, -1e307, 0, 1e307 and DBL_MAX/4 over [-DBL_MAX/2, DBL_MAX/2)",
                      {-widest, -1e307, 0.0, 1e307, widest / 2}, 4, -widest, widest});
  // And 33 values of the run in 7 bins over [-2, 1.5).
  std::vector<double> run_values;
  for (const float v : data_of(testing::random_tensor({33}, 602, -2.0f, 1.5f)).values) run_values.push_back(v);
  in_range.push_back({"33 values of the run", run_values, 7, -2.0, 1.5});
  // No values: every bin counts 0.
  in_range.push_back({"no values", {}, 3, 0.0, 1.0});

  for (const Case& c : in_range) {
    const testing::Params params = {
        {"bins", testing::counted(c.bins, "bin")}, {"low", fmt::format("{}", c.low)}, {"high", fmt::format("{}", c.high)}};
    const auto got = observe(fmt::format("histogram(<{}>, {}, {}, {})", c.what, c.bins, c.low, c.high),
                             [&] { return histogram(c.values, c.bins, c.low, c.high); });
    if (!KILN_EXPECT_OK(got, "histogram_wrong", params)) return;
    KILN_JUDGE {
      // Python's counts for the draws of WichmannHill(457428938475).
      const std::vector<std::int64_t> expected =
          !c.golden ? reference_histogram(c.values, c.bins, c.low, c.high)
                    : std::vector<std::int64_t>{961, 973, 1036, 1018, 1037, 969, 995, 1006, 1035, 970};
      if (*got != expected) {
        KILN_FAIL("histogram_wrong", params,
                  fmt::format("{} gave {}, expected {}", got.call(), list_of(*got), list_of(expected)));
        return;
      }
    }
  }

  // Values outside the range are not counted: over [-1, 3) in 4 bins, -1 and -0.5 go in bin 0, 0
  // and 0.999 in bin 1, 1 in bin 2, 2.5 and 2.999 in bin 3; 3 (the top itself), -1.5 and 7 in none.
  const std::vector<double> mixed = {-1.0, -0.5, 0.0, 0.999, 1.0, 2.5, 2.999, 3.0, -1.5, 7.0};
  const testing::Params params = {{"bins", testing::counted(4, "bin")}, {"low", "-1"}, {"high", "3"}};
  const auto got = observe("histogram({-1, -0.5, 0, 0.999, 1, 2.5, 2.999, 3, -1.5, 7}, 4, -1, 3)",
                           [&] { return histogram(mixed, 4, -1.0, 3.0); });
  if (!KILN_EXPECT_OK(got, "histogram_range_wrong", params)) return;
  KILN_JUDGE {
    const std::vector<std::int64_t> expected = {2, 2, 1, 2};
    if (*got != expected) {
      KILN_FAIL("histogram_range_wrong", params,
                fmt::format("{} gave {}, expected {}", got.call(), list_of(*got), list_of(expected)));
      return;
    }
  }

  // NaN lies in no range, and neither infinity lies in [0, 1): each is left out, alone and among
  // values in range. NaN < low and NaN >= high are both false, so skipping only those two lets it
  // through, to a bin index that is no number.
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<std::vector<double>, std::vector<std::int64_t>>> not_numbers = {
      {{nan}, {0, 0}}, {{0.25, nan, -inf, 0.75, inf, nan}, {1, 1}}};
  for (const auto& [values, expected] : not_numbers) {
    const testing::Params not_a_number_params = {{"bins", testing::counted(2, "bin")}, {"low", "0"}, {"high", "1"}};
    const std::string shown = values.size() == 1 ? "{NaN}" : "{0.25, NaN, -inf, 0.75, inf, NaN}";
    const auto counted = observe(fmt::format("histogram({}, 2, 0, 1)", shown),
                                 [&values] { return histogram(values, 2, 0.0, 1.0); });
    if (!KILN_EXPECT_OK(counted, "histogram_range_wrong", not_a_number_params)) return;
    KILN_JUDGE {
      if (*counted != expected) {
        KILN_FAIL("histogram_range_wrong", not_a_number_params,
                  fmt::format("{} gave {}, expected {}: NaN lies in no range, and is not counted", counted.call(),
                              list_of(*counted), list_of(expected)));
        return;
      }
    }
  }

  // Ranges that hold no bin: 0 or -1 bins, high equal to low, high below low. The values lie
  // outside [1, 1], so that only the check itself can refuse the empty range.
  const std::vector<std::tuple<std::vector<double>, int, double, double>> refused = {
      {{0.5}, 0, 0.0, 1.0}, {{0.5}, -1, 0.0, 1.0}, {{0.5, 2.0}, 4, 1.0, 1.0}, {{0.5, 2.0}, 4, 3.0, 1.0}};
  for (const auto& [values, bins, low, high] : refused) {
    const std::string call = fmt::format("histogram({{{}}}, {}, {}, {})", fmt::join(values, ", "), bins, low, high);
    const auto bad = observe(call, [&] { return histogram(values, bins, low, high); });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, bad, "histogram_arguments_not_checked", {},
                                                    {{"call", call}, {"kind", "std::invalid_argument"}});
      if (::testing::Test::HasFailure()) return;
    }
  }

  // Bounds whose difference is not finite leave the bins no width: -1e308 and 1e308 (high - low
  // overflows to inf, so every value's fraction is 0), then an infinite bound (inf/inf is NaN).
  const std::vector<std::tuple<std::string, double, double>> infinite = {
      {"-1e308, 1e308", -1e308, 1e308}, {"0, inf", 0.0, inf}, {"-inf, 1", -inf, 1.0}};
  for (const auto& [bounds, low, high] : infinite) {
    const std::string call = fmt::format("histogram({{-5e307, 0.5, 5e307}}, 4, {})", bounds);
    const auto bad = observe(call, [&] { return histogram({-5e307, 0.5, 5e307}, 4, low, high); });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, bad, "histogram_width_not_finite", {},
                                                    {{"call", call}});
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace kiln
