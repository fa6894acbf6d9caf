// Layer normalisation as one node of module 06's graph: its forward pass row by row, and the
// backward pass derived by hand.
//
// Module 06 has no division, square root or mean as graph operations, and a LayerNorm built from
// ten small nodes would keep ten intermediate tensors for backward. One node with its own backward
// keeps two (x̂ and 1/σ per row) and is the place to derive the gradient once.
//
// Every dimension but the last is a row: x (B, T, D) has B·T rows of D values. Read x through
// contiguous() and data(): element j of row `row` is at row·D + j.
#include <cmath>
#include <string>
#include <vector>

#include "kiln/transformer.h"

namespace kiln::nn {

Tensor layer_norm(const Tensor& x, const Tensor& gain, const Tensor& bias, double eps) {
  // Check before computing: x has at least one dimension; gain and bias are both 1-D of size
  // D = x.size(-1). Otherwise a ShapeError naming x's shape and the other's, e.g.
  // "layer_norm: x (2, 3) and gain (4)". Then LayerNormFunction::apply(x, gain, bias, eps).
  throw kiln::NotImplemented();
}

Tensor LayerNormFunction::forward() {
  // inputs = {x, gain, bias}. For every row, in double: the mean μ, the biased variance
  // σ² = (1/D)·Σ (x_j - μ)² (summed in a double: for [1e20, -1e20] it is 1e40, inf as a float),
  // r = 1/√(σ² + eps), x̂_j = (x_j - μ)·r, y_j = gain_j·x̂_j + bias_j
  // from that double x̂, rounded to float once (not from the float x̂ stored in normalized).
  // Keep normalized = x̂ as (rows, D) and inv_std = r as (rows) for backward(); return y with x's
  // shape. x, gain, bias and grad_output may each be a contiguous view at an offset: read them
  // from data(), where they start, never storage_data().
  throw kiln::NotImplemented();
}

std::vector<Tensor> LayerNormFunction::backward(const Tensor& grad_output) {
  // {dx, dgain, dbias}, shapes of x, (D) and (D). Per row, with g the row of grad_output,
  // ĝ_j = g_j·gain_j and r the row's inv_std:
  //   dx_j = r·(ĝ_j - mean(ĝ) - x̂_j·mean(ĝ ⊙ x̂))
  //   dgain_j += g_j·x̂_j,   dbias_j += g_j   (summed over all rows)
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
