// Trusted references and tensor comparisons, on plain data: the judge's side only.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "kiln/protocol.h"
#include "kiln/testing.h"

namespace kiln::testing {

namespace {

// Row-major index of the flat position `flat` in `shape`.
Shape unravel(std::int64_t flat, const Shape& shape) {
  Shape index(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return index;
}

}  // namespace

double weighted_sum(const TensorData& y, const TensorData& weights) {
  double total = 0.0;
  for (std::size_t i = 0; i < y.values.size() && i < weights.values.size(); ++i)
    total += static_cast<double>(y.values[i]) * weights.values[i];
  return total;
}

TensorData reference_matmul(const TensorData& a, const TensorData& b) {
  const std::int64_t n = a.shape.at(0), k = a.shape.at(1), m = b.shape.at(1);
  std::vector<float> c(static_cast<std::size_t>(n * m));
  for (std::int64_t row = 0; row < n; ++row) {
    for (std::int64_t col = 0; col < m; ++col) {
      double total = 0.0;
      for (std::int64_t i = 0; i < k; ++i)
        total += static_cast<double>(a.values[row * k + i]) * b.values[i * m + col];
      c[static_cast<std::size_t>(row * m + col)] = static_cast<float>(total);
    }
  }
  return data_of({n, m}, c);
}

TensorData reference_matmul(const Tensor& a, const Tensor& b) { return reference_matmul(data_of(a), data_of(b)); }

TensorData numeric_gradient(const std::function<TensorData(const std::vector<TensorData>&)>& f,
                            const std::vector<TensorData>& values, std::size_t i, const TensorData& weights,
                            float eps) {
  std::vector<float> gradient(values[i].values.size());
  for (std::size_t j = 0; j < gradient.size(); ++j) {
    std::vector<TensorData> plus = values, minus = values;
    plus[i].values[j] += eps;
    minus[i].values[j] -= eps;
    const double difference = weighted_sum(f(plus), weights) - weighted_sum(f(minus), weights);
    gradient[j] = static_cast<float>(difference / (2.0 * static_cast<double>(eps)));
  }
  return data_of(values[i].shape, gradient);
}

std::string Comparison::describe() const {
  if (!shapes_match) return "the shapes differ";
  const auto [got, expected] = format_pair(actual_value, expected_value);
  return fmt::format("largest difference {} at {}: got {}, expected {}", format_number(max_abs_diff), to_string(where),
                     got, expected);
}

Comparison compare(const TensorData& actual, const TensorData& expected, double atol, double rtol) {
  Comparison result;
  if (actual.shape != expected.shape || actual.values.size() != expected.values.size()) {
    result.shapes_match = false;
    result.close = false;
    result.max_abs_diff = std::numeric_limits<double>::infinity();
    return result;
  }
  const std::vector<float>& a = actual.values;
  const std::vector<float>& e = expected.values;
  double worst_excess = -1.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    // Equal values are 0 apart, two equal infinities among them; otherwise an infinity or a NaN is
    // infinitely far, and nothing is near an infinity but itself (a tolerance relative to it would
    // be infinite).
    const bool finite = std::isfinite(a[i]) && std::isfinite(e[i]);
    const double diff = a[i] == e[i] ? 0.0
                        : finite     ? std::fabs(static_cast<double>(a[i]) - e[i])
                                     : std::numeric_limits<double>::infinity();
    const double allowed = finite ? atol + rtol * std::fabs(static_cast<double>(e[i])) : 0.0;
    if (!(diff <= allowed)) result.close = false;
    // Report the largest difference; among elements out of tolerance prefer the worst excess.
    const double excess = diff - allowed;
    if (diff > result.max_abs_diff || (excess > 0 && excess > worst_excess && diff >= result.max_abs_diff)) {
      result.max_abs_diff = diff;
      result.where = unravel(static_cast<std::int64_t>(i), actual.shape);
      result.actual_value = a[i];
      result.expected_value = e[i];
      worst_excess = excess;
    }
  }
  if (result.where.empty() && !a.empty()) result.where = unravel(0, actual.shape);
  return result;
}

namespace {

// A tensor's values as numpy prints them: nested brackets, one row a line when `rows`.
std::string numpy_style(const TensorData& t, bool rows) {
  if (t.shape.empty()) return t.values.empty() ? "[]" : fmt::format("{:.7g}", t.values[0]);
  std::string out;
  std::size_t at = 0;
  const std::function<void(std::size_t)> dim = [&](std::size_t d) {
    out += '[';
    for (std::int64_t i = 0; i < t.shape[d]; ++i) {
      if (i > 0) out += d + 1 == t.shape.size() ? ", " : rows ? ",\n" + std::string(d + 1, ' ') : ", ";
      if (d + 1 == t.shape.size()) out += fmt::format("{:.7g}", t.values[at++]);
      else dim(d + 1);
    }
    out += ']';
  };
  dim(0);
  return out;
}

// check -v (KILN_TENSORS names a folder): the whole got and expected tensors of a failing
// comparison, inline when both are small, else in two files of that folder, which it names.
std::string whole_tensors(const TensorData& got, const TensorData& expected) {
  const char* folder = std::getenv(kiln::protocol::kTensors);
  if (folder == nullptr || *folder == '\0') return "";
  constexpr std::int64_t kInline = 36;
  if (got.numel() <= kInline && expected.numel() <= kInline)
    return fmt::format("; got = {}, expected = {}", numpy_style(got, false), numpy_style(expected, false));
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = test ? std::string(test->test_suite_name()) + "." + test->name() : "check";
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.') c = '_';
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  static int count = 0;
  ++count;
  std::string paths;
  for (const auto& [which, t] : {std::pair<const char*, const TensorData*>{"got", &got}, {"expected", &expected}}) {
    const std::filesystem::path path = std::filesystem::path(folder) / fmt::format("{}-{}-{}.txt", name, count, which);
    std::ofstream(path) << "# shape " << to_string(t->shape) << "\n" << numpy_style(*t, true) << "\n";
    paths += (paths.empty() ? "" : " and ") + path.string();
  }
  return "; the whole tensors: " + paths;
}

}  // namespace

std::string shapes_where(const Shape& got, const Shape& expected) {
  return "every element: the shape is " + to_string(got) + ", expected " + to_string(expected);
}

bool expect_close(const char* file, int line, const Observed<TensorData>& actual, const TensorData& expected,
                  double atol, std::string_view failure_id, double rtol, const Params& extra) {
  auto with = [&](Params p) {
    p.insert(p.end(), extra.begin(), extra.end());
    return p;
  };
  if (!actual.ok()) {
    report_failure(file, line, failure_id, with({{"difference", kThrewDifference}, {"where", kThrewWhere}}),
                   "unexpected error: " + actual.describe_error());
    return false;
  }
  const Comparison c = compare(*actual, expected, atol, rtol);
  if (c.close) return true;
  if (!c.shapes_match) {
    report_failure(file, line, failure_id, with({{"difference", "inf"}, {"where", shapes_where(actual->shape, expected.shape)}}),
                   fmt::format("{} has shape {}, expected shape {}", actual.call(), to_string(actual->shape),
                               to_string(expected.shape)) + whole_tensors(*actual, expected));
  } else {
    report_failure(file, line, failure_id,
                   with({{"difference", format_number(c.max_abs_diff)}, {"where", to_string(c.where)}}),
                   actual.call() + ": " + c.describe() + whole_tensors(*actual, expected));
  }
  return false;
}

bool expect_close(const char* file, int line, const Observed<TensorData>& actual, const Tensor& expected,
                  double atol, std::string_view failure_id, double rtol, const Params& extra) {
  return expect_close(file, line, actual, data_of(expected), atol, failure_id, rtol, extra);
}

bool expect_same_at_offset(const char* file, int line, const Observed<TensorData>& fresh,
                           const Observed<TensorData>& viewed, const TensorData& expected, double atol, double rtol,
                           std::string_view general_id, std::string_view offset_id, const Params& extra) {
  const auto differ = [&](const TensorData& a, const TensorData& b) { return !compare(a, b, atol, rtol).close; };
  // The two results agree where they are close, or both NaN at the same element (a formula wrong
  // on both is not the offset's doing).
  const auto agree = [&](const TensorData& v, const TensorData& f) {
    if (v.shape != f.shape || v.values.size() != f.values.size()) return false;
    for (std::size_t i = 0; i < v.values.size(); ++i) {
      const float a = v.values[i], b = f.values[i];
      const bool close = a == b || std::fabs(static_cast<double>(a) - b) <= atol + rtol * std::fabs(b);
      if (!close && !(std::isnan(a) && std::isnan(b))) return false;
    }
    return true;
  };
  // Both right (each within the tolerance of the trusted values, if not of each other): nothing
  // to blame.
  if (fresh.ok() && viewed.ok() && !differ(*fresh, expected) && !differ(*viewed, expected)) return true;
  if (offset_changes(viewed, fresh, agree)) {
    if (!viewed.ok() || !fresh.ok()) return expect_ok(file, line, viewed.ok() ? fresh : viewed, offset_id, extra);
    expect_close(file, line, viewed, differ(*viewed, expected) ? expected : *fresh, atol, offset_id, rtol, extra);
    return false;
  }
  if (!fresh.ok()) return !general_id.empty() && expect_ok(file, line, fresh, general_id, extra);
  return general_id.empty() || expect_close(file, line, fresh, expected, atol, general_id, rtol, extra);
}

}  // namespace kiln::testing
