// Trusted code for module 20's checks: a KCAP writer and reader of their own (never the
// student's load_model, nor the given save_model), the layers' formula in double, and the
// Fashion-MNIST test set read with the given gunzip and checked against its known sums.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/capstone.h"
#include "kiln/data.h"
#include "kiln/testing.h"

namespace kiln::capstone_testing {

// A layer as the checks build it; kind 1 to 4 as in the file (others to build damaged files).
struct TLayer {
  std::uint32_t kind = 4;
  std::uint32_t in = 0, out = 0;
  std::vector<double> weight, scale, bias;  // weight: dense (out·in)
  std::vector<int> code;                    // dense_int8 (out·in), sparse_int8 (nnz)
  std::vector<std::uint32_t> row_start;
  std::vector<std::uint32_t> column;
};

// "1 layer", "3 layers", "1 entry", "2 entries".
using testing::counted;

// ---- Writing -------------------------------------------------------------------------------------

inline void put_u(std::vector<std::uint8_t>& out, std::uint64_t value, int bytes) {
  for (int k = 0; k < bytes; ++k) out.push_back(static_cast<std::uint8_t>(value >> (8 * k)));
}
inline void put_f(std::vector<std::uint8_t>& out, double value) {
  const float f = static_cast<float>(value);
  std::uint32_t bits;
  std::memcpy(&bits, &f, 4);
  put_u(out, bits, 4);
}

inline std::vector<std::uint8_t> write(const std::vector<TLayer>& layers, std::uint32_t version = 1) {
  std::vector<std::uint8_t> out = {'K', 'C', 'A', 'P'};
  put_u(out, version, 4);
  put_u(out, layers.size(), 4);
  for (const TLayer& l : layers) {
    put_u(out, l.kind, 4);
    if (l.kind == 4) continue;
    put_u(out, l.in, 4);
    put_u(out, l.out, 4);
    if (l.kind == 1) {
      for (double w : l.weight) put_f(out, w);
    } else if (l.kind == 2) {
      for (double s : l.scale) put_f(out, s);
      for (int c : l.code) put_u(out, static_cast<std::uint8_t>(static_cast<std::int8_t>(c)), 1);
    } else if (l.kind == 3) {
      put_u(out, l.code.size(), 4);
      for (double s : l.scale) put_f(out, s);
      for (std::uint32_t r : l.row_start) put_u(out, r, 4);
      for (std::uint32_t c : l.column) put_u(out, c, 2);
      for (int c : l.code) put_u(out, static_cast<std::uint8_t>(static_cast<std::int8_t>(c)), 1);
    }
    for (double b : l.bias) put_f(out, b);
  }
  return out;
}

// ---- Reading -------------------------------------------------------------------------------------

// A model as the trusted reader understood it, its numbers as the file's float32 values.
struct TModel {
  std::vector<TLayer> layers;
  std::int64_t input_width = 0, output_width = 0;
};

// The trusted reading of a KCAP file: the model, or what is wrong with the file (in `problem`).
inline std::optional<TModel> read(const std::vector<std::uint8_t>& bytes, std::string& problem) {
  std::size_t at = 0;
  bool ok = true;
  auto fail = [&](const std::string& what) {
    if (ok) problem = fmt::format("byte {}: {}", at, what);
    ok = false;
  };
  auto u = [&](int width) -> std::uint64_t {
    if (!ok) return 0;
    if (bytes.size() - at < static_cast<std::size_t>(width)) {
      fail("the file ends after " + counted(bytes.size(), "byte"));
      return 0;
    }
    std::uint64_t v = 0;
    for (int k = 0; k < width; ++k) v |= std::uint64_t{bytes[at + static_cast<std::size_t>(k)]} << (8 * k);
    at += static_cast<std::size_t>(width);
    return v;
  };
  auto f = [&]() -> double {
    const auto bits = static_cast<std::uint32_t>(u(4));
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  };
  auto room = [&](std::uint64_t count, std::uint64_t size) {
    if (ok && count > (bytes.size() - at) / size) fail("the file ends after " + counted(bytes.size(), "byte"));
    return ok;
  };
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "KCAP", 4) != 0) fail("not KCAP");
  at = 4;
  if (u(4) != 1 && ok) fail("not version 1");
  const std::uint64_t count = u(4);
  if (ok && (count < 1 || count > 64)) fail(counted(count, "layer"));
  TModel m;
  std::uint64_t width = 0;
  for (std::uint64_t l = 0; ok && l < count; ++l) {
    TLayer layer;
    layer.kind = static_cast<std::uint32_t>(u(4));
    if (ok && (layer.kind < 1 || layer.kind > 4)) fail(fmt::format("layer {} has kind {}", l, layer.kind));
    if (!ok) break;
    if (layer.kind == 4) {
      m.layers.push_back(layer);
      continue;
    }
    layer.in = static_cast<std::uint32_t>(u(4));
    layer.out = static_cast<std::uint32_t>(u(4));
    if (ok && (layer.in < 1 || layer.in > 65536 || layer.out < 1 || layer.out > 65536))
      fail(fmt::format("layer {} is {} → {}", l, layer.in, layer.out));
    if (ok && width != 0 && layer.in != width) fail(fmt::format("layer {} takes {} where {} come", l, layer.in, width));
    const std::uint64_t in = layer.in, out = layer.out;
    auto scales = [&] {
      if (!room(out, 4)) return;
      for (std::uint64_t j = 0; j < out; ++j) {
        const double s = f();
        if (!(std::isfinite(s) && s > 0)) fail(fmt::format("layer {} has scale {}", l, s));
        layer.scale.push_back(s);
      }
    };
    if (ok && layer.kind == 1 && room(in * out, 4))
      for (std::uint64_t k = 0; k < in * out; ++k) layer.weight.push_back(f());
    if (ok && layer.kind == 2) {
      scales();
      if (room(in * out, 1))
        for (std::uint64_t k = 0; k < in * out; ++k) layer.code.push_back(static_cast<std::int8_t>(u(1)));
    }
    if (ok && layer.kind == 3) {
      const std::uint64_t nnz = u(4);
      if (ok && nnz > in * out) fail(fmt::format("layer {} stores {}", l, counted(nnz, "entry", "entries")));
      scales();
      if (room(out + 1, 4))
        for (std::uint64_t j = 0; j <= out; ++j) layer.row_start.push_back(static_cast<std::uint32_t>(u(4)));
      for (std::uint64_t j = 0; ok && j <= out; ++j) {
        const std::uint64_t s = layer.row_start[j];
        if ((j == 0 && s != 0) || (j == out && s != nnz) || (j > 0 && s < layer.row_start[j - 1]) || s > nnz)
          fail(fmt::format("layer {} has row start {} = {}", l, j, s));
      }
      if (room(nnz, 2))
        for (std::uint64_t e = 0; e < nnz; ++e) {
          layer.column.push_back(static_cast<std::uint32_t>(u(2)));
          if (layer.column.back() >= in) fail(fmt::format("layer {} has column {}", l, layer.column.back()));
        }
      if (room(nnz, 1))
        for (std::uint64_t e = 0; e < nnz; ++e) layer.code.push_back(static_cast<std::int8_t>(u(1)));
    }
    if (room(out, 4))
      for (std::uint64_t j = 0; j < out; ++j) layer.bias.push_back(f());
    if (!ok) break;
    if (width == 0) m.input_width = layer.in;
    width = layer.out;
    m.output_width = layer.out;
    m.layers.push_back(layer);
  }
  if (ok && width == 0) fail("every layer is relu");
  if (ok && at != bytes.size()) fail(counted(bytes.size() - at, "byte") + " after the last layer");
  if (!ok) return std::nullopt;
  return m;
}

// The logits of `count` images of `width` pixels (row-major), in double.
inline std::vector<double> logits(const TModel& m, std::vector<double> x, std::int64_t count) {
  std::int64_t width = m.input_width;
  for (const TLayer& l : m.layers) {
    if (l.kind == 4) {
      for (double& v : x) v = std::max(v, 0.0);
      continue;
    }
    std::vector<double> y(static_cast<std::size_t>(count) * l.out);
    for (std::int64_t n = 0; n < count; ++n) {
      const double* xr = x.data() + n * width;
      for (std::uint32_t j = 0; j < l.out; ++j) {
        double sum = 0;
        if (l.kind == 1) {
          for (std::uint32_t i = 0; i < l.in; ++i) sum += l.weight[std::size_t{j} * l.in + i] * xr[i];
        } else if (l.kind == 2) {
          for (std::uint32_t i = 0; i < l.in; ++i) sum += l.code[std::size_t{j} * l.in + i] * xr[i];
          sum *= l.scale[j];
        } else {
          for (std::uint32_t e = l.row_start[j]; e < l.row_start[j + 1]; ++e) sum += l.code[e] * xr[l.column[e]];
          sum *= l.scale[j];
        }
        y[static_cast<std::size_t>(n) * l.out + j] = sum + l.bias[j];
      }
    }
    x = std::move(y);
    width = l.out;
  }
  return x;
}

// "" when `got` (count, outputs) are the model's logits within the capstone's tolerance,
// 1e-3·(1 + the row's largest logit - its smallest) + 1e-6·(the row's largest |logit|): a
// shift of every logit by one constant (a large bias) widens it by almost nothing, so no constant
// answer fits; else the first element that is not.
inline std::string compare_logits(const std::vector<double>& want, const testing::TensorData& got, std::int64_t count,
                                  std::int64_t outputs, const std::string& of) {
  if (got.shape != Shape{count, outputs})
    return fmt::format("{}: the logits have shape {}, expected ({}, {})", of, to_string(got.shape), count, outputs);
  for (std::int64_t n = 0; n < count; ++n) {
    const auto row = want.begin() + n * outputs;
    const auto [low, high] = std::minmax_element(row, row + outputs);
    const double allowed = 1e-3 * (1 + *high - *low) + 1e-6 * std::max(std::fabs(*low), std::fabs(*high));
    for (std::int64_t j = 0; j < outputs; ++j) {
      const double w = want[static_cast<std::size_t>(n * outputs + j)], g = got.values[static_cast<std::size_t>(n * outputs + j)];
      if (!(std::fabs(g - w) <= allowed))
        return fmt::format("{}: logit [{}, {}] is {:.7g} where the model's layers give {:.7g}", of, n, j, g, w);
    }
  }
  return "";
}

// ---- Fashion-MNIST's test set ------------------------------------------------------------------

struct TestSet {
  std::vector<std::uint8_t> pixels;  // 10,000 × 784
  std::vector<int> labels;           // 10,000
};

inline constexpr const char* kFashionDir = "/usr/share/datasets/fashion-mnist/";

// The test set, read once; nullptr with `why` when it is not installed or not the known file.
inline const TestSet* fashion_test(std::string& why) {
  static std::string problem;
  static const std::unique_ptr<TestSet> set = [] {
    auto bytes = [](const std::string& name) -> std::vector<std::uint8_t> {
      const std::string path = std::string(kFashionDir) + name;
      std::ifstream in(path, std::ios::binary);
      if (!in) return {};
      return gunzip(std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), path);
    };
    const std::vector<std::uint8_t> images = bytes("t10k-images-idx3-ubyte.gz");
    const std::vector<std::uint8_t> labels = bytes("t10k-labels-idx1-ubyte.gz");
    std::int64_t pixel_sum = 0, label_sum = 0;
    for (std::size_t i = 16; i < images.size(); ++i) pixel_sum += images[i];
    for (std::size_t i = 8; i < labels.size(); ++i) label_sum += labels[i];
    // Σ of the 7,840,000 pixels (module 05's check holds it too) and of the labels (1,000 of each).
    if (images.size() != 7840016 || pixel_sum != 573469082 || labels.size() != 10008 || label_sum != 45000) {
      problem = images.empty() ? "Fashion-MNIST is not installed here (apt-get install dataset-fashion-mnist)"
                               : "the installed Fashion-MNIST test set is not the file these checks know";
      return std::unique_ptr<TestSet>();
    }
    auto s = std::make_unique<TestSet>();
    s->pixels.assign(images.begin() + 16, images.end());
    for (std::size_t i = 8; i < labels.size(); ++i) s->labels.push_back(labels[i]);
    return s;
  }();
  why = problem;
  return set.get();
}

// What the model does on the 10,000 test images: the share it classifies right (the first largest
// logit wins) and its largest |logit|.
struct TestFigures {
  double accuracy = 0;
  double largest_logit = 0;
};

inline TestFigures on_test_set(const TModel& m, const TestSet& set) {
  constexpr std::int64_t kBatch = 500;
  std::int64_t right = 0;
  TestFigures f;
  for (std::int64_t start = 0; start < 10000; start += kBatch) {
    std::vector<double> x(static_cast<std::size_t>(kBatch * 784));
    for (std::size_t k = 0; k < x.size(); ++k) x[k] = set.pixels[static_cast<std::size_t>(start * 784) + k] / 255.0;
    const std::vector<double> y = logits(m, std::move(x), kBatch);
    for (const double v : y) f.largest_logit = std::isfinite(v) ? std::max(f.largest_logit, std::fabs(v)) : INFINITY;
    for (std::int64_t n = 0; n < kBatch; ++n) {
      std::int64_t best = 0;
      for (std::int64_t j = 1; j < m.output_width; ++j)
        if (y[static_cast<std::size_t>(n * m.output_width + j)] > y[static_cast<std::size_t>(n * m.output_width + best)]) best = j;
      right += best == set.labels[static_cast<std::size_t>(start + n)];
    }
  }
  f.accuracy = static_cast<double>(right) / 10000.0;
  return f;
}

// Bytes from a tensor of byte values (what observing a model's bytes gives), or nullopt when
// some value is not a whole number from 0 to 255.
inline std::optional<std::vector<std::uint8_t>> bytes_of(const testing::TensorData& t) {
  std::vector<std::uint8_t> out;
  out.reserve(t.values.size());
  for (const float v : t.values) {
    if (!(v >= 0 && v <= 255 && v == std::floor(v))) return std::nullopt;
    out.push_back(static_cast<std::uint8_t>(v));
  }
  return out;
}

// A model's bytes as a 1-D tensor of byte values, to cross the observation boundary.
inline Tensor byte_tensor(std::span<const std::uint8_t> bytes) {
  const auto count = static_cast<std::int64_t>(bytes.size());
  return Tensor({count}, std::vector<float>(bytes.begin(), bytes.end()));
}

}  // namespace kiln::capstone_testing
