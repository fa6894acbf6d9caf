// Module 04 checks for cross_entropy, its backward pass and its stability, and for nll_loss by
// indexing and by a one-hot matrix.
//
// Expected values are hand-worked (the chapter's numbers) or computed here in double by plain
// loops over the rows: log Σ_c e^z with the row maximum taken out, and the target's score.
// Gradients are judged against central finite differences in double of that loss, h = 1e-4;
// for logits of ±1e30, where z ± h is z again, against the formula (softmax - one_hot)/N in
// double. Shapes are non-square: N = 7 rows of C = 3 classes, one row of 33 classes, one class,
// and a transposed view. Every value taken from the module's functions passes through observe().
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/losses.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_ints;
using testing::random_tensor;
using testing::TensorData;
using Targets = std::vector<std::int64_t>;

// ---------------------------------------------------------------------------------------------
// Trusted losses, in double, on row-major (N, C) values

double cross_entropy_exact(const std::vector<double>& z, std::int64_t classes, const Targets& targets) {
  const std::int64_t rows = static_cast<std::int64_t>(targets.size());
  double total = 0.0;
  for (std::int64_t n = 0; n < rows; ++n) {
    const double* row = z.data() + n * classes;
    const double row_max = *std::max_element(row, row + classes);
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(row[c] - row_max);
    total += row_max + std::log(sum) - row[targets[n]];
  }
  return total / static_cast<double>(rows);
}

// (softmax(z) - one_hot)/N, row by row.
std::vector<double> cross_entropy_gradient_exact(const std::vector<double>& z, std::int64_t classes,
                                                 const Targets& targets) {
  const std::int64_t rows = static_cast<std::int64_t>(targets.size());
  std::vector<double> grad(z.size());
  for (std::int64_t n = 0; n < rows; ++n) {
    const double* row = z.data() + n * classes;
    const double row_max = *std::max_element(row, row + classes);
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(row[c] - row_max);
    for (std::int64_t c = 0; c < classes; ++c) {
      const double softmax = std::exp(row[c] - row_max) / sum;
      grad[n * classes + c] = (softmax - (c == targets[n] ? 1.0 : 0.0)) / static_cast<double>(rows);
    }
  }
  return grad;
}

double nll_exact(const std::vector<double>& logp, std::int64_t classes, const Targets& targets) {
  double total = 0.0;
  for (std::size_t n = 0; n < targets.size(); ++n) total -= logp[n * classes + targets[n]];
  return total / static_cast<double>(targets.size());
}

using Loss = std::function<double(const std::vector<double>&, std::int64_t, const Targets&)>;

std::vector<double> doubles(const Tensor& t) {
  const TensorData d = data_of(t);
  return std::vector<double>(d.values.begin(), d.values.end());
}

TensorData scalar(double value) { return data_of({}, {static_cast<float>(value)}); }

// dL/dz by central differences in double, h = 1e-4.
TensorData finite_difference_gradient(const Loss& loss, const Tensor& scores, const Targets& targets) {
  constexpr double h = 1e-4;
  const std::vector<double> z = doubles(scores);
  const std::int64_t classes = scores.shape()[1];
  std::vector<float> grad(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) {
    std::vector<double> plus = z, minus = z;
    plus[i] += h;
    minus[i] -= h;
    grad[i] = static_cast<float>((loss(plus, classes, targets) - loss(minus, classes, targets)) / (2.0 * h));
  }
  return data_of(scores.shape(), grad);
}

// ---------------------------------------------------------------------------------------------
// Inputs

struct Case {
  std::string what;
  Tensor scores;  // logits or log-probabilities, (N, C)
  Targets targets;
};

// Hand-worked rows, then scores of the run in [low, high) with targets of the run.
std::vector<Case> cases(const std::vector<Case>& hand, std::uint64_t stream, float low, float high) {
  std::vector<Case> out = hand;
  out.push_back({"random (7, 3) scores", random_tensor({7, 3}, stream, low, high), random_ints(7, 3, stream + 1)});
  out.push_back({"random (1, 33) scores", random_tensor({1, 33}, stream + 2, low, high), random_ints(1, 33, stream + 3)});
  out.push_back({"random (5, 1) scores (one class)", random_tensor({5, 1}, stream + 4, low, high), Targets(5, 0)});
  const Tensor base = random_tensor({3, 7}, stream + 5, low, high);
  out.push_back({"(7, 3) scores, the transpose of a random (3, 7) matrix (strides (1, 7))",
                 make_view(base, {7, 3}, {1, 7}, 0), random_ints(7, 3, stream + 6)});
  return out;
}

// (5, 3) scores in [low, high) as a contiguous view 5 floats into a storage of other numbers
// (kiln/testing.h), with 5 targets of the run: read from its own first element, not from
// storage_data().
Case offset_case(std::uint64_t stream, float low, float high) {
  return {"(5, 3) scores, a contiguous view at storage offset 5 of random values",
          testing::at_offset(data_of(random_tensor({5, 3}, stream, low, high)), stream + 1),
          random_ints(5, 3, stream + 2)};
}

std::vector<Case> logit_cases(std::uint64_t stream) {
  // ln 2 = 0.6931472; -log softmax([1, 2, 3])[2] = 0.4076059; and [0] = 2.4076059.
  return cases({{"[[0, 0]]", Tensor({1, 2}, {0, 0}), {0}},
                {"[[1, 2, 3]]", Tensor({1, 3}, {1, 2, 3}), {2}},
                {"[[1, 2, 3], [1, 2, 3]]", Tensor({2, 3}, {1, 2, 3, 1, 2, 3}), {0, 2}}},
               stream, -4.0f, 4.0f);
}

std::string call_text(const std::string& name, const Case& c) {
  return fmt::format("{}(scores, targets) for {} and targets {}", name, c.what,
                     c.targets.size() <= 12 ? fmt::format("{{{}}}", fmt::join(c.targets, ", "))
                                            : fmt::format("of the run ({} of them)", c.targets.size()));
}

using Function = std::function<Tensor(const Tensor&, const Targets&)>;

// Observes name(scores, targets) on every case and compares it with `expected`; reports
// failure_id for the first case that differs.
bool check_loss(const char* file, int line, const std::string& name, const Function& function,
                const std::vector<Case>& inputs, const Loss& exact, double rtol, const std::string& failure_id) {
  for (const Case& c : inputs) {
    const auto loss = observe(call_text(name, c), [&] { return function(c.scores, c.targets); });
    KILN_JUDGE {
      const double expected = exact(doubles(c.scores), c.scores.shape()[1], c.targets);
      if (!testing::expect_close(file, line, loss, scalar(expected), 1e-5, failure_id, rtol)) return false;
    }
    if (!loss.ok()) return false;
  }
  return true;
}

// The same for a backward function, against finite differences of `exact`.
bool check_gradient(const char* file, int line, const std::string& name, const Function& function,
                    const std::vector<Case>& inputs, const Loss& exact, const std::string& failure_id) {
  for (const Case& c : inputs) {
    const auto grad = observe(call_text(name, c), [&] { return function(c.scores, c.targets); });
    KILN_JUDGE {
      if (!testing::expect_close(file, line, grad, finite_difference_gradient(exact, c.scores, c.targets), 1e-5,
                                 failure_id, 1e-4))
        return false;
    }
    if (!grad.ok()) return false;
  }
  return true;
}

#define FUNCTION(name) [](const Tensor& scores, const Targets& targets) { return name(scores, targets); }

// A case whose scores are a view at an offset (offset_case), observed twice: on fresh contiguous
// scores of the same values, then on the view, and judged by testing::expect_same_at_offset
// (offset_id only for a result that depends on the offset; `expected` is computed from the fresh
// scores).
bool check_at_offset(const char* file, int line, const std::string& name, const Function& function, const Case& c,
                     const std::function<TensorData(const Tensor&)>& expected, double atol, double rtol,
                     const std::string& general_id, const std::string& offset_id) {
  const TensorData values = data_of(c.scores);
  const Case fresh_case{"the same (5, 3) scores as a fresh contiguous tensor", values.tensor(), c.targets};
  const auto fresh = observe(call_text(name, fresh_case), [&] { return function(fresh_case.scores, c.targets); });
  const auto shifted = observe(call_text(name, c), [&] { return function(c.scores, c.targets); });
  KILN_JUDGE {
    return testing::expect_same_at_offset(file, line, fresh, shifted, expected(fresh_case.scores), atol, rtol,
                                          general_id, offset_id);
  }
  return fresh.ok() && shifted.ok();
}

// The loss of an empty batch: a scalar (shape ()) holding NaN, the mean of no values.
bool is_nan_scalar(const TensorData& loss) {
  return loss.shape == Shape{} && loss.values.size() == 1 && std::isnan(loss.values[0]);
}

std::string describe_not_nan(const std::string& call, const TensorData& loss) {
  return fmt::format("{} gave [{}] of shape {}, expected nan of shape ()", call, fmt::join(loss.values, ", "),
                     to_string(loss.shape));
}

}  // namespace

TEST(Losses, CrossEntropy) {
  if (!check_loss(__FILE__, __LINE__, "cross_entropy", FUNCTION(cross_entropy), logit_cases(100),
                  KILN_JUDGE_ONLY(cross_entropy_exact), 1e-5, "ce_wrong"))
    return;
  // A class that is not the target with log-probability -inf: a masked logit of -inf, and logits
  // further apart than FLT_MAX (3e38 - (-3e38) is -inf in float). The lookup never reads it, so
  // the loss is finite: log(1 + e^-2) and ln 2, averaged; and 0. Times a one-hot 0 it is NaN.
  constexpr float inf = std::numeric_limits<float>::infinity();
  const std::vector<Case> minus_infinity = {
      {"[[2, -inf, 0], [1, 1, -inf]] (a masked class in each row)", Tensor({2, 3}, {2, -inf, 0, 1, 1, -inf}), {0, 1}},
      {"[[3e38, -3e38]] (logits more than FLT_MAX apart)", Tensor({1, 2}, {3e38f, -3e38f}), {0}},
  };
  if (!check_loss(__FILE__, __LINE__, "cross_entropy", FUNCTION(cross_entropy), minus_infinity,
                  KILN_JUDGE_ONLY(cross_entropy_exact), 1e-5, "ce_nan_at_minus_infinity"))
    return;
  // An empty batch, logits (0, 3) and no targets: the mean over N = 0 rows is 0/0 = NaN, as
  // PyTorch's cross_entropy of an empty batch is.
  const Tensor no_rows({0, 3}, {});
  const auto empty = observe("cross_entropy(logits, {}) for logits of shape (0, 3) and no targets",
                             [&] { return cross_entropy(no_rows, {}); });
  if (!KILN_EXPECT_OK(empty, "ce_empty_batch_not_nan")) return;
  KILN_JUDGE {
    if (!is_nan_scalar(*empty)) {
      KILN_FAIL("ce_empty_batch_not_nan", {}, describe_not_nan(empty.call(), *empty));
      return;
    }
  }
  // Logits that are a contiguous view at an offset.
  const Case logits_at_offset = offset_case(120, -4.0f, 4.0f);
  check_at_offset(
      __FILE__, __LINE__, "cross_entropy", FUNCTION(cross_entropy), logits_at_offset,
      KILN_JUDGE_ONLY([&](const Tensor& z) { return scalar(cross_entropy_exact(doubles(z), 3, logits_at_offset.targets)); }),
      1e-5, 1e-5,
      "ce_wrong", "ce_offset_ignored");
}

TEST(Losses, CrossEntropyGradient) {
  // A gradient of its own: on contiguous logits, contiguous() is the logits themselves.
  if (!KILN_CHECK_NEW_TENSOR("cross_entropy_backward(logits, {2, 0}) for logits [[1, 2, 3], [0.5, -1, 0]]",
                             {{"logits", data_of({2, 3}, {1, 2, 3, 0.5f, -1, 0})}},
                             [](const std::vector<Tensor>& in) { return cross_entropy_backward(in[0], {2, 0}); },
                             "ce_grad_in_place"))
    return;
  // By hand: softmax([0, 0]) = [0.5, 0.5]; minus the one-hot row [1, 0], over N = 1.
  const Tensor zeros({1, 2}, {0, 0});
  const auto by_hand = KILN_OBSERVE(cross_entropy_backward(zeros, {0}));
  if (!KILN_EXPECT_CLOSE(by_hand, data_of({1, 2}, {-0.5f, 0.5f}), 1e-7, "ce_grad_wrong")) return;
  if (!check_gradient(__FILE__, __LINE__, "cross_entropy_backward", FUNCTION(cross_entropy_backward), logit_cases(200),
                      KILN_JUDGE_ONLY(cross_entropy_exact), "ce_grad_wrong"))
    return;
  // Logits that are a contiguous view at an offset.
  const Case logits_at_offset = offset_case(220, -4.0f, 4.0f);
  if (!check_at_offset(
          __FILE__, __LINE__, "cross_entropy_backward", FUNCTION(cross_entropy_backward), logits_at_offset,
          KILN_JUDGE_ONLY([&](const Tensor& z) {
            return finite_difference_gradient(cross_entropy_exact, z, logits_at_offset.targets);
          }),
          1e-5, 1e-4, "ce_grad_wrong", "ce_grad_offset_ignored"))
    return;
  // An empty batch, logits (0, 3) and no targets: an empty gradient of the logits' shape.
  const Tensor no_rows({0, 3}, {});
  KILN_EXPECT_CLOSE(observe("cross_entropy_backward(logits, {}) for logits of shape (0, 3) and no targets",
                            [&] { return cross_entropy_backward(no_rows, {}); }),
                    data_of(Shape{0, 3}, {}), 0.0, "ce_grad_wrong");
}

TEST(Losses, CrossEntropyStable) {
  // Logits whose e^z overflows float32 (anything above 88.7): the loss is the gap between the
  // row's maximum and the target's logit, plus at most log C.
  //   [[1e4, -1e4], [-1e4, 1e4]], {0, 0}: (0 + 2e4)/2 = 1e4; gradient [[0, 0], [-0.5, 0.5]]
  //   [[1e30, -1e30, 0]], {1}: 2e30; gradient [[1, -1, 0]]
  const std::vector<Case> extreme = {
      {"[[1e4, -1e4], [-1e4, 1e4]]", Tensor({2, 2}, {1e4f, -1e4f, -1e4f, 1e4f}), {0, 0}},
      {"[[1e30, -1e30, 0]]", Tensor({1, 3}, {1e30f, -1e30f, 0.0f}), {1}},
      {"[[-1e30, 0], [0, 1e30]]", Tensor({2, 2}, {-1e30f, 0.0f, 0.0f, 1e30f}), {1, 0}},
      {"random (7, 3) logits in [-1e4, 1e4)", random_tensor({7, 3}, 300, -1e4f, 1e4f), random_ints(7, 3, 301)},
  };
  for (const Case& c : extreme) {
    const auto loss = observe(call_text("cross_entropy", c), [&] { return cross_entropy(c.scores, c.targets); });
    if (!KILN_EXPECT_CLOSE_REL(loss, scalar(cross_entropy_exact(doubles(c.scores), c.scores.shape()[1], c.targets)),
                               1e-5, 1e-5, "ce_not_stable"))
      return;
    const auto grad =
        observe(call_text("cross_entropy_backward", c), [&] { return cross_entropy_backward(c.scores, c.targets); });
    KILN_JUDGE {
      const std::vector<double> expected =
          cross_entropy_gradient_exact(doubles(c.scores), c.scores.shape()[1], c.targets);
      if (!testing::expect_close(__FILE__, __LINE__, grad,
                                 data_of(c.scores.shape(), std::vector<float>(expected.begin(), expected.end())), 1e-6,
                                 "ce_not_stable", 1e-5))
        return;
    }
    if (!grad.ok()) return;
  }
}

TEST(Losses, NllLoss) {
  // By hand: log_probs [[-0.1, -2.3], [-1.2, -0.4]] with targets {0, 1} pick -0.1 and -0.4:
  // the loss is (0.1 + 0.4)/2 = 0.25, and the gradient -1/2 at the two picks.
  const Case hand{"[[-0.1, -2.3], [-1.2, -0.4]]", Tensor({2, 2}, {-0.1f, -2.3f, -1.2f, -0.4f}), {0, 1}};
  const std::vector<Case> inputs = cases({hand}, 400, -5.0f, 0.0f);
  if (!check_loss(__FILE__, __LINE__, "nll_loss", FUNCTION(nll_loss), inputs, KILN_JUDGE_ONLY(nll_exact), 1e-5,
                  "nll_wrong"))
    return;
  if (!check_loss(__FILE__, __LINE__, "nll_loss_one_hot", FUNCTION(nll_loss_one_hot), inputs,
                  KILN_JUDGE_ONLY(nll_exact), 1e-5, "nll_one_hot_wrong"))
    return;
  // Two log-probabilities whose total, -6e38, lies past float's range although their mean does not:
  // [[0, -3e38], [0, -3e38]] with targets {1, 1} (cross_entropy of [[3e38, 0], [3e38, 0]] against
  // class 1) is a loss of 3e38 by either function. A total rounded to float first is -inf.
  const Case past_float{"[[0, -3e38], [0, -3e38]]", Tensor({2, 2}, {0.0f, -3e38f, 0.0f, -3e38f}), {1, 1}};
  for (const auto& [name, function] : {std::pair<std::string, Function>{"nll_loss", FUNCTION(nll_loss)},
                                       std::pair<std::string, Function>{"nll_loss_one_hot", FUNCTION(nll_loss_one_hot)}}) {
    const auto loss = observe(call_text(name, past_float), [&] { return function(past_float.scores, past_float.targets); });
    if (!KILN_EXPECT_CLOSE_REL(loss, scalar(3e38), 0.0, 1e-6, "nll_total_past_float", {{"function", name}})) return;
  }
  // An empty batch, log_probs (0, 3) and no targets: the mean of no values is -(1/0)·0 = NaN
  // (NumPy's and PyTorch's mean of nothing), by either function. A 0 there is a mean the formula
  // does not give, and one function would disagree with the other.
  const Tensor no_rows({0, 3}, {});
  for (const auto& [name, function] : {std::pair<std::string, Function>{"nll_loss", FUNCTION(nll_loss)},
                                       std::pair<std::string, Function>{"nll_loss_one_hot", FUNCTION(nll_loss_one_hot)}}) {
    const auto loss = observe(name + "(log_probs, {}) for log_probs of shape (0, 3) and no targets",
                              [&] { return function(no_rows, {}); });
    if (!KILN_EXPECT_OK(loss, "nll_empty_batch_not_nan", {{"function", name}})) return;
    KILN_JUDGE {
      if (!is_nan_scalar(*loss)) {
        KILN_FAIL("nll_empty_batch_not_nan", {{"function", name}}, describe_not_nan(loss.call(), *loss));
        return;
      }
    }
  }
  if (!KILN_CHECK_NEW_TENSOR("nll_loss_backward(log_probs, {0, 1}) for log_probs [[-0.1, -2.3], [-1.2, -0.4]]",
                             {{"log_probs", data_of({2, 2}, {-0.1f, -2.3f, -1.2f, -0.4f})}},
                             [](const std::vector<Tensor>& in) { return nll_loss_backward(in[0], {0, 1}); },
                             "nll_grad_in_place"))
    return;
  if (!KILN_EXPECT_CLOSE(KILN_OBSERVE(nll_loss_backward(hand.scores, hand.targets)),
                         data_of({2, 2}, {-0.5f, 0.0f, 0.0f, -0.5f}), 1e-7, "nll_grad_wrong"))
    return;
  if (!check_gradient(__FILE__, __LINE__, "nll_loss_backward", FUNCTION(nll_loss_backward), inputs,
                      KILN_JUDGE_ONLY(nll_exact), "nll_grad_wrong"))
    return;
  // Log-probabilities that are a contiguous view at an offset, by either loss.
  const Case shifted = offset_case(420, -5.0f, 0.0f);
  const std::function<TensorData(const Tensor&)> nll_expected =
      KILN_JUDGE_ONLY([&](const Tensor& logp) { return scalar(nll_exact(doubles(logp), 3, shifted.targets)); });
  if (!check_at_offset(__FILE__, __LINE__, "nll_loss", FUNCTION(nll_loss), shifted, nll_expected, 1e-5, 1e-5,
                       "nll_wrong", "nll_offset_ignored"))
    return;
  if (!check_at_offset(__FILE__, __LINE__, "nll_loss_one_hot", FUNCTION(nll_loss_one_hot), shifted, nll_expected, 1e-5,
                       1e-5, "nll_one_hot_wrong", "nll_offset_ignored"))
    return;
  // An empty batch, log_probs (0, 3) and no targets: an empty gradient of their shape.
  KILN_EXPECT_CLOSE(observe("nll_loss_backward(log_probs, {}) for log_probs of shape (0, 3) and no targets",
                            [&] { return nll_loss_backward(no_rows, {}); }),
                    data_of(Shape{0, 3}, {}), 0.0, "nll_grad_wrong");
}

}  // namespace kiln
