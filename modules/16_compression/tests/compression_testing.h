// What module 16's checks share: trusted code only.
#pragma once

#include "kiln/tensor.h"

namespace kiln::compression_testing {

// The transpose of a contiguous matrix as a view (strides (1, cols)), built with the given make_view.
inline Tensor transposed(const Tensor& m) { return make_view(m, {m.shape()[1], m.shape()[0]}, {1, m.shape()[1]}, 0); }

}  // namespace kiln::compression_testing
