// Batches: a shuffled order, cut into batches, and the examples gathered for each batch.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/data.h"

namespace kiln {

std::vector<std::int64_t> shuffled_indices(std::int64_t n, WichmannHill& generator) {
  if (n < 0) throw std::invalid_argument("shuffled_indices: n must be at least 0, got " + std::to_string(n));
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[i] = i;
  for (std::int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<std::int64_t>(std::floor(generator.next() * static_cast<double>(i + 1)));
    std::swap(order[i], order[j]);
  }
  return order;
}

std::vector<std::vector<std::int64_t>> batch_indices(const std::vector<std::int64_t>& order,
                                                     std::int64_t batch_size, bool drop_last) {
  if (batch_size < 1) throw std::invalid_argument("batch_size must be at least 1, got " + std::to_string(batch_size));
  const auto n = static_cast<std::int64_t>(order.size());
  std::vector<std::vector<std::int64_t>> batches;
  for (std::int64_t start = 0; start < n; start += batch_size) {
    const std::int64_t stop = std::min(start + batch_size, n);
    if (drop_last && stop - start < batch_size) break;
    batches.emplace_back(order.begin() + start, order.begin() + stop);
  }
  return batches;
}

Batch collate(const Dataset& data, const std::vector<std::int64_t>& indices) {
  const Tensor images = data.images.contiguous();
  const std::int64_t n = data.size();
  // Pixels per image: the product of the sizes after the first.
  const std::int64_t per_image = numel(Shape(images.shape().begin() + 1, images.shape().end()));
  Shape shape = images.shape();
  shape[0] = static_cast<std::int64_t>(indices.size());
  std::vector<float> pixels;
  pixels.reserve(static_cast<std::size_t>(shape[0] * per_image));
  Batch batch;
  for (const std::int64_t index : indices) {
    if (index < 0 || index >= n) {
      throw IndexError("collate: index " + std::to_string(index) + " of a dataset of " + std::to_string(n));
    }
    const float* image = images.data() + index * per_image;
    pixels.insert(pixels.end(), image, image + per_image);
    batch.labels.push_back(data.labels[static_cast<std::size_t>(index)]);
  }
  batch.images = Tensor(shape, std::move(pixels));
  return batch;
}

std::int64_t DataLoader::num_batches() const {
  const std::int64_t n = data_.size();
  // ⌈N / B⌉ as the whole batches plus one for a partial one: (N + B - 1) / B would overflow
  // int64 for a batch size near INT64_MAX, which the constructor accepts.
  const std::int64_t whole = n / batch_size_;
  return drop_last_ || n % batch_size_ == 0 ? whole : whole + 1;
}

std::vector<std::vector<std::int64_t>> DataLoader::next_epoch() {
  const std::int64_t n = data_.size();
  std::vector<std::int64_t> order;
  if (shuffle_) {
    order = shuffled_indices(n, generator_);
  } else {
    for (std::int64_t i = 0; i < n; ++i) order.push_back(i);
  }
  return batch_indices(order, batch_size_, drop_last_);
}

}  // namespace kiln
