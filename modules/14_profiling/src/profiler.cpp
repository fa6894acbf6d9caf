// The profiler: a Sequential's forward pass run child by child, each child's call timed alone
// between two readings of the clock it is given, after warm-up passes that are not recorded.
// Every size, count and byte total is a std::int64_t, and so is every product of sizes: a
// shape's sizes, and what they multiply to, may pass 2³¹ - 1, the largest int.
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/profiling.h"

namespace kiln {

Cost layer_cost(const nn::Module& layer, const Shape& input_shape) {
  // dynamic_cast<const nn::Linear*>(&layer) is the layer as a Linear, or nullptr when it is not
  // one; the same for nn::ReLU, nn::Conv2dLayer (its conv holds the sizes) and
  // nn::MaxPool2dLayer (its pool). Flatten and any other module cost {0, 0}.
  throw kiln::NotImplemented();
}

std::vector<LayerRecord> profile_forward(nn::Sequential& model, const Tensor& x, const ProfileOptions& options,
                                         const Clock& clock) {
  // std::invalid_argument when options.warmup < 0 or options.repetitions < 1, before anything runs
  // (an empty Sequential too: the check comes before its empty result).
  // One record per child of model.children() (pairs of name and module), with its name and
  // layer_kind. Then:
  //   warmup passes: h = x, then h = (*layer)(h) for each child in order; no clock, no records.
  //     Every pass starts again from h = x, never from the last pass's output.
  //   repetitions passes: the same, but around each child's call
  //     start = clock(); out = (*layer)(h); stop = clock();
  //   and add stop - start to its record's seconds, 1 to its calls; note the input and output
  //   shapes here (warmup may be 0: no warm-up pass at all). Finally each record's cost =
  //   layer_cost(layer, input_shape).
  throw kiln::NotImplemented();
}

}  // namespace kiln
