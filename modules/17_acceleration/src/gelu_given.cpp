// Given: unfused_gelu, GELU written the way an array library evaluates an expression.
//
//   GELU(x) ≈ 0.5 · x · (1 + tanh(u)),   u = √(2/π) · (x + 0.044715 · x³)
//   tanh(u) = 1 − 2 / (e^(2u) + 1)
//
// tanh is written through exp, which is several times cheaper than std::tanh; write your fused_gelu
// with the same identity, so that `grader bench 17` compares the fusion alone. Every step below is
// one whole-tensor operation from module 01, and every step writes a new temporary tensor of x's
// size: twelve of them, each written once and read back once. Your fused_gelu computes the same
// numbers in one pass over x, with one output and no temporaries.
#include <cmath>
#include <numbers>

#include "kiln/acceleration.h"

namespace kiln {

namespace {

float exp_of(float value) { return std::exp(value); }

}  // namespace

Tensor unfused_gelu(const Tensor& x) {
  const float sqrt_2_over_pi = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  const Tensor x_squared = x * x;                     // temporary 1
  const Tensor x_cubed = x_squared * x;               // temporary 2
  const Tensor cubic_term = x_cubed * 0.044715f;      // temporary 3
  const Tensor inner = x + cubic_term;                // temporary 4
  const Tensor scaled = inner * sqrt_2_over_pi;       // temporary 5
  const Tensor doubled = scaled * 2.0f;               // temporary 6
  const Tensor exp_part = map(doubled, exp_of);       // temporary 7
  const Tensor denominator = exp_part + 1.0f;         // temporary 8
  const Tensor tanh_part = 1.0f - 2.0f / denominator; // temporaries 9 and 10
  const Tensor one_plus = tanh_part + 1.0f;           // temporary 11
  const Tensor half_x = x * 0.5f;                     // temporary 12
  return half_x * one_plus;                           // the result
}

}  // namespace kiln
