// Module 01: the core of kiln::Tensor. Strides, element access, views (reshape, transpose,
// unsqueeze, expand), broadcasting elementwise operations, and reductions.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "kiln/tensor.h"

namespace kiln {

namespace {

// A dimension argument: negative counts from the end. Throws IndexError when out of [0, rank).
std::size_t wrap_dim(std::int64_t dim, std::int64_t rank, const Shape& shape) {
  const std::int64_t wrapped = dim < 0 ? dim + rank : dim;
  if (wrapped < 0 || wrapped >= rank) {
    throw IndexError("dimension " + std::to_string(dim) + " is out of range for shape " + to_string(shape));
  }
  return static_cast<std::size_t>(wrapped);
}

// The storage position of `index` in a tensor with this shape, strides and offset.
std::int64_t storage_position(const Shape& shape, const Shape& strides, std::int64_t offset,
                              const Shape& index) {
  if (index.size() != shape.size()) {
    throw IndexError("index " + to_string(index) + " has " + std::to_string(index.size()) +
                     " entries, but the tensor has shape " + to_string(shape));
  }
  std::int64_t position = offset;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (index[d] < 0 || index[d] >= shape[d]) {
      throw IndexError("index " + to_string(index) + " is out of range for shape " + to_string(shape));
    }
    position += index[d] * strides[d];
  }
  return position;
}

}  // namespace

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  std::int64_t stride = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  // Walk from the last dimension; a missing leading dimension counts as size 1.
  for (std::size_t back = 0; back < rank; ++back) {
    const std::int64_t size_a = back < a.size() ? a[a.size() - 1 - back] : 1;
    const std::int64_t size_b = back < b.size() ? b[b.size() - 1 - back] : 1;
    if (size_a != size_b && size_a != 1 && size_b != 1) {
      throw ShapeError("shapes " + to_string(a) + " and " + to_string(b) + " cannot be broadcast together");
    }
    result[rank - 1 - back] = size_a == 1 ? size_b : size_a;
  }
  return result;
}

// at() and set() are for single elements, not for loops, so they can afford vector::at's
// bounds check as a second line of defence.
float Tensor::at(const Shape& index) const {
  return storage_->at(static_cast<std::size_t>(storage_position(shape_, strides_, offset_, index)));
}

void Tensor::set(const Shape& index, float value) {
  storage_->at(static_cast<std::size_t>(storage_position(shape_, strides_, offset_, index))) = value;
}

std::vector<float> Tensor::to_vector() const {
  const std::int64_t count = numel();
  std::vector<float> values;
  values.reserve(static_cast<std::size_t>(count));
  if (count == 0) return values;
  // An odometer over the index: the last digit turns fastest; when a digit wraps to 0, step back
  // its whole run (size·stride) and carry into the digit before it.
  Shape index(shape_.size(), 0);
  std::int64_t position = offset_;
  for (std::int64_t i = 0; i < count; ++i) {
    values.push_back((*storage_)[static_cast<std::size_t>(position)]);
    for (std::size_t d = shape_.size(); d-- > 0;) {
      position += strides_[d];
      if (++index[d] < shape_[d]) break;
      position -= shape_[d] * strides_[d];
      index[d] = 0;
    }
  }
  return values;
}

Tensor Tensor::reshape(Shape shape) const {
  std::int64_t known = 1;
  std::size_t inferred = shape.size();  // position of the -1, if any
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && inferred == shape.size()) {
      inferred = d;
    } else if (shape[d] < 0) {
      throw ShapeError("cannot reshape " + to_string(shape_) + " to " + to_string(shape) +
                       ": sizes must be >= 0, with at most one -1");
    } else {
      known *= shape[d];
    }
  }
  if (inferred < shape.size()) {
    // The -1 is the size that times the others gives numel(). When the others multiply to 0 there
    // is no such size to find: any size fits an empty tensor and none fits one with elements.
    if (known == 0) {
      throw ShapeError("cannot reshape " + to_string(shape_) + " to " + to_string(shape) +
                       ": the -1 cannot be inferred when the other sizes multiply to 0");
    }
    shape[inferred] = numel() / known;
  }
  if (kiln::numel(shape) != numel()) {
    throw ShapeError("cannot reshape " + to_string(shape_) + " (" + std::to_string(numel()) +
                     " elements) to " + to_string(shape));
  }
  // A contiguous tensor is reinterpreted in place; anything else is copied into row-major order.
  const Tensor base = contiguous();
  Shape strides = contiguous_strides(shape);
  return make_view(base, std::move(shape), std::move(strides), base.offset());
}

Tensor Tensor::transpose(std::int64_t dim0, std::int64_t dim1) const {
  const std::size_t d0 = wrap_dim(dim0, dim(), shape_);
  const std::size_t d1 = wrap_dim(dim1, dim(), shape_);
  Shape shape = shape_;
  Shape strides = strides_;
  std::swap(shape.at(d0), shape.at(d1));
  std::swap(strides.at(d0), strides.at(d1));
  return make_view(*this, std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::unsqueeze(std::int64_t dim) const {
  if (dim < 0 || dim > this->dim()) {
    throw IndexError("unsqueeze position " + std::to_string(dim) + " is out of range [0, " +
                     std::to_string(this->dim()) + "] for shape " + to_string(shape_));
  }
  Shape shape;
  Shape strides;
  for (std::int64_t d = 0; d <= this->dim(); ++d) {
    if (d == dim) {
      // The new dimension has size 1, so its stride never moves anything; give it the stride a
      // contiguous tensor would have there.
      const bool last = d == this->dim();
      shape.push_back(1);
      strides.push_back(last ? 1 : shape_[d] * strides_[d]);
    }
    if (d < this->dim()) {
      shape.push_back(shape_[d]);
      strides.push_back(strides_[d]);
    }
  }
  return make_view(*this, std::move(shape), std::move(strides), offset_);
}

Tensor Tensor::expand(const Shape& shape) const {
  if (shape.size() < shape_.size()) {
    throw ShapeError("cannot expand shape " + to_string(shape_) + " to " + to_string(shape) +
                     ": the target has fewer dimensions");
  }
  const std::size_t added = shape.size() - shape_.size();
  Shape strides(shape.size(), 0);  // added leading dimensions read the same values: stride 0
  for (std::size_t d = 0; d < shape_.size(); ++d) {
    const std::int64_t target = shape[added + d];
    if (shape_[d] == target) {
      strides[added + d] = strides_[d];
    } else if (shape_[d] == 1) {
      strides[added + d] = 0;
    } else {
      throw ShapeError("cannot expand shape " + to_string(shape_) + " to " + to_string(shape));
    }
  }
  return make_view(*this, shape, std::move(strides), offset_);
}

namespace {

// out = f(a, b) for a and b already expanded to out's shape. Walks the output in row-major order;
// the two input positions follow along the same odometer, so a stride-0 (broadcast) dimension
// simply does not move its input.
template <class F>
void apply_binary(const Tensor& a, const Tensor& b, float* out, F f) {
  const Shape& shape = a.shape();
  const std::size_t rank = shape.size();
  const float* a_data = a.storage_data();
  const float* b_data = b.storage_data();
  const std::int64_t count = numel(shape);
  if (count == 0) return;
  if (rank == 0) {
    out[0] = f(a_data[a.offset()], b_data[b.offset()]);
    return;
  }
  // The innermost dimension runs as a tight loop; the odometer handles the outer ones.
  const std::int64_t inner = shape[rank - 1];
  const std::int64_t a_step = a.strides()[rank - 1];
  const std::int64_t b_step = b.strides()[rank - 1];
  Shape index(rank - 1, 0);
  std::int64_t a_pos = a.offset();
  std::int64_t b_pos = b.offset();
  for (std::int64_t row_start = 0; row_start < count; row_start += inner) {
    for (std::int64_t i = 0; i < inner; ++i) {
      out[row_start + i] = f(a_data[a_pos + i * a_step], b_data[b_pos + i * b_step]);
    }
    for (std::size_t d = rank - 1; d-- > 0;) {
      a_pos += a.strides()[d];
      b_pos += b.strides()[d];
      if (++index[d] < shape[d]) break;
      a_pos -= shape[d] * a.strides()[d];
      b_pos -= shape[d] * b.strides()[d];
      index[d] = 0;
    }
  }
}

}  // namespace

Tensor elementwise(const Tensor& a, const Tensor& b, BinaryOp op) {
  const Shape shape = broadcast_shapes(a.shape(), b.shape());
  const Tensor a_wide = a.expand(shape);
  const Tensor b_wide = b.expand(shape);
  Tensor out = Tensor::zeros(shape);  // contiguous, row-major
  float* out_data = out.data();
  switch (op) {
    case BinaryOp::add:
      apply_binary(a_wide, b_wide, out_data, [](float x, float y) { return x + y; });
      break;
    case BinaryOp::subtract:
      apply_binary(a_wide, b_wide, out_data, [](float x, float y) { return x - y; });
      break;
    case BinaryOp::multiply:
      apply_binary(a_wide, b_wide, out_data, [](float x, float y) { return x * y; });
      break;
    case BinaryOp::divide:
      apply_binary(a_wide, b_wide, out_data, [](float x, float y) { return x / y; });
      break;
    case BinaryOp::equal:
      apply_binary(a_wide, b_wide, out_data, [](float x, float y) { return x == y ? 1.0f : 0.0f; });
      break;
    case BinaryOp::less:
      apply_binary(a_wide, b_wide, out_data, [](float x, float y) { return x < y ? 1.0f : 0.0f; });
      break;
    case BinaryOp::greater:
      apply_binary(a_wide, b_wide, out_data, [](float x, float y) { return x > y ? 1.0f : 0.0f; });
      break;
  }
  return out;
}

Tensor Tensor::sum(std::int64_t dim, bool keepdim) const {
  const std::size_t reduced = wrap_dim(dim, this->dim(), shape_);
  // View the contiguous input as (outer, n, inner): n is the reduced size, outer the product of
  // the sizes before it, inner the product of the sizes after it.
  const Tensor x = contiguous();
  const float* x_data = x.data();
  const std::int64_t n = shape_.at(reduced);
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (std::size_t d = 0; d < reduced; ++d) outer *= shape_[d];
  for (std::size_t d = reduced + 1; d < shape_.size(); ++d) inner *= shape_[d];
  // Accumulate in double: later modules sum a million floats.
  std::vector<double> totals(static_cast<std::size_t>(outer * inner), 0.0);
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t r = 0; r < n; ++r) {
      const float* row = x_data + (o * n + r) * inner;
      double* total = totals.data() + o * inner;
      for (std::int64_t i = 0; i < inner; ++i) total[i] += row[i];
    }
  }
  Shape shape = shape_;
  if (keepdim) {
    shape[reduced] = 1;
  } else {
    shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(reduced));
  }
  return Tensor(std::move(shape), std::vector<float>(totals.begin(), totals.end()));
}

Tensor Tensor::mean(std::int64_t dim, bool keepdim) const {
  const std::int64_t n = size(dim);
  return sum(dim, keepdim) / static_cast<float>(n);
}

Tensor Tensor::sum() const {
  const Tensor x = contiguous();
  const float* x_data = x.data();
  double total = 0.0;
  for (std::int64_t i = 0; i < numel(); ++i) total += x_data[i];
  return Tensor::scalar(static_cast<float>(total));
}

float Tensor::norm() const {
  const Tensor x = contiguous();
  const float* x_data = x.data();
  double squares = 0.0;
  for (std::int64_t i = 0; i < numel(); ++i) squares += static_cast<double>(x_data[i]) * x_data[i];
  return static_cast<float>(std::sqrt(squares));
}

}  // namespace kiln
