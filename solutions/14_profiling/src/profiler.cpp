// The profiler: a Sequential's forward pass run child by child, each child's call timed alone
// between two readings of the clock it is given, after warm-up passes that are not recorded.
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/profiling.h"

namespace kiln {

Cost layer_cost(const nn::Module& layer, const Shape& input_shape) {
  if (const auto* linear = dynamic_cast<const nn::Linear*>(&layer)) {
    return linear_cost(input_shape.at(0), linear->in_features, linear->out_features);
  }
  if (dynamic_cast<const nn::ReLU*>(&layer)) return relu_cost(numel(input_shape));
  if (const auto* conv = dynamic_cast<const nn::Conv2dLayer*>(&layer)) {
    const Conv2d& c = conv->conv;
    return conv2d_cost(input_shape, c.out_channels, c.kernel_size, c.stride, c.padding, c.has_bias());
  }
  if (const auto* pool = dynamic_cast<const nn::MaxPool2dLayer*>(&layer)) {
    return maxpool2d_cost(input_shape, pool->pool.kernel_size, pool->pool.stride);
  }
  return {};  // Flatten (a view) and layers the profiler cannot count
}

std::vector<LayerRecord> profile_forward(nn::Sequential& model, const Tensor& x, const ProfileOptions& options,
                                         const Clock& clock) {
  if (options.warmup < 0 || options.repetitions < 1) {
    throw std::invalid_argument("profile_forward needs warmup >= 0 and repetitions >= 1, got warmup " +
                                std::to_string(options.warmup) + " and repetitions " +
                                std::to_string(options.repetitions));
  }
  const auto& layers = model.children();
  std::vector<LayerRecord> records(layers.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    records[i].name = layers[i].first;
    records[i].kind = layer_kind(*layers[i].second);
  }

  for (int pass = 0; pass < options.warmup; ++pass) {
    Tensor h = x;
    for (const auto& [name, layer] : layers) h = (*layer)(h);
  }
  for (int pass = 0; pass < options.repetitions; ++pass) {
    Tensor h = x;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      LayerRecord& record = records[i];
      const double start = clock();
      Tensor out = (*layers[i].second)(h);
      const double stop = clock();
      record.seconds += stop - start;
      record.calls += 1;
      record.input_shape = h.shape();
      record.output_shape = out.shape();
      h = out;
    }
  }
  // The costs depend only on the shapes: worked out once, after the timing.
  for (std::size_t i = 0; i < layers.size(); ++i) records[i].cost = layer_cost(*layers[i].second, records[i].input_shape);
  return records;
}

}  // namespace kiln
