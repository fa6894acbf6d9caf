// Given: the parts of kiln::Tensor you do not write yourself. Constructors and factories, the
// bookkeeping queries, copies, the arithmetic operators (all routed through your `elementwise`),
// map, a plain matmul, and printing. Read it: it shows how your functions are used.
#include <algorithm>
#include <cmath>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "kiln/tensor.h"

namespace kiln {

std::string to_string(const Shape& shape) {
  std::string text = "(";
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (d > 0) text += ", ";
    text += std::to_string(shape[d]);
  }
  return text + ")";
}

std::int64_t numel(const Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t size : shape) count *= size;
  return count;
}

// ---------------------------------------------------------------------------------------------
// Construction

Tensor::Tensor() : storage_(std::make_shared<std::vector<float>>(1, 0.0f)) {}

Tensor::Tensor(Shape shape, std::vector<float> values) {
  for (std::int64_t size : shape) {
    if (size < 0) throw ShapeError("a tensor cannot have a negative size: shape " + to_string(shape));
  }
  const std::int64_t count = kiln::numel(shape);
  if (static_cast<std::int64_t>(values.size()) != count) {
    throw ShapeError("shape " + to_string(shape) + " holds " + std::to_string(count) +
                     " elements, but " + std::to_string(values.size()) + " values were given");
  }
  // Row-major: computed here rather than by your contiguous_strides, so that a tensor can be built
  // (by the checks, for one) before that function is written.
  strides_.assign(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides_[d - 1] = strides_[d] * shape[d];
  shape_ = std::move(shape);
  storage_ = std::make_shared<std::vector<float>>(std::move(values));
}

Tensor::Tensor(std::shared_ptr<std::vector<float>> storage, std::int64_t offset, Shape shape,
               Shape strides)
    : storage_(std::move(storage)), offset_(offset), shape_(std::move(shape)), strides_(std::move(strides)) {}

Tensor make_view(const Tensor& base, Shape shape, Shape strides, std::int64_t offset) {
  return Tensor(base.storage_, offset, std::move(shape), std::move(strides));
}

Tensor Tensor::zeros(const Shape& shape) { return full(shape, 0.0f); }

Tensor Tensor::ones(const Shape& shape) { return full(shape, 1.0f); }

Tensor Tensor::full(const Shape& shape, float value) {
  const std::int64_t count = kiln::numel(shape);
  return Tensor(shape, std::vector<float>(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)), value));
}

Tensor Tensor::scalar(float value) { return Tensor(Shape{}, {value}); }

Tensor Tensor::arange(std::int64_t n) {
  if (n < 0) throw ShapeError("arange needs n >= 0, got " + std::to_string(n));
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) values[static_cast<std::size_t>(i)] = static_cast<float>(i);
  return Tensor({n}, std::move(values));
}

Tensor Tensor::rand(const Shape& shape, WichmannHill& generator) {
  const std::int64_t count = kiln::numel(shape);
  std::vector<float> values(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (float& value : values) {
    // A double just below 1 can round up to 1.0f; keep the interval half-open.
    value = std::min(static_cast<float>(generator.next()), std::nextafter(1.0f, 0.0f));
  }
  return Tensor(shape, std::move(values));
}

// ---------------------------------------------------------------------------------------------
// Queries and copies

std::int64_t Tensor::size(std::int64_t d) const {
  const std::int64_t n = dim();
  const std::int64_t wrapped = d < 0 ? d + n : d;
  if (wrapped < 0 || wrapped >= n) {
    throw IndexError("dimension " + std::to_string(d) + " is out of range for shape " + to_string(shape_));
  }
  return shape_[static_cast<std::size_t>(wrapped)];
}

bool Tensor::is_contiguous() const {
  // Dimensions of size 1 never move, so their stride does not matter.
  std::int64_t expected = 1;
  for (std::size_t d = shape_.size(); d-- > 0;) {
    if (shape_[d] == 0) return true;
    if (shape_[d] != 1 && strides_[d] != expected) return false;
    expected *= shape_[d];
  }
  return true;
}

float Tensor::item() const {
  if (numel() != 1) {
    throw ShapeError("item() needs a tensor with exactly one element, got shape " + to_string(shape_));
  }
  // With one element every index is 0, so the element sits at the offset itself.
  return (*storage_)[static_cast<std::size_t>(offset_)];
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const { return Tensor(shape_, to_vector()); }

float* Tensor::data() {
  if (!is_contiguous()) {
    throw std::logic_error("data() needs a contiguous tensor; this view of shape " + to_string(shape_) +
                           " is not: call contiguous() first");
  }
  return storage_->data() + offset_;
}

const float* Tensor::data() const { return const_cast<Tensor*>(this)->data(); }

// ---------------------------------------------------------------------------------------------
// Operators: every one goes through elementwise, so broadcasting works everywhere.

Tensor operator+(const Tensor& a, const Tensor& b) { return elementwise(a, b, BinaryOp::add); }
Tensor operator-(const Tensor& a, const Tensor& b) { return elementwise(a, b, BinaryOp::subtract); }
Tensor operator*(const Tensor& a, const Tensor& b) { return elementwise(a, b, BinaryOp::multiply); }
Tensor operator/(const Tensor& a, const Tensor& b) { return elementwise(a, b, BinaryOp::divide); }

Tensor operator+(const Tensor& a, float b) { return a + Tensor::scalar(b); }
Tensor operator-(const Tensor& a, float b) { return a - Tensor::scalar(b); }
Tensor operator*(const Tensor& a, float b) { return a * Tensor::scalar(b); }
Tensor operator/(const Tensor& a, float b) { return a / Tensor::scalar(b); }
Tensor operator+(float a, const Tensor& b) { return Tensor::scalar(a) + b; }
Tensor operator-(float a, const Tensor& b) { return Tensor::scalar(a) - b; }
Tensor operator*(float a, const Tensor& b) { return Tensor::scalar(a) * b; }
Tensor operator/(float a, const Tensor& b) { return Tensor::scalar(a) / b; }

Tensor operator-(const Tensor& a) { return a * -1.0f; }

Tensor equal(const Tensor& a, const Tensor& b) { return elementwise(a, b, BinaryOp::equal); }
Tensor less(const Tensor& a, const Tensor& b) { return elementwise(a, b, BinaryOp::less); }
Tensor greater(const Tensor& a, const Tensor& b) { return elementwise(a, b, BinaryOp::greater); }

Tensor map(const Tensor& x, float (*f)(float)) {
  std::vector<float> values = x.to_vector();
  for (float& value : values) value = f(value);
  return Tensor(x.shape(), std::move(values));
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (a.dim() != 2 || b.dim() != 2 || a.shape()[1] != b.shape()[0]) {
    throw ShapeError("matmul needs (n, k) and (k, m) matrices, got " + to_string(a.shape()) + " and " +
                     to_string(b.shape()));
  }
  const std::int64_t n = a.shape()[0];
  const std::int64_t k = a.shape()[1];
  const std::int64_t m = b.shape()[1];
  // Layouts (row-major): a is (n, k), b is (k, m), c is (n, m).
  const Tensor a_rows = a.contiguous();
  const Tensor b_rows = b.contiguous();
  const float* a_data = a_rows.data();
  const float* b_data = b_rows.data();
  Tensor c = Tensor::zeros({n, m});
  float* c_data = c.data();
  // The loop over the inner index sits in the middle so that the innermost loop walks rows of b
  // and c with stride 1; each c[row, col] still adds its k products in order.
  for (std::int64_t row = 0; row < n; ++row) {
    for (std::int64_t inner = 0; inner < k; ++inner) {
      const float a_value = a_data[row * k + inner];
      const float* b_row = b_data + inner * m;
      float* c_row = c_data + row * m;
      for (std::int64_t col = 0; col < m; ++col) c_row[col] += a_value * b_row[col];
    }
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Printing

namespace {

// Prints values[start ...] as nested brackets following shape[d ...]; returns the next position.
std::size_t print_nested(std::ostream& out, const std::vector<float>& values, const Shape& shape,
                         std::size_t d, std::size_t start) {
  if (d == shape.size()) {
    out << values[start];
    return start + 1;
  }
  out << '[';
  for (std::int64_t i = 0; i < shape[d]; ++i) {
    if (i > 0) out << ", ";
    start = print_nested(out, values, shape, d + 1, start);
  }
  out << ']';
  return start;
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  constexpr std::int64_t kMaxPrinted = 1000;
  out << "tensor(" << to_string(t.shape()) << ", ";
  if (t.numel() > kMaxPrinted) {
    out << "...";  // too many to be useful on a terminal
  } else {
    print_nested(out, t.to_vector(), t.shape(), 0, 0);
  }
  return out << ')';
}

}  // namespace kiln
