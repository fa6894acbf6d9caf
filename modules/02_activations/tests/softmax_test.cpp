// Module 02 checks for softmax, log_softmax and softmax_backward along any dimension, and for the
// errors of the whole module.
//
// Expected values are hand-worked or computed here in double, row by row along the dimension,
// by the definition (the row maximum taken out, which changes nothing in exact arithmetic). The
// gradient is judged against central finite differences in double of L = Σ g ⊙ softmax(x) with
// fixed random g: every x_k of a row moves every y_j of it, so each difference recomputes the
// whole softmax. Shapes are non-square ((3, 7) along dim 0 and dim 1), 3-D, or have rows of
// length 0, 1 and 33. Every value taken from the module's functions passes through observe().
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/activations.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;

// ---------------------------------------------------------------------------------------------
// Trusted softmax, in double

// The rows of a contiguous `shape` along dimension d (already >= 0): element j of row (o, i) is
// at (o·length + j)·inner + i.
struct Rows {
  std::int64_t outer = 1, length = 1, inner = 1;
};
Rows rows_along(const Shape& shape, std::size_t d) {
  Rows rows;
  for (std::size_t k = 0; k < d; ++k) rows.outer *= shape[k];
  for (std::size_t k = d + 1; k < shape.size(); ++k) rows.inner *= shape[k];
  rows.length = shape[d];
  return rows;
}

// softmax (or log_softmax) of contiguous values x of `shape` along dimension d (already >= 0).
std::vector<double> softmax_exact(const std::vector<double>& x, const Shape& shape, std::size_t d, bool take_log) {
  const auto [outer, length, inner] = rows_along(shape, d);
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto at = [&](std::int64_t j) { return static_cast<std::size_t>((o * length + j) * inner + i); };
      if (length == 0) continue;  // an empty row: nothing to normalise, and no x[at(0)] to read
      double row_max = x[at(0)];
      for (std::int64_t j = 1; j < length; ++j) row_max = std::max(row_max, x[at(j)]);
      double total = 0.0;
      for (std::int64_t j = 0; j < length; ++j) total += std::exp(x[at(j)] - row_max);
      for (std::int64_t j = 0; j < length; ++j)
        y[at(j)] = take_log ? x[at(j)] - row_max - std::log(total) : std::exp(x[at(j)] - row_max) / total;
    }
  }
  return y;
}

std::size_t wrapped(std::int64_t dim, const Shape& shape) {
  return static_cast<std::size_t>(dim < 0 ? dim + static_cast<std::int64_t>(shape.size()) : dim);
}

// softmax or log_softmax of x (read through its strides) along dim, as float32.
TensorData expected_softmax(const Tensor& x, std::int64_t dim, bool take_log) {
  const TensorData in = data_of(x);
  const std::vector<double> y =
      softmax_exact(std::vector<double>(in.values.begin(), in.values.end()), in.shape, wrapped(dim, in.shape), take_log);
  return data_of(in.shape, std::vector<float>(y.begin(), y.end()));
}

// softmax(x, dim) from the same formula, as a tensor: the input y that softmax_backward takes.
Tensor softmax_input(const Tensor& x, std::int64_t dim) { return expected_softmax(x, dim, false).tensor(); }

// dL/dx for L = Σ g ⊙ softmax(x, dim), by central differences in double.
TensorData finite_difference_gradient(const Tensor& x, const Tensor& grad_output, std::int64_t dim) {
  constexpr double h = 1e-4;
  const TensorData in = data_of(x), g = data_of(grad_output);
  const std::size_t d = wrapped(dim, in.shape);
  const auto loss = [&](const std::vector<double>& values) {
    const std::vector<double> y = softmax_exact(values, in.shape, d, false);
    double total = 0.0;
    for (std::size_t k = 0; k < y.size(); ++k) total += g.values[k] * y[k];
    return total;
  };
  std::vector<float> out(in.values.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::vector<double> plus(in.values.begin(), in.values.end()), minus = plus;
    plus[i] += h;
    minus[i] -= h;
    out[i] = static_cast<float>((loss(plus) - loss(minus)) / (2.0 * h));
  }
  return data_of(in.shape, out);
}

// y ⊙ (g − S) where S is not each row's Σ g·y but the running total of it over the rows so far,
// rows taken in memory order (outer, then inner): a sum declared outside the loop over rows.
TensorData carried_sum_gradient(const Tensor& y, const Tensor& grad_output, std::int64_t dim) {
  const TensorData probs = data_of(y), g = data_of(grad_output);
  const auto [outer, length, inner] = rows_along(probs.shape, wrapped(dim, probs.shape));
  std::vector<float> out(probs.values.size());
  double carried = 0.0;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const auto at = [&](std::int64_t j) { return static_cast<std::size_t>((o * length + j) * inner + i); };
      for (std::int64_t j = 0; j < length; ++j) carried += static_cast<double>(g.values[at(j)]) * probs.values[at(j)];
      for (std::int64_t j = 0; j < length; ++j)
        out[at(j)] = static_cast<float>(probs.values[at(j)] * (g.values[at(j)] - carried));
    }
  }
  return data_of(probs.shape, out);
}

// ---------------------------------------------------------------------------------------------
// Inputs

struct Case {
  std::string what;
  Tensor x;
  std::int64_t dim;
  const char* own_failure = nullptr;  // reported instead of the check's failure for this case
};

// Hand-worked rows, random tensors of the run along every dimension, rows of length 1, and a
// transposed view. `stream` keeps each check's draws its own.
// Every case has tensors of its own (the same draws where it says the same x), so that a function
// that wrote into its input would not change the next case's.
std::vector<Case> cases(std::uint64_t stream) {
  const auto m = [&] { return random_tensor({3, 7}, stream, -4.0f, 4.0f); };
  const auto cube = [&] { return random_tensor({2, 3, 5}, stream + 1, -4.0f, 4.0f); };
  const auto transposed = [&] {  // (7, 3), strides (1, 7)
    return make_view(random_tensor({3, 7}, stream + 2, -4.0f, 4.0f), {7, 3}, {1, 7}, 0);
  };
  return {
      {"x = [1, 2, 3]", Tensor({3}, {1, 2, 3}), -1},
      {"x = [[1, 2, 3], [0, 0, 0]]", Tensor({2, 3}, {1, 2, 3, 0, 0, 0}), 1},
      {"x = [[1, 2, 3], [0, 0, 0]]", Tensor({2, 3}, {1, 2, 3, 0, 0, 0}), 0},
      {"a random (3, 7) x", m(), 1},
      {"a random (3, 7) x", m(), 0},
      {"a random (3, 7) x", m(), -2},
      {"a random (2, 3, 5) x", cube(), 0},
      {"a random (2, 3, 5) x", cube(), 1},
      {"a random (2, 3, 5) x", cube(), 2},
      {"a random (2, 3, 5) x", cube(), -3},
      {"a random (1, 33) x", random_tensor({1, 33}, stream + 3, -4.0f, 4.0f), 1},
      {"a random (31) x", random_tensor({31}, stream + 4, -4.0f, 4.0f), 0},
      {"a random (3, 1) x", random_tensor({3, 1}, stream + 5, -4.0f, 4.0f), 1},
      {"a random (1, 7) x", random_tensor({1, 7}, stream + 6, -4.0f, 4.0f), 0},
      {"x = the (7, 3) transpose of a random (3, 7) matrix", transposed(), 1},
      {"x = the (7, 3) transpose of a random (3, 7) matrix", transposed(), 0},
      // Rows of length 0 (three of them along dim -1, none of length 3 along dim 0): nothing to
      // normalise, and no first element to take a maximum from; the result is x's empty shape.
      {"an empty (3, 0) x", Tensor::zeros({3, 0}), -1},
      {"an empty (3, 0) x", Tensor::zeros({3, 0}), 0},
  };
}

// Rows whose exponentials overflow float32 (e^89 > 3.4e38) unless the row maximum is taken out.
std::vector<Case> large_cases(std::uint64_t stream) {
  return {
      {"x = [1000, 1000]", Tensor({2}, {1000, 1000}), -1},
      {"x = [1000, 0]", Tensor({2}, {1000, 0}), -1},
      // The largest value last in its row, along either dim: a maximum that stops one short of
      // the row's end misses it.
      {"x = [0, 1000]", Tensor({2}, {0, 1000}), -1, "max_misses_last"},
      {"x = [[0, 5], [1000, 7]]", Tensor({2, 2}, {0, 5, 1000, 7}), 0, "max_misses_last"},
      {"x = [[1000, 0, -1000]]", Tensor({1, 3}, {1000, 0, -1000}), 1},
      {"x = [[-1000], [-1000]]", Tensor({2, 1}, {-1000, -1000}), 0},
      {"x = [89, 90, 88]", Tensor({3}, {89, 90, 88}), 0},
      {"a random (3, 7) x in [-1000, 1000)", random_tensor({3, 7}, stream, -1000.0f, 1000.0f), 1},
      {"a random (3, 7) x in [-1000, 1000)", random_tensor({3, 7}, stream, -1000.0f, 1000.0f), 0},
  };
}

using Function = std::function<Tensor(const Tensor&, std::int64_t)>;

// Observes name(x, dim) on every case; reports failure_id for the first that is wrong, or
// refused_id (when given) where a dim of the case, all in [-x.dim(), x.dim()), raised IndexError.
bool check_softmax(const char* file, int line, const std::string& name, const Function& function, bool take_log,
                   const std::vector<Case>& inputs, double atol, const std::string& failure_id,
                   const std::string& refused_id = "") {
  for (const Case& c : inputs) {
    // Computed before the call: a function that wrote into x is judged against the x it was given.
    TensorData expected;
    KILN_JUDGE { expected = expected_softmax(c.x, c.dim, take_log); }
    const auto y = observe(fmt::format("{}(x, {}) for {}", name, c.dim, c.what), [&] { return function(c.x, c.dim); });
    KILN_JUDGE {
      if (!refused_id.empty() && !y.ok() && y.error().is("kiln::IndexError")) {
        testing::report_failure(file, line, refused_id, {{"dim", std::to_string(c.dim)}, {"shape", to_string(c.x.shape())}},
                                y.describe_error());
        return false;
      }
      const std::string id = c.own_failure != nullptr && !take_log ? std::string(c.own_failure) : failure_id;
      if (!testing::expect_close(file, line, y, expected, atol, id, 1e-5)) return false;
    }
  }
  return true;
}

// A small contiguous input for the new-tensor cases (kiln/testing.h).
constexpr const char* kSmall = "[[1, 2, 3], [0, -1, 4]]";
TensorData small_input() { return data_of({2, 3}, {1.0f, 2.0f, 3.0f, 0.0f, -1.0f, 4.0f}); }

// softmax or log_softmax (`log`) along -1 of a contiguous view at an offset: a random (3, 7) x in
// [-4, 4) 5 floats into a storage of other numbers (kiln/testing.h), read from its own first
// element, not from storage_data(). Observed on a fresh x of the same values too: the offset
// failure only where the view's result differs from the fresh one's.
void check_at_offset(const char* file, int line, const std::string& name, const Function& function, bool log,
                     std::uint64_t stream, double atol, const std::string& general_id, const std::string& offset_id) {
  const TensorData w = data_of(random_tensor({3, 7}, stream, -4.0f, 4.0f));
  const Tensor window = testing::at_offset(w, stream + 1);
  const auto fresh = observe(name + "(x, -1) for the same random (3, 7) x as a fresh tensor",
                             [&] { return function(w.tensor(), -1); });
  const auto shifted = observe(name + "(x, -1) for a random (3, 7) x, a contiguous view at storage offset 5",
                               [&] { return function(window, -1); });
  KILN_JUDGE {
    testing::expect_same_at_offset(file, line, fresh, shifted, expected_softmax(w.tensor(), -1, log), atol, 1e-5,
                                   general_id, offset_id);
  }
}

}  // namespace

TEST(Activations, Softmax) {
  // softmax([1, 2, 3]) = [0.0900306, 0.2447285, 0.6652410]; a row of zeros gives thirds; down
  // the columns of [[1, 2, 3], [0, 0, 0]], [0.7310586, 0.2689414] for the first.
  const Function function = [](const Tensor& x, std::int64_t dim) { return softmax(x, dim); };
  if (!check_softmax(__FILE__, __LINE__, "softmax", function, false, cases(600), 1e-6, "softmax_wrong", "valid_dim_refused"))
    return;
  // softmax([1000, 1000]) = [0.5, 0.5]; [[1000, 0, -1000]] gives [[1, 0, 0]].
  if (!check_softmax(__FILE__, __LINE__, "softmax", function, false, large_cases(610), 1e-6, "softmax_overflow"))
    return;
  // A new tensor, also for a contiguous x: x keeps its values.
  for (const std::int64_t dim : {-1, 0}) {
    if (!KILN_CHECK_NEW_TENSOR(fmt::format("softmax(x, {}) for x = {}", dim, kSmall), {{"x", small_input()}},
                          [dim](const std::vector<Tensor>& in) { return softmax(in[0], dim); }, "softmax_in_place"))
      return;
  }
  // A contiguous view at an offset.
  check_at_offset(__FILE__, __LINE__, "softmax", function, false, 620, 1e-6, "softmax_wrong", "softmax_offset_ignored");
}

TEST(Activations, LogSoftmax) {
  // log_softmax([1, 2, 3]) = [-2.4076059, -1.4076059, -0.4076059].
  const Function function = [](const Tensor& x, std::int64_t dim) { return log_softmax(x, dim); };
  if (!check_softmax(__FILE__, __LINE__, "log_softmax", function, true, cases(700), 1e-5, "log_softmax_wrong")) return;
  // log_softmax([1000, 0]) = [0, -1000], finite, although softmax rounds e^-1000 to 0.
  if (!check_softmax(__FILE__, __LINE__, "log_softmax", function, true, large_cases(710), 1e-5, "log_softmax_overflow"))
    return;
  for (const std::int64_t dim : {-1, 0}) {
    if (!KILN_CHECK_NEW_TENSOR(fmt::format("log_softmax(x, {}) for x = {}", dim, kSmall), {{"x", small_input()}},
                          [dim](const std::vector<Tensor>& in) { return log_softmax(in[0], dim); },
                          "log_softmax_in_place"))
      return;
  }
  // A contiguous view at an offset, as for softmax.
  check_at_offset(__FILE__, __LINE__, "log_softmax", function, true, 720, 1e-5, "log_softmax_wrong",
                  "log_softmax_offset_ignored");
}

TEST(Activations, SoftmaxGradient) {
  // By hand: y = softmax([0, 0]) = [0.5, 0.5] and g = [1, 0] give Σ g·y = 0.5 and
  // dL/dx = [0.5·(1 - 0.5), 0.5·(0 - 0.5)] = [0.25, -0.25].
  const Tensor half({2}, {0.5f, 0.5f});
  const Tensor g({2}, {1.0f, 0.0f});
  if (!KILN_EXPECT_CLOSE(KILN_OBSERVE(softmax_backward(half, g, -1)), data_of({2}, {0.25f, -0.25f}), 1e-7,
                         "softmax_grad_wrong"))
    return;
  std::uint64_t stream = 800;
  for (const Case& c : cases(820)) {
    const Tensor y = softmax_input(c.x, c.dim);  // an input: y = softmax(x), from the trusted formula
    // For the (3, 7) matrix, g is a transposed view, so that it is read through its strides.
    const Tensor grad_output = c.x.shape() == Shape{3, 7} ? make_view(random_tensor({7, 3}, stream++), {3, 7}, {1, 3}, 0)
                                                          : random_tensor(c.x.shape(), stream++);
    // Computed before the call: a backward pass that wrote into y or g is judged against the
    // tensors it was given.
    TensorData expected, carried;
    KILN_JUDGE {
      expected = finite_difference_gradient(c.x, grad_output, c.dim);
      carried = carried_sum_gradient(y, grad_output, c.dim);
    }
    const auto grad = observe(fmt::format("softmax_backward(y, g, {}) with y = softmax(x) for {}", c.dim, c.what),
                              [&] { return softmax_backward(y, grad_output, c.dim); });
    KILN_JUDGE {
      if (grad.ok() && !testing::compare(*grad, expected, 1e-5, 1e-4).close &&
          testing::compare(*grad, carried, 1e-5, 1e-4).close) {
        KILN_FAIL("softmax_grad_sum_carried", {{"dim", std::to_string(c.dim)}},
                  grad.call() + ": " + testing::compare(*grad, expected, 1e-5, 1e-4).describe() +
                      "; every row after the first subtracts the Σ g·y of the rows before it too");
        return;
      }
      if (!testing::expect_close(__FILE__, __LINE__, grad, expected, 1e-5, "softmax_grad_wrong", 1e-4)) return;
    }
  }
  // A new tensor, also for contiguous y and g: both keep their values.
  const TensorData probs = data_of(softmax_input(small_input().tensor(), -1));
  const TensorData grad = data_of({2, 3}, {0.5f, -1.0f, 1.5f, -2.0f, 0.25f, 3.0f});
  if (!KILN_CHECK_NEW_TENSOR(fmt::format("softmax_backward(y, g, -1) for y = softmax(x) of x = {}, g = {}", kSmall,
                                          testing::list(grad.values)),
                              {{"y", probs}, {"g", grad}},
                              [](const std::vector<Tensor>& in) { return softmax_backward(in[0], in[1], -1); },
                              "softmax_grad_in_place"))
    return;
  // y and g contiguous views at an offset, each 5 floats into a storage of other numbers.
  const TensorData x_values = data_of(random_tensor({3, 7}, 830, -4.0f, 4.0f));
  const TensorData g_values = data_of(random_tensor({3, 7}, 831));
  const TensorData y_values = data_of(softmax_input(x_values.tensor(), -1));
  const Tensor y_view = testing::at_offset(y_values, 832);
  const Tensor g_view = testing::at_offset(g_values, 833);
  // Observed on fresh y and g of the same values too: the offset failure only where the views'
  // result differs from the fresh one's.
  const auto fresh = observe("softmax_backward(y, g, -1) with y = softmax(x) for the same random (3, 7) x, y and g "
                             "fresh tensors",
                             [&] { return softmax_backward(y_values.tensor(), g_values.tensor(), -1); });
  const auto shifted = observe("softmax_backward(y, g, -1) with y = softmax(x) for a random (3, 7) x, y and g "
                               "contiguous views at storage offset 5",
                               [&] { return softmax_backward(y_view, g_view, -1); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(fresh, shifted, finite_difference_gradient(x_values.tensor(), g_values.tensor(), -1), 1e-5,
                               1e-4, "softmax_grad_wrong", "softmax_grad_offset_ignored");
  }
}

TEST(Activations, Errors) {
  // A gradient of another shape: (7, 3) for (3, 7) holds as many elements; (7) would broadcast.
  // Then a matrix and its transpose of sizes drawn by the run, (n, m) with n != m.
  testing::Generator sizes(900);
  const std::int64_t n = 1 + sizes.below(5), m = n + 1 + sizes.below(4);
  const std::vector<std::pair<Tensor, Tensor>> pairs = {
      {random_tensor({3, 7}, 901), random_tensor({7, 3}, 902)},
      {random_tensor({3, 7}, 903), random_tensor({7}, 904)},
      {random_tensor({n, m}, 905), random_tensor({m, n}, 906)},
  };
  using Backward = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<std::string, Backward>> backwards = {
      {"relu_backward", [](const Tensor& a, const Tensor& g) { return relu_backward(a, g); }},
      {"sigmoid_backward", [](const Tensor& a, const Tensor& g) { return sigmoid_backward(a, g); }},
      {"tanh_backward", [](const Tensor& a, const Tensor& g) { return tanh_backward(a, g); }},
      {"gelu_backward", [](const Tensor& a, const Tensor& g) { return gelu_backward(a, g); }},
      {"softmax_backward", [](const Tensor& a, const Tensor& g) { return softmax_backward(a, g, -1); }},
  };
  for (const auto& [a, g] : pairs) {
    const std::vector<std::string> both = {to_string(a.shape()), to_string(g.shape())};
    for (const auto& [name, backward] : backwards) {
      const auto thrown = observe(fmt::format("{} of a {} tensor with a {} grad_output", name, both[0], both[1]),
                                  [&] { return backward(a, g); });
      KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, thrown, "grad_shape_not_reported", both);
    }
  }
  // A dim outside [-2, 2) for a (3, 7) matrix.
  const Tensor x = random_tensor({3, 7}, 907);
  KILN_EXPECT_THROWS(softmax(x, 2), IndexError, "dim_not_reported", {"2", "(3, 7)"});
  KILN_EXPECT_THROWS(log_softmax(x, -3), IndexError, "dim_not_reported", {"-3", "(3, 7)"});
  KILN_EXPECT_THROWS(softmax_backward(x, x, 2), IndexError, "dim_not_reported", {"2", "(3, 7)"});
  // The other side of the range, for each of the three functions.
  KILN_EXPECT_THROWS(softmax(x, -3), IndexError, "dim_not_reported", {"-3", "(3, 7)"});
  KILN_EXPECT_THROWS(log_softmax(x, 2), IndexError, "dim_not_reported", {"2", "(3, 7)"});
  KILN_EXPECT_THROWS(softmax_backward(x, x, -3), IndexError, "dim_not_reported", {"-3", "(3, 7)"});
  const Tensor cube = random_tensor({2, 3, 5}, 908);
  KILN_EXPECT_THROWS(softmax(cube, 3), IndexError, "dim_not_reported", {"3", "(2, 3, 5)"});
  // A 0-D tensor has no dimension: [-0, 0) is empty, so 0 and -1 are refused too (PyTorch takes a
  // scalar for a row of one; the header does not).
  const Tensor scalar = Tensor::scalar(5.0f);
  KILN_EXPECT_THROWS(softmax(scalar, 0), IndexError, "dim_not_reported", {"0", "()"});
  KILN_EXPECT_THROWS(log_softmax(scalar, -1), IndexError, "dim_not_reported", {"-1", "()"});
  KILN_EXPECT_THROWS(softmax_backward(scalar, scalar, -1), IndexError, "dim_not_reported", {"-1", "()"});
  // dim is a std::int64_t: one of 2^32 or more is out of range too. Narrowed to 32 bits it would
  // wrap into a valid dim (2^32 to 0, 2^32 + 1 to 1, -(2^32 + 1) to -1) or name another number
  // (-(2^31 + 1) to 2^31 - 1). The message must name that dim; the shape in it is judged above.
  KILN_EXPECT_THROWS(softmax(x, 4294967296), IndexError, "dim_narrowed", {"4294967296"});
  KILN_EXPECT_THROWS(log_softmax(x, 4294967297), IndexError, "dim_narrowed", {"4294967297"});
  KILN_EXPECT_THROWS(softmax_backward(x, x, -4294967297), IndexError, "dim_narrowed", {"-4294967297"});
  KILN_EXPECT_THROWS(softmax(x, -2147483649), IndexError, "dim_narrowed", {"-2147483649"});
  // Both wrong: softmax_backward compares the shapes first, so the ShapeError naming both comes
  // before any verdict on dim. A 0-D y has no dim at all, and dim 2 is out of range for (2, 3).
  const Tensor one = Tensor::ones({1});
  KILN_EXPECT_THROWS(softmax_backward(scalar, one, -1), ShapeError, "grad_shape_after_dim", {"()", "(1)"});
  const Tensor y = random_tensor({2, 3}, 909), g = random_tensor({3, 2}, 910);
  KILN_EXPECT_THROWS(softmax_backward(y, g, 2), ShapeError, "grad_shape_after_dim", {"(2, 3)", "(3, 2)"});
}

}  // namespace kiln
