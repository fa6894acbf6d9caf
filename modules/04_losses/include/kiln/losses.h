// Module 04, Losses: the number training makes small, and its gradient.
//
// Every loss here takes a prediction and what it should have been, and returns a scalar tensor
// (shape (), one value: loss.item()) averaged over the batch: the mean reduction. Every loss has
// an explicit backward function that returns dL/d(prediction), a tensor of the prediction's
// shape, for L the loss itself (so an upstream gradient of 1): a new tensor, the tensors it was
// given left as they were. Module 06's autograd can record these as graph nodes later; here they
// are plain functions.
//
// Layouts, all float32, views accepted everywhere (read them through their strides):
//   logits, log_probs  (N, C): row n holds the C class scores (or log-probabilities) of example n
//   targets            std::vector<std::int64_t> of N class ids, targets[n] in [0, C)
//   mse's prediction and target, bce's logits and targets: any shape, the two shapes equal
//   bce's targets are floats, 0 or 1, one per logit
//   Any tensor given here may be a view, also a contiguous one that starts inside its storage
//   (contiguous() returns it as it is): read it through to_vector(), or from data() after
//   contiguous(), never from storage_data() as if it began at the storage's first float.
//   mse_loss and binary_cross_entropy_with_logits of two empty tensors give the mean of no values,
//   0/0 = NaN, as a scalar.
//   An empty batch's backward pass (no elements, or logits (0, C) and no targets) gives an empty
//   gradient of the input's shape.
//
// Errors (checked before anything is computed):
//   ShapeError  the two tensors of mse or bce differ in shape; logits or log_probs not 2-D (a
//               scalar of shape () included: it has no rows to count); as many targets as rows.
//               The message names both shapes, a vector of 5 targets as "(5)", e.g.
//               "cross_entropy: logits (7, 3) and targets (5)".
//   IndexError  a target id outside [0, C); the message names the id right after the word
//               "target" (and may name its row), e.g. "target 7 of row 2 ...".
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Elementwise losses (yours: src/losses.cpp)

// Mean squared error: (1/n)·Σ_i (prediction_i - target_i)² over all n elements.
// mse_loss([1, 2, 3], [1, 2, 5]) = 4/3.
Tensor mse_loss(const Tensor& prediction, const Tensor& target);
// dL/d(prediction) = 2·(prediction - target)/n, a float wherever that value is: compute each
// element in double, 2·(p - t)/n, and round it to float once. In float, p - t itself overflows
// (3e38 against -3e38 with n = 4, whose gradient is 3e38), and scaling p and t by 2/n before
// subtracting loses a small error between large values (8 between 100000008 and 100000000).
Tensor mse_loss_backward(const Tensor& prediction, const Tensor& target);

// Binary cross-entropy of logits z against targets t in {0, 1}, mean over all n elements:
//   loss_i = -[t·log σ(z) + (1 - t)·log(1 - σ(z))] = max(z, 0) - z·t + log(1 + e^(-|z|)),
// the second form finite for every z (for z = 1e4 and t = 0 it is 1e4, not log(0)). The losses
// are added in double, as nll_loss adds: the loss is right wherever that mean is a float, also
// where the total is not (logits [3e38, 3e38] against targets [0, 0] give 3e38).
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets);
// dL/dz = (σ(z) - t)/n, with module 02's stable sigmoid, which keeps σ(z) for z far below 0 (σ(-20)
// = 2.06e-9, where 1 - 1/(1 + e^z) gives 0). Subtract, then scale: σ(z) - t of sigmoid()'s own
// value is exact where σ(z) is near t (z = 16 against t = 1), and scaling σ and t by 1/n before
// subtracting loses it (25% off for n = 3).
Tensor binary_cross_entropy_with_logits_backward(const Tensor& logits, const Tensor& targets);

// ---------------------------------------------------------------------------------------------
// Classification losses (yours: src/cross_entropy.cpp)

// Cross-entropy of logits (N, C) against N class ids, mean over the N rows:
//   loss = (1/N)·Σ_n [log Σ_c e^(z[n, c]) - z[n, targets[n]]] = nll_loss(log_softmax(logits), targets)
// through the log-sum-exp with the row maximum taken out, so that logits of ±1e4 or ±1e30 give
// a finite loss. cross_entropy([[0, 0]], {0}) = ln 2 = 0.693147. A class that is not a target
// may have log-probability -inf (a masked logit of -inf, or logits more than FLT_MAX apart, as in
// [[3e38, -3e38]]): the lookup never reads it and the loss stays finite (0 for that row with
// target 0), where nll_loss_one_hot would give NaN. An empty batch (logits (0, C), no targets)
// is the mean over N = 0 rows, 0/0 = NaN, as nll_loss gives.
Tensor cross_entropy(const Tensor& logits, const std::vector<std::int64_t>& targets);
// dL/dz = (softmax(logits) - one_hot(targets))/N, shape (N, C): each row sums to 0.
Tensor cross_entropy_backward(const Tensor& logits, const std::vector<std::int64_t>& targets);

// Negative log-likelihood of log-probabilities (N, C), by indexing:
//   loss = -(1/N)·Σ_n log_probs[n, targets[n]]   (NumPy: -logp[range(N), targets].mean())
// It reads N values and adds them, in double: the loss is right wherever that mean is a float,
// also where the total is not ([[0, -3e38], [0, -3e38]] with targets {1, 1} gives 3e38). An
// empty batch (log_probs (0, C), no targets) has no values to average: its loss is -(1/0)·0 =
// NaN, the mean of nothing (NumPy's and PyTorch's too), and so is nll_loss_one_hot's.
Tensor nll_loss(const Tensor& log_probs, const std::vector<std::int64_t>& targets);
// The same loss through a one-hot matrix Y (N, C), Y[n, c] = 1 where c = targets[n], else 0:
//   loss = -(1/N)·Σ_n Σ_c Y[n, c]·log_probs[n, c]
// N·C multiplications and additions to find the same N values: the chapter counts the cost. The
// products are added in double, as nll_loss adds, so the two give the same loss wherever every
// product is a number. They differ only where a class that is not a target has log-probability
// -inf, inf or NaN: its product with 0 is NaN, and so is this loss, where nll_loss never reads it.
Tensor nll_loss_one_hot(const Tensor& log_probs, const std::vector<std::int64_t>& targets);
// dL/d(log_probs) = -Y/N: -1/N at (n, targets[n]), 0 elsewhere.
Tensor nll_loss_backward(const Tensor& log_probs, const std::vector<std::int64_t>& targets);

}  // namespace kiln
