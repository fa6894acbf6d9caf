// The dataset: bytes to floats in [0, 1], and the statistics that normalise them.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/data.h"

namespace kiln {

Dataset make_dataset(const IdxArray& images, const IdxArray& labels, bool flatten) {
  if (images.dims.size() != 3) {
    throw FormatError("images must be 3-D (N, rows, cols), got " + to_string(images.dims));
  }
  if (labels.dims.size() != 1) throw FormatError("labels must be 1-D (N), got " + to_string(labels.dims));
  const std::int64_t n = images.dims[0], rows = images.dims[1], cols = images.dims[2];
  if (labels.dims[0] != n) {
    throw FormatError(std::to_string(n) + " images but " + std::to_string(labels.dims[0]) + " labels");
  }
  // Image i, pixel (r, c) at i·rows·cols + r·cols + c: the IDX order is already row-major.
  std::vector<float> pixels(images.values.size());
  for (std::size_t k = 0; k < pixels.size(); ++k) pixels[k] = static_cast<float>(images.values[k]) / 255.0f;
  Dataset data;
  data.images = flatten ? Tensor({n, rows * cols}, std::move(pixels)) : Tensor({n, rows, cols}, std::move(pixels));
  data.labels.assign(labels.values.begin(), labels.values.end());
  return data;
}

std::pair<double, double> mean_and_std(const Tensor& x) {
  if (x.numel() == 0) throw ShapeError("mean_and_std of an empty tensor, shape " + to_string(x.shape()));
  const std::vector<float> values = x.to_vector();
  double total = 0.0;
  for (float v : values) total += v;
  const double mean = total / static_cast<double>(values.size());
  double squares = 0.0;
  for (float v : values) squares += (v - mean) * (v - mean);
  return {mean, std::sqrt(squares / static_cast<double>(values.size()))};
}

Tensor normalize(const Tensor& x, double mean, double std) {
  if (!(std > 0.0)) throw std::invalid_argument("normalize: std must be greater than 0, got " + std::to_string(std));
  std::vector<float> values = x.to_vector();
  for (float& v : values) v = static_cast<float>((v - mean) / std);
  return Tensor(x.shape(), std::move(values));
}

}  // namespace kiln
