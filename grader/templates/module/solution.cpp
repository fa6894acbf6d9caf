// Module @NN@, @TITLE@: the reference solution. Students never see this file; `grader verify`
// proves that it passes every check and that every mutant of it fails its catalogued message.
#include <utility>
#include <vector>

#include "kiln/@SLUG@.h"

namespace kiln {

Tensor @SLUG@_scale(const Tensor& x, float factor) {
  std::vector<float> values = x.to_vector();  // row-major, views included
  for (float& v : values) v *= factor;
  return Tensor(x.shape(), std::move(values));
}

}  // namespace kiln
