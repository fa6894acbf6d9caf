// Module 20 checks for the KCAP format: load_model and predict on models built here, one kind of
// layer at a time and then all together; the damaged files load_model must refuse; predict's
// shape errors. Files are written by the trusted writer of capstone_testing.h, and expected
// logits come from its reading of the same bytes, in double.
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capstone_testing.h"
#include "kiln/capstone.h"
#include "kiln/testing.h"

KILN_OBSERVABLE_ERROR(kiln::FormatError, std::runtime_error);

namespace kiln {
namespace {

using capstone_testing::TLayer;
using testing::data_of;
using testing::observe;
using testing::random_ints;
using testing::random_tensor;
using testing::TensorData;

// Values of the run: `count` floats in [low, high).
std::vector<double> drawn(std::int64_t count, std::uint64_t stream, float low = -1, float high = 1) {
  const std::vector<float> v = data_of(random_tensor({count}, stream, low, high)).values;
  return {v.begin(), v.end()};
}
std::vector<int> codes(std::int64_t count, std::uint64_t stream) {
  std::vector<int> out;
  for (const std::int64_t c : random_ints(static_cast<std::size_t>(count), -127, 128, stream)) out.push_back(static_cast<int>(c));
  return out;
}

TLayer dense(std::uint32_t in, std::uint32_t out, std::uint64_t stream) {
  return {.kind = 1, .in = in, .out = out, .weight = drawn(in * out, stream), .bias = drawn(out, stream + 1)};
}
// A dense layer of 65,536 inputs with weights of a trained layer's size, within ±1/√in = ±1/256.
// Weights of size 1 would make a logit a sum of 65,536 terms near ±1 whose float rounding, in any
// order, reaches the tolerance's 1e-3 (a right predict failing now and then); at this size it is
// a hundred times below it.
TLayer widest_dense(std::uint64_t stream) {
  TLayer l = dense(65536, 1, stream);
  for (double& w : l.weight) w /= 256.0;
  return l;
}
// Sparse layers at the edges of the row starts: a 3 → 3 one whose last row is empty (row starts
// 0, 2, 3, 3), and a 4 → 2 one that stores nothing (nnz 0, row starts 0, 0, 0).
TLayer sparse_last_row_empty() {
  return {.kind = 3, .in = 3, .out = 3, .scale = {0.5, 0.25, 0.125}, .bias = {0.1, -0.1, 0.2}, .code = {3, -2, 5},
          .row_start = {0, 2, 3, 3}, .column = {2, 0, 1}};
}
TLayer sparse_empty() { return {.kind = 3, .in = 4, .out = 2, .scale = {0.5, 0.25}, .bias = {0.1, -0.1}, .row_start = {0, 0, 0}}; }
// A 33,000 → 2 sparse layer storing every entry: 66,000 of them, so that row 1's run from 33,000
// to 65,999, past what 16 bits count. Scales of 1e-3 keep its sums where float rounds far below
// the tolerance.
TLayer sparse_past_16_bits(std::uint64_t stream) {
  TLayer l{.kind = 3, .in = 33000, .out = 2, .scale = {1e-3, 1e-3}, .bias = drawn(2, stream)};
  l.row_start = {0, 33000, 66000};
  for (std::uint32_t j = 0; j < 2; ++j)
    for (std::uint32_t i = 0; i < 33000; ++i) l.column.push_back(i);
  l.code = codes(66000, stream + 1);
  return l;
}
TLayer dense_int8(std::uint32_t in, std::uint32_t out, std::uint64_t stream) {
  return {.kind = 2, .in = in, .out = out, .scale = drawn(out, stream, 0.001f, 0.05f), .bias = drawn(out, stream + 1),
          .code = codes(in * out, stream + 2)};
}
// About half the entries of each row stored, in a shuffled column order, row 1 empty.
TLayer sparse_int8(std::uint32_t in, std::uint32_t out, std::uint64_t stream) {
  TLayer l{.kind = 3, .in = in, .out = out, .scale = drawn(out, stream, 0.001f, 0.05f), .bias = drawn(out, stream + 1)};
  const std::vector<std::int64_t> keep = random_ints(std::size_t{in} * out, 2, stream + 2);
  l.row_start.push_back(0);
  for (std::uint32_t j = 0; j < out; ++j) {
    std::vector<std::uint32_t> row;
    for (std::uint32_t i = 0; i < in; ++i)
      if (j != 1 && keep[std::size_t{j} * in + i]) row.push_back(i);
    if (row.size() > 1) std::swap(row.front(), row.back());  // columns need not be in order
    for (const std::uint32_t i : row) l.column.push_back(i);
    l.row_start.push_back(static_cast<std::uint32_t>(l.column.size()));
  }
  l.code = codes(static_cast<std::int64_t>(l.column.size()), stream + 3);
  return l;
}
TLayer relu() { return {.kind = 4}; }
// A dense_int8 5 → 3 layer whose scales are the smallest there are: 1e-40 and the least float
// above 0 (both subnormal), and the least normal float.
TLayer tiny_scales() {
  TLayer l = dense_int8(5, 3, 2099);
  l.scale = {1e-40f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::min()};
  return l;
}
// A dense_int8 2 → 2 layer whose first row has a scale near the top of float, 1e37, and codes
// [127, -127]: on x [1, 1] that row's sum is 0 and y the bias, 0.5, and on [0.25, 0.125] it is
// 15.875, scaled 1.5875e38, still finite. Each term scaled on its own, 1e37·127 = 1.27e39,
// overflows to ±inf, and the sum is inf - inf = NaN. The second row is ordinary (scale 0.5).
TLayer huge_scale() {
  return {.kind = 2, .in = 2, .out = 2, .scale = {1e37, 0.5}, .bias = {0.5, -0.25}, .code = {127, -127, 3, -2}};
}
// Every entry of a 3 → 2 layer stored: nnz = in·out, the most a sparse layer may hold.
TLayer full_sparse() {
  return {.kind = 3, .in = 3, .out = 2, .scale = {0.5, 0.25}, .bias = {0.1, -0.1}, .code = {3, -2, 5, 1, -7, 4},
          .row_start = {0, 3, 6}, .column = {2, 0, 1, 0, 1, 2}};
}
// A dense 5 → 3 layer, then 63 relus.
std::vector<TLayer> most_layers() {
  std::vector<TLayer> layers = {dense(5, 3, 2095)};
  layers.resize(64, relu());
  return layers;
}

struct Case {
  std::string name;
  std::vector<TLayer> layers;
  std::int64_t rows;
  const char* failure;
  const char* refused = nullptr;  // the failure of a refusal, when not `failure` (a file at a bound of the format)
  std::vector<float> images = {};  // rows × the input width, hand-picked; empty: images of the run
};

// The width of the images a model of these layers takes: that of its first layer that is not a relu.
std::int64_t input_width_of(const std::vector<TLayer>& layers) {
  for (const TLayer& l : layers)
    if (l.kind != 4) return l.in;
  return 0;
}

// Runs the model of `c` on images of the run through load_model and predict, and judges the
// widths and the logits against the trusted reading of the same bytes.
bool judge_case(const Case& c, std::uint64_t stream) {
  const std::vector<std::uint8_t> bytes = capstone_testing::write(c.layers);
  KILN_JUDGE {
    std::string problem;
    if (!capstone_testing::read(bytes, problem)) throw std::logic_error("a check's own model does not read: " + problem);
  }
  const std::int64_t width = input_width_of(c.layers);
  const Tensor x = c.images.empty() ? random_tensor({c.rows, width}, stream, -2.0f, 2.0f) : Tensor({c.rows, width}, c.images);
  const testing::Params params = {{"model", c.name}};
  const auto got = observe(fmt::format("load_model and predict for {} on ({}, {}) images", c.name, c.rows, width),
                           [&] {
                             const capstone::Model m = capstone::load_model(bytes);
                             std::vector<std::int64_t> widths;  // in, out of every layer
                             for (const capstone::Layer& l : m.layers) widths.insert(widths.end(), {l.in, l.out});
                             return std::tuple(m.input_width, m.output_width, capstone::predict(m, x), widths);
                           });
  // A file at a bound refused by load_model (a FormatError) is named by the bound; any other error
  // by the layers' own failure.
  const char* failure = c.failure;
  KILN_JUDGE {
    if (c.refused != nullptr && !got.ok() && got.error().is("kiln::FormatError")) failure = c.refused;
  }
  if (!KILN_EXPECT_OK(got, failure, params)) return false;
  KILN_JUDGE {
    std::string problem;
    const auto trusted = capstone_testing::read(bytes, problem);
    const auto& [input_width, output_width, y, widths] = *got;
    if (input_width != trusted->input_width || output_width != trusted->output_width) {
      KILN_FAIL("widths_wrong", params,
                fmt::format("load_model gave input_width {} and output_width {}; the file's layers give {} and {}",
                            input_width, output_width, trusted->input_width, trusted->output_width));
      return false;
    }
    // A relu's in and out are the width it passes through: a leading relu's, the first weighted
    // layer's input.
    std::vector<std::int64_t> expected_widths;
    std::int64_t through = trusted->input_width;
    for (const auto& layer : trusted->layers) {
      if (layer.kind != 4) through = layer.out;  // a relu (kind 4) passes `through` on unchanged
      expected_widths.insert(expected_widths.end(),
                             {layer.kind == 4 ? through : std::int64_t{layer.in}, through});
    }
    if (widths != expected_widths) {
      KILN_FAIL("layer_widths_wrong", params,
                fmt::format("load_model gave the layers' in and out [{}]; the file's layers give [{}]",
                            fmt::join(widths, ", "), fmt::join(expected_widths, ", ")));
      return false;
    }
    const TensorData xd = data_of(x);
    const std::vector<double> want =
        capstone_testing::logits(*trusted, std::vector<double>(xd.values.begin(), xd.values.end()), c.rows);
    const std::string wrong = capstone_testing::compare_logits(want, y, c.rows, trusted->output_width, c.name);
    if (wrong.empty()) return true;
    KILN_FAIL(c.failure, params, wrong);
    return false;
  }
  return true;
}

TEST(Capstone, LoadAndPredict) {
  // The hand-worked model of the chapter: y = W x + b with W = [[1, 2, 3], [-1, 0, 1]], b = [0.5, -1].
  const TLayer hand{.kind = 1, .in = 3, .out = 2, .weight = {1, 2, 3, -1, 0, 1}, .bias = {0.5, -1}};
  {
    const std::vector<std::uint8_t> bytes = capstone_testing::write({hand});
    const Tensor x({2, 3}, {1, 1, 1, 2, 0, -1});
    const auto got = observe("predict(load_model(the hand-worked 3 → 2 dense model), [[1, 1, 1], [2, 0, -1]])",
                             [&] { return capstone::predict(capstone::load_model(bytes), x); });
    const testing::Params params = {{"model", "the hand-worked 3 → 2 dense model"}};
    if (!KILN_EXPECT_OK(got, "dense_differs", params)) return;
    if (!KILN_EXPECT_CLOSE_REL(got, data_of({2, 2}, {6.5f, -1.0f, -0.5f, -4.0f}), 1e-5, 0.0, "dense_differs", params)) return;
  }
  const std::vector<Case> cases = {
      {"a 13 → 7 dense layer", {dense(13, 7, 2001)}, 5, "dense_differs"},
      {"a 13 → 7 dense_int8 layer", {dense_int8(13, 7, 2011)}, 5, "int8_differs"},
      {"a 13 → 7 sparse_int8 layer", {sparse_int8(13, 7, 2021)}, 5, "sparse_differs"},
      // Scales hold any finite value above 0: the row's sum is scaled once, not every term.
      {"a 2 → 2 dense_int8 layer whose row 0 has scale 1e37 and codes [127, -127], on images [[1, 1], [0.25, 0.125]]",
       {huge_scale()}, 2, "int8_scale_per_term", "scale_bound_refused", {1, 1, 0.25f, 0.125f}},
      {"dense 9 → 6, relu, dense 6 → 4, relu", {dense(9, 6, 2031), relu(), dense(6, 4, 2041), relu()}, 4, "relu_differs"},
      {"relu, dense 5 → 3 (a relu first)", {relu(), dense(5, 3, 2051)}, 3, "relu_differs"},
      // Two relus first: both take the first weighted layer's width, not only the one before it.
      {"relu, relu, dense 5 → 3 (two relus first)", {relu(), relu(), dense(5, 3, 2052)}, 3, "relu_differs"},
      {"dense 29 → 17, relu, dense_int8 17 → 11, relu, sparse_int8 11 → 10",
       {dense(29, 17, 2061), relu(), dense_int8(17, 11, 2071), relu(), sparse_int8(11, 10, 2081)},
       7,
       "layers_differ"},
      {"a 3 → 2 sparse_int8 layer storing all 6 entries", {full_sparse()}, 3, "sparse_differs"},
      {"a 3 → 3 sparse_int8 layer whose last row is empty (row starts 0, 2, 3, 3)", {sparse_last_row_empty()}, 3,
       "sparse_differs", "sparse_bound_refused"},
      {"a 4 → 2 sparse_int8 layer that stores nothing (nnz 0)", {sparse_empty()}, 3, "sparse_differs",
       "sparse_bound_refused"},
      {"a 33,000 → 2 sparse_int8 layer storing all 66,000 entries (past 65,535)", {sparse_past_16_bits(2098)}, 2,
       "sparse_differs"},
      // Scales at the small end of "finite and greater than 0": subnormal ones are not refused.
      {"a 5 → 3 dense_int8 layer with the scales 1e-40, 1.4e-45 and 1.18e-38 (two subnormal)",
       {tiny_scales()}, 3, "int8_differs", "scale_bound_refused"},
      {"dense 5 → 3 and 63 relus: 64 layers, the most a file may have", most_layers(), 3, "relu_differs",
       "layer_count_bound_refused"},
      // The widths' bounds, both included: 65,536 outputs, 1 output and 65,536 inputs (each
      // 65,536 wide with 1 on the other side, 65,536 weights).
      {"a 1 → 65,536 dense layer, the most outputs a layer may give", {dense(1, 65536, 2091)}, 2, "dense_differs",
       "width_bound_refused"},
      {"a 6 → 1 dense layer, the narrowest", {dense(6, 1, 2093)}, 3, "dense_differs", "width_bound_refused"},
      {"a 65,536 → 1 dense layer, the most inputs a layer may take", {widest_dense(2097)}, 2, "dense_differs",
       "width_bound_refused"},
  };
  std::uint64_t stream = 2101;
  for (const Case& c : cases)
    if (!judge_case(c, stream++)) return;

  // Images that are a contiguous view at an offset: (4, 5) images of the run 5 floats into a
  // storage of other numbers, as a slice of a larger batch is. They start at data(), not at the
  // storage's first float.
  const std::vector<std::uint8_t> bytes = capstone_testing::write({dense(5, 3, 2121)});
  const Tensor shifted = testing::at_offset(data_of(random_tensor({4, 5}, 2122, -2.0f, 2.0f)), 2123);
  const TensorData shifted_values = data_of(shifted);
  // The same call on a fresh tensor of the same values: only logits that differ between the two
  // are the offset's fault; logits wrong on both are predict's own (a dense layer's).
  const auto fresh = observe("predict(load_model(a 5 → 3 dense model), the same (4, 5) images in a fresh tensor)",
                             [&] { return capstone::predict(capstone::load_model(bytes), shifted_values.tensor()); });
  const auto got = observe("predict(load_model(a 5 → 3 dense model), (4, 5) images that are a contiguous view at offset 5)",
                           [&] { return capstone::predict(capstone::load_model(bytes), shifted); });
  KILN_JUDGE {
    const auto gave = [](const auto& o) {
      return o.ok() ? "gave " + testing::list(o->values) : "threw " + o.error().kind() + ": " + o.error().message;
    };
    const auto same = [](const TensorData& a, const TensorData& b) { return testing::compare(a, b, 1e-6, 1e-6).close; };
    if (testing::offset_changes(got, fresh, same)) {
      KILN_FAIL("predict_offset_ignored", {}, fmt::format("{} {}, where {} {}", got.call(), gave(got), fresh.call(), gave(fresh)));
      return;
    }
    const testing::Params params = {{"model", "a 5 → 3 dense model"}};
    if (!KILN_EXPECT_OK(fresh, "dense_differs", params)) return;
    std::string problem;
    const auto trusted = capstone_testing::read(bytes, problem);
    const std::vector<double> want = capstone_testing::logits(
        *trusted, std::vector<double>(shifted_values.values.begin(), shifted_values.values.end()), 4);
    const std::string wrong = capstone_testing::compare_logits(want, *fresh, 4, 3, "a 5 → 3 dense model");
    if (!wrong.empty()) KILN_FAIL("dense_differs", params, wrong);
  }
}

// A valid small model to damage: dense_int8 4 → 3, relu, sparse_int8 3 → 2 (offsets below).
std::vector<TLayer> small_model() {
  TLayer a = dense_int8(4, 3, 2201);
  TLayer b{.kind = 3, .in = 3, .out = 2, .scale = {0.5, 0.25}, .bias = {0.1, -0.1}, .code = {3, -2, 5},
           .row_start = {0, 2, 3}, .column = {0, 2, 1}};
  return {a, relu(), b};
}

struct Damage {
  std::string name;
  std::vector<std::uint8_t> bytes;
  std::int64_t offset;  // the byte the error must name; -1: any (judge only: 0 in the observed program)
  // A u32 of 2^31 or more that the file holds, which the error must never show read as a signed
  // number; 0: none (judge only).
  std::uint32_t large = 0;
  // Where the file holds two wrong values, the byte of the later one, which the error must not
  // name in place of the first; -1: one wrong value (judge only).
  std::int64_t later = -1;
  // The failure that names the later byte (judge only): a layer's out judged before its in, or
  // a sparse layer's row starts or columns judged only once the arrays after them are read.
  const char* out_of_order = "judged_out_of_file_order";
};

std::vector<std::uint8_t> patched(std::vector<std::uint8_t> bytes, std::size_t at, std::vector<std::uint8_t> with) {
  for (std::size_t k = 0; k < with.size(); ++k) bytes[at + k] = with[k];
  return bytes;
}

// The number `value` read as a signed 32-bit integer, as written in a message: negative, or
// sign-extended to 64 bits and shown unsigned. "" when the message shows neither. Judging only.
std::string signed_reading_in(const std::string& said, std::uint32_t value) {
  const auto as_int = static_cast<std::int32_t>(value);
  const auto widened = static_cast<std::uint64_t>(static_cast<std::int64_t>(as_int));
  for (const std::string& reading : {std::to_string(widened), std::to_string(as_int)}) {
    // A whole number of the message: no digit just before or after it.
    for (std::size_t at = said.find(reading); at != std::string::npos; at = said.find(reading, at + 1)) {
      const std::size_t end = at + reading.size();
      const bool digit_before = at > 0 && std::isdigit(static_cast<unsigned char>(said[at - 1]));
      const bool digit_after = end < said.size() && std::isdigit(static_cast<unsigned char>(said[end]));
      if (!digit_before && !digit_after) return reading;
    }
  }
  return "";
}

TEST(Capstone, RejectsDamage) {
  const std::vector<TLayer> model = small_model();
  const std::vector<std::uint8_t> good = capstone_testing::write(model);
  // Layout: 0 magic, 4 version, 8 count, 12 kind of layer 0, 16 in, 20 out, 24 scales (12),
  // 36 codes (12), 48 biases (12), 60 kind of layer 1 (relu), 64 kind of layer 2, 68 in, 72 out,
  // 76 nnz, 80 scales (8), 88 row starts (12), 100 columns (6), 106 codes (3), 109 biases (8), 117 end.
  std::vector<Damage> cases = {
      {"a file whose magic is KCAQ", patched(good, 3, {'Q'}), KILN_JUDGE_ONLY(0)},
      {"version 2", capstone_testing::write(model, 2), KILN_JUDGE_ONLY(4)},
      // Below 1 as well as above it: the format has version 1 only, not "1 or older".
      {"version 0", capstone_testing::write(model, 0), KILN_JUDGE_ONLY(4)},
      {"a layer count of 0", patched(good, 8, {0, 0, 0, 0}), KILN_JUDGE_ONLY(8)},
      {"a layer count of 65", patched(good, 8, {65, 0, 0, 0}), KILN_JUDGE_ONLY(8)},
      {"layer 0 of kind 9", patched(good, 12, {9}), KILN_JUDGE_ONLY(12)},
      {"layer 0 of kind 0", patched(good, 12, {0}), KILN_JUDGE_ONLY(12)},
      {"layer 0 of kind 5", patched(good, 12, {5}), KILN_JUDGE_ONLY(12)},
      {"layer 0 taking 0 inputs", patched(good, 16, {0}), KILN_JUDGE_ONLY(16)},
      {"layer 0 giving 0 outputs", patched(good, 20, {0}), KILN_JUDGE_ONLY(20)},
      {"layer 2 giving 0 outputs", patched(good, 72, {0}), KILN_JUDGE_ONLY(72)},
      {"layer 2 taking 4 inputs after a layer that gives 3", patched(good, 68, {4}), KILN_JUDGE_ONLY(68)},
      // Two wrong values in one layer: the first in file order, the in, is named, not the out.
      {"layer 0 taking 0 inputs and giving 0 outputs", patched(patched(good, 16, {0}), 20, {0}), KILN_JUDGE_ONLY(16),
       KILN_JUDGE_ONLY(0u), KILN_JUDGE_ONLY(20)},
      {"layer 0 taking 65,537 inputs and giving 0 outputs", patched(patched(good, 16, {1, 0, 1, 0}), 20, {0}),
       KILN_JUDGE_ONLY(16), KILN_JUDGE_ONLY(0u), KILN_JUDGE_ONLY(20)},
      {"layer 2 taking 4 inputs after a layer that gives 3, and giving 0 outputs", patched(patched(good, 68, {4}), 72, {0}),
       KILN_JUDGE_ONLY(68), KILN_JUDGE_ONLY(0u), KILN_JUDGE_ONLY(72)},
      // A wrong in and no out at all: the in is judged before the out is read.
      {"layer 0 taking 0 inputs, the file cut after them (20 bytes)",
       [&] {
         std::vector<std::uint8_t> b = patched(good, 16, {0});
         b.resize(20);
         return b;
       }(),
       KILN_JUDGE_ONLY(16), KILN_JUDGE_ONLY(0u), KILN_JUDGE_ONLY(20)},
      {"layer 0 with a scale of 0", patched(good, 28, {0, 0, 0, 0}), KILN_JUDGE_ONLY(28)},
      {"layer 0 with a negative scale", patched(good, 24, {0, 0, 0x80, 0xbf}), KILN_JUDGE_ONLY(24)},
      {"layer 2 storing 7 entries, more than its 3 × 2", patched(good, 76, {7}), KILN_JUDGE_ONLY(76)},
      {"layer 2 with row starts 0, 4, 3", patched(good, 92, {4}), KILN_JUDGE_ONLY(92)},
      {"layer 2 with a first row start of 1", patched(good, 88, {1}), KILN_JUDGE_ONLY(88)},
      {"layer 2 with column 3 in a layer of 3 inputs", patched(good, 102, {3, 0}), KILN_JUDGE_ONLY(102)},
      {"layer 2 with a first column of 3 in a layer of 3 inputs", patched(good, 100, {3, 0}), KILN_JUDGE_ONLY(100)},
      // A 2 → 3 sparse layer: 12 header bytes, kind, in, out, nnz, 3 scales, then row starts at 40.
      {"a sparse layer with row starts 0, 2, 1, 3 for its 3 entries",
       capstone_testing::write({TLayer{.kind = 3, .in = 2, .out = 3, .scale = {0.5, 0.5, 0.5}, .bias = {0, 0, 0},
                                       .code = {1, 2, 3}, .row_start = {0, 2, 1, 3}, .column = {0, 1, 0}}}),
       KILN_JUDGE_ONLY(48)},
      // A wrong row start or column in a file that ends later in the same layer (after the cases
      // that judge each alone, so that a rule not checked at all is named as such): each is judged
      // as it is read, so it is named at its own byte, not where the file ends (the columns at
      // 100, the codes at 106), as a reader that reads all three arrays before judging them does.
      {"layer 2 with row starts 0, 4, 3, the file cut inside its columns (after 101 bytes)",
       [&] {
         std::vector<std::uint8_t> b = patched(good, 92, {4});
         b.resize(101);
         return b;
       }(),
       KILN_JUDGE_ONLY(92), KILN_JUDGE_ONLY(0u), KILN_JUDGE_ONLY(100), KILN_JUDGE_ONLY("sparse_judged_after_later_arrays")},
      {"layer 2 with column 3 in a layer of 3 inputs, the file cut inside its codes (after 107 bytes)",
       [&] {
         std::vector<std::uint8_t> b = patched(good, 102, {3, 0});
         b.resize(107);
         return b;
       }(),
       KILN_JUDGE_ONLY(102), KILN_JUDGE_ONLY(0u), KILN_JUDGE_ONLY(106), KILN_JUDGE_ONLY("sparse_judged_after_later_arrays")},
      {"one byte after the last layer", [&] { auto b = good; b.push_back(0); return b; }(), KILN_JUDGE_ONLY(117)},
      {"a relu as the only layer", capstone_testing::write({relu()}), KILN_JUDGE_ONLY(-1)},
      {"layer 0 giving 65,537 outputs", patched(good, 20, {1, 0, 1, 0}), KILN_JUDGE_ONLY(20)},
      {"layer 0 taking 65,537 inputs", patched(good, 16, {1, 0, 1, 0}), KILN_JUDGE_ONLY(16)},
      {"layer 0 with an infinite scale", patched(good, 24, {0, 0, 0x80, 0x7f}), KILN_JUDGE_ONLY(24)},
      {"layer 0 with a NaN scale", patched(good, 24, {0, 0, 0xc0, 0x7f}), KILN_JUDGE_ONLY(24)},
      {"layer 2 with row starts 0, 2, 2 for its 3 entries", patched(good, 96, {2}), KILN_JUDGE_ONLY(96)},
      // 65,536 · 65,536 wraps to 0 in 32 bits: a reader that multiplies in u32 reads no weights,
      // then exactly the biases that follow, and accepts the file.
      {"a 65,536 × 65,536 dense layer followed by only its 65,536 biases",
       [] {
         std::vector<std::uint8_t> b = {'K', 'C', 'A', 'P', 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0};
         b.resize(24 + 4 * 65536, 0);
         return b;
       }(),
       KILN_JUDGE_ONLY(24)},
      {"a 65,536 × 65,536 dense layer in a 36-byte file",
       [] {
         std::vector<std::uint8_t> b = {'K', 'C', 'A', 'P', 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0};
         b.resize(36, 0);
         return b;
       }(),
       KILN_JUDGE_ONLY(-1)},
  };
  // Every file cut short: after 0, 3, 4, 7, 8 bytes, inside each layer's numbers, one byte before
  // the end. The error names the start of the value or array that does not fit: the magic at 0,
  // the version at 4, the count at 8, then (layout above) the kind at 12, the scales at 24, ...
  const std::vector<std::pair<std::size_t, std::int64_t>> cuts = {
      {0, 0},   {3, 0},   {4, 4},   {7, 4},   {8, 8},   {11, 8},   {14, 12},  {30, 24}, {40, 36},
      {55, 48}, {62, 60}, {70, 68}, {79, 76}, {90, 88}, {101, 100}, {107, 106}, {116, 109}};
  for (const auto& [length, at] : cuts) {
    cases.push_back({fmt::format("the file cut after {} of its {} bytes", length, good.size()),
                     std::vector<std::uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(length)),
                     KILN_JUDGE_ONLY(at)});
  }
  // u32 is unsigned: values of 2^31 and more are large positive numbers. A layer count, a kind
  // and an input width at or above 2^31 are refused where they stand, naming the number itself;
  // and a 65,536 → 65,536 sparse layer may store nnz = 2^31 entries (in·out is 2^32), so a file
  // that ends after that nnz is refused at its scales, byte 28, which it lacks, not at the nnz.
  const std::vector<std::uint8_t> sparse_header = {'K', 'C', 'A', 'P', 1, 0, 0, 0, 1, 0, 0, 0, 3, 0,
                                                   0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0x80};
  cases.push_back({"a layer count of 2,147,483,648 (2^31)", patched(good, 8, {0, 0, 0, 0x80}), KILN_JUDGE_ONLY(8),
                   KILN_JUDGE_ONLY(0x80000000u)});
  cases.push_back({"layer 0 of kind 2,147,483,649 (2^31 + 1)", patched(good, 12, {1, 0, 0, 0x80}), KILN_JUDGE_ONLY(12),
                   KILN_JUDGE_ONLY(0x80000001u)});
  cases.push_back({"layer 0 taking 2,147,483,648 inputs", patched(good, 16, {0, 0, 0, 0x80}), KILN_JUDGE_ONLY(16),
                   KILN_JUDGE_ONLY(0x80000000u)});
  cases.push_back({"a 65,536 → 65,536 sparse layer storing 2^31 entries in a 28-byte file, which ends before its scales",
                   sparse_header, KILN_JUDGE_ONLY(28), KILN_JUDGE_ONLY(0x80000000u)});
  if (good.size() != 117) throw std::logic_error("the damaged files' offsets assume a 117-byte model");
  // First the file undamaged: a reader that refuses everything refuses nothing worth knowing.
  const auto whole = observe("load_model(the undamaged 117-byte model: dense_int8 4 → 3, relu, sparse_int8 3 → 2)", [&] {
    const capstone::Model m = capstone::load_model(good);
    return std::tuple(std::int64_t(m.layers.size()), m.input_width, m.output_width);
  });
  if (!KILN_EXPECT_OK(whole, "valid_refused")) return;
  KILN_JUDGE {
    if (*whole != std::tuple(std::int64_t{3}, std::int64_t{4}, std::int64_t{2})) {
      const auto& [layers, inputs, outputs] = *whole;
      KILN_FAIL("valid_refused", {},
                fmt::format("load_model gave {}, input_width {} and output_width {}; expected 3 layers, 4 and 2",
                            capstone_testing::counted(layers, "layer"), inputs, outputs));
      return;
    }
  }
  for (const Damage& d : cases) {
    const auto got = observe("load_model(" + d.name + ")", [&] {
      const capstone::Model m = capstone::load_model(d.bytes);
      return std::int64_t(m.layers.size());
    });
    KILN_JUDGE {
      const testing::Params params = {{"case", d.name}};
      if (got.ok()) {
        KILN_FAIL("damage_accepted", params, "load_model returned a model of " + capstone_testing::counted(*got, "layer"));
        return;
      }
      if (!got.error().is("kiln::FormatError")) {
        KILN_FAIL("damage_accepted", params,
                  fmt::format("load_model threw {} ({}), not kiln::FormatError", got.error().kind(), got.error().message));
        return;
      }
      const std::string& said = got.error().message;
      if (const std::string seen = d.large != 0 ? signed_reading_in(said, d.large) : ""; !seen.empty()) {
        KILN_FAIL("u32_read_signed", {{"case", d.name}, {"value", std::to_string(d.large)}, {"seen", seen}},
                  "the error says: " + said);
        return;
      }
      // The message starts "byte N:", N the offset of the value that is wrong.
      const std::string named = said.rfind("byte ", 0) == 0 ? said.substr(5, said.find_first_not_of("0123456789", 5) - 5) : "";
      const bool starts_with_byte = said.size() > 5 + named.size() && said[5 + named.size()] == ':';
      if (d.later >= 0 && starts_with_byte && named == std::to_string(d.later)) {
        KILN_FAIL(d.out_of_order,
                  {{"case", d.name}, {"offset", std::to_string(d.offset)}, {"later", std::to_string(d.later)}},
                  "the error says: " + said);
        return;
      }
      if (d.offset >= 0 && (named != std::to_string(d.offset) || !starts_with_byte)) {
        KILN_FAIL("damage_offset", {{"case", d.name}, {"offset", std::to_string(d.offset)}},
                  "the error says: " + said);
        return;
      }
    }
  }
}

TEST(Capstone, PredictShapes) {
  const std::vector<std::uint8_t> bytes = capstone_testing::write({dense(3, 2, 2301)});
  // Images of the right shape must go through: an error is only for a wrong one.
  const Tensor right = random_tensor({2, 3}, 2304);
  const auto fine = observe("predict(a model of 3 inputs, (2, 3) images)",
                            [&] { return capstone::predict(capstone::load_model(bytes), right).shape(); });
  if (!KILN_EXPECT_OK(fine, "predict_shape_error")) return;
  const Tensor wide = random_tensor({2, 4}, 2302);
  const Tensor flat = random_tensor({3}, 2303);
  KILN_EXPECT_THROWS(capstone::predict(capstone::load_model(bytes), wide), ShapeError, "predict_shape_error", {"(2, 4)"});
  KILN_EXPECT_THROWS(capstone::predict(capstone::load_model(bytes), flat), ShapeError, "predict_shape_error", {"(3)"});
  if (::testing::Test::HasFailure()) return;
  // An empty batch, (0, 3) images: rows of the right width, none of them; (0, 2) logits, no error.
  const Tensor none = Tensor::zeros({0, 3});
  const auto empty = observe("predict(a model of 3 inputs, (0, 3) images)",
                             [&] { return capstone::predict(capstone::load_model(bytes), none); });
  if (!KILN_EXPECT_OK(empty, "empty_batch_refused")) return;
  KILN_JUDGE {
    if (empty->shape != Shape{0, 2})
      KILN_FAIL("empty_batch_refused", {}, empty.call() + " has shape " + to_string(empty->shape) + ", expected (0, 2)");
  }
}

}  // namespace
}  // namespace kiln
