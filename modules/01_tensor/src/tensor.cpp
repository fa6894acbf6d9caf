// Module 01: the core of kiln::Tensor. You write strides, element access, views (reshape,
// transpose, unsqueeze, expand), broadcasting elementwise operations, and reductions.
//
// Reminders from kiln/tensor.h:
//   element (i0, ..., ik) lives at storage[offset + i0·strides[0] + ... + ik·strides[k]]
//   Tensor's private members: storage_ (shared_ptr<vector<float>>), offset_, shape_, strides_.
//   make_view(base, shape, strides, offset) builds a view of base's storage (no copy).
// Member functions may read storage_ directly. A free function (elementwise) reads a tensor's
// elements through t.storage_data(), indexed with t.offset() and t.strides().
// Errors: IndexError for a bad index or dimension; ShapeError, naming both shapes (use
// to_string(shape)), for shapes that do not fit together.
// Any tensor may be a view that starts inside its storage (a row of a matrix, a slice of a batch),
// contiguous or not: read it from data() or through offset() and strides(), never from
// storage_data() as if it began at the storage's first float; a view's transpose, unsqueeze and
// expand keep its offset.
// Sizes, indices, positions and dims are std::int64_t and may pass 2^31 (a shape needs no
// storage): never narrow one to int, where 2^32 becomes 0, a valid index, dim or size.
#include <cmath>
#include <string>
#include <utility>

#include "kiln/tensor.h"

namespace kiln {

Shape contiguous_strides(const Shape& shape) {
  // Row-major: the last dimension has stride 1, and each dimension's stride is the next one's
  // stride times the next one's size. (2, 3, 4) -> (12, 4, 1); the scalar shape () -> ().
  // Keep the running product in std::int64_t: (2, 65536, 65536) -> (4294967296, 65536, 1).
  throw kiln::NotImplemented();
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  // Align the shapes at their last dimension (a missing leading size counts as 1). Sizes are
  // compatible when equal or when one is 1, and a 1 takes the other size, whatever it is: (0, 3)
  // with (1, 3) is (0, 3), so "the larger" is not the rule.
  // (256, 256, 3) with (3) -> (256, 256, 3); (3, 1) with (1, 3) -> (3, 3).
  // Otherwise throw ShapeError naming both shapes: (2, 3) with (4).
  throw kiln::NotImplemented();
}

float Tensor::at(const Shape& index) const {
  // One index entry per dimension, each in [0, size); otherwise throw IndexError. The element is
  // storage_[offset_ + sum of index[d]·strides_[d]].
  throw kiln::NotImplemented();
}

void Tensor::set(const Shape& index, float value) {
  // Like at(), but writes the element. A view shares storage, so the write shows in its base.
  // A refused set() writes nothing: check the whole index before you touch storage.
  throw kiln::NotImplemented();
}

std::vector<float> Tensor::to_vector() const {
  // All numel() elements in row-major order of this tensor's own shape (the last index moves
  // fastest), each read through offset_ and strides_: a transposed view lists its columns.
  // A view with no elements lists nothing.
  throw kiln::NotImplemented();
}

Tensor Tensor::reshape(Shape shape) const {
  // At most one size may be -1: it becomes numel() / (product of the other sizes). Throw
  // ShapeError naming both shapes when the element counts differ, and when the other sizes
  // multiply to 0, where the -1 cannot be inferred ((0, 3) to (0, -1)). Copy a non-contiguous
  // tensor first (contiguous()), then return a view with the new shape and row-major strides.
  throw kiln::NotImplemented();
}

Tensor Tensor::transpose(std::int64_t dim0, std::int64_t dim1) const {
  // A view with the sizes and the strides of dim0 and dim1 swapped; nothing moves in storage.
  // Negative dims count from the end; throw IndexError for a dim outside the tensor.
  throw kiln::NotImplemented();
}

Tensor Tensor::unsqueeze(std::int64_t dim) const {
  // A view with a new size-1 dimension at position dim, 0 <= dim <= dim() (IndexError otherwise).
  // (3) -> unsqueeze(0) is (1, 3), unsqueeze(1) is (3, 1). The new stride is never used to move.
  throw kiln::NotImplemented();
}

Tensor Tensor::expand(const Shape& shape) const {
  // A broadcast view with the given shape. Align at the last dimension: a size equal to the
  // target keeps its stride (a 1 whose target is 1 too), a size 1 that grows gets stride 0 (to any
  // size, 0 included: (1, 3) -> (0, 3)), added leading dimensions get stride 0. Anything else:
  // ShapeError naming both shapes. (3) -> (3, 3) has strides (0, 1); (1, 3) with strides (3, 1)
  // -> (2, 1, 3) has (0, 3, 1).
  throw kiln::NotImplemented();
}

Tensor elementwise(const Tensor& a, const Tensor& b, BinaryOp op) {
  // The result is contiguous with shape broadcast_shapes(a.shape(), b.shape()); expand both
  // inputs to it, then walk the output in row-major order, reading each input through its own
  // offset and strides. equal, less and greater give 1.0f where true and 0.0f where false,
  // compared exactly, as ==, < and > on floats (NaN is equal to nothing, -0 equals 0).
  // Empty inputs give an empty result of that shape: (0, 3) with (1, 3) is (0, 3).
  // Later modules call this on a million elements: avoid at() per element, and keep the op
  // choice out of the innermost loop if you can.
  throw kiln::NotImplemented();
}

Tensor Tensor::sum(std::int64_t dim, bool keepdim) const {
  // Add along dim (negative counts from the end; IndexError outside). The result drops dim, or
  // keeps it with size 1 when keepdim. For m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]:
  // sum(0) = [12, 15, 18], sum(1) = [6, 15, 24], sum(1, true) has shape (3, 1).
  throw kiln::NotImplemented();
}

Tensor Tensor::mean(std::int64_t dim, bool keepdim) const {
  // sum(dim, keepdim) divided by the size of dim. mean(1) of m above is [2, 5, 8]. Divide also
  // when that size is 0: the mean of nothing is 0/0 = NaN ((0, 3).mean(0) is [NaN, NaN, NaN]).
  // Divide, rounding once: sum·(1/n) rounds twice and is a last bit off (7·(1/3) is 2.33333349,
  // 7/3 is 2.33333325).
  throw kiln::NotImplemented();
}

Tensor Tensor::sum() const {
  // The sum of all elements as a scalar tensor (shape ()). 45 for m above. The sum of no elements
  // is 0.
  throw kiln::NotImplemented();
}

float Tensor::norm() const {
  // Frobenius norm: sqrt of the sum of the squares of all elements. sqrt(285) = 16.88 for m above.
  // Square and add in double: 3e20 squared overflows a float, 3e-30 squared underflows to 0.
  // The norm of no elements is 0.
  throw kiln::NotImplemented();
}

}  // namespace kiln
