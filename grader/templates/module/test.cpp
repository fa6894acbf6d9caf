// Module @NN@ checks: one TEST per check of module.yaml, named by its `test` (Suite.Name).
//
// Observe, then judge. Inputs come from trusted code and the run's seed; every value taken from
// the module's functions passes through observe() (KILN_OBSERVE), which returns plain data; the
// expected values are computed here, by trusted code, in double; a difference is reported by the
// id of a failure catalogued in module.yaml, never by message text.
#include <cstddef>
#include <string>
#include <vector>

#include "kiln/@SLUG@.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::random_tensor;
using testing::TensorData;

// x·factor, element by element in double: the trusted answer.
TensorData scaled(const Tensor& x, double factor) {
  const TensorData in = data_of(x);
  std::vector<float> out(in.values.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(in.values[i] * factor);
  return data_of(in.shape, out);
}

}  // namespace

TEST(@SUITE@, Scale) {
  const float factor = 2.5f;
  // A non-square shape and a single element, drawn from the run's seed (stream 1 and 2): fixed in
  // `grader check`, fresh and secret in `grader grade`.
  for (const Tensor& x : {random_tensor({3, 7}, 1), random_tensor({1}, 2)}) {
    const auto y = KILN_OBSERVE(@SLUG@_scale(x, factor));  // student code: observed
    KILN_EXPECT_CLOSE_REL(y, scaled(x, factor), 1e-6, 1e-6, "scale_wrong",
                          testing::Params{{"factor", testing::format_number(factor)}});  // judged
  }
}

}  // namespace kiln
