// Module 03, Layers: matrix multiplication from foundations, and the Linear layer built on it.
//
// The ladder. Every rung computes the same product C = A·B of A (n, k) and B (k, m),
//   c[i, j] = Σ_p a[i, p]·b[p, j]   (p runs over the k columns of A and the k rows of B),
// and each moves a little more of the work out of hand-written loops:
//   matmul_loops      three loops, one multiply-add at a time
//   matmul_dot        two loops; c[i, j] is the dot product of row i of A and column j of B
//   matmul_broadcast  one loop; row i of C is (a[i, :, None] · B).sum(0), by broadcasting
//   einsum            any product-and-sum written as a spec, "ik,kj->ij" for this one
//   blas_matmul       given: the same product handed to Eigen, the yardstick for all of them
//
// Layouts, all row-major float32:
//   matrices   (rows, cols): element (i, j) at offset + i·strides[0] + j·strides[1]
//              (a view, such as a transposed matrix, has other strides than a fresh tensor)
//   Linear     x (N, in_features), weight (in_features, out_features), bias (out_features),
//              y (N, out_features) = x·weight + bias, the bias added to every row
//              (kiln keeps the weight (in, out) so that y = x·W reads like the math; PyTorch
//              stores the transpose, (out, in), and computes x·Wᵀ)
//   Every tensor a function here is given may be a view, also a contiguous one that starts inside
//   its storage (contiguous() returns it as it is): read it through its offset and strides, or
//   from data(), never from storage_data() as if it began at the storage's first float;
//   linear_forward and linear_backward take views too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Given (src/layers_given.cpp and src/blas_given.cpp)

// Row i of the matrix m (rows, cols), as a 1-D view of cols elements with stride m.strides()[1].
// Nothing is copied. Throws ShapeError when m is not 2-D, IndexError when i is not in [0, rows).
Tensor row(const Tensor& m, std::int64_t i);

// Column j of the matrix m (rows, cols), as a 1-D view of rows elements with stride
// m.strides()[0]: in a row-major matrix its elements lie cols floats apart. Nothing is copied.
// Throws ShapeError when m is not 2-D, IndexError when j is not in [0, cols).
Tensor column(const Tensor& m, std::int64_t j);

// The product of (n, k) and (k, m) matrices, computed by Eigen (cache blocking, SIMD), on any
// views. Throws ShapeError naming both shapes when either is not 2-D or the inner sizes differ.
Tensor blas_matmul(const Tensor& a, const Tensor& b);

// ---------------------------------------------------------------------------------------------
// The ladder (yours: src/matmul.cpp)
//
// Every matmul_* takes (n, k) and (k, m) matrices, views included, and returns a new contiguous
// (n, m) tensor. When either is not 2-D (a (2, 3, 4) a with a (3, 5) b too, although its
// second size fits) or the inner sizes differ it throws ShapeError whose message names both
// shapes, e.g. "(2, 3)" and "(4, 2)", before any loop runs.
// An empty output ((0, k)·(k, m) or (n, k)·(k, 0)) is an empty (n, m) tensor.

// Σ_p u[p]·v[p] of two 1-D tensors of the same length, views included (a column has a stride
// other than 1). Throws ShapeError naming both shapes when either is not 1-D or the lengths differ.
float dot(const Tensor& u, const Tensor& v);

// c[i, j] += a[i, p]·b[p, j] over i, j and p: three nested loops.
Tensor matmul_loops(const Tensor& a, const Tensor& b);

// c[i, j] = dot(row(a, i), column(b, j)): two loops around dot.
Tensor matmul_dot(const Tensor& a, const Tensor& b);

// Row i of c = (row(a, i) as a (k, 1) column · b (k, m)).sum(0): one loop, with module 01's
// broadcasting multiply and sum doing the other two.
Tensor matmul_broadcast(const Tensor& a, const Tensor& b);

// ---------------------------------------------------------------------------------------------
// Einstein summation (yours: src/einsum.cpp)
//
// A spec names every dimension of every operand with one lowercase letter, then the output's
// dimensions after "->":  "ik,kj->ij" (matrix product), "ij->ji" (transpose), "ij,ij->ij"
// (elementwise product), "i,j->ij" (outer product), "bik,bkj->bij" (batched product),
// "ik,kj->ikj" (every product, nothing summed), "i,i->" (dot product: a scalar, shape ()).
// The rules:
//   * a letter that appears in several places is one index: its sizes must agree (a size of 0
//     too: 0 and 3 disagree), and the values it meets are multiplied together;
//   * a letter that is left out of the output is summed over;
//   * the output has one dimension per output letter, in that order, of that letter's size.
// The spec is letters a-z, exactly one "," between two operands (none for one operand), and
// exactly one "->" followed by the output (which may be empty); no spaces, no "...".
//
// Errors (each message quotes the spec, e.g. einsum("ik,kj"): ...):
//   std::invalid_argument  a malformed spec: no "->" (a '-' alone is none: "ij-ji", "ij-"), a
//                          character that is not a lowercase letter, the wrong number of
//                          operands, a letter twice in one operand (kiln's einsum takes no
//                          diagonals), a letter twice in the output, an output letter that no
//                          operand has
//   ShapeError             an operand with a different number of dimensions than its letters,
//                          or a letter whose sizes disagree; the message also names the shapes
// (ShapeError derives from std::invalid_argument.) The result is a new contiguous tensor, also
// for a spec that moves nothing ("ij->ij", "->"): a copy, never the operand itself.
Tensor einsum(const std::string& spec, const Tensor& a, const Tensor& b);
Tensor einsum(const std::string& spec, const Tensor& a);

// ---------------------------------------------------------------------------------------------
// The Linear layer (yours: src/linear.cpp)
//
// This module comes before autograd (module 06), so the layer's backward pass is written by
// hand here, as a pure function of the forward pass's inputs; module 06 then records such
// functions in a graph so that nobody has to call them in the right order by hand.

// y = x·weight + bias.
//   x (N, in_features), weight (in_features, out_features), bias (out_features) or none
//   returns y (N, out_features), the bias added to every row
// A wrong x raises ShapeError naming both shapes (the matrix product's own check does that).
Tensor linear_forward(const Tensor& x, const Tensor& weight, const std::optional<Tensor>& bias);

// The gradients of a loss L with respect to x, weight and bias, given G = dL/dy (N, out).
struct LinearGradients {
  Tensor input;   // dL/dx = G·weightᵀ   (N, out)·(out, in) = (N, in)
  Tensor weight;  // dL/dW = xᵀ·G        (in, N)·(N, out)   = (in, out)
  Tensor bias;    // dL/db = G summed over its N rows       = (out); shape (0) when has_bias is false
};

// The backward pass of linear_forward(x, weight, bias), for any G = grad_output (N, out).
// An empty batch (N = 0) is allowed: linear_backward then gives an input gradient (0, in) and
// weight and bias gradients of zeros, sums of no terms.
LinearGradients linear_backward(const Tensor& x, const Tensor& weight, const Tensor& grad_output,
                                bool has_bias);

// A fully connected layer: its parameters, and the gradients its backward pass accumulates.
class Linear {
 public:
  // Given: Linear(in, out, bias, generator) with WichmannHill(seed): the same seed, the same layer.
  Linear(int in_features, int out_features, bool bias = true, std::uint64_t seed = 0);

  // Kaiming (He) uniform initialisation, drawn from `generator`:
  //   bound = √(6 / in_features), computed in double
  //   weight[i, o] = float(bound·(2u - 1)) for the next u = generator.next(), drawing the
  //                  weights in row-major order: i = 0 .. in-1 outside, o = 0 .. out-1 inside
  //   bias = zeros (out_features); no random numbers are drawn for it
  // Uniform in [-bound, bound) has variance bound²/3 = 2/in_features: the variance He et al.
  // give for a layer followed by ReLU. Without bias, bias is the empty tensor of shape (0).
  // weight_grad and bias_grad start as zeros of the shapes of weight and bias.
  Linear(int in_features, int out_features, bool bias, WichmannHill& generator);

  // Given: remembers x for backward() and returns linear_forward(x, weight, bias).
  Tensor forward(const Tensor& x);

  // Given: linear_backward on the x of the last forward(); ADDS the weight and bias gradients
  // into weight_grad and bias_grad (as every framework does, so that gradients from several
  // batches or uses add up) and returns dL/dx. Throws std::logic_error before any forward().
  Tensor backward(const Tensor& grad_output);

  // Given: sets weight_grad and bias_grad back to zeros.
  void zero_grad();

  bool has_bias() const { return bias.numel() > 0; }

  int in_features = 0;
  int out_features = 0;
  Tensor weight;       // (in_features, out_features)
  Tensor bias;         // (out_features), or (0) without bias
  Tensor weight_grad;  // like weight
  Tensor bias_grad;    // like bias

 private:
  std::optional<Tensor> input_;  // the x of the last forward()
};

}  // namespace kiln
