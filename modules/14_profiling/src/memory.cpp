// Memory of a training step, from the shapes a profile saw: what the forward keeps for backward,
// the largest transient of backward, and the peak with the parameters and their gradients.
// numel(shape) (module 01) is the product of a shape's sizes.
// Every size, count and byte total is a std::int64_t, and so is every product of sizes: a
// shape's sizes, and what they multiply to, may pass 2³¹ - 1, the largest int.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kiln/profiling.h"

namespace kiln {

std::int64_t saved_activation_bytes(const std::vector<LayerRecord>& records) {
  // Σ over the records, by kind (the header's table): the input's 4 bytes per float for every
  // kind but Flatten, and for a MaxPool2d also 8 bytes per output element for its argmax.
  throw kiln::NotImplemented();
}

std::int64_t largest_transient_bytes(const std::vector<LayerRecord>& records) {
  // The largest 4·(numel(input) + numel(output)) over the records, input and output of the same
  // record; 0 for none.
  throw kiln::NotImplemented();
}

MemoryEstimate estimate_memory(const nn::Module& model, const std::vector<LayerRecord>& records) {
  // parameter_bytes = 4·Σ numel over model.parameters(); gradient_bytes the same (every
  // parameter, whatever its requires_grad() says now: the estimate is of a training step);
  // activation_bytes and transient_bytes from the two functions above.
  throw kiln::NotImplemented();
}

}  // namespace kiln
