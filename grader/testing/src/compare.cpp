// Tensor comparisons; kept apart from report_failure so tests without tensors need no Tensor.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kiln/testing.h"

namespace kiln::testing {

Tensor random_tensor(const Shape& shape, std::uint64_t seed, float low, float high) {
  WichmannHill generator(seed);
  std::vector<float> values(static_cast<std::size_t>(numel(shape)));
  for (float& v : values) v = low + (high - low) * static_cast<float>(generator.next());
  return Tensor(shape, values);
}

double weighted_sum(const Tensor& y, const Tensor& weights) {
  const std::vector<float> ys = y.to_vector();
  const std::vector<float> ws = weights.to_vector();
  double total = 0.0;
  for (std::size_t i = 0; i < ys.size(); ++i) total += static_cast<double>(ys[i]) * ws[i];
  return total;
}

Tensor reference_matmul(const Tensor& a, const Tensor& b) {
  const std::int64_t n = a.shape()[0], k = a.shape()[1], m = b.shape()[1];
  const std::vector<float> av = a.to_vector(), bv = b.to_vector();
  std::vector<float> c(static_cast<std::size_t>(n * m));
  for (std::int64_t row = 0; row < n; ++row) {
    for (std::int64_t col = 0; col < m; ++col) {
      double total = 0.0;
      for (std::int64_t i = 0; i < k; ++i) total += static_cast<double>(av[row * k + i]) * bv[i * m + col];
      c[static_cast<std::size_t>(row * m + col)] = static_cast<float>(total);
    }
  }
  return Tensor({n, m}, c);
}

Tensor numeric_gradient(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& values,
                        std::size_t i, const Tensor& weights, float eps) {
  std::vector<float> gradient(static_cast<std::size_t>(values[i].numel()));
  for (std::size_t j = 0; j < gradient.size(); ++j) {
    std::vector<Tensor> plus = values;
    std::vector<Tensor> minus = values;
    std::vector<float> up = values[i].to_vector();
    std::vector<float> down = up;
    up[j] += eps;
    down[j] -= eps;
    plus[i] = Tensor(values[i].shape(), up);
    minus[i] = Tensor(values[i].shape(), down);
    const double difference = weighted_sum(f(plus), weights) - weighted_sum(f(minus), weights);
    gradient[j] = static_cast<float>(difference / (2.0 * static_cast<double>(eps)));
  }
  return Tensor(values[i].shape(), gradient);
}

std::string Comparison::describe() const {
  if (!shapes_match) return "the shapes differ";
  return fmt::format("largest difference {} at {}: got {}, expected {}", format_number(max_abs_diff),
                     to_string(where), format_number(actual_value), format_number(expected_value));
}

namespace {

// Row-major index of the flat position `flat` in `shape`.
Shape unravel(std::int64_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

}  // namespace

Comparison compare(const Tensor& actual, const Tensor& expected, double atol, double rtol) {
  Comparison result;
  if (actual.shape() != expected.shape()) {
    result.shapes_match = false;
    result.close = false;
    result.max_abs_diff = std::numeric_limits<double>::infinity();
    return result;
  }
  const std::vector<float> a = actual.to_vector();
  const std::vector<float> e = expected.to_vector();
  double worst_excess = -1.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double diff = std::isnan(a[i]) || std::isnan(e[i])
                            ? std::numeric_limits<double>::infinity()
                            : std::fabs(static_cast<double>(a[i]) - e[i]);
    const double allowed = atol + rtol * std::fabs(static_cast<double>(e[i]));
    if (diff > allowed) result.close = false;
    // Report the largest difference; among elements out of tolerance prefer the worst excess.
    const double excess = diff - allowed;
    if (diff > result.max_abs_diff || (excess > 0 && excess > worst_excess && diff >= result.max_abs_diff)) {
      result.max_abs_diff = diff;
      result.where = unravel(static_cast<std::int64_t>(i), actual.shape());
      result.actual_value = a[i];
      result.expected_value = e[i];
      worst_excess = excess;
    }
  }
  if (result.where.empty() && !a.empty()) result.where = unravel(0, actual.shape());
  return result;
}

bool expect_close(const char* file, int line, const Tensor& actual, const Tensor& expected,
                  double atol, std::string_view failure_id, double rtol) {
  const Comparison c = compare(actual, expected, atol, rtol);
  if (c.close) return true;
  if (!c.shapes_match) {
    report_failure(file, line, failure_id, {{"difference", "inf"}, {"where", "-"}},
                   fmt::format("got shape {}, expected shape {}", to_string(actual.shape()),
                               to_string(expected.shape())));
  } else {
    report_failure(file, line, failure_id,
                   {{"difference", format_number(c.max_abs_diff)}, {"where", to_string(c.where)}},
                   c.describe());
  }
  return false;
}

}  // namespace kiln::testing
