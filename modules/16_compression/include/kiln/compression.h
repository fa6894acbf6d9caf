// Module 16, Compression: fewer bytes for the same model, by pruning, sparse storage and low rank.
//
// Three ways to shrink a trained layer's weight matrix W, each traded against accuracy:
//   magnitude pruning   zero the entries with the smallest |w|; a mask remembers which, so that
//                       fine-tuning can keep them zero (src/pruning.cpp)
//   CSR                 store only the non-zero entries of a pruned matrix, and multiply with it
//                       without ever rebuilding the dense one (src/sparse.cpp)
//   low rank            replace W (m, n) by two thin factors U_r (m, r) and V_r (r, n) from its
//                       singular value decomposition: r(m + n) numbers instead of mn
//                       (src/low_rank.cpp; the SVD itself is given)
//
// Layouts, all row-major float32:
//   weight   any shape; "flat index" k is the element's position in row-major order of its own
//            shape (for a (rows, cols) matrix, k = i·cols + j)
//   mask     the weight's shape, contiguous: 1 where the entry is kept, 0 where it is pruned
//   matrix   (rows, cols): element (i, j) at offset + i·strides[0] + j·strides[1]
//   CSR      see CsrMatrix below
//   SVD      W (m, n) = U (m, k) · diag(S) (k) · Vᵀ (k, n), k = min(m, n), S descending
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/optimizers.h"
#include "kiln/tensor.h"

namespace kiln::compress {

// ---------------------------------------------------------------------------------------------
// Magnitude pruning (yours: src/pruning.cpp)
//
// Pruning is per tensor (per layer): each weight matrix loses the same fraction of its own
// entries, judged only against its own magnitudes. (Global pruning, one threshold for all layers
// together, is the other choice; the chapter compares them.)

// The mask that prunes `weight` to `sparsity`: exactly count = std::llround(sparsity · n) of its
// n entries get 0 (sparsity · n computed in double; llround rounds halves away from zero, so 0.5
// of 7 entries is 4, and only halves: 0.49999999999999994 of 1 entry is 0, where adding 0.5 and
// truncating rounds the sum up to 1), the others 1. The pruned entries are those with the smallest |w|; among
// entries of equal |w|, the one with the LOWER flat index is pruned first. Views are read in
// row-major order of their own shape. Returns a new contiguous tensor of the weight's shape.
// A contiguous view at an offset (a slice of a larger tensor) is read from data(), where its
// values start, not from storage_data(), the storage's first float.
// Throws std::invalid_argument, naming the sparsity, unless 0 ≤ sparsity ≤ 1.
Tensor magnitude_mask(const Tensor& weight, double sparsity);

// Prunes `weight` in place: computes magnitude_mask(weight, sparsity), writes 0 into every pruned
// entry of the weight's own storage (weight.data(): every handle sharing the storage, an
// optimizer's too, sees it), leaves the kept entries as they are, and returns the mask.
// The weight must be contiguous (a parameter is, and so is a block of whole rows of a matrix, a
// view at an offset): its entries start at weight.data(), which for a view is float offset() of
// the storage, not storage_data(), and nothing outside them is written. A sparsity outside [0, 1]
// raises magnitude_mask's std::invalid_argument before anything is written: the weight is left as
// it was.
Tensor prune_magnitude(Tensor& weight, double sparsity);

// One optimizer step of a pruned model that keeps it pruned. For every k, weights[k] is a
// parameter of `optimizer` and masks[k] its mask (same shape):
//   1. the gradient of weights[k], when it has one (autograd::has_grad), becomes grad ⊙ mask, so
//      that the optimizer's state (momentum, Adam's moments) gathers nothing for pruned entries
//      (before the step: a later plain step or a relaxed mask must find nothing there);
//   2. optimizer.step();
//   3. weights[k] ⊙= mask, in place, for every k, with a gradient or without, so that a pruned
//      entry the step moved anyway (momentum left from before pruning, Adam's moments), or one
//      not zeroed yet, is zero again.
// After it, every pruned weight is exactly 0 and so is its gradient. Throws std::invalid_argument
// naming both counts when weights and masks differ in number, and ShapeError naming both shapes
// when a mask's shape is not its weight's, before anything changes: no gradient masked, no step.
void masked_step(optim::Optimizer& optimizer, const std::vector<Tensor>& weights, const std::vector<Tensor>& masks);

// ---------------------------------------------------------------------------------------------
// Compressed sparse rows (yours: src/sparse.cpp)
//
// A (rows, cols) matrix kept as its non-zero entries, row by row:
//   values[p]          the p-th non-zero value, in row-major order (row 0's first, left to right)
//   column_indices[p]  its column
//   row_offsets[i]     where row i's entries start in values; row i holds the entries
//                      p = row_offsets[i] .. row_offsets[i + 1] - 1, so row_offsets has rows + 1
//                      entries, row_offsets[0] = 0 and row_offsets[rows] = nnz; an empty row has
//                      row_offsets[i] = row_offsets[i + 1]
// Indices are 32-bit, as in SciPy and cuSPARSE: a value costs 4 bytes and its column 4 more.
//
// Example: [[0, 2, 0], [0, 0, 0], [5, 0, 7]] has row_offsets [0, 1, 1, 3],
//          column_indices [1, 0, 2] and values [2, 5, 7].
struct CsrMatrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::int32_t> row_offsets;     // rows + 1
  std::vector<std::int32_t> column_indices;  // nnz
  std::vector<float> values;                 // nnz
};

// The CSR form of a (rows, cols) matrix, views included (read through the strides). Entries
// equal to 0 are not stored (-0 counts as 0). Throws ShapeError naming the shape unless the
// tensor is 2-D.
CsrMatrix to_csr(const Tensor& dense);

// a·b for a CSR a (rows, cols) and a dense b (cols, m), views included: a new contiguous
// (rows, m) tensor; row i of the result is Σ over row i's entries p of values[p] · row
// column_indices[p] of b (an empty row gives zeros), and nothing else: the zeros CSR does not
// store are never multiplied, so an inf or NaN of b that only they meet stays out of the result
// ([[1, 0]] as CSR times b [[2], [inf]] is [[2]], where the dense product's 0·inf gives NaN).
// A contiguous view at an offset (a slice of a larger tensor) is read from data(), where its
// values start, not from storage_data(), the storage's first float.
// Throws ShapeError naming both shapes,
// "(rows, cols)" and b's, unless b is 2-D with cols rows.
Tensor csr_matmul(const CsrMatrix& a, const Tensor& b);

// The bytes the CSR arrays hold: 4 per row offset, 4 per column index, 4 per value,
// 4·(rows + 1) + 8·nnz (computed from the arrays' sizes, not from rows: a default CsrMatrix{}
// holds 0 bytes). The dense matrix holds 4·rows·cols, so CSR is smaller only when fewer than
// about half of the entries are non-zero.
std::int64_t csr_bytes(const CsrMatrix& a);

// ---------------------------------------------------------------------------------------------
// Low rank

// A thin singular value decomposition, W = U·diag(S)·Vᵀ.
struct Svd {
  Tensor u;   // (m, k): orthonormal columns
  Tensor s;   // (k): the singular values σ_0 ≥ σ_1 ≥ ... ≥ 0
  Tensor vt;  // (k, n): orthonormal rows
};

// Given (src/svd_given.cpp): the thin SVD of a (m, n) matrix, views included, k = min(m, n),
// computed in double by Eigen's divide-and-conquer SVD and rounded to float32. Throws ShapeError
// naming the shape unless the tensor is 2-D with m, n ≥ 1.
Svd svd(const Tensor& matrix);

// The two factors of a rank-r layer: W ≈ u·v.
struct LowRank {
  Tensor u;  // (m, r) = U[:, :r]·diag(S[:r]): column c of U times σ_c
  Tensor v;  // (r, n) = Vᵀ[:r, :]: the first r rows of Vᵀ
};

// Yours (src/low_rank.cpp): the best rank-r approximation of weight (m, n) as two factors, from
// svd(weight): keep the r largest singular values and their vectors. By the Eckart–Young theorem
// no rank-r matrix is closer to W in the Frobenius norm, and ‖W − u·v‖²_F = Σ_{c ≥ r} σ_c², the
// squares of the discarded singular values. The factors hold r(m + n) numbers instead of mn.
// Both are new contiguous tensors. Throws std::invalid_argument, naming the rank and the shape,
// unless 1 ≤ rank ≤ min(m, n), checked before svd() is called: a matrix with no rows or no
// columns, min(m, n) = 0, gets this error for every rank, not svd()'s ShapeError.
LowRank low_rank(const Tensor& weight, std::int64_t rank);

}  // namespace kiln::compress
