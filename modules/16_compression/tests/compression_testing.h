// What module 16's checks share: trusted code only.
#pragma once

#include <string>

#include "kiln/tensor.h"
#include "kiln/testing.h"

namespace kiln::compression_testing {

// The transpose of a contiguous matrix as a view (strides (1, cols)), built with the given make_view.
inline Tensor transposed(const Tensor& m) { return make_view(m, {m.shape()[1], m.shape()[0]}, {1, m.shape()[1]}, 0); }

// An offset failure only for a result that depends on the offset: a case observes the same call
// on views at an offset and on fresh tensors of the same values. True where they differ: one
// threw and the other did not, or their results are further apart than atol + rtol·|fresh|.
// Where they do not, the fresh result is judged under the function's general failure.
inline bool offset_changes(const testing::Observed<testing::TensorData>& view,
                           const testing::Observed<testing::TensorData>& fresh, double atol, double rtol = 0.0) {
  if (view.ok() != fresh.ok()) return true;
  if (!view.ok()) return false;
  const testing::Comparison c = testing::compare(*view, *fresh, atol, rtol);
  return !c.shapes_match || !c.close;
}
// "gave [values]" or "threw <kind>: <message>", for such a failure's detail.
inline std::string gave(const testing::Observed<testing::TensorData>& got) {
  return got.ok() ? "gave " + testing::list(got->values, 15) : "threw " + got.error().kind() + ": " + got.error().message;
}

}  // namespace kiln::compression_testing
