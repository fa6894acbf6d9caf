// Trusted helpers shared by module 14's checks: every cost formula written out again the plain
// way (the output size by counting window positions, the bytes by listing the tensors), trusted
// profile records of the milestone models, and the pieces of the failure reports. None of them
// calls the module's code.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/profiling.h"
#include "kiln/testing.h"

namespace kiln::profiling_testing {

// A Cost as the checks observe it: (flops, bytes).
using PlainCost = std::tuple<std::int64_t, std::int64_t>;

inline std::int64_t count(const Shape& shape) {
  std::int64_t total = 1;
  for (const std::int64_t size : shape) total *= size;
  return total;
}

inline std::string shape_text(const Shape& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

inline std::string cost_text(const PlainCost& cost) {
  return fmt::format("{{flops {}, bytes {}}}", std::get<0>(cost), std::get<1>(cost));
}

// "got {flops 48, bytes 104}, expected {flops 24, bytes 104}".
inline std::string got_expected(const PlainCost& got, const PlainCost& want) {
  return "got " + cost_text(got) + ", expected " + cost_text(want);
}

// Window positions along one axis, counted one by one: starts at -padding, every stride, while the
// window still ends inside the padded axis.
inline std::int64_t positions(std::int64_t size, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
  std::int64_t count = 0;
  for (std::int64_t start = -padding; start + kernel <= size + padding; start += stride) ++count;
  return count;
}

inline PlainCost trusted_matmul(std::int64_t n, std::int64_t k, std::int64_t m) {
  const std::int64_t a = n * k, b = k * m, c = n * m;
  return {c * k * 2, (a + b + c) * 4};
}

inline PlainCost trusted_linear(std::int64_t batch, std::int64_t in, std::int64_t out) {
  const std::int64_t x = batch * in, weight = in * out, bias = out, y = batch * out;
  return {y * in * 2 + y, (x + weight + bias + y) * 4};
}

inline Shape trusted_conv_shape(const Shape& in, std::int64_t out_channels, std::int64_t k, std::int64_t stride,
                                std::int64_t padding) {
  return {in[0], out_channels, positions(in[2], k, stride, padding), positions(in[3], k, stride, padding)};
}

inline PlainCost trusted_conv(const Shape& in, std::int64_t out_channels, std::int64_t k, std::int64_t stride,
                              std::int64_t padding, bool bias) {
  const std::int64_t outputs = count(trusted_conv_shape(in, out_channels, k, stride, padding));
  const std::int64_t multiply_adds = outputs * in[1] * k * k;
  const std::int64_t weight = out_channels * in[1] * k * k;
  return {2 * multiply_adds + (bias ? outputs : 0), 4 * (count(in) + weight + (bias ? out_channels : 0) + outputs)};
}

inline PlainCost trusted_relu(std::int64_t n) { return {n, 8 * n}; }

inline Shape trusted_pool_shape(const Shape& in, std::int64_t k, std::int64_t stride) {
  return {in[0], in[1], positions(in[2], k, stride, 0), positions(in[3], k, stride, 0)};
}

inline PlainCost trusted_pool(const Shape& in, std::int64_t k, std::int64_t stride) {
  const std::int64_t outputs = count(trusted_pool_shape(in, k, stride));
  return {outputs * (k * k - 1), 4 * (count(in) + outputs)};
}

inline PlainCost trusted_cross_entropy(std::int64_t batch, std::int64_t classes) {
  const std::int64_t per_row = (classes - 1) + classes + classes + (classes - 1) + 1 + 1;
  return {batch * per_row + (batch - 1) + 1, 4 * batch * classes + 8 * batch + 4};
}

// ---------------------------------------------------------------------------------------------
// Trusted profile records (only the fields the memory model reads: kind and shapes).

inline LayerRecord record(const std::string& kind, Shape in, Shape out) {
  LayerRecord r;
  r.kind = kind;
  r.input_shape = std::move(in);
  r.output_shape = std::move(out);
  r.calls = 1;
  return r;
}

// Linear(in → hidden[0]) → ReLU → Linear → ... → Linear(→ out), at `batch`: the records a profile
// of that MLP sees.
inline std::vector<LayerRecord> mlp_records(std::int64_t batch, const std::vector<std::int64_t>& widths) {
  std::vector<LayerRecord> records;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    if (i > 0) records.push_back(record("ReLU", {batch, widths[i]}, {batch, widths[i]}));
    records.push_back(record("Linear", {batch, widths[i]}, {batch, widths[i + 1]}));
  }
  return records;
}

// The milestone CNN's layers on images (batch, 1, side, side), side a multiple of 4:
// Conv(1→c1, 3×3, pad 1) → ReLU → MaxPool 2 → Conv(c1→c2, 3×3, pad 1) → ReLU → MaxPool 2
// → Flatten → Linear(c2·(side/4)² → hidden) → ReLU → Linear(hidden → 10).
inline std::vector<LayerRecord> cnn_records(std::int64_t batch, std::int64_t side, std::int64_t c1, std::int64_t c2,
                                            std::int64_t hidden) {
  const std::int64_t half = side / 2, quarter = side / 4, flat = c2 * quarter * quarter;
  return {record("Conv2d", {batch, 1, side, side}, {batch, c1, side, side}),
          record("ReLU", {batch, c1, side, side}, {batch, c1, side, side}),
          record("MaxPool2d", {batch, c1, side, side}, {batch, c1, half, half}),
          record("Conv2d", {batch, c1, half, half}, {batch, c2, half, half}),
          record("ReLU", {batch, c2, half, half}, {batch, c2, half, half}),
          record("MaxPool2d", {batch, c2, half, half}, {batch, c2, quarter, quarter}),
          record("Flatten", {batch, c2, quarter, quarter}, {batch, flat}),
          record("Linear", {batch, flat}, {batch, hidden}),
          record("ReLU", {batch, hidden}, {batch, hidden}),
          record("Linear", {batch, hidden}, {batch, 10})};
}

// What the forward keeps, by the header's table, summed the other way round: every float32
// tensor a layer keeps, then the argmax indices.
inline std::int64_t trusted_activations(const std::vector<LayerRecord>& records) {
  std::int64_t floats = 0, indices = 0;
  for (const LayerRecord& r : records) {
    if (r.kind != "Flatten") floats += count(r.input_shape);
    if (r.kind == "MaxPool2d") indices += count(r.output_shape);
  }
  return 4 * floats + 8 * indices;
}

inline std::int64_t trusted_transient(const std::vector<LayerRecord>& records) {
  std::int64_t largest = 0;
  for (const LayerRecord& r : records) {
    const std::int64_t both = count(r.input_shape) + count(r.output_shape);
    if (4 * both > largest) largest = 4 * both;
  }
  return largest;
}

}  // namespace kiln::profiling_testing
