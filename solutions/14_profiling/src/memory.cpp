// Memory of a training step, from the shapes a profile saw: what the forward keeps for backward,
// the largest transient of backward, and the peak with the parameters and their gradients.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kiln/profiling.h"

namespace kiln {

std::int64_t saved_activation_bytes(const std::vector<LayerRecord>& records) {
  std::int64_t bytes = 0;
  for (const LayerRecord& record : records) {
    if (record.kind == "Flatten") continue;  // a view of its input, which the next layer keeps
    bytes += 4 * numel(record.input_shape);
    if (record.kind == "MaxPool2d") bytes += 8 * numel(record.output_shape);  // the int64 argmax
  }
  return bytes;
}

std::int64_t largest_transient_bytes(const std::vector<LayerRecord>& records) {
  std::int64_t largest = 0;
  for (const LayerRecord& record : records) {
    largest = std::max(largest, 4 * (numel(record.input_shape) + numel(record.output_shape)));
  }
  return largest;
}

MemoryEstimate estimate_memory(const nn::Module& model, const std::vector<LayerRecord>& records) {
  MemoryEstimate estimate;
  for (const Tensor& parameter : model.parameters()) estimate.parameter_bytes += 4 * parameter.numel();
  estimate.gradient_bytes = estimate.parameter_bytes;
  estimate.activation_bytes = saved_activation_bytes(records);
  estimate.transient_bytes = largest_transient_bytes(records);
  return estimate;
}

}  // namespace kiln
