// Given: unfused_gelu, GELU written the way an array library evaluates an expression.
//
//   GELU(x) ≈ 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))
//
// Every step below is one whole-tensor operation from module 01, and every step writes a new
// temporary tensor of x's size: eight of them, each written once and read back once. Your
// fused_gelu computes the same numbers in one pass over x, with one output and no temporaries.
// `grader bench 17` times the two side by side.
#include <cmath>
#include <numbers>

#include "kiln/acceleration.h"

namespace kiln {

namespace {

float tanh_of(float value) { return std::tanh(value); }

}  // namespace

Tensor unfused_gelu(const Tensor& x) {
  const float sqrt_2_over_pi = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  const Tensor x_squared = x * x;                     // temporary 1
  const Tensor x_cubed = x_squared * x;               // temporary 2
  const Tensor cubic_term = x_cubed * 0.044715f;      // temporary 3
  const Tensor inner = x + cubic_term;                // temporary 4
  const Tensor scaled = inner * sqrt_2_over_pi;       // temporary 5
  const Tensor tanh_part = map(scaled, tanh_of);      // temporary 6
  const Tensor one_plus = tanh_part + 1.0f;           // temporary 7
  const Tensor half_x = x * 0.5f;                     // temporary 8
  return half_x * one_plus;                           // the result
}

}  // namespace kiln
