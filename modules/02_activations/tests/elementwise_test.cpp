// Module 02 checks for the elementwise activations: relu, sigmoid, tanh_activation, gelu and
// gelu_tanh, their backward passes, and how far apart the two GELU forms are.
//
// Expected values are hand-worked (the chapter's numbers) or computed here by a trusted formula
// in double. Gradients are judged against central finite differences in double: for
// L = Σ g ⊙ f(x) with fixed random g, dL/dx_i = g_i·(f(x_i + h) - f(x_i - h)) / 2h, since an
// elementwise f ties y_i to x_i alone; with h = 1e-4 the difference is exact to about 1e-8.
//
// Every function is run on the same ladder of inputs: a hand-worked vector, random tensors of the
// run in awkward shapes ((3, 7), (33), (1), (2, 3, 5)), and views whose elements are not where a
// fresh tensor's would be: a transposed matrix, a row (an offset), a strided column and a
// broadcast (stride 0). Every value taken from the module's functions passes through observe().
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
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
// Trusted formulas, in double

double relu_exact(double x) { return x > 0.0 ? x : 0.0; }
double sigmoid_exact(double x) { return x >= 0.0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x)); }
double tanh_exact(double x) { return std::tanh(x); }
double gelu_exact(double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); }
double gelu_tanh_exact(double x) {
  const double c = std::numbers::sqrt2 * std::numbers::inv_sqrtpi;  // √(2/π)
  return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
}

using Formula = double (*)(double);

// f applied to every element of x (read through its strides), as a contiguous tensor of x's shape.
TensorData applied(Formula f, const Tensor& x) {
  const TensorData in = data_of(x);
  std::vector<float> out(in.values.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(f(in.values[i]));
  return data_of(in.shape, out);
}

// dL/dx for L = Σ g ⊙ f(x), by central differences of f in double at every element of x.
TensorData finite_difference_gradient(Formula f, const Tensor& x, const Tensor& grad_output) {
  constexpr double h = 1e-4;
  const TensorData in = data_of(x), g = data_of(grad_output);
  std::vector<float> out(in.values.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double v = in.values[i];
    out[i] = static_cast<float>(g.values[i] * (f(v + h) - f(v - h)) / (2.0 * h));
  }
  return data_of(in.shape, out);
}

// ---------------------------------------------------------------------------------------------
// Inputs

struct Case {
  std::string what;
  Tensor x;
};

// The hand-worked vector, then random tensors of the run in [-4, 4) and views of them.
// `stream` keeps each check's draws its own.
std::vector<Case> cases(const std::vector<float>& hand, std::uint64_t stream) {
  std::vector<Case> out;
  out.push_back({"x = " + testing::list(hand), Tensor({static_cast<std::int64_t>(hand.size())}, hand)});
  out.push_back({"a random (3, 7) x", random_tensor({3, 7}, stream, -4.0f, 4.0f)});
  out.push_back({"a random (33) x", random_tensor({33}, stream + 1, -4.0f, 4.0f)});
  out.push_back({"a random (1) x", random_tensor({1}, stream + 2, -4.0f, 4.0f)});
  out.push_back({"a random (2, 3, 5) x", random_tensor({2, 3, 5}, stream + 3, -4.0f, 4.0f)});
  // Views, built with the given make_view: shape, strides, offset.
  // Each view has a matrix of its own (the same draws), so that a function that wrote into its
  // input would not change the next case's.
  const auto m = [&] { return random_tensor({3, 7}, stream + 4, -4.0f, 4.0f); };
  out.push_back({"x = the (7, 3) transpose of a (3, 7) matrix (strides (1, 7))", make_view(m(), {7, 3}, {1, 7}, 0)});
  out.push_back({"x = row 2 of a (3, 7) matrix (offset 14)", make_view(m(), {7}, {1}, 14)});
  const Tensor tall = random_tensor({31, 3}, stream + 5, -4.0f, 4.0f);
  out.push_back({"x = column 1 of a (31, 3) matrix (stride 3, offset 1)", make_view(tall, {31}, {3}, 1)});
  const Tensor v = random_tensor({7}, stream + 6, -4.0f, 4.0f);
  out.push_back({"x = a (7) vector broadcast to (3, 7) (strides (0, 1))", make_view(v, {3, 7}, {0, 1}, 0)});
  // No elements: the result is empty, of x's shape.
  out.push_back({"an empty (0, 3) x", Tensor::zeros({0, 3})});
  return out;
}

// The same cases with every value at least `gap` away from 0, for relu's finite differences,
// which mean nothing across the kink (a trusted edit of the inputs, views kept).
std::vector<Case> away_from_zero(std::vector<Case> in, float gap) {
  for (Case& c : in) {
    float* storage = c.x.storage_data();
    for (std::size_t i = 0; i < c.x.storage_size(); ++i) {
      if (std::fabs(storage[i]) < gap) storage[i] = storage[i] < 0.0f ? -gap : gap;
    }
  }
  return in;
}

// A gradient of x's shape; for the (3, 7) case a transposed view, so that grad_output is read
// through its strides too.
Tensor grad_output_for(const Case& c, std::uint64_t stream) {
  if (c.x.shape() == Shape{3, 7}) return make_view(random_tensor({7, 3}, stream), {3, 7}, {1, 3}, 0);
  return random_tensor(c.x.shape(), stream, -1.0f, 1.0f);
}

// ---------------------------------------------------------------------------------------------
// Judging

using Forward = std::function<Tensor(const Tensor&)>;
using Backward = std::function<Tensor(const Tensor&, const Tensor&)>;

// Observes name(x) on every case and reports failure_id for the first one that differs from the
// trusted formula; returns false then.
bool check_forward(const char* file, int line, const std::string& name, const Forward& forward, Formula exact,
                   const std::vector<Case>& inputs, const std::string& failure_id) {
  for (const Case& c : inputs) {
    // Computed before the call: a function that wrote into x is judged against the x it was given.
    TensorData expected;
    KILN_JUDGE { expected = applied(exact, c.x); }
    const auto y = observe(name + "(x) for " + c.what, [&] { return forward(c.x); });
    KILN_JUDGE {
      if (!testing::expect_close(file, line, y, expected, 1e-6, failure_id, 1e-5)) return false;
    }
  }
  return true;
}

// Observes name(x) for values whose results are tiny, and judges each to 1e-5 of its own size (or
// within 1e-44, a few steps of the subnormals' 1.4e-45), where check_forward's absolute 1e-6
// would let a result that cancelled to 0 through.
bool check_small_values(const char* file, int line, const std::string& name, const Forward& forward, Formula exact,
                        const Tensor& x, const std::string& values, const std::string& failure_id) {
  TensorData expected;  // before the call, as in check_forward
  KILN_JUDGE { expected = applied(exact, x); }
  const auto y = observe(name + "(x) for x = " + values, [&] { return forward(x); });
  KILN_JUDGE { return testing::expect_close(file, line, y, expected, 1e-44, failure_id, 1e-5); }
  return y.ok();
}

// Observes the backward pass on every case and compares it with finite differences of `exact`.
// A backward that takes the forward pass's output (sigmoid, tanh) is given y = exact(x), computed
// here; one that takes the input (relu, gelu) is given x.
bool check_backward(const char* file, int line, const std::string& name, const Backward& backward, Formula exact,
                    bool takes_output, const std::vector<Case>& inputs, std::uint64_t stream,
                    const std::string& failure_id) {
  for (const Case& c : inputs) {
    const Tensor first = takes_output ? applied(exact, c.x).tensor() : c.x;
    const Tensor grad_output = grad_output_for(c, stream++);
    TensorData expected;  // before the call, as in check_forward
    KILN_JUDGE { expected = finite_difference_gradient(exact, c.x, grad_output); }
    const auto grad = observe(fmt::format("{}({}, g) for {}", name, takes_output ? "y" : "x", c.what),
                              [&] { return backward(first, grad_output); });
    KILN_JUDGE {
      if (!testing::expect_close(file, line, grad, expected, 1e-5, failure_id, 1e-4))
        return false;
    }
  }
  return true;
}

// The backward pass on inputs that are contiguous views at an offset: a random (2, 3) x in
// [-4, 4) (each value at least 0.01 from 0, for relu's kink); its first tensor (x, or y = exact(x)
// for a backward that takes the output) and g each 5 floats into a storage of other numbers
// (kiln/testing.h). Each must be read from its own first element, not from storage_data(): the
// call is observed on fresh tensors of the same values too, and judged by testing::expect_same_at_offset.
bool check_backward_at_offset(const char* file, int line, const std::string& name, const Backward& backward,
                              Formula exact, bool takes_output, std::uint64_t stream, const std::string& general_id,
                              const std::string& failure_id) {
  std::vector<float> xs = data_of(random_tensor({2, 3}, stream, -4.0f, 4.0f)).values;
  for (float& v : xs) {
    if (std::fabs(v) < 0.01f) v = v < 0.0f ? -0.01f : 0.01f;
  }
  const TensorData x = data_of({2, 3}, xs);
  const TensorData g = data_of(random_tensor({2, 3}, stream + 1, -1.0f, 1.0f));
  const TensorData first_values = takes_output ? applied(exact, x.tensor()) : x;
  const Tensor first = testing::at_offset(first_values, stream + 2);
  const Tensor grad_output = testing::at_offset(g, stream + 3);
  const auto fresh = observe(fmt::format("{}({}, g) for the same random (2, 3) {} and g as fresh tensors", name,
                                         takes_output ? "y" : "x", takes_output ? "y" : "x"),
                             [&] { return backward(first_values.tensor(), g.tensor()); });
  const auto grad = observe(fmt::format("{}({}, g) for a random (2, 3) {}, {} and g contiguous views at storage offset 5",
                                        name, takes_output ? "y" : "x", takes_output ? "x, y = the forward pass of x" : "x",
                                        takes_output ? "y" : "x"),
                            [&] { return backward(first, grad_output); });
  KILN_JUDGE {
    return testing::expect_same_at_offset(file, line, fresh, grad,
                                          finite_difference_gradient(exact, x.tensor(), g.tensor()), 1e-5, 1e-4,
                                          general_id, failure_id);
  }
  return grad.ok() && fresh.ok();
}

// name(x) on the hand-worked x, a fresh contiguous tensor, must leave x as it was and return a
// tensor of its own (kiln/testing.h).
bool forward_is_new(const char* file, int line, const std::string& name, const Forward& forward,
                    const std::vector<float>& hand, const std::string& failure_id) {
  const TensorData x = data_of({static_cast<std::int64_t>(hand.size())}, hand);
  return testing::check_new_tensor(
      file, line, name + "(x) for x = " + testing::list(hand), {{"x", x}},
      [&](const std::vector<Tensor>& in) { return forward(in[0]); }, failure_id);
}

// The same for a backward pass, given x (or y = exact(x), for one that takes the output) and a
// gradient g with no 0 or 1 in it, so that a result computed in g's storage changes g.
bool backward_is_new(const char* file, int line, const std::string& name, const Backward& backward, Formula exact,
                     bool takes_output, const std::vector<float>& hand, const std::string& failure_id) {
  const Shape shape{static_cast<std::int64_t>(hand.size())};
  std::vector<float> g(hand.size());
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = (i % 2 == 0 ? 1.0f : -1.0f) * (0.5f + 0.3f * static_cast<float>(i));
  const TensorData x = data_of(shape, hand);
  const TensorData first = takes_output ? applied(exact, x.tensor()) : x;
  const std::string first_name = takes_output ? "y" : "x";
  const std::string call = fmt::format("{}({}, g) for {}, g = {}", name, first_name,
                                       takes_output ? "y = the forward pass of x = " + testing::list(hand)
                                                    : "x = " + testing::list(hand),
                                       testing::list(g));
  return testing::check_new_tensor(
      file, line, call, {{first_name, first}, {"g", data_of(shape, g)}},
      [&](const std::vector<Tensor>& in) { return backward(in[0], in[1]); }, failure_id);
}

#define FORWARD_IS_NEW(name, hand, id) \
  forward_is_new(__FILE__, __LINE__, #name, [](const Tensor& x) { return name(x); }, hand, id)
#define BACKWARD_IS_NEW(name, exact, takes_output, hand, id)                                                 \
  backward_is_new(__FILE__, __LINE__, #name, [](const Tensor& a, const Tensor& g) { return name(a, g); }, exact, \
                  takes_output, hand, id)

#define CHECK_BACKWARD_AT_OFFSET(name, exact, takes_output, stream, general_id, id)                             \
  check_backward_at_offset(__FILE__, __LINE__, #name, [](const Tensor& a, const Tensor& g) { return name(a, g); }, \
                           exact, takes_output, stream, general_id, id)
#define CHECK_FORWARD(name, exact, inputs, id) \
  check_forward(__FILE__, __LINE__, #name, [](const Tensor& x) { return name(x); }, exact, inputs, id)
#define CHECK_SMALL_VALUES(name, exact, x, values, id) \
  check_small_values(__FILE__, __LINE__, #name, [](const Tensor& t) { return name(t); }, exact, x, values, id)
#define CHECK_BACKWARD(name, exact, takes_output, inputs, stream, id)                                      \
  check_backward(__FILE__, __LINE__, #name, [](const Tensor& a, const Tensor& g) { return name(a, g); }, \
                 exact, takes_output, inputs, stream, id)

}  // namespace

TEST(Activations, Relu) {
  // relu([-2, -0.5, 0, 0.5, 3]) = [0, 0, 0, 0.5, 3].
  const std::vector<float> hand = {-2.0f, -0.5f, 0.0f, 0.5f, 3.0f};
  if (!CHECK_FORWARD(relu, relu_exact, cases(hand, 100), "relu_wrong")) return;
  // The infinities: max(-inf, 0) = 0 and max(inf, 0) = inf. x·[x > 0], the same for every finite
  // x, gives -inf·0 = NaN at -inf.
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<Case> infinite = {{"x = [-inf, -1, 0, 2, inf]", Tensor({5}, {-inf, -1.0f, 0.0f, 2.0f, inf})}};
  if (!CHECK_FORWARD(relu, relu_exact, infinite, "relu_wrong")) return;
  // A new tensor, also for a contiguous x: x keeps its values, and y has storage of its own.
  if (!FORWARD_IS_NEW(relu, hand, "relu_in_place")) return;
  // Also when nothing is clamped: returning x itself when no value is negative shares its storage.
  const std::vector<float> positive = {0.5f, 1.0f, 3.0f};
  if (!FORWARD_IS_NEW(relu, positive, "relu_in_place")) return;
  // At the kink the gradient is 0 by convention: relu_backward(x, ones) = [0, 0, 0, 1, 1].
  const Tensor x({5}, hand);
  const Tensor ones({5}, {1, 1, 1, 1, 1});
  if (!KILN_EXPECT_CLOSE(KILN_OBSERVE(relu_backward(x, ones)), data_of({5}, {0, 0, 0, 1, 1}), 0.0, "relu_grad_wrong"))
    return;
  // Where x <= 0 the gradient is 0 whatever arrives from above, inf and NaN included; where x > 0
  // it is g, -inf included. Multiplying g by the 0/1 mask instead gives inf·0 = NaN·0 = NaN.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor kinked({4}, {-1.0f, 0.0f, 2.0f, 5.0f});
  const Tensor wild({4}, {inf, nan, 3.0f, -inf});
  if (!KILN_EXPECT_CLOSE(observe("relu_backward([-1, 0, 2, 5], [inf, NaN, 3, -inf])",
                                 [&] { return relu_backward(kinked, wild); }),
                         data_of({4}, {0, 0, 3, -inf}), 0.0, "relu_grad_times_mask"))
    return;
  if (!CHECK_BACKWARD(relu_backward, relu_exact, false, away_from_zero(cases(hand, 110), 0.01f), 120, "relu_grad_wrong"))
    return;
  if (!BACKWARD_IS_NEW(relu_backward, relu_exact, false, hand, "relu_in_place")) return;
  CHECK_BACKWARD_AT_OFFSET(relu_backward, relu_exact, false, 140, "relu_grad_wrong", "relu_grad_offset_ignored");
}

TEST(Activations, Sigmoid) {
  // sigmoid([-2, 0, 2]) = [0.1192029, 0.5, 0.8807971].
  const std::vector<float> hand = {-2.0f, 0.0f, 2.0f};
  if (!CHECK_FORWARD(sigmoid, sigmoid_exact, cases(hand, 200), "sigmoid_wrong")) return;
  // Large |x|: e^89 is already beyond float32's 3.4e38. σ(±1000) = 1 and 0, σ(-100) = 3.7e-44.
  const std::vector<float> extreme = {-1000.0f, -100.0f, -89.0f, -20.0f, 0.0f, 20.0f, 89.0f, 100.0f, 1000.0f};
  const std::vector<Case> large = {
      {"x = " + testing::list(extreme), Tensor({9}, extreme)},
      {"a random (3, 7) x in [-1000, 1000)", random_tensor({3, 7}, 210, -1000.0f, 1000.0f)},
  };
  if (!CHECK_FORWARD(sigmoid, sigmoid_exact, large, "sigmoid_overflow")) return;
  // Far below 0, σ(x) ≈ e^x is tiny but float still holds it (σ(-89) = 2.2e-39 as a subnormal):
  // each value to 1e-5 relative, or within 1e-44 (a few steps of the subnormals' 1.4e-45). A
  // difference 1 - 1/(1 + e) cancels to 0 past x ≈ -17, which the absolute 1e-6 above allows.
  const Tensor tail({9}, {-10.0f, -17.0f, -20.0f, -30.0f, -50.0f, -80.0f, -87.0f, -89.0f, -100.0f});
  if (!CHECK_SMALL_VALUES(sigmoid, sigmoid_exact, tail, "[-10, -17, -20, -30, -50, -80, -87, -89, -100]",
                          "sigmoid_tail_lost"))
    return;
  // sigmoid_backward takes y = σ(x): at x = 0, y = 0.5 and σ' = 0.25.
  if (!CHECK_BACKWARD(sigmoid_backward, sigmoid_exact, true, cases(hand, 220), 230, "sigmoid_grad_wrong")) return;
  // New tensors, also for contiguous inputs: x, y and g keep their values.
  if (!FORWARD_IS_NEW(sigmoid, hand, "sigmoid_in_place")) return;
  if (!BACKWARD_IS_NEW(sigmoid_backward, sigmoid_exact, true, hand, "sigmoid_in_place")) return;
  CHECK_BACKWARD_AT_OFFSET(sigmoid_backward, sigmoid_exact, true, 240, "sigmoid_grad_wrong", "sigmoid_grad_offset_ignored");
}

TEST(Activations, Tanh) {
  // tanh([-20, -1, 0, 0.5, 1, 20]) = [-1, -0.7615942, 0, 0.4621172, 0.7615942, 1].
  const std::vector<float> hand = {-20.0f, -1.0f, 0.0f, 0.5f, 1.0f, 20.0f};
  if (!CHECK_FORWARD(tanh_activation, tanh_exact, cases(hand, 300), "tanh_wrong")) return;
  const std::vector<float> extreme = {-1000.0f, -100.0f, 100.0f, 1000.0f};
  const std::vector<Case> large = {{"x = " + testing::list(extreme), Tensor({4}, extreme)}};
  if (!CHECK_FORWARD(tanh_activation, tanh_exact, large, "tanh_wrong")) return;
  // Near 0, tanh(x) ≈ x: small, but float holds it. Each value to 1e-5 relative (or within 1e-44,
  // for the subnormal -1e-40): a difference such as 2σ(2x) - 1 cancels to 0 or to a few ulps of
  // 1 here, which the absolute 1e-6 above allows.
  const Tensor small({8}, {1e-8f, -1e-8f, 3e-5f, -3e-5f, 1e-3f, 0.01f, 1e-30f, -1e-40f});
  if (!CHECK_SMALL_VALUES(tanh_activation, tanh_exact, small, "[1e-8, -1e-8, 3e-5, -3e-5, 0.001, 0.01, 1e-30, -1e-40]",
                          "tanh_near_zero_lost"))
    return;
  // tanh_backward takes y = tanh(x): at x = 1, 1 - y² = 0.4199743.
  if (!CHECK_BACKWARD(tanh_backward, tanh_exact, true, cases(hand, 310), 320, "tanh_grad_wrong")) return;
  if (!FORWARD_IS_NEW(tanh_activation, hand, "tanh_in_place")) return;
  if (!BACKWARD_IS_NEW(tanh_backward, tanh_exact, true, hand, "tanh_in_place")) return;
  CHECK_BACKWARD_AT_OFFSET(tanh_backward, tanh_exact, true, 340, "tanh_grad_wrong", "tanh_grad_offset_ignored");
}

TEST(Activations, Gelu) {
  // gelu([-2, -1, 0, 1, 2]) = [-0.0455003, -0.1586553, 0, 0.8413447, 1.9544997];
  // gelu_tanh of the same: [-0.0454023, -0.1588080, 0, 0.8411920, 1.9545977].
  const std::vector<float> hand = {-2.0f, -1.0f, 0.0f, 1.0f, 2.0f, -10.0f, 10.0f};
  if (!CHECK_FORWARD(gelu, gelu_exact, cases(hand, 400), "gelu_wrong")) return;
  if (!CHECK_FORWARD(gelu_tanh, gelu_tanh_exact, cases(hand, 410), "gelu_tanh_wrong")) return;
  // Φ(x) + x·φ(x): -0.0833155 at -1, 0.5 at 0, 1.0833155 at 1.
  if (!CHECK_BACKWARD(gelu_backward, gelu_exact, false, cases(hand, 420), 430, "gelu_grad_wrong")) return;
  if (!FORWARD_IS_NEW(gelu, hand, "gelu_in_place")) return;
  if (!FORWARD_IS_NEW(gelu_tanh, hand, "gelu_in_place")) return;
  if (!BACKWARD_IS_NEW(gelu_backward, gelu_exact, false, hand, "gelu_in_place")) return;
  CHECK_BACKWARD_AT_OFFSET(gelu_backward, gelu_exact, false, 440, "gelu_grad_wrong", "gelu_grad_offset_ignored");
}

TEST(Activations, GeluForms) {
  // x = -6, -5.99, ..., 6 (1201 points), then 33 values of the run: the largest |gelu - gelu_tanh|
  // must be what the two formulas give on those inputs (4.73e-4 at x = ±2.70 on the grid). Each
  // function gets a tensor of its own, and the judge reads x from the plain values: a function
  // that wrote into its input changes neither the other's input nor what both are judged by.
  std::vector<float> grid(1201);
  for (std::size_t k = 0; k < grid.size(); ++k) grid[k] = static_cast<float>((static_cast<int>(k) - 600) / 100.0);
  const std::vector<std::pair<std::string, TensorData>> inputs = {
      {"the grid -6, -5.99, ..., 6", data_of({1201}, grid)},
      {"33 random values in [-6, 6)", data_of(random_tensor({33}, 500, -6.0f, 6.0f))}};
  for (const auto& [what, x] : inputs) {
    const testing::Params params = {{"inputs", what}};
    const auto both = observe("gelu(x) and gelu_tanh(x) for x = " + what,
                              [&] { return std::pair(gelu(x.tensor()), gelu_tanh(x.tensor())); });
    if (!KILN_EXPECT_OK(both, "gelu_forms_wrong", params)) return;
    KILN_JUDGE {
      const TensorData& exact = both->first;
      const TensorData& tanh_form = both->second;
      if (exact.shape != x.shape || tanh_form.shape != x.shape) {
        KILN_FAIL("gelu_forms_wrong", params,
                  fmt::format("{} gave shapes {} and {}, expected {}", both.call(), to_string(exact.shape),
                              to_string(tanh_form.shape), to_string(x.shape)));
        return;
      }
      // The largest difference: the observed one, and the formulas' own in double.
      double observed = 0.0, expected = 0.0, expected_at = 0.0;
      for (std::size_t i = 0; i < x.values.size(); ++i) {
        observed = std::fmax(observed, std::fabs(static_cast<double>(exact.values[i]) - tanh_form.values[i]));
        const double d = std::fabs(gelu_exact(x.values[i]) - gelu_tanh_exact(x.values[i]));
        if (d > expected) {
          expected = d;
          expected_at = x.values[i];
        }
      }
      if (!(std::fabs(observed - expected) <= 1e-5)) {
        KILN_FAIL("gelu_forms_wrong", params,
                  fmt::format("{}: largest |gelu - gelu_tanh| is {}, the formulas differ by at most {} (at x = {:.2f})",
                              both.call(), testing::format_number(observed), testing::format_number(expected),
                              expected_at));
        return;
      }
    }
  }
}

}  // namespace kiln
