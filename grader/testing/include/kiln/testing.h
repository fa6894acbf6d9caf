// Test support for module tests.
//
// Every check reports its failures by the id of a failure catalogued in its module.yaml. The
// message text lives only there: the test names the id and passes the values that fill the
// message's {placeholders}; the grader renders message and hint. Include this header in tests
// only; it pulls in GoogleTest.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::testing {

// Values for a catalogued message's {placeholders}, e.g. {{"difference", "0.5"}}.
using Params = std::vector<std::pair<std::string, std::string>>;

// Records a failure of the running check under the catalogued failure_id. `detail` is shown
// beneath the catalogued message (what was expected, what came back).
void report_failure(const char* file, int line, std::string_view failure_id,
                    const Params& params = {}, std::string_view detail = {});

// Result of comparing two tensors element by element.
struct Comparison {
  bool shapes_match = true;
  bool close = true;
  double max_abs_diff = 0.0;  // the largest |actual - expected|
  Shape where;                // the index where it occurred
  float actual_value = 0.0f;
  float expected_value = 0.0f;
  // "largest difference 0.5 at [1, 2]: got 3, expected 2.5", or the two shapes.
  std::string describe() const;
};

// Compares with the tolerance atol + rtol·|expected| per element. NaN never counts as close.
Comparison compare(const Tensor& actual, const Tensor& expected, double atol, double rtol = 0.0);

// Values uniform in [low, high), drawn in row-major order from WichmannHill(seed): test inputs that
// are the same on every machine.
Tensor random_tensor(const Shape& shape, std::uint64_t seed, float low = -1.0f, float high = 1.0f);

// Σ y ⊙ weights, accumulated in double: a scalar loss whose gradient with respect to y is `weights`,
// for checking backward passes against central differences.
double weighted_sum(const Tensor& y, const Tensor& weights);

// The product of (n, k) and (k, m) tensors by three plain loops summed in double: the trusted
// result that fast matrix multiplies are checked against.
Tensor reference_matmul(const Tensor& a, const Tensor& b);

// d/d(values[i]) of Σ weights ⊙ f(values), by central differences with step eps, each side summed in
// double: the trusted gradient that a backward pass is checked against.
Tensor numeric_gradient(const std::function<Tensor(const std::vector<Tensor>&)>& f, const std::vector<Tensor>& values,
                        std::size_t i, const Tensor& weights, float eps = 1e-2f);

// A difference as the catalogue shows it: three significant digits.
std::string format_number(double value);

// Reports failure_id (params: difference, where) when actual is not within tolerance of expected.
// Returns whether it was close, so a test can stop early.
bool expect_close(const char* file, int line, const Tensor& actual, const Tensor& expected,
                  double atol, std::string_view failure_id, double rtol = 0.0);

// The statement must throw E. An unwritten stub's NotImplemented is passed through untouched
// (the check then reads "not written yet"), so it can never satisfy this expectation. Every string
// in must_mention has to appear in the error message (for example both shapes).
template <class E, class Statement>
void expect_throws(const char* file, int line, Statement&& statement, std::string_view failure_id,
                   std::vector<std::string> must_mention = {}) {
  try {
    statement();
  } catch (const NotImplemented&) {
    throw;
  } catch (const E& error) {
    const std::string message = error.what();
    for (const auto& needle : must_mention) {
      if (message.find(needle) == std::string::npos) {
        report_failure(file, line, failure_id, {},
                       "the error message should mention " + needle + ", but it says: " + message);
        return;
      }
    }
    return;
  } catch (const std::exception& error) {
    report_failure(file, line, failure_id, {},
                   std::string("threw a different kind of error: ") + error.what());
    return;
  }
  report_failure(file, line, failure_id, {}, "no error was thrown");
}

}  // namespace kiln::testing

// Records catalogued failure `id`; optional Params, then optional detail text.
#define KILN_FAIL(id, ...) ::kiln::testing::report_failure(__FILE__, __LINE__, id, ##__VA_ARGS__)

// Records catalogued failure `id` unless cond holds.
#define KILN_EXPECT(cond, id, ...)                                 \
  do {                                                             \
    if (!(cond)) ::kiln::testing::report_failure(__FILE__, __LINE__, id, ##__VA_ARGS__); \
  } while (0)

// Records `id` with {difference} and {where} unless actual is within tolerance of expected.
#define KILN_EXPECT_CLOSE(actual, expected, tolerance, id) \
  ::kiln::testing::expect_close(__FILE__, __LINE__, (actual), (expected), (tolerance), id)

// Records `id` unless statement throws exception_type; optional list of strings the message must
// contain. A stub's NotImplemented propagates.
#define KILN_EXPECT_THROWS(statement, exception_type, id, ...)                          \
  ::kiln::testing::expect_throws<exception_type>(__FILE__, __LINE__, [&] { (void)(statement); }, \
                                                 id, ##__VA_ARGS__)
