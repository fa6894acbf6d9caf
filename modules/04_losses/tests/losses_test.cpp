// Module 04 checks for the elementwise losses (mean squared error, binary cross-entropy with
// logits) and for the errors of the whole module.
//
// Expected values are hand-worked or computed here in double by plain loops; gradients are judged
// against central finite differences in double of those loops, h = 1e-4 (exact for mse, which
// is quadratic). Inputs include zeros and negatives, shapes (7, 3), (33), (1) and a transposed
// view, and logits of ±100 and ±1e4. Every value taken from the module's functions passes through
// observe().
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/activations.h"
#include "kiln/losses.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_ints;
using testing::random_tensor;
using testing::TensorData;

// ---------------------------------------------------------------------------------------------
// Trusted losses, in double

double mse_exact(const std::vector<double>& p, const std::vector<double>& t) {
  double total = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) total += (p[i] - t[i]) * (p[i] - t[i]);
  return total / static_cast<double>(p.size());
}

// -[t·log σ(z) + (1 - t)·log(1 - σ(z))], in its overflow-free form.
double bce_exact(const std::vector<double>& z, const std::vector<double>& t) {
  double total = 0.0;
  for (std::size_t i = 0; i < z.size(); ++i)
    total += std::max(z[i], 0.0) - z[i] * t[i] + std::log1p(std::exp(-std::fabs(z[i])));
  return total / static_cast<double>(z.size());
}

using Loss = double (*)(const std::vector<double>&, const std::vector<double>&);

std::vector<double> doubles(const Tensor& t) {
  const TensorData d = data_of(t);
  return std::vector<double>(d.values.begin(), d.values.end());
}

// dL/d(first) by central differences in double, h = 1e-4.
TensorData finite_difference_gradient(Loss loss, const Tensor& first, const Tensor& second) {
  constexpr double h = 1e-4;
  const std::vector<double> a = doubles(first), b = doubles(second);
  std::vector<float> grad(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::vector<double> plus = a, minus = a;
    plus[i] += h;
    minus[i] -= h;
    grad[i] = static_cast<float>((loss(plus, b) - loss(minus, b)) / (2.0 * h));
  }
  return data_of(first.shape(), grad);
}

// ---------------------------------------------------------------------------------------------
// Inputs

struct Case {
  std::string what;
  Tensor first;   // prediction or logits
  Tensor second;  // target or targets
};

// Targets 0 or 1 of the run, as floats.
Tensor binary_targets(const Shape& shape, std::uint64_t stream) {
  const std::vector<std::int64_t> bits = random_ints(static_cast<std::size_t>(numel(shape)), 2, stream);
  return Tensor(shape, std::vector<float>(bits.begin(), bits.end()));
}

// Hand-worked pairs, then pairs of the run: first in [low, high), second from make_second.
std::vector<Case> cases(const std::vector<Case>& hand, std::uint64_t stream, float low, float high,
                        const std::function<Tensor(const Shape&, std::uint64_t)>& make_second) {
  std::vector<Case> out = hand;
  for (const Shape& shape : {Shape{7, 3}, Shape{33}, Shape{1}}) {
    out.push_back({"a random " + to_string(shape) + " pair", random_tensor(shape, stream, low, high),
                   make_second(shape, stream + 1)});
    stream += 2;
  }
  const Tensor base = random_tensor({3, 7}, stream, low, high);
  out.push_back({"a (7, 3) first argument that is the transpose of a random (3, 7) matrix",
                 make_view(base, {7, 3}, {1, 7}, 0), make_second({7, 3}, stream + 1)});
  // The second argument a view too: a (7, 3) transpose, read through its strides.
  const Tensor second_base = make_second({3, 7}, stream + 2);
  out.push_back({"a random (7, 3) first argument and a second that is the transpose of a (3, 7) matrix",
                 random_tensor({7, 3}, stream + 3, low, high), make_view(second_base, {7, 3}, {1, 7}, 0)});
  return out;
}

using Function = std::function<Tensor(const Tensor&, const Tensor&)>;

// Observes name(first, second) on every case and compares it with the trusted loss; reports
// failure_id for the first case that differs.
bool check_loss(const char* file, int line, const std::string& name, const Function& function,
                const std::vector<Case>& inputs, Loss exact, const std::string& failure_id) {
  for (const Case& c : inputs) {
    const auto loss = observe(name + " for " + c.what, [&] { return function(c.first, c.second); });
    KILN_JUDGE {
      const TensorData expected = data_of({}, {static_cast<float>(exact(doubles(c.first), doubles(c.second)))});
      if (!testing::expect_close(file, line, loss, expected, 1e-5, failure_id, 1e-5)) return false;
    }
    if (!loss.ok()) return false;
  }
  return true;
}

// The same for a backward function, against finite differences of the trusted loss.
bool check_gradient(const char* file, int line, const std::string& name, const Function& function,
                    const std::vector<Case>& inputs, Loss exact, const std::string& failure_id) {
  for (const Case& c : inputs) {
    const auto grad = observe(name + " for " + c.what, [&] { return function(c.first, c.second); });
    KILN_JUDGE {
      if (!testing::expect_close(file, line, grad, finite_difference_gradient(exact, c.first, c.second), 1e-5,
                                 failure_id, 1e-4))
        return false;
    }
    if (!grad.ok()) return false;
  }
  return true;
}

#define FUNCTION(name) [](const Tensor& a, const Tensor& b) { return name(a, b); }

// A loss and its gradient on a pair of contiguous views at an offset: the random (3, 4) values
// `first` and `second`, each 5 floats into a storage of other numbers (kiln/testing.h). Both must
// be read from their own first element, not from storage_data(): each call is observed on fresh
// tensors of the same values too, and judged by testing::expect_same_at_offset.
bool check_at_offset(const char* file, int line, const std::string& name, const Function& loss_function,
                     const Function& grad_function, Loss exact, const TensorData& first, const TensorData& second,
                     std::uint64_t stream, const std::string& loss_id, const std::string& grad_id,
                     const std::string& failure_id) {
  const Tensor a = testing::at_offset(first, stream), b = testing::at_offset(second, stream + 1);
  const std::string what = " for a random (3, 4) pair, both contiguous views at storage offset 5";
  const std::string fresh_what = " for the same random (3, 4) pair as fresh contiguous tensors";
  const auto fresh_loss = observe(name + fresh_what, [&] { return loss_function(first.tensor(), second.tensor()); });
  const auto loss = observe(name + what, [&] { return loss_function(a, b); });
  KILN_JUDGE {
    const TensorData expected = data_of({}, {static_cast<float>(exact(doubles(first.tensor()), doubles(second.tensor())))});
    if (!testing::expect_same_at_offset(file, line, fresh_loss, loss, expected, 1e-5, 1e-5, loss_id, failure_id))
      return false;
  }
  if (!loss.ok() || !fresh_loss.ok()) return false;
  const auto fresh_grad = observe(name + "_backward" + fresh_what, [&] { return grad_function(first.tensor(), second.tensor()); });
  const auto grad = observe(name + "_backward" + what, [&] { return grad_function(a, b); });
  KILN_JUDGE {
    return testing::expect_same_at_offset(file, line, fresh_grad, grad,
                                          finite_difference_gradient(exact, first.tensor(), second.tensor()), 1e-5, 1e-4,
                                          grad_id, failure_id);
  }
  return grad.ok() && fresh_grad.ok();
}

// The loss of two empty tensors of shape (0): the mean of no values, 0/0 = NaN, as a scalar; and
// its gradient, empty of shape (0).
bool check_empty(const char* file, int line, const std::string& name, const Function& function,
                 const std::string& failure_id, const Function& backward, const std::string& grad_failure_id) {
  const Tensor none(Shape{0}, {}), other(Shape{0}, {});
  const auto loss = observe(name + " for two empty tensors of shape (0)", [&] { return function(none, other); });
  KILN_JUDGE {
    if (!testing::expect_ok(file, line, loss, failure_id)) return false;
    if (!(loss->shape == Shape{} && loss->values.size() == 1 && std::isnan(loss->values[0]))) {
      testing::report_failure(file, line, failure_id, {},
                              fmt::format("{} gave [{}] of shape {}, expected nan of shape ()", loss.call(),
                                          fmt::join(loss->values, ", "), to_string(loss->shape)));
      return false;
    }
  }
  if (!loss.ok()) return false;
  const auto grad = observe(name + "_backward for two empty tensors of shape (0)", [&] { return backward(none, other); });
  KILN_JUDGE { return testing::expect_close(file, line, grad, data_of(Shape{0}, {}), 0.0, grad_failure_id); }
  return grad.ok();
}

Tensor uniform_targets(const Shape& shape, std::uint64_t stream) { return random_tensor(shape, stream, -3.0f, 3.0f); }

}  // namespace

TEST(Losses, Mse) {
  // [1, 2, 3] against [1, 2, 5]: (0 + 0 + 4)/3 = 1.3333333, gradient 2·[0, 0, -2]/3.
  // [[0, -1.5], [2, 0]] against [[0, 0.5], [-1, 0]]: (0 + 4 + 9 + 0)/4 = 3.25.
  const std::vector<Case> hand = {
      {"prediction [1, 2, 3], target [1, 2, 5]", Tensor({3}, {1, 2, 3}), Tensor({3}, {1, 2, 5})},
      {"prediction [[0, -1.5], [2, 0]], target [[0, 0.5], [-1, 0]]", Tensor({2, 2}, {0, -1.5f, 2, 0}),
       Tensor({2, 2}, {0, 0.5f, -1, 0})},
  };
  const std::vector<Case> inputs = cases(hand, 500, -3.0f, 3.0f, uniform_targets);
  if (!check_loss(__FILE__, __LINE__, "mse_loss", FUNCTION(mse_loss), inputs, KILN_JUDGE_ONLY(mse_exact), "mse_wrong"))
    return;
  // Errors whose squares pass float's range while their mean does not: [2e19, 0] against 0 is
  // (4e38 + 0)/2 = 2e38, a float (1.8e19 squared is already past 3.4e38).
  const std::vector<Case> large = {
      {"prediction [2e19, 0], target [0, 0]", Tensor({2}, {2e19f, 0}), Tensor({2}, {0, 0})},
      {"prediction [1e19, -1e19, 3, 0], target [0, 0, 0, 1e19]", Tensor({4}, {1e19f, -1e19f, 3, 0}),
       Tensor({4}, {0, 0, 0, 1e19f})}};
  if (!check_loss(__FILE__, __LINE__, "mse_loss", FUNCTION(mse_loss), large, KILN_JUDGE_ONLY(mse_exact), "mse_wrong"))
    return;
  // A gradient of its own: on contiguous tensors, contiguous() is the tensor itself.
  if (!KILN_CHECK_NEW_TENSOR("mse_loss_backward(prediction, target) for prediction [1, 2, 3], target [1, 2, 5]",
                             {{"prediction", data_of({3}, {1, 2, 3})}, {"target", data_of({3}, {1, 2, 5})}},
                             [](const std::vector<Tensor>& in) { return mse_loss_backward(in[0], in[1]); },
                             "mse_grad_in_place"))
    return;
  if (!KILN_EXPECT_CLOSE(KILN_OBSERVE(mse_loss_backward(hand[0].first, hand[0].second)),
                         data_of({3}, {0.0f, 0.0f, -4.0f / 3.0f}), 1e-6, "mse_grad_wrong"))
    return;
  // Errors past float's range whose gradients are floats: 2·3e38/2 = 3e38, where 2·3e38 is not a
  // float; and 2·6e38/4 = 3e38, where the error 3e38 - (-3e38) = 6e38 itself is not.
  if (!KILN_EXPECT_CLOSE_REL(KILN_OBSERVE(mse_loss_backward(Tensor({2}, {3e38f, 0}), Tensor({2}, {0, 0}))),
                             data_of({2}, {3e38f, 0.0f}), 0.0, 1e-6, "mse_grad_overflow"))
    return;
  if (!KILN_EXPECT_CLOSE_REL(
          KILN_OBSERVE(mse_loss_backward(Tensor({4}, {3e38f, 0, 0, 0}), Tensor({4}, {-3e38f, 0, 0, 0}))),
          data_of({4}, {3e38f, 0.0f, 0.0f, 0.0f}), 0.0, 1e-6, "mse_grad_overflow"))
    return;
  // A small error between large values: 100000008 - 100000000 = 8 exactly (both are floats), so
  // the gradient is 2·8/3 = 5.3333333. Scaling each by 2/3 before subtracting leaves only what
  // the two roundings left of it: 4.
  if (!KILN_EXPECT_CLOSE_REL(KILN_OBSERVE(mse_loss_backward(Tensor({3}, {100000008.0f, 0, 0}),
                                                            Tensor({3}, {100000000.0f, 0, 0}))),
                             data_of({3}, {16.0f / 3.0f, 0.0f, 0.0f}), 0.0, 1e-6, "mse_grad_cancelled"))
    return;
  if (!check_gradient(__FILE__, __LINE__, "mse_loss_backward", FUNCTION(mse_loss_backward), inputs,
                      KILN_JUDGE_ONLY(mse_exact), "mse_grad_wrong"))
    return;
  // Contiguous views at an offset, read from their own first element.
  if (!check_at_offset(__FILE__, __LINE__, "mse_loss", FUNCTION(mse_loss), FUNCTION(mse_loss_backward),
                       KILN_JUDGE_ONLY(mse_exact), data_of(random_tensor({3, 4}, 520, -3.0f, 3.0f)),
                       data_of(uniform_targets({3, 4}, 521)), 522, "mse_wrong", "mse_grad_wrong", "mse_offset_ignored"))
    return;
  // No elements: the mean of no squares is 0/0 = NaN (PyTorch's mse_loss of empty tensors too).
  check_empty(__FILE__, __LINE__, "mse_loss", FUNCTION(mse_loss), "mse_empty_not_nan", FUNCTION(mse_loss_backward),
              "mse_grad_wrong");
}

TEST(Losses, BinaryCrossEntropy) {
  // z = 0, t = 1: log(1 + e^0) = ln 2 = 0.6931472.
  // z = [2, -1], t = [1, 0]: (log(1 + e^-2) + log(1 + e^-1))/2 = (0.1269280 + 0.3132617)/2 = 0.2200948.
  const std::vector<Case> hand = {
      {"logits [0], targets [1]", Tensor({1}, {0}), Tensor({1}, {1})},
      {"logits [2, -1], targets [1, 0]", Tensor({2}, {2, -1}), Tensor({2}, {1, 0})},
  };
  const std::vector<Case> inputs = cases(hand, 600, -4.0f, 4.0f, binary_targets);
  if (!check_loss(__FILE__, __LINE__, "binary_cross_entropy_with_logits", FUNCTION(binary_cross_entropy_with_logits),
                  inputs, KILN_JUDGE_ONLY(bce_exact), "bce_wrong"))
    return;
  // Logits far beyond e^88.7: σ(100) is 1 in float32 and log(1 - σ) would be log(0).
  // [100, -100, 1e4, -1e4, 30] against [0, 1, 0, 1, 1]: (100 + 100 + 1e4 + 1e4 + 9.4e-14)/5 = 4040.
  const std::vector<Case> extreme = {
      {"logits [100, -100, 1e4, -1e4, 30], targets [0, 1, 0, 1, 1]", Tensor({5}, {100, -100, 1e4f, -1e4f, 30}),
       Tensor({5}, {0, 1, 0, 1, 1})},
      {"random (7, 3) logits in [-1e4, 1e4) and targets", random_tensor({7, 3}, 610, -1e4f, 1e4f),
       binary_targets({7, 3}, 611)},
  };
  if (!check_loss(__FILE__, __LINE__, "binary_cross_entropy_with_logits", FUNCTION(binary_cross_entropy_with_logits),
                  extreme, KILN_JUDGE_ONLY(bce_exact), "bce_not_stable"))
    return;
  // Confidently right: each loss is log(1 + e^-|z|) alone, tiny but held by float.
  // [20, 30, -25] against [1, 1, 0]: (2.061e-9 + 9.36e-14 + 1.389e-11)/3 = 6.917e-10, to 1e-5
  // relative. log(1 + e) rounds 1 + e to 1 and gives 0, which the 1e-5 absolute above allows.
  const std::vector<float> confident = {20, 30, -25};
  const Tensor confident_targets({3}, {1, 1, 0});
  const auto tiny = observe("binary_cross_entropy_with_logits for logits [20, 30, -25], targets [1, 1, 0]",
                            [&] { return binary_cross_entropy_with_logits(Tensor({3}, confident), confident_targets); });
  KILN_JUDGE {
    const double exact = bce_exact(doubles(Tensor({3}, confident)), doubles(confident_targets));
    if (!testing::expect_close(__FILE__, __LINE__, tiny, data_of({}, {static_cast<float>(exact)}), 0.0, "bce_tiny_lost",
                               1e-5))
      return;
  }
  if (!tiny.ok()) return;
  // Losses whose total lies past float's range although their mean does not: each of the logits
  // [3e38, 3e38] against targets [0, 0] costs 3e38 (and each of [-3e38, -3e38] against [1, 1]),
  // a float, and so is their mean, but their total, 6e38, is not. A total kept in float is inf.
  const std::vector<Case> past_float = {
      {"logits [3e38, 3e38], targets [0, 0]", Tensor({2}, {3e38f, 3e38f}), Tensor({2}, {0, 0})},
      {"logits [-3e38, -3e38], targets [1, 1]", Tensor({2}, {-3e38f, -3e38f}), Tensor({2}, {1, 1})},
  };
  if (!check_loss(__FILE__, __LINE__, "binary_cross_entropy_with_logits", FUNCTION(binary_cross_entropy_with_logits),
                  past_float, KILN_JUDGE_ONLY(bce_exact), "bce_total_past_float"))
    return;
  if (!KILN_CHECK_NEW_TENSOR(
          "binary_cross_entropy_with_logits_backward(logits, targets) for logits [2, -1, 0.5], targets [1, 0, 1]",
          {{"logits", data_of({3}, {2, -1, 0.5f})}, {"targets", data_of({3}, {1, 0, 1})}},
          [](const std::vector<Tensor>& in) { return binary_cross_entropy_with_logits_backward(in[0], in[1]); },
          "bce_grad_in_place"))
    return;
  // dL/dz = (σ(z) - t)/n: for z = 0, t = 1, -0.5.
  if (!check_gradient(__FILE__, __LINE__, "binary_cross_entropy_with_logits_backward",
                      FUNCTION(binary_cross_entropy_with_logits_backward), inputs, KILN_JUDGE_ONLY(bce_exact), "bce_grad_wrong"))
    return;
  if (!check_gradient(__FILE__, __LINE__, "binary_cross_entropy_with_logits_backward",
                      FUNCTION(binary_cross_entropy_with_logits_backward), extreme, KILN_JUDGE_ONLY(bce_exact),
                      "bce_not_stable"))
    return;
  // Confidently right the other way: t = 0 and z far below 0, whose gradients σ(z)/3 are tiny
  // floats that a sigmoid formed as 1 minus something loses. Each to 1e-5 relative.
  const std::vector<float> negative = {-10, -20, -60};
  const auto tiny_grad = observe("binary_cross_entropy_with_logits_backward for logits [-10, -20, -60], targets [0, 0, 0]",
                                 [&] {
                                   return binary_cross_entropy_with_logits_backward(Tensor({3}, negative),
                                                                                    Tensor({3}, {0, 0, 0}));
                                 });
  if (!KILN_EXPECT_OK(tiny_grad, "bce_grad_tiny_lost", {{"problem", "the call threw"}})) return;
  KILN_JUDGE {
    for (std::size_t i = 0; i < negative.size(); ++i) {
      const double exact = 1.0 / (1.0 + std::exp(-static_cast<double>(negative[i]))) / 3.0;
      const double got = i < tiny_grad->values.size() ? tiny_grad->values[i] : std::nan("");
      if (!(std::fabs(got - exact) <= 1e-5 * exact)) {
        KILN_FAIL("bce_grad_tiny_lost", {{"problem", fmt::format("z = {} gave {:g}, expected {:g} ({:.2g}% off)",
                                                                 negative[i], got, exact,
                                                                 100.0 * std::fabs(got - exact) / exact)}});
        return;
      }
    }
  }
  if (!tiny_grad.ok()) return;
  // Confidently right with t = 1: σ(z) - 1 is a small difference of numbers near 1, exact in
  // float, then divided by n = 3. Scaling σ and t by 1/n before subtracting rounds each product to
  // the precision of 1/3, as coarse as the difference itself (25% off for z = 16). Judged to 1e-6
  // relative against (σ - 1)/3 from sigmoid()'s own values, the sigmoid the gradient uses, or
  // against the exact -1/(1 + e^z)/3 (a gradient computed in double, or as -σ(-z)/n, is right too).
  const std::vector<float> logits = {12, 14, 16};
  const Tensor near_one({3}, logits);
  const auto sigma = observe("sigmoid(z) for z = [12, 14, 16]", [&] { return sigmoid(near_one); });
  const auto small_grad = observe("binary_cross_entropy_with_logits_backward for logits [12, 14, 16], targets [1, 1, 1]",
                                  [&] { return binary_cross_entropy_with_logits_backward(near_one, Tensor({3}, {1, 1, 1})); });
  KILN_JUDGE {
    if (!testing::expect_ok(__FILE__, __LINE__, sigma, "bce_grad_cancelled")) return;
    std::vector<float> expected;
    for (std::size_t i = 0; i < sigma->values.size(); ++i) {
      const auto from_sigmoid = static_cast<float>((static_cast<double>(sigma->values[i]) - 1.0) / 3.0);
      const auto exact = static_cast<float>(-1.0 / (1.0 + std::exp(static_cast<double>(logits[i]))) / 3.0);
      const bool exact_kept = small_grad.ok() && i < small_grad->values.size() &&
                              std::fabs(small_grad->values[i] - exact) <= 1e-6 * std::fabs(exact);
      expected.push_back(exact_kept ? exact : from_sigmoid);
    }
    if (!testing::expect_close(__FILE__, __LINE__, small_grad, data_of(sigma->shape, expected), 0.0,
                               "bce_grad_cancelled", 1e-6))
      return;
  }
  if (!small_grad.ok() || !sigma.ok()) return;
  // Contiguous views at an offset, read from their own first element.
  if (!check_at_offset(__FILE__, __LINE__, "binary_cross_entropy_with_logits", FUNCTION(binary_cross_entropy_with_logits),
                       FUNCTION(binary_cross_entropy_with_logits_backward), KILN_JUDGE_ONLY(bce_exact),
                       data_of(random_tensor({3, 4}, 620, -4.0f, 4.0f)), data_of(binary_targets({3, 4}, 621)), 622,
                       "bce_wrong", "bce_grad_wrong", "bce_offset_ignored"))
    return;
  // No elements: the mean of no losses is 0/0 = NaN (PyTorch's too).
  check_empty(__FILE__, __LINE__, "binary_cross_entropy_with_logits", FUNCTION(binary_cross_entropy_with_logits),
              "bce_empty_not_nan", FUNCTION(binary_cross_entropy_with_logits_backward), "bce_grad_wrong");
}

TEST(Losses, Errors) {
  // Tensors that must pair element by element: (7, 3) for (3, 7) holds as many values; (7) would
  // broadcast; then a matrix and its transpose of sizes drawn by the run, (n, m) with n != m.
  testing::Generator sizes(700);
  const std::int64_t n = 1 + sizes.below(5), m = n + 1 + sizes.below(4);
  const std::vector<std::pair<Tensor, Tensor>> pairs = {
      {random_tensor({3, 7}, 701), random_tensor({7, 3}, 702)},
      {random_tensor({3, 7}, 703), random_tensor({7}, 704)},
      {random_tensor({n, m}, 705), random_tensor({m, n}, 706)},
  };
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> pairwise = {
      {"mse_loss", FUNCTION(mse_loss)},
      {"mse_loss_backward", FUNCTION(mse_loss_backward)},
      {"binary_cross_entropy_with_logits", FUNCTION(binary_cross_entropy_with_logits)},
      {"binary_cross_entropy_with_logits_backward", FUNCTION(binary_cross_entropy_with_logits_backward)},
  };
  for (const auto& [a, b] : pairs) {
    const std::vector<std::string> both = {to_string(a.shape()), to_string(b.shape())};
    for (const auto& [name, function] : pairwise) {
      const auto got = observe(fmt::format("{} of {} and {}", name, both[0], both[1]), [&] { return function(a, b); });
      KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "loss_shape_not_reported", both);
    }
  }

  using Targets = std::vector<std::int64_t>;
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Targets&)>>> classifiers = {
      {"cross_entropy", [](const Tensor& z, const Targets& t) { return cross_entropy(z, t); }},
      {"cross_entropy_backward", [](const Tensor& z, const Targets& t) { return cross_entropy_backward(z, t); }},
      {"nll_loss", [](const Tensor& z, const Targets& t) { return nll_loss(z, t); }},
      {"nll_loss_one_hot", [](const Tensor& z, const Targets& t) { return nll_loss_one_hot(z, t); }},
      {"nll_loss_backward", [](const Tensor& z, const Targets& t) { return nll_loss_backward(z, t); }},
  };
  // Class ids outside [0, 6) for (3, 6) scores: 6 (one past the end), -1, an id of the run in
  // [7, 100), and 2^32 + 1 and -2^32 + 1, which are 1 in 32 bits. Each must be named in the error,
  // right after the word "target" ("target 6 of row 0"): a message that reads "target 0 of row 6"
  // holds the 6 too, as the row, and names the row's number as the target.
  const Tensor scores = random_tensor({3, 6}, 707);
  const std::int64_t far = 7 + sizes.below(93);
  const std::int64_t wide = (std::int64_t{1} << 32) + 1;
  const std::vector<std::pair<Targets, std::string>> bad_ids = {
      {{6, 0, 2}, "6"},          {{1, -1, 2}, "-1"}, {{far, 3, 5}, std::to_string(far)}, {{0, 5, -1}, "-1"},
      {{0, wide, 2}, "4294967297"}, {{2, 3, 2 - wide}, "-4294967295"}};
  for (const auto& [targets, id] : bad_ids) {
    const std::string listed = fmt::format("{{{}, {}, {}}}", targets[0], targets[1], targets[2]);
    for (const auto& [name, function] : classifiers) {
      const auto got = observe(fmt::format("{} of (3, 6) scores with targets {}", name, listed),
                               [&] { return function(scores, targets); });
      KILN_JUDGE {
        testing::expect_throws<IndexError>(__FILE__, __LINE__, got, "target_not_reported", {id});
        // Past that check (an IndexError that mentions the id), the id must be the target's number.
        const bool mentioned = !got.ok() && got.error().is("kiln::IndexError") &&
                               got.error().message.find(id) != std::string::npos;
        if (mentioned && got.error().message.find("target " + id) == std::string::npos) {
          KILN_FAIL("target_id_misplaced", (testing::Params{{"function", name}, {"id", id}, {"targets", listed}}),
                    got.describe_error());
          return;
        }
      }
    }
  }
  // Scores that are not (N, C) with N targets: 5 or 9 targets for 7 rows, 1-D and 3-D scores, and
  // a 0-D scalar, which has no row count to compare: the dimension count is tested first.
  const std::vector<std::tuple<Tensor, Targets, std::vector<std::string>>> misfits = {
      {random_tensor({7, 3}, 708), random_ints(5, 3, 709), {"(7, 3)", "(5)"}},
      {random_tensor({7, 3}, 712), random_ints(9, 3, 713), {"(7, 3)", "(9)"}},
      {random_tensor({7}, 710), random_ints(7, 3, 711), {"(7)"}},
      {random_tensor({2, 3, 4}, 714), random_ints(2, 3, 715), {"(2, 3, 4)"}},
      {random_tensor({}, 716), {0}, {"()"}},
  };
  for (const auto& [z, targets, mention] : misfits) {
    for (const auto& [name, function] : classifiers) {
      const auto got = observe(fmt::format("{} of {} scores with {}", name, to_string(z.shape()), testing::counted(targets.size(), "target")),
                               [&] { return function(z, targets); });
      KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "loss_shape_not_reported", mention);
    }
  }
}

}  // namespace kiln
