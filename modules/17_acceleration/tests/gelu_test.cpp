// Checks fused_gelu.
#include "kiln/acceleration.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

TEST(Acceleration, FusedGelu) {
  // GELU's tanh form, evaluated in double precision.
  const Tensor x({9}, {0.0f, 1.0f, -1.0f, 2.0f, -3.0f, -0.75f, 0.5f, -0.5f, 3.0f});
  const Tensor expected({9}, {0.0f, 0.84119199f, -0.15880801f, 1.95459769f, -0.00363739f, -0.17003944f,
                              0.34571401f, -0.15428599f, 2.99636261f});
  const Tensor y = fused_gelu(x);
  if (!KILN_EXPECT_CLOSE(y, expected, 1e-5, "gelu_values")) return;
  KILN_EXPECT(y.at({0}) == 0.0f, "gelu_values", {{"difference", testing::format_number(y.at({0}))}},
              "GELU(0) must be exactly 0");
  // The negative dip: below zero for negative inputs, lowest near x = -0.75.
  KILN_EXPECT(y.at({5}) < y.at({2}) && y.at({5}) < y.at({7}) && y.at({2}) < 0.0f, "gelu_values",
              {{"difference", "-"}}, "GELU(-0.75) must lie below GELU(-1) and GELU(-0.5), all below 0");

  // A (2, 3, 4) view in [-4, 4) that is not contiguous: fused and staged GELU must agree.
  WichmannHill generator(42);
  const Tensor view = (Tensor::rand({4, 3, 2}, generator) * 8.0f - 4.0f).transpose(0, 2);
  const Tensor fused = fused_gelu(view);
  KILN_EXPECT(fused.shape() == view.shape(), "gelu_shape", {{"shape", to_string(fused.shape())}},
              "fused_gelu of a " + to_string(view.shape()) + " tensor returned shape " + to_string(fused.shape()));
  if (fused.shape() != view.shape()) return;
  KILN_EXPECT_CLOSE(fused, unfused_gelu(view), 1e-5, "gelu_values");
}

}  // namespace
}  // namespace kiln
