// kiln::Tensor: an n-dimensional array of float32.
//
// Layout: the values live in a shared, flat storage buffer. Element (i0, i1, ..., ik) is at
//   storage[offset + i0·strides[0] + i1·strides[1] + ... + ik·strides[k]]
// A freshly built tensor is row-major ("C order"): the last index moves fastest, so
// strides[k] = 1 and strides[d] = strides[d+1]·shape[d+1].
//
// A Tensor is a handle, like a NumPy array or a PyTorch tensor: copying a Tensor shares its
// storage. reshape (of a contiguous tensor), transpose, unsqueeze and expand return views that
// share the storage too; expand gives a broadcast dimension the stride 0, so one value is read
// many times and nothing is copied. clone() and contiguous() make real copies.
//
// Any tensor may be a view that starts inside its storage (a row of a matrix, a slice of a batch),
// contiguous or not: read it from data() or through offset() and strides(), never from
// storage_data() as if it began at the storage's first float; a view's transpose, unsqueeze and
// expand keep its offset.
// Sizes, indices, positions and dims are std::int64_t and may pass 2^31 (a shape needs no
// storage): never narrow one to int, where 2^32 becomes 0, a valid index, dim or size.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "kiln/errors.h"
#include "kiln/random.h"

namespace kiln {

using Shape = std::vector<std::int64_t>;

// "(2, 3)": for error messages.
std::string to_string(const Shape& shape);

// Number of elements of a shape: the product of its sizes (1 for the scalar shape ()).
std::int64_t numel(const Shape& shape);

// Row-major strides of a shape: the last dimension has stride 1, and every other the product of
// all the sizes after it, a size 0 included: (2, 0, 3) has strides (0, 3, 1), the strides of a
// tensor built with that shape. The products are std::int64_t like the sizes and may pass 2^31:
// (2, 65536, 65536) has strides (4294967296, 65536, 1).
Shape contiguous_strides(const Shape& shape);

// NumPy's broadcasting rule: align the shapes at their last dimension; two sizes are compatible
// when equal or when one of them is 1, and a 1 takes the other size, whatever it is ((0, 3) with
// (1, 3) is (0, 3)). Throws ShapeError naming both shapes when they are not compatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Gradient bookkeeping, defined by module 06 (kiln/autograd.h).
struct AutogradMeta;

class Tensor {
 public:
  // A scalar (shape ()) holding 0.
  Tensor();
  // values in row-major order; throws ShapeError when values.size() != numel(shape).
  Tensor(Shape shape, std::vector<float> values);

  static Tensor zeros(const Shape& shape);
  static Tensor ones(const Shape& shape);
  static Tensor full(const Shape& shape, float value);
  static Tensor scalar(float value);
  // 0, 1, ..., n-1 as a 1-D tensor.
  static Tensor arange(std::int64_t n);
  // Uniform in [0, 1), drawn in row-major order from the generator.
  static Tensor rand(const Shape& shape, WichmannHill& generator);

  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  std::int64_t offset() const { return offset_; }
  std::int64_t dim() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t numel() const { return kiln::numel(shape_); }
  // Size of dimension d; a negative d counts from the end (-1 is the last).
  std::int64_t size(std::int64_t d) const;
  // True when the elements lie in storage in row-major order with no gaps.
  bool is_contiguous() const;

  // Element access. An index has one entry per dimension; each must lie in [0, size).
  // Throws IndexError otherwise; a refused set() writes nothing.
  float at(const Shape& index) const;
  void set(const Shape& index, float value);
  // The value of a tensor with exactly one element.
  float item() const;

  // All elements in row-major order, also for a view; a view with no elements lists nothing.
  std::vector<float> to_vector() const;

  // A view with a new shape and the same elements in row-major order. One size may be -1: it is
  // inferred. A non-contiguous tensor is copied first. Throws ShapeError when the element counts
  // differ, and when a -1 cannot be inferred because the other sizes multiply to 0 (a (0, 3)
  // tensor reshaped to (0, -1): every size would fit).
  Tensor reshape(Shape shape) const;
  // A view with dimensions dim0 and dim1 swapped (their sizes and their strides).
  Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
  // A view with a new dimension of size 1 inserted at position dim (0 <= dim <= dim()).
  Tensor unsqueeze(std::int64_t dim) const;
  // A broadcast view of this tensor with the given shape: leading dimensions may be added, and
  // dimensions of size 1 may grow to any size, 0 included ((1, 3) expands to (0, 3)); the stride
  // of every broadcast dimension is 0 (no copy). A dimension that does not grow keeps its stride,
  // a size 1 whose target is 1 included. Throws ShapeError when this tensor cannot be broadcast
  // to the shape.
  Tensor expand(const Shape& shape) const;
  // This tensor if it is contiguous, otherwise a contiguous copy.
  Tensor contiguous() const;
  // A contiguous copy that shares nothing with this tensor.
  Tensor clone() const;

  // The first element of a contiguous tensor, for kernels that walk memory directly.
  // Throws std::logic_error for a non-contiguous view: call contiguous() first.
  float* data();
  const float* data() const;
  // The first float of the shared storage buffer, for any tensor or view: element
  // (i0, ..., ik) is storage_data()[offset() + i0·strides()[0] + ... + ik·strides()[k]].
  float* storage_data() { return storage_->data(); }
  const float* storage_data() const { return storage_->data(); }
  // How many floats the shared storage buffer holds.
  std::size_t storage_size() const { return storage_ ? storage_->size() : 0; }

  // Reductions. A negative dim counts from the end. Without keepdim the reduced dimension is
  // removed; with it, it stays with size 1.
  Tensor sum(std::int64_t dim, bool keepdim = false) const;
  // sum(dim, keepdim) divided by the size of dim, also when that size is 0: the mean of nothing
  // is 0/0 = NaN, as in PyTorch (a (0, 3) tensor's mean(0) is [NaN, NaN, NaN]). Divide, rounding
  // once: sum·(1/n) rounds twice and is a last bit off (7·(1/3) is 2.33333349, 7/3 is 2.33333325).
  Tensor mean(std::int64_t dim, bool keepdim = false) const;
  // Sum of all elements, as a scalar tensor; the sum of no elements is 0.
  Tensor sum() const;
  // Frobenius norm: the square root of the sum of the squares of all elements. Right wherever the
  // norm is a float: [3e20, 4e20] gives 5e20 and [3e-30, 4e-30] gives 5e-30, although their
  // squares lie outside float's range (square and add in double). The norm of no elements is 0.
  float norm() const;

  // Autograd, defined by module 06 (kiln/autograd.h): whether gradients flow into this tensor,
  // the gradient accumulated by backward(), and the backward pass itself.
  Tensor& set_requires_grad(bool requires_grad = true);
  bool requires_grad() const;
  Tensor grad() const;
  void zero_grad();
  void backward();
  void backward(const Tensor& grad_output);
  const std::shared_ptr<AutogradMeta>& autograd() const { return autograd_; }
  std::shared_ptr<AutogradMeta>& autograd() { return autograd_; }

 private:
  Tensor(std::shared_ptr<std::vector<float>> storage, std::int64_t offset, Shape shape, Shape strides);

  std::shared_ptr<std::vector<float>> storage_;
  std::int64_t offset_ = 0;
  Shape shape_;
  Shape strides_;
  std::shared_ptr<AutogradMeta> autograd_;

  // The view-making functions build views of the same storage through this.
  friend Tensor make_view(const Tensor& base, Shape shape, Shape strides, std::int64_t offset);
};

// A view of base's storage with the given shape, strides and offset (no copy, no checks).
Tensor make_view(const Tensor& base, Shape shape, Shape strides, std::int64_t offset);

// Elementwise operations with broadcasting: the result has broadcast_shapes(a.shape(), b.shape()).
// Empty inputs give an empty result of that shape: (0, 3) with (1, 3) is (0, 3).
enum class BinaryOp { add, subtract, multiply, divide, equal, less, greater };
Tensor elementwise(const Tensor& a, const Tensor& b, BinaryOp op);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, float b);
Tensor operator-(const Tensor& a, float b);
Tensor operator*(const Tensor& a, float b);
Tensor operator/(const Tensor& a, float b);
Tensor operator+(float a, const Tensor& b);
Tensor operator-(float a, const Tensor& b);
Tensor operator*(float a, const Tensor& b);
Tensor operator/(float a, const Tensor& b);
Tensor operator-(const Tensor& a);
// Comparisons give 1.0 where true and 0.0 where false, compared exactly, as ==, < and > on floats
// do: no tolerance, NaN equal to nothing (not even NaN), -0 equal to 0, inf equal to inf.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);

// f applied to every element; the result is contiguous with x's shape.
Tensor map(const Tensor& x, float (*f)(float));

// Plain matrix product of (n, k) and (k, m) tensors, by three loops. Throws ShapeError naming
// both shapes when the inner sizes differ or either tensor is not 2-D.
Tensor matmul(const Tensor& a, const Tensor& b);

// Prints shape and values, like "tensor((2, 2), [[1, 2], [3, 4]])".
std::ostream& operator<<(std::ostream& out, const Tensor& t);

}  // namespace kiln
