// Reading a KCAP model, running it, and the capstone's timed predictor.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

#include "kiln/capstone.h"

namespace kiln::capstone {

namespace {

// A float as its shortest decimal that reads back as it: "0", "-1", "1e-40", "inf", "nan".
std::string shortest(float value) {
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

// Reads the file front to back; every read first checks that the bytes are there.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::size_t offset() const { return at_; }
  std::size_t left() const { return bytes_.size() - at_; }

  [[noreturn]] void fail(std::size_t offset, const std::string& what) const {
    throw FormatError("byte " + std::to_string(offset) + ": " + what);
  }

  // Unsigned little-endian integer of `width` bytes.
  std::uint64_t uint(std::size_t width, const std::string& what) {
    if (left() < width)
      fail(at_, "the file ends after " + std::to_string(bytes_.size()) + " bytes; expected " + what);
    std::uint64_t value = 0;
    for (std::size_t k = 0; k < width; ++k) value |= std::uint64_t{bytes_[at_ + k]} << (8 * k);
    at_ += width;
    return value;
  }

  // `count` values of T, after checking that the file holds them all.
  template <class T>
  std::vector<T> array(std::uint64_t count, const std::string& what) {
    if (count > left() / sizeof(T))
      fail(at_, "the file ends after " + std::to_string(bytes_.size()) + " bytes; expected " + std::to_string(count) +
                    " values of " + what + " (" + std::to_string(count * sizeof(T)) + " bytes)");
    std::vector<T> values(static_cast<std::size_t>(count));
    for (auto& v : values) {
      const std::uint64_t bits = uint(sizeof(T), what);
      if constexpr (std::is_same_v<T, float>) {
        const auto raw = static_cast<std::uint32_t>(bits);
        std::memcpy(&v, &raw, sizeof v);
      } else {
        v = static_cast<T>(bits);
      }
    }
    return values;
  }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
};

}  // namespace

Model load_model(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "KCAP", 4) != 0) r.fail(0, "expected the magic bytes KCAP");
  r.uint(4, "the magic bytes KCAP");
  const std::size_t version_at = r.offset();
  if (const std::uint64_t version = r.uint(4, "the version"); version != 1)
    r.fail(version_at, "version " + std::to_string(version) + "; expected 1");
  const std::size_t count_at = r.offset();
  const std::uint64_t count = r.uint(4, "the layer count");
  if (count < 1 || count > kMaxLayers)
    r.fail(count_at, std::to_string(count) + " layers; expected 1 to " + std::to_string(kMaxLayers));

  Model model;
  std::int64_t width = 0;  // what the layers so far give; 0 before the first weighted layer
  for (std::uint64_t l = 0; l < count; ++l) {
    const std::string name = "layer " + std::to_string(l);
    const std::size_t kind_at = r.offset();
    const std::uint64_t kind = r.uint(4, "the kind of " + name);
    if (kind < 1 || kind > 4) r.fail(kind_at, name + " has kind " + std::to_string(kind) + "; expected 1 to 4");
    Layer layer;
    layer.kind = static_cast<LayerKind>(kind);
    if (layer.kind == LayerKind::relu) {
      layer.in = layer.out = width;
      model.layers.push_back(std::move(layer));
      continue;
    }
    // In file order: everything about in (it chains to the width before it, it is in range)
    // before out is even read, so that a layer whose in is wrong is named at its in, whether its
    // out is wrong too or the file ends before it.
    const std::size_t in_at = r.offset();
    const std::uint64_t in = r.uint(4, "the input width of " + name);
    if (width != 0 && static_cast<std::int64_t>(in) != width)
      r.fail(in_at, name + " takes " + std::to_string(in) + " inputs; expected " + std::to_string(width) +
                        ", what the layer before it gives");
    if (in < 1 || in > kMaxWidth)
      r.fail(in_at, name + " takes " + std::to_string(in) + " inputs; expected 1 to " + std::to_string(kMaxWidth));
    const std::size_t out_at = r.offset();
    const std::uint64_t out = r.uint(4, "the output width of " + name);
    if (out < 1 || out > kMaxWidth)
      r.fail(out_at, name + " gives " + std::to_string(out) + " outputs; expected 1 to " + std::to_string(kMaxWidth));
    layer.in = static_cast<std::int64_t>(in);
    layer.out = static_cast<std::int64_t>(out);
    auto scales = [&] {
      const std::size_t at = r.offset();
      layer.scale = r.array<float>(out, "the scales of " + name);
      for (std::size_t j = 0; j < layer.scale.size(); ++j)
        if (!(std::isfinite(layer.scale[j]) && layer.scale[j] > 0))
          r.fail(at + 4 * j, "scale " + std::to_string(j) + " of " + name + " is " + shortest(layer.scale[j]) +
                                 "; expected a finite scale greater than 0");
    };
    if (layer.kind == LayerKind::dense) {
      layer.weight = r.array<float>(in * out, "the weights of " + name);
    } else if (layer.kind == LayerKind::dense_int8) {
      scales();
      layer.code = r.array<std::int8_t>(in * out, "the codes of " + name);
    } else {
      const std::size_t nnz_at = r.offset();
      const std::uint64_t nnz = r.uint(4, "the count of stored entries of " + name);
      if (nnz > in * out)
        r.fail(nnz_at, name + " stores " + std::to_string(nnz) + " entries; expected at most in·out = " +
                           std::to_string(in * out));
      scales();
      const std::size_t rows_at = r.offset();
      layer.row_start = r.array<std::uint32_t>(out + 1, "the row starts of " + name);
      for (std::size_t j = 0; j <= out; ++j) {
        const std::uint32_t s = layer.row_start[j];
        const bool bad = (j == 0 && s != 0) || (j == out && s != nnz) || (j > 0 && s < layer.row_start[j - 1]) || s > nnz;
        if (bad)
          r.fail(rows_at + 4 * j, "row start " + std::to_string(j) + " of " + name + " is " + std::to_string(s) +
                                      "; expected row starts from 0 to " + std::to_string(nnz) + " that never decrease");
      }
      const std::size_t columns_at = r.offset();
      layer.column = r.array<std::uint16_t>(nnz, "the columns of " + name);
      for (std::size_t e = 0; e < layer.column.size(); ++e)
        if (layer.column[e] >= in)
          r.fail(columns_at + 2 * e, "column " + std::to_string(e) + " of " + name + " is " +
                                         std::to_string(layer.column[e]) + "; expected a column below " + std::to_string(in));
      layer.code = r.array<std::int8_t>(nnz, "the codes of " + name);
    }
    layer.bias = r.array<float>(out, "the biases of " + name);
    if (width == 0) {
      model.input_width = layer.in;
      for (Layer& before : model.layers) before.in = before.out = layer.in;  // leading relus
    }
    width = layer.out;
    model.output_width = width;
    model.layers.push_back(std::move(layer));
  }
  if (width == 0) r.fail(count_at, "every layer is relu; expected at least one layer with weights");
  if (r.left() != 0)
    r.fail(r.offset(), std::to_string(r.left()) + " bytes after the last layer; expected the file to end there");
  return model;
}

Tensor predict(const Model& model, const Tensor& images) {
  if (images.dim() != 2 || images.shape()[1] != model.input_width)
    throw ShapeError("predict: images " + to_string(images.shape()) + " must be (N, " +
                     std::to_string(model.input_width) + ")");
  const std::int64_t n = images.shape()[0];
  std::vector<float> x = images.contiguous().to_vector();  // (n, width), row-major
  std::int64_t width = model.input_width;
  for (const Layer& layer : model.layers) {
    if (layer.kind == LayerKind::relu) {
      for (float& v : x) v = std::max(v, 0.0f);
      continue;
    }
    std::vector<float> y(static_cast<std::size_t>(n * layer.out));
    for (std::int64_t row = 0; row < n; ++row) {
      const float* xr = x.data() + row * width;
      float* yr = y.data() + row * layer.out;
      for (std::int64_t j = 0; j < layer.out; ++j) {
        float sum = 0;
        if (layer.kind == LayerKind::dense) {
          const float* w = layer.weight.data() + j * layer.in;
          for (std::int64_t i = 0; i < layer.in; ++i) sum += w[i] * xr[i];
        } else if (layer.kind == LayerKind::dense_int8) {
          const std::int8_t* q = layer.code.data() + j * layer.in;
          for (std::int64_t i = 0; i < layer.in; ++i) sum += static_cast<float>(q[i]) * xr[i];
          sum *= layer.scale[static_cast<std::size_t>(j)];
        } else {
          for (std::uint32_t e = layer.row_start[static_cast<std::size_t>(j)];
               e < layer.row_start[static_cast<std::size_t>(j) + 1]; ++e)
            sum += static_cast<float>(layer.code[e]) * xr[layer.column[e]];
          sum *= layer.scale[static_cast<std::size_t>(j)];
        }
        yr[j] = sum + layer.bias[static_cast<std::size_t>(j)];
      }
    }
    x = std::move(y);
    width = layer.out;
  }
  return Tensor({n, width}, std::move(x));
}

namespace {

// A layer made ready for fast products, once: weights as float32 laid out (in, out), each code
// already multiplied by its row's scale (a sparse layer made dense), so that the inner loop runs
// along contiguous outputs and vectorises.
struct FastLayer {
  bool relu = false;
  std::int64_t in = 0, out = 0;
  std::vector<float> weight_t;  // (in, out), row-major
  std::vector<float> bias;      // (out)
};

std::vector<FastLayer> fast_layers(const Model& model) {
  std::vector<FastLayer> out;
  for (const Layer& layer : model.layers) {
    FastLayer f{.relu = layer.kind == LayerKind::relu, .in = layer.in, .out = layer.out};
    if (!f.relu) {
      f.weight_t.assign(static_cast<std::size_t>(layer.in * layer.out), 0.0f);
      f.bias = layer.bias;
      for (std::int64_t j = 0; j < layer.out; ++j) {
        const std::size_t jj = static_cast<std::size_t>(j);
        if (layer.kind == LayerKind::dense) {
          for (std::int64_t i = 0; i < layer.in; ++i)
            f.weight_t[static_cast<std::size_t>(i * layer.out + j)] = layer.weight[static_cast<std::size_t>(j * layer.in + i)];
        } else if (layer.kind == LayerKind::dense_int8) {
          for (std::int64_t i = 0; i < layer.in; ++i)
            f.weight_t[static_cast<std::size_t>(i * layer.out + j)] =
                layer.scale[jj] * static_cast<float>(layer.code[static_cast<std::size_t>(j * layer.in + i)]);
        } else {
          for (std::uint32_t e = layer.row_start[jj]; e < layer.row_start[jj + 1]; ++e)
            f.weight_t[static_cast<std::size_t>(layer.column[e] * layer.out + j)] +=
                layer.scale[jj] * static_cast<float>(layer.code[e]);
        }
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

Tensor capstone_predict(const Tensor& images) {
  // The model is read and laid out once, on the first call; the calls after it only compute.
  static const Model model = load_model(capstone_model_bytes());
  static const std::vector<FastLayer> layers = fast_layers(model);
  if (images.dim() != 2 || images.shape()[1] != model.input_width)
    throw ShapeError("capstone_predict: images " + to_string(images.shape()) + " must be (N, " +
                     std::to_string(model.input_width) + ")");
  const std::int64_t n = images.shape()[0];
  std::vector<float> x = images.contiguous().to_vector();  // (n, width), row-major
  std::int64_t width = model.input_width;
  constexpr std::int64_t kRows = 4;  // rows of x that share each row of weights read
  for (const FastLayer& layer : layers) {
    if (layer.relu) {
      for (float& v : x) v = std::max(v, 0.0f);
      continue;
    }
    const std::int64_t out = layer.out;
    std::vector<float> y(static_cast<std::size_t>(n * out));
    for (std::int64_t row = 0; row < n; ++row) std::copy(layer.bias.begin(), layer.bias.end(), y.begin() + row * out);
    for (std::int64_t r0 = 0; r0 < n; r0 += kRows) {
      const std::int64_t rows = std::min(kRows, n - r0);
      for (std::int64_t i = 0; i < width; ++i) {
        const float* w = layer.weight_t.data() + i * out;
        for (std::int64_t r = 0; r < rows; ++r) {
          const float a = x[static_cast<std::size_t>((r0 + r) * width + i)];
          if (a == 0.0f) continue;  // a zero pixel, or a unit the relu switched off, adds nothing
          float* yr = y.data() + (r0 + r) * out;
          for (std::int64_t j = 0; j < out; ++j) yr[j] += a * w[j];
        }
      }
    }
    x = std::move(y);
    width = out;
  }
  return Tensor({n, width}, std::move(x));
}

}  // namespace kiln::capstone
