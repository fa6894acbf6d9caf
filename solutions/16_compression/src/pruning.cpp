// Magnitude pruning, and keeping a pruned model pruned while it trains.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/compression.h"

namespace kiln::compress {

Tensor magnitude_mask(const Tensor& weight, double sparsity) {
  if (!(sparsity >= 0.0 && sparsity <= 1.0)) {
    throw std::invalid_argument("magnitude_mask needs a sparsity in [0, 1], got " + std::to_string(sparsity));
  }
  const std::vector<float> values = weight.to_vector();  // row-major, views too
  const auto n = static_cast<std::int64_t>(values.size());
  const std::int64_t count = std::llround(sparsity * static_cast<double>(n));

  // Flat indices by |w| ascending; equal magnitudes keep index order, so the lower index is pruned first.
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int64_t a, std::int64_t b) { return std::fabs(values[a]) < std::fabs(values[b]); });

  std::vector<float> mask(static_cast<std::size_t>(n), 1.0f);
  for (std::int64_t k = 0; k < count; ++k) mask[static_cast<std::size_t>(order[k])] = 0.0f;
  return Tensor(weight.shape(), std::move(mask));
}

Tensor prune_magnitude(Tensor& weight, double sparsity) {
  const Tensor mask = magnitude_mask(weight, sparsity);
  // In place, through the shared storage: every handle to the weight sees the zeros.
  float* w = weight.data();
  const float* keep = mask.data();
  for (std::int64_t k = 0; k < weight.numel(); ++k) {
    if (keep[k] == 0.0f) w[k] = 0.0f;
  }
  return mask;
}

void masked_step(optim::Optimizer& optimizer, const std::vector<Tensor>& weights, const std::vector<Tensor>& masks) {
  // 0. Every argument judged before anything changes.
  if (weights.size() != masks.size()) {
    throw std::invalid_argument("masked_step: " + std::to_string(weights.size()) + " weights but " +
                                std::to_string(masks.size()) + " masks");
  }
  for (std::size_t k = 0; k < weights.size(); ++k) {
    if (masks[k].shape() != weights[k].shape()) {
      throw ShapeError("masked_step: weight " + std::to_string(k) + " has shape " + to_string(weights[k].shape()) +
                       " but its mask " + to_string(masks[k].shape()));
    }
  }
  // 1. No gradient reaches a pruned entry, so the optimizer's state gathers none for it.
  for (std::size_t k = 0; k < weights.size(); ++k) {
    Tensor w = weights[k];  // shares the storage and the gradient bookkeeping
    if (autograd::has_grad(w)) w.autograd()->grad = w.grad() * masks[k];
  }
  // 2. The step itself.
  optimizer.step();
  // 3. Momentum or Adam's moments from before pruning may have moved a pruned entry: zero it again.
  for (std::size_t k = 0; k < weights.size(); ++k) {
    Tensor w = weights[k];
    const Tensor mask = masks[k].contiguous();
    float* values = w.data();
    const float* keep = mask.data();
    for (std::int64_t i = 0; i < w.numel(); ++i) values[i] *= keep[i];
  }
}

}  // namespace kiln::compress
