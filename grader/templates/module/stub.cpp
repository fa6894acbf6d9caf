// Module @NN@, @TITLE@: the functions you write. Each throws kiln::NotImplemented until you do,
// and `grader check @NN@` names it as "not written yet".
#include "kiln/@SLUG@.h"

namespace kiln {

Tensor @SLUG@_scale(const Tensor& x, float factor) {
  // Copy x's elements in row-major order (x.to_vector()), multiply each by factor, and return
  // them as a tensor of x's shape.
  throw kiln::NotImplemented();
}

}  // namespace kiln
