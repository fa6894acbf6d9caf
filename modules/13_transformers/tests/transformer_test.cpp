// Module 13 checks: one TEST per check in module.yaml.
//
// Every expected value comes from transformer_testing.h, a GPT written again as plain loops in
// double, or is worked out by hand; gradients are central finite differences of those loops, also
// in double. Models get parameters drawn by the run (load_parameters writes them by name inside
// the observation), so that every path of the network carries a visible signal. Behaviour is
// judged as behaviour: causality by changing later tokens, position by repeating one token,
// learning by the loss after training.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/optimizers.h"
#include "kiln/testing.h"
#include "kiln/trusted.h"
#include "kiln/transformer.h"
#include "transformer_testing.h"

namespace kiln {
namespace {

using namespace transformer_testing;
using testing::data_of;
using testing::observe;
using testing::random_ints;
using testing::random_tensor;

// A new trusted tensor with the values of t, for a call that marks it as requiring grad.
Tensor fresh(const Tensor& t) { return data_of(t).tensor(); }

// The (batch, T) token tensor of ids, built here (not with the module's token_tensor).
Tensor tokens_of(const std::vector<std::int64_t>& ids, std::int64_t batch) {
  return Tensor({batch, static_cast<std::int64_t>(ids.size()) / batch}, std::vector<float>(ids.begin(), ids.end()));
}

// Whether an observed gradient is within 1e-4 + 1e-3·|expected|; the comparison in *detail if not.
bool gradient_close(const TensorData& actual, const Shape& shape, const Values& expected, std::string* detail) {
  const testing::Comparison c = testing::compare(actual, floats(shape, expected), 1e-4, 1e-3);
  if (c.close) return true;
  *detail = c.shapes_match ? c.describe() : "got shape " + to_string(actual.shape) + ", expected " + to_string(shape);
  return false;
}

bool close(const TensorData& actual, const TensorData& expected, double tolerance) {
  return testing::compare(actual, expected, tolerance, tolerance).close;
}

// "(2, 3, 4)" of a shape, for the names of calls.
std::string shape_text(const Shape& shape) { return to_string(shape); }

// A seed for the course's generator, drawn by the run.
std::uint64_t drawn_seed(testing::Generator& draw) { return static_cast<std::uint64_t>(draw.below(1'000'000'000'000)); }

// A GPT of the given sizes whose parameters are the test's (inside an observation only).
nn::GPT gpt_with(const GptSizes& s, const Parameters& p) {
  WichmannHill generator(1);
  nn::GPT model(config_of(s), generator);
  load_parameters(model, p);
  return model;
}

std::string sizes_text(const GptSizes& s) {
  return fmt::format("GPT(V = {}, max_length = {}, D = {}, H = {}, N = {})", s.vocab, s.max_length, s.width, s.heads,
                     s.layers);
}


// The text with every shape of two or more sizes, "(6, 1)", blanked out.
std::string without_shapes(std::string text) {
  for (auto open = text.find('('); open != std::string::npos; open = text.find('(', open + 1)) {
    const auto close = text.find(')', open);
    if (close == std::string::npos) break;
    const std::string inside = text.substr(open + 1, close - open - 1);
    if (inside.find(',') != std::string::npos && inside.find_first_not_of("0123456789, ") == std::string::npos)
      text.replace(open, close - open + 1, close - open + 1, ' ');
  }
  return text;
}

// Whether `number` stands alone in the text: no digit or '.' just before or after it.
bool names_number(const std::string& text, const std::string& number) {
  const auto part_of_number = [](char c) { return (c >= '0' && c <= '9') || c == '.'; };
  for (auto at = text.find(number); at != std::string::npos; at = text.find(number, at + 1)) {
    const auto end = at + number.size();
    if ((at == 0 || !part_of_number(text[at - 1])) && (end == text.size() || !part_of_number(text[end]))) return true;
  }
  return false;
}

// lm_loss refusing logits that do not fit its targets: a ShapeError naming the logits' shape and
// the number of targets, written as the student likes ("(5)", "5 targets", "got 5"): the number
// standing alone somewhere in the message outside every shape of two or more sizes (a reshape's
// "(6, 1)" names no count of targets).
void expect_loss_refused(const char* file, int line, const Tensor& logits, const std::vector<std::int64_t>& targets) {
  const std::string shape = to_string(logits.shape());
  const auto got = testing::observe(fmt::format("nn::lm_loss(logits of shape {}, {} targets)", shape, targets.size()),
                                    [&] { return nn::lm_loss(logits, targets); });
  KILN_JUDGE {
    testing::expect_throws<ShapeError>(file, line, got, "loss_shape_not_reported", {shape});
    if (::testing::Test::HasFailure()) return;
    if (!names_number(without_shapes(got.error().message), std::to_string(targets.size()))) {
      testing::report_failure(file, line, "loss_shape_not_reported", {},
                              fmt::format("{}: the message should name the number of targets, {}, but it says: {}",
                                          got.call(), targets.size(), got.error().message));
    }
  }
}

}  // namespace

TEST(Transformer, LayerNorm) {
  // The hand-worked case, D = 4, gain [1, 2, 0.5, -1], bias [0, 0.5, -1, 2]:
  //   [1, 2, 3, 4]: μ = 2.5, σ² = 1.25, x̂ = [-1.3416354, -0.4472118, 0.4472118, 1.3416354],
  //                 y = [-1.3416354, -0.3944236, -0.7763941, 0.6583646]
  //   [0.001, -0.001, 0.001, -0.001]: σ² = 1e-6, so eps matters: x̂ = ±0.001/√(1.1e-5) = ±0.3015113,
  //                 y = [0.3015113, -0.1030227, -0.8492443, 2.3015113]
  //   [5, 5, 5, 5]: σ² = 0, x̂ = 0, y = the bias
  const Tensor hand_x({3, 4}, {1, 2, 3, 4, 0.001f, -0.001f, 0.001f, -0.001f, 5, 5, 5, 5});
  const Tensor hand_gain({4}, {1, 2, 0.5f, -1}), hand_bias({4}, {0, 0.5f, -1, 2});
  const auto judge = [](const Tensor& x, const Tensor& gain, const Tensor& bias, const std::string& note) {
    const auto y = observe(fmt::format("layer_norm(x, gain, bias) with x {}{}", shape_text(x.shape()), note),
                           [&] { return nn::layer_norm(x, gain, bias); });
    if (!KILN_EXPECT_OK(y, "layer_norm_wrong")) return false;
    KILN_JUDGE {
      const std::int64_t width = x.shape().back();
      const auto expected_for = [&](NormVariant variant) {
        return floats(x.shape(), trusted_layer_norm(doubles(x), width, doubles(gain), doubles(bias), variant));
      };
      const TensorData expected = expected_for(NormVariant::right);
      if (close(*y, expected, 1e-5)) return true;
      const std::string detail = y.call() + ": " + testing::compare(*y, expected, 1e-5, 1e-5).describe();
      if (close(*y, expected_for(NormVariant::unbiased), 1e-4)) {
        KILN_FAIL("unbiased_variance", {}, detail);
        return false;
      }
      if (close(*y, expected_for(NormVariant::eps_outside), 1e-4)) {
        KILN_FAIL("eps_wrong", {}, detail);
        return false;
      }
      return testing::expect_close(__FILE__, __LINE__, y, expected, 1e-5, "layer_norm_wrong", 1e-5);
    }
    return true;
  };
  if (!judge(hand_x, hand_gain, hand_bias, " (the hand-worked case)")) return;
  const auto hand = observe("layer_norm(x, gain, bias) with x (3, 4) (the hand-worked case)",
                            [&] { return nn::layer_norm(hand_x, hand_gain, hand_bias); });
  if (!KILN_EXPECT_CLOSE(hand,
                         data_of({3, 4}, {-1.3416354f, -0.3944236f, -0.7763941f, 0.6583646f, 0.3015113f, -0.1030227f,
                                          -0.8492443f, 2.3015113f, 0, 0.5f, -1, 2}),
                         2e-6, "layer_norm_wrong"))
    return;

  // Rows of 7, a (2, 3, 6) batch, rows of 33, a single value per row (x̂ = 0), sizes of the run.
  testing::Generator draw(1301);
  const Shape drawn{1 + draw.below(4), 1 + draw.below(5), 2 + draw.below(9)};
  std::uint64_t stream = 1302;
  for (const Shape& shape : std::vector<Shape>{{5, 7}, {2, 3, 6}, {3, 33}, {4, 1}, drawn}) {
    const std::int64_t width = shape.back();
    const Tensor x = random_tensor(shape, stream++, -3.0f, 3.0f);
    const Tensor gain = random_tensor({width}, stream++, 0.5f, 1.5f), bias = random_tensor({width}, stream++);
    if (!judge(x, gain, bias, "")) return;
  }
  // A 1-D x is one row. Rows whose mean, 20, is large beside their spread (±1.7): Σx²/D - μ² in
  // float loses about 2e-4 of x̂ there, while the two passes of the formula, even in float, keep
  // it within 4e-6.
  const Tensor row = random_tensor({9}, 1320, -2.0f, 2.0f);
  if (!judge(row, random_tensor({9}, 1321, 0.5f, 1.5f), random_tensor({9}, 1322), " (1-D: one row)")) return;
  std::vector<float> offset_values = data_of(random_tensor({3, 16}, 1323, -1.7f, 1.7f)).values;
  for (float& v : offset_values) v += 20.0f;
  const Tensor offset({3, 16}, offset_values);
  if (!judge(offset, random_tensor({16}, 1324, 0.5f, 1.5f), random_tensor({16}, 1325), " (rows of mean 20)")) return;
  // A row of mean 10000001.5, exact in float: a mean summed in float comes out 10000001 and moves
  // every x̂ by 0.45; in double, as the header asks, it is exact.
  const Tensor far_row({1, 4}, {10000000, 10000001, 10000002, 10000003});
  if (!judge(far_row, Tensor({4}, {1, 2, 0.5f, -1}), Tensor({4}, {0, 0.5f, -1, 2}),
             " (x = [[10000000, 10000001, 10000002, 10000003]]: statistics in double)"))
    return;
  // A row whose squared deviations pass FLT_MAX: [1e20, -1e20] has μ = 0 and σ² = 1e40, finite in
  // double, where the header computes the statistics, so x̂ = [1, -1] and, with gain [1, 2] and
  // bias [0.5, -1], y = [1.5, -3]. A variance summed in float is inf, 1/√(σ² + eps) is 0, and y
  // comes out as the bias.
  {
    const Tensor huge_x({1, 2}, {1e20f, -1e20f}), huge_gain({2}, {1, 2}), huge_bias({2}, {0.5f, -1});
    const auto y = observe("layer_norm(x, gain, bias) with x = [[1e20, -1e20]], gain [1, 2] and bias [0.5, -1]",
                           [&] { return nn::layer_norm(huge_x, huge_gain, huge_bias); });
    if (!KILN_EXPECT_OK(y, "layer_norm_wrong")) return;
    KILN_JUDGE {
      const TensorData expected = data_of({1, 2}, {1.5f, -3.0f});
      if (!close(*y, expected, 1e-5)) {
        const std::string detail = fmt::format("{}: got {}, expected {}", y.call(), testing::list(y->values, 2),
                                               testing::list(expected.values, 2));
        if (close(*y, data_of({1, 2}, {0.5f, -1.0f}), 1e-5)) {  // y = the bias, x̂ = 0: the variance overflowed
          KILN_FAIL("variance_overflows", {}, detail);
          return;
        }
        testing::expect_close(__FILE__, __LINE__, y, expected, 1e-5, "layer_norm_wrong", 1e-5);
        return;
      }
    }
  }
  // A gain and a bias that nearly cancel: the row [0, 1] has x̂ = ±0.99998000060, and with gain 3e4
  // and bias −29999.4 (−29999.400390625 as a float) y_1 = 3e4·0.99998000060 − 29999.400390625 =
  // −3.726e-4, rounded once. The x̂ kept for backward is rounded to float (0.99997997); y formed
  // from it carries that rounding times 3e4: −1.21e-3, or −1.95e-3 with the product rounded to
  // float as well (half a float step at 3e4 is 9.8e-4).
  {
    const Tensor cancel_x({1, 2}, {0, 1}), cancel_gain({2}, {3e4f, 3e4f}), cancel_bias({2}, {-29999.4f, -29999.4f});
    const auto y = observe("layer_norm(x, gain, bias) with x = [[0, 1]], gain [3e4, 3e4] and bias [-29999.4, -29999.4]",
                           [&] { return nn::layer_norm(cancel_x, cancel_gain, cancel_bias); });
    if (!KILN_EXPECT_OK(y, "layer_norm_wrong")) return;
    KILN_JUDGE {
      const auto expected_for = [&](NormVariant variant) {
        return floats({1, 2}, trusted_layer_norm(doubles(cancel_x), 2, doubles(cancel_gain), doubles(cancel_bias), variant));
      };
      const TensorData expected = expected_for(NormVariant::right);
      if (!close(*y, expected, 1e-5)) {
        // Both values, since the comparison's largest difference is y_0's rounding at 6e4.
        const std::string detail = fmt::format("{}: got {}, expected {}", y.call(), testing::list(y->values, 2),
                                               testing::list(expected.values, 2));
        if (close(*y, expected_for(NormVariant::float_x_hat), 1.1e-3)) {
          KILN_FAIL("y_from_float_x_hat", {}, detail);
          return;
        }
        testing::expect_close(__FILE__, __LINE__, y, expected, 1e-5, "layer_norm_wrong", 1e-5);
        return;
      }
    }
  }
  // Empty tensors have no rows to normalise and give empty results of their own shape: rows of
  // width 0 (gain and bias (0)), and no rows of width 4.
  for (const Shape& shape : std::vector<Shape>{{2, 0}, {0, 4}}) {
    const std::int64_t width = shape.back();
    const Tensor empty(shape, {}), ones({width}, std::vector<float>(static_cast<std::size_t>(width), 1.0f));
    if (!KILN_EXPECT_CLOSE(observe(fmt::format("layer_norm(x, gain, bias) with x {} and gain and bias ({}) of ones",
                                               shape_text(shape), width),
                                   [&] { return nn::layer_norm(empty, ones, ones); }),
                           data_of(shape, {}), 0.0, "layer_norm_wrong"))
      return;
  }
  // The layer: LayerNorm(6) starts with gain 1 and bias 0.
  const Tensor x = random_tensor({2, 5, 6}, 1310, -2.0f, 2.0f);
  const auto layer = observe("LayerNorm(6).forward(x) with x (2, 5, 6)", [&] { return nn::LayerNorm(6).forward(x); });
  if (!KILN_EXPECT_CLOSE_REL(layer, floats({2, 5, 6}, trusted_layer_norm(doubles(x), 6, Values(6, 1.0), Values(6, 0.0))),
                             1e-5, 1e-5, "layer_norm_wrong"))
    return;

  // The eps it is given, not the default: with eps = 1 the row [0, 2, 0, 2] (σ² = 1) gives
  // x̂ = ±1/√2, not ±1; and LayerNorm(4, 0.25) passes its own eps on.
  const Tensor eps_x({2, 4}, {0, 2, 0, 2, 1, 3, -1, 1});
  const Tensor eps_gain = random_tensor({4}, 1326, 0.5f, 1.5f), eps_bias = random_tensor({4}, 1327);
  struct EpsCase {
    std::string call;
    double eps;
    std::function<Tensor()> run;
  };
  for (const EpsCase& c : std::vector<EpsCase>{
           {"layer_norm(x, gain, bias, 1)", 1.0, [&] { return nn::layer_norm(eps_x, eps_gain, eps_bias, 1.0); }},
           {"layer_norm(x, gain, bias, 0.25)", 0.25, [&] { return nn::layer_norm(eps_x, eps_gain, eps_bias, 0.25); }},
           {"LayerNorm(4, 0.25).forward(x)", 0.25, [&] { return nn::LayerNorm(4, 0.25).forward(eps_x); }}}) {
    const bool layer = c.call.starts_with("LayerNorm");
    const Values gain = layer ? Values(4, 1.0) : doubles(eps_gain), bias = layer ? Values(4, 0.0) : doubles(eps_bias);
    const auto y = observe(c.call + " with x = [[0, 2, 0, 2], [1, 3, -1, 1]]", c.run);
    if (!KILN_EXPECT_OK(y, "layer_norm_wrong")) return;
    KILN_JUDGE {
      const TensorData expected = floats({2, 4}, trusted_layer_norm(doubles(eps_x), 4, gain, bias, NormVariant::right, c.eps));
      if (close(*y, expected, 1e-5)) continue;
      const TensorData with_default =
          floats({2, 4}, trusted_layer_norm(doubles(eps_x), 4, gain, bias, NormVariant::right, 1e-5));
      if (close(*y, with_default, 1e-5)) {
        KILN_FAIL("eps_argument_ignored", {{"eps", fmt::format("{}", c.eps)}},
                  y.call() + ": " + testing::compare(*y, expected, 1e-5, 1e-5).describe());
        return;
      }
      if (!testing::expect_close(__FILE__, __LINE__, y, expected, 1e-5, "layer_norm_wrong", 1e-5)) return;
    }
  }

  // gain or bias of the wrong size.
  const Tensor x234 = random_tensor({2, 3, 4}, 1311), gain5 = random_tensor({5}, 1312), bias4 = random_tensor({4}, 1313);
  const Tensor gain4 = random_tensor({4}, 1314), bias41 = random_tensor({4, 1}, 1315);
  KILN_EXPECT_THROWS(nn::layer_norm(x234, gain5, bias4), ShapeError, "layer_norm_shape_not_reported",
                     {"(2, 3, 4)", "(5)"});
  KILN_EXPECT_THROWS(nn::layer_norm(x234, gain4, bias41), ShapeError, "layer_norm_shape_not_reported",
                     {"(2, 3, 4)", "(4, 1)"});
  // The other way round: a right gain with a bias of the wrong size, a gain of the right size in
  // two dimensions; and an x with no dimension at all, which has no rows.
  const Tensor bias5 = random_tensor({5}, 1316), gain41 = random_tensor({4, 1}, 1317);
  KILN_EXPECT_THROWS(nn::layer_norm(x234, gain4, bias5), ShapeError, "layer_norm_shape_not_reported",
                     {"(2, 3, 4)", "(5)"});
  KILN_EXPECT_THROWS(nn::layer_norm(x234, gain41, bias4), ShapeError, "layer_norm_shape_not_reported",
                     {"(2, 3, 4)", "(4, 1)"});
  const Tensor point(Shape{}, {2.0f}), gain1 = random_tensor({1}, 1318), bias1 = random_tensor({1}, 1319);
  KILN_EXPECT_THROWS(nn::layer_norm(point, gain1, bias1), ShapeError, "layer_norm_scalar_not_reported");
  if (::testing::Test::HasFailure()) return;

  // x, gain and bias contiguous views at an offset (testing::at_offset: 5 random floats before the
  // values, as a slice of a larger buffer is): contiguous() of each is the view itself, so each
  // must be read from data() or through its strides, where it starts, not from storage_data().
  const TensorData view_x = data_of(random_tensor({3, 7}, 1328, -2.0f, 2.0f));
  const TensorData view_gain = data_of(random_tensor({7}, 1329, 0.5f, 1.5f)), view_bias = data_of(random_tensor({7}, 1330));
  // Judged against the same call on fresh tensors: only a difference between the two is the
  // offset's failure.
  const auto of_fresh = observe("layer_norm(x, gain, bias) with x (3, 7), gain (7) and bias (7) fresh tensors", [&] {
    return nn::layer_norm(view_x.tensor(), view_gain.tensor(), view_bias.tensor());
  });
  const auto of_views =
      observe("layer_norm(x, gain, bias) with x (3, 7), gain (7) and bias (7) each a contiguous view at offset 5", [&] {
        return nn::layer_norm(testing::at_offset(view_x, 1331), testing::at_offset(view_gain, 1332),
                              testing::at_offset(view_bias, 1333));
      });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(
        of_fresh, of_views, floats({3, 7}, trusted_layer_norm(doubles(view_x), 7, doubles(view_gain), doubles(view_bias))),
        1e-5, 0.0, "layer_norm_wrong", "layer_norm_view_offset_ignored");
  }
}

TEST(Transformer, LayerNormGradients) {
  // L = Σ G ⊙ layer_norm(x, gain, bias): the gradients backward() leaves in x, gain and bias
  // against central differences of the trusted loops, for rows of 5, a (2, 3, 4) batch, rows of one
  // value and sizes of the run.
  testing::Generator draw(1321);
  const Shape drawn{1 + draw.below(3), 1 + draw.below(4), 2 + draw.below(8)};
  std::uint64_t stream = 1322;
  for (const Shape& shape : std::vector<Shape>{{3, 5}, {2, 3, 4}, {4, 1}, drawn}) {
    const std::int64_t width = shape.back();
    const Tensor x = random_tensor(shape, stream++, -2.0f, 2.0f);
    const Tensor gain = random_tensor({width}, stream++, 0.5f, 1.5f), bias = random_tensor({width}, stream++);
    const Tensor g = random_tensor(shape, stream++);
    const auto grads = observe(
        fmt::format("layer_norm(x, gain, bias) with x {}, then backward(G): x.grad(), gain.grad(), bias.grad()",
                    shape_text(shape)),
        [&] {
          Tensor leaf_x = fresh(x), leaf_gain = fresh(gain), leaf_bias = fresh(bias);
          leaf_x.set_requires_grad(true);
          leaf_gain.set_requires_grad(true);
          leaf_bias.set_requires_grad(true);
          nn::layer_norm(leaf_x, leaf_gain, leaf_bias).backward(g);
          return std::tuple(leaf_x.grad(), leaf_gain.grad(), leaf_bias.grad());
        });
    if (!KILN_EXPECT_OK(grads, "ln_grad_input_wrong")) return;
    KILN_JUDGE {
      const auto f = [width](const std::vector<Values>& in) { return trusted_layer_norm(in[0], width, in[1], in[2]); };
      const std::vector<Values> inputs{doubles(x), doubles(gain), doubles(bias)};
      const Values weights = doubles(g);
      const std::pair<const TensorData*, const char*> checks[] = {{&std::get<0>(*grads), "ln_grad_input_wrong"},
                                                                  {&std::get<1>(*grads), "ln_grad_gain_wrong"},
                                                                  {&std::get<2>(*grads), "ln_grad_bias_wrong"}};
      const Shape shapes[] = {shape, {width}, {width}};
      for (std::size_t which = 0; which < 3; ++which) {
        std::string detail;
        if (!gradient_close(*checks[which].first, shapes[which], testing::double_numeric_gradient(f, inputs, which, weights), &detail)) {
          KILN_FAIL(checks[which].second, {}, grads.call() + ": " + detail);
          return;
        }
      }
    }
  }

  // G a contiguous view at an offset (5 random floats before it), handed straight to the node's
  // backward: contiguous() of it is the view itself, so it must be read from data(), where it
  // starts, not from storage_data().
  const Shape shape{3, 6};
  const Tensor x = random_tensor(shape, 1340, -2.0f, 2.0f);
  const Tensor gain = random_tensor({6}, 1341, 0.5f, 1.5f), bias = random_tensor({6}, 1342);
  const TensorData g = data_of(random_tensor(shape, 1343));
  // The same call with G a fresh tensor first: only gradients that differ between the two are the
  // offset's failure; the same wrong gradient on both is that gradient's own failure.
  const auto node_backward = [&](bool at_offset) {
    Tensor leaf_x = fresh(x), leaf_gain = fresh(gain), leaf_bias = fresh(bias);
    leaf_x.set_requires_grad(true);
    leaf_gain.set_requires_grad(true);
    leaf_bias.set_requires_grad(true);
    // The node itself (the given apply), however layer_norm reaches it.
    const Tensor y = nn::LayerNormFunction::apply(leaf_x, leaf_gain, leaf_bias, 1e-5);
    const std::vector<Tensor> node_grads =
        y.autograd()->grad_fn->backward(at_offset ? testing::at_offset(g, 1344) : g.tensor());
    if (node_grads.size() != 3)
      throw std::length_error("backward returned " + std::to_string(node_grads.size()) + " gradients for 3 inputs");
    return std::tuple(node_grads[0], node_grads[1], node_grads[2]);
  };
  const auto fresh_grads = observe(
      "LayerNormFunction::apply(x, gain, bias, 1e-5) with x (3, 6), then its backward(G) with G a fresh tensor",
      [&] { return node_backward(false); });
  const auto grads = observe(
      "LayerNormFunction::apply(x, gain, bias, 1e-5) with x (3, 6), then its backward(G) with G a contiguous view at offset 5",
      [&] { return node_backward(true); });
  KILN_JUDGE {
    const auto f = [](const std::vector<Values>& in) { return trusted_layer_norm(in[0], 6, in[1], in[2]); };
    const std::vector<Values> inputs{doubles(x), doubles(gain), doubles(bias)};
    const char* general_ids[] = {"ln_grad_input_wrong", "ln_grad_gain_wrong", "ln_grad_bias_wrong"};
    const Shape shapes[] = {shape, {6}, {6}};
    // One of the three gradients, under the call's name (the call's error where it threw).
    const auto gradient = [](const auto& all, std::size_t which) {
      if (!all.ok()) return testing::Observed<TensorData>(all.call(), all.error());
      const TensorData* each[] = {&std::get<0>(*all), &std::get<1>(*all), &std::get<2>(*all)};
      return testing::Observed<TensorData>(all.call(), *each[which]);
    };
    for (std::size_t which = 0; which < 3; ++which) {
      const TensorData numeric = floats(shapes[which], testing::double_numeric_gradient(f, inputs, which, doubles(g)));
      if (!KILN_EXPECT_SAME_AT_OFFSET(gradient(fresh_grads, which), gradient(grads, which), numeric, 1e-4, 1e-3,
                                      general_ids[which], "ln_grad_view_offset_ignored"))
        return;
    }
  }
}

TEST(Transformer, Mlp) {
  // autograd::gelu: values and the gradient backward() leaves in x, against Φ(x)·x and
  // G·(Φ(x) + x·φ(x)) in double; hand values, then a (3, 7) tensor of the run.
  testing::Generator draw(1331);
  for (const Tensor& x : {Tensor({5}, {-2, -0.5f, 0, 0.5f, 2}), random_tensor({3, 7}, 1332, -3.0f, 3.0f)}) {
    const Tensor g = random_tensor(x.shape(), 1333);
    const auto out = observe(fmt::format("autograd::gelu(x) with x {}, then backward(G): the output and x.grad()",
                                         shape_text(x.shape())),
                             [&] {
                               Tensor leaf = fresh(x);
                               leaf.set_requires_grad(true);
                               Tensor y = autograd::gelu(leaf);
                               y.backward(g);
                               return std::pair(y, leaf.grad());
                             });
    if (!KILN_EXPECT_OK(out, "gelu_node_wrong")) return;
    KILN_JUDGE {
      Values y, dx;
      const Values xv = doubles(x), gv = doubles(g);
      for (std::size_t n = 0; n < xv.size(); ++n) {
        y.push_back(trusted_gelu(xv[n]));
        dx.push_back(gv[n] * trusted_gelu_derivative(xv[n]));
      }
      if (!testing::expect_close(__FILE__, __LINE__, testing::Observed<TensorData>(out.call(), out->first),
                                 floats(x.shape(), y), 1e-5, "gelu_node_wrong", 1e-5))
        return;
      if (!testing::expect_close(__FILE__, __LINE__, testing::Observed<TensorData>(out.call(), out->second),
                                 floats(x.shape(), dx), 1e-5, "gelu_node_wrong", 1e-5))
        return;
    }
  }

  // MLP(D) with the test's weights: (2, 3, 5) with x's gradient, (7, 3) rows, sizes of the run.
  struct Case {
    Shape shape;
    bool gradient;
  };
  const Shape drawn{1 + draw.below(3), 1 + draw.below(4), 1 + draw.below(6)};
  std::uint64_t stream = 1334;
  for (const Case& c : std::vector<Case>{{{2, 3, 5}, true}, {{7, 3}, false}, {drawn, true}}) {
    const std::int64_t width = c.shape.back();
    const Parameters p = random_parameters({{"fc.weight", {width, 4 * width}},
                                            {"fc.bias", {4 * width}},
                                            {"proj.weight", {4 * width, width}},
                                            {"proj.bias", {width}}},
                                           stream);
    stream += 10;
    const Tensor x = random_tensor(c.shape, stream++, -2.0f, 2.0f);
    const Tensor g = random_tensor(c.shape, stream++);
    const auto out = observe(fmt::format("MLP({}) with the check's weights: forward(x) with x {}, then backward(G): "
                                         "the output and x.grad()",
                                         width, shape_text(c.shape)),
                             [&] {
                               WichmannHill generator(1);
                               nn::MLP mlp(width, generator);
                               load_parameters(mlp, p);
                               Tensor leaf = fresh(x);
                               leaf.set_requires_grad(true);
                               Tensor y = mlp.forward(leaf);
                               if (c.gradient) y.backward(g);
                               return std::pair(y, leaf.grad());
                             });
    if (!KILN_EXPECT_OK(out, "mlp_wrong")) return;
    KILN_JUDGE {
      const auto f = [&](const std::vector<Values>& in) {
        return trusted_mlp(in[0], width, p.at("fc.weight"), p.at("fc.bias"), p.at("proj.weight"), p.at("proj.bias"));
      };
      if (!testing::expect_close(__FILE__, __LINE__, testing::Observed<TensorData>(out.call(), out->first),
                                 floats(c.shape, f({doubles(x)})), 1e-4, "mlp_wrong", 1e-4))
        return;
      std::string detail;
      if (c.gradient && !gradient_close(out->second, c.shape, testing::double_numeric_gradient(f, {doubles(x)}, 0, doubles(g)), &detail)) {
        KILN_FAIL("mlp_wrong", {}, out.call() + ", the gradient of x: " + detail);
        return;
      }
    }
  }
}

TEST(Transformer, Block) {
  // One pre-norm block with the test's parameters on x (2, 5, 6), H = 2 and H = 3, then sizes of the
  // run, against the trusted block: LayerNorm, causal multi-head attention, residual, LayerNorm,
  // MLP, residual.
  testing::Generator draw(1341);
  const std::int64_t drawn_heads = 1 + draw.below(3);
  struct Case {
    std::int64_t batch, length, width, heads;
  };
  std::uint64_t stream = 1342;
  for (const Case& c : std::vector<Case>{{2, 5, 6, 2},
                                         {2, 5, 6, 3},
                                         {1 + draw.below(3), 1 + draw.below(7), drawn_heads * (1 + draw.below(3)), drawn_heads}}) {
    const Parameters p = random_parameters(block_parameter_shapes(c.width), stream);
    stream += 20;
    const Shape shape{c.batch, c.length, c.width};
    const Tensor x = random_tensor(shape, stream++, -2.0f, 2.0f);
    const auto out = observe(fmt::format("TransformerBlock({}, {}) with the check's parameters: forward(x) with x {}",
                                         c.width, c.heads, shape_text(shape)),
                             [&] {
                               WichmannHill generator(1);
                               nn::TransformerBlock block(c.width, c.heads, generator);
                               load_parameters(block, p);
                               return block.forward(x);
                             });
    if (!KILN_EXPECT_OK(out, "block_wrong")) return;
    KILN_JUDGE {
      const auto expected_for = [&](BlockVariant variant) {
        return floats(shape, trusted_block(doubles(x), c.batch, c.length, c.width, c.heads, p, "", variant));
      };
      const TensorData expected = expected_for(BlockVariant::right);
      if (close(*out, expected, 1e-4)) continue;
      const std::string detail = out.call() + ": " + testing::compare(*out, expected, 1e-4, 1e-4).describe();
      if (close(*out, expected_for(BlockVariant::post_norm), 1e-4)) {
        KILN_FAIL("post_norm", {}, detail);
        return;
      }
      if (close(*out, expected_for(BlockVariant::no_attention_residual), 1e-4)) {
        KILN_FAIL("residual_missing", {}, detail);
        return;
      }
      testing::expect_close(__FILE__, __LINE__, out, expected, 1e-4, "block_wrong", 1e-4);
      return;
    }
  }
}

TEST(Transformer, GptForward) {
  // GPT with the test's parameters: V = 7, D = 6, H = 3, N = 2 on (2, 5) tokens; the full context
  // (T = max_length = 6); one token each of three sequences; sizes of the run.
  testing::Generator draw(1351);
  const std::int64_t heads = 1 + draw.below(3), max_length = 1 + draw.below(7);
  const GptSizes drawn{2 + draw.below(8), max_length, heads * (1 + draw.below(3)), heads, 1 + draw.below(2)};
  struct Case {
    GptSizes s;
    std::int64_t batch, length;
  };
  std::uint64_t stream = 1352;
  for (const Case& c : std::vector<Case>{{{7, 6, 6, 3, 2}, 2, 5},
                                         {{7, 6, 6, 3, 2}, 1, 6},
                                         {{5, 4, 4, 1, 1}, 3, 1},
                                         {drawn, 1 + draw.below(3), 1 + draw.below(max_length)}}) {
    const Parameters p = random_parameters(gpt_parameter_shapes(c.s), stream);
    stream += 100;
    const std::vector<std::int64_t> ids = random_ints(static_cast<std::size_t>(c.batch * c.length), c.s.vocab, stream++);
    const Tensor tokens = tokens_of(ids, c.batch);
    const auto logits = observe(fmt::format("{} with the check's parameters: forward(tokens) with tokens ({}, {})",
                                            sizes_text(c.s), c.batch, c.length),
                                [&] { return gpt_with(c.s, p).forward(tokens); });
    if (!KILN_EXPECT_OK(logits, "gpt_wrong")) return;
    KILN_JUDGE {
      const Shape shape{c.batch, c.length, c.s.vocab};
      const TensorData expected = floats(shape, trusted_gpt(ids, c.batch, c.s, p));
      if (close(*logits, expected, 1e-4)) continue;
      if (close(*logits, floats(shape, trusted_gpt(ids, c.batch, c.s, p, GptVariant::no_final_norm)), 1e-4)) {
        KILN_FAIL("final_norm_missing", {}, logits.call() + ": " + testing::compare(*logits, expected, 1e-4, 1e-4).describe());
        return;
      }
      testing::expect_close(__FILE__, __LINE__, logits, expected, 1e-4, "gpt_wrong", 1e-4);
      return;
    }
  }
  // Token values that are no id: 2.5 is not whole and −0.5 is below 0. GPT::forward reads the ids
  // through token_ids, which raises an IndexError naming the value; a plain cast to an integer
  // would run them as ids 2 and 0.
  const GptSizes small{5, 4, 4, 1, 1};
  const Parameters p = random_parameters(gpt_parameter_shapes(small), stream);
  for (const auto& [values, bad] : std::vector<std::pair<std::vector<float>, std::string>>{{{1.0f, 2.5f}, "2.5"},
                                                                                         {{-0.5f, 1.0f}, "-0.5"}}) {
    const std::string shown = fmt::format("[[{}, {}]]", values[0], values[1]);
    const Tensor tokens({1, 2}, values);
    const auto logits = observe(fmt::format("{} with the check's parameters: forward(tokens) with tokens {}",
                                            sizes_text(small), shown),
                                [&] { return gpt_with(small, p).forward(tokens); });
    KILN_JUDGE {
      testing::expect_throws<IndexError>(__FILE__, __LINE__, logits, "token_ids_unchecked", {bad},
                                         {{"tokens", shown}, {"value", bad}});
    }
  }
}

TEST(Transformer, Causal) {
  // For every position t: change the token at t (in every sequence); the logits at the positions
  // before t must not move by more than 1e-6. Two sequences of 7 tokens, V = 9, D = 6, H = 2,
  // N = 2, then sizes of the run.
  testing::Generator draw(1361);
  const std::int64_t heads = 1 + draw.below(2);
  const GptSizes drawn{3 + draw.below(6), 8, heads * (1 + draw.below(3)), heads, 1 + draw.below(2)};
  struct Case {
    GptSizes s;
    std::int64_t batch, length;
  };
  std::uint64_t stream = 1362;
  for (const Case& c : std::vector<Case>{{{9, 8, 6, 2, 2}, 2, 7}, {drawn, 1 + draw.below(2), 3 + draw.below(6)}}) {
    const Parameters p = random_parameters(gpt_parameter_shapes(c.s), stream);
    stream += 100;
    const std::vector<std::int64_t> ids = random_ints(static_cast<std::size_t>(c.batch * c.length), c.s.vocab, stream++);
    const auto run = [&](const std::vector<std::int64_t>& tokens, const std::string& note) {
      const Tensor input = tokens_of(tokens, c.batch);
      return observe(fmt::format("{} with the check's parameters: forward(tokens) with tokens ({}, {}){}",
                                 sizes_text(c.s), c.batch, c.length, note),
                     [&] { return gpt_with(c.s, p).forward(input); });
    };
    const auto base = run(ids, "");
    if (!KILN_EXPECT_OK(base, "future_leaks", {{"position", "0"}, {"changed", "?"}})) return;
    KILN_JUDGE {
      const Shape shape{c.batch, c.length, c.s.vocab};
      if (base->shape != shape) {
        KILN_FAIL("future_leaks", {{"position", "0"}, {"changed", "?"}},
                  base.call() + fmt::format(" has shape {}, expected {}", to_string(base->shape), to_string(shape)));
        return;
      }
    }
    for (std::int64_t position = 1; position < c.length; ++position) {
      std::vector<std::int64_t> changed_ids = ids;
      for (std::int64_t b = 0; b < c.batch; ++b) {
        auto& id = changed_ids[at(b * c.length + position)];
        id = (id + 1 + draw.below(c.s.vocab - 1)) % c.s.vocab;
      }
      const auto changed = run(changed_ids, fmt::format(" (the token at position {} changed)", position));
      if (!KILN_EXPECT_OK(changed, "future_leaks", {{"position", std::to_string(position)}, {"changed", "?"}})) return;
      KILN_JUDGE {
        for (std::int64_t b = 0; b < c.batch; ++b) {
          for (std::int64_t t = 0; t < position; ++t) {
            for (std::int64_t v = 0; v < c.s.vocab; ++v) {
              const std::size_t n = at((b * c.length + t) * c.s.vocab + v);
              const double before = base->values[n];
              const double after = n < changed->values.size() ? changed->values[n] : std::nan("");
              const double difference = std::fabs(after - before);
              if (difference <= 1e-6) continue;  // false for NaN
              KILN_FAIL("future_leaks",
                        {{"position", std::to_string(position)},
                         {"changed", std::to_string(t)},
                         {"difference", testing::format_number(difference)}},
                        fmt::format("{}: logits[{}, {}, {}] was {}, is now {}", changed.call(), b, t, v,
                                    testing::format_number(before), testing::format_number(after)));
              return;
            }
          }
        }
      }
    }
  }
}

TEST(Transformer, Positions) {
  // One token repeated over a whole sequence: only the position tells the positions apart, so the
  // logits at every position t > 0 must differ from those at position 0 (by more than 1e-4
  // somewhere). Two sequences (each of its own token), V = 6, D = 6, H = 2, then sizes of the run.
  testing::Generator draw(1371);
  const std::int64_t heads = 1 + draw.below(2);
  // D >= 3: a LayerNorm of two values only keeps the sign of their difference.
  const GptSizes drawn{2 + draw.below(8), 8, heads * (3 + draw.below(2)), heads, 1 + draw.below(2)};
  struct Case {
    GptSizes s;
    std::int64_t length;
  };
  std::uint64_t stream = 1372;
  for (const Case& c : std::vector<Case>{{{6, 7, 6, 2, 1}, 7}, {drawn, 2 + draw.below(7)}}) {
    const Parameters p = random_parameters(gpt_parameter_shapes(c.s), stream);
    stream += 100;
    const std::int64_t first = draw.below(c.s.vocab), second = (first + 1) % c.s.vocab;
    std::vector<std::int64_t> ids(at(2 * c.length), first);
    std::fill(ids.begin() + c.length, ids.end(), second);
    const Tensor tokens = tokens_of(ids, 2);
    const auto logits =
        observe(fmt::format("{} with the check's parameters: forward(tokens) with tokens (2, {}): token {} repeated, "
                            "then token {} repeated",
                            sizes_text(c.s), c.length, first, second),
                [&] { return gpt_with(c.s, p).forward(tokens); });
    if (!KILN_EXPECT_OK(logits, "position_ignored", {{"first", "0"}, {"second", "1"}})) return;
    KILN_JUDGE {
      if (logits->shape != Shape{2, c.length, c.s.vocab}) {
        KILN_FAIL("position_ignored", {{"first", "0"}, {"second", "1"}},
                  fmt::format("{} has shape {}", logits.call(), to_string(logits->shape)));
        return;
      }
      for (std::int64_t b = 0; b < 2; ++b) {
        for (std::int64_t t = 1; t < c.length; ++t) {
          double largest = 0;
          for (std::int64_t v = 0; v < c.s.vocab; ++v) {
            const double a = logits->values[at((b * c.length) * c.s.vocab + v)];
            const double z = logits->values[at((b * c.length + t) * c.s.vocab + v)];
            largest = std::max(largest, std::fabs(z - a));
          }
          if (largest > 1e-4) continue;
          KILN_FAIL("position_ignored", {{"first", "0"}, {"second", std::to_string(t)}},
                    fmt::format("{}: sequence {}: the logits at positions 0 and {} differ by at most {}", logits.call(),
                                b, t, testing::format_number(largest)));
          return;
        }
      }
    }
  }
}

TEST(Transformer, Loss) {
  // The hand-worked case: logits (1, 2, 3), position 0 [0, 0, 0] with target 2, position 1
  // [1, 2, 3] with target 0: (ln 3 + ln(e + e² + e³) - 1)/2 = (1.0986123 + 2.4076060)/2 = 1.7531091.
  // Then (2, 3, 5), (3, 1, 4) and sizes of the run, against the trusted mean over B·T positions;
  // and the gradient that reaches the logits, (softmax - one_hot)/(B·T).
  const auto observe_loss = [](const Tensor& logits, const std::vector<std::int64_t>& targets) {
    return observe(fmt::format("lm_loss(logits, targets) with logits {} and {}, then backward(): the loss and "
                               "logits.grad()",
                               shape_text(logits.shape()), testing::counted(targets.size(), "target")),
                   [&] {
                     Tensor leaf = fresh(logits);
                     leaf.set_requires_grad(true);
                     Tensor loss = nn::lm_loss(leaf, targets);
                     loss.backward();
                     return std::pair(loss.item(), leaf.grad());
                   });
  };
  const Tensor hand({1, 2, 3}, {0, 0, 0, 1, 2, 3});
  const auto hand_loss = observe_loss(hand, {2, 0});
  if (!KILN_EXPECT_OK(hand_loss, "loss_wrong")) return;
  KILN_JUDGE {
    if (std::fabs(hand_loss->first - 1.7531091266) > 1e-5) {
      KILN_FAIL("loss_wrong", {}, fmt::format("{}: the loss is {}, expected 1.75311", hand_loss.call(),
                                              testing::format_number(hand_loss->first)));
      return;
    }
  }

  testing::Generator draw(1381);
  const Shape drawn{1 + draw.below(3), 1 + draw.below(5), 2 + draw.below(7)};
  std::uint64_t stream = 1382;
  for (const Shape& shape : std::vector<Shape>{{2, 3, 5}, {3, 1, 4}, drawn}) {
    const std::int64_t batch = shape[0], length = shape[1], vocab = shape[2];
    const Tensor logits = random_tensor(shape, stream++, -3.0f, 3.0f);
    const std::vector<std::int64_t> targets = random_ints(static_cast<std::size_t>(batch * length), vocab, stream++);
    const auto out = observe_loss(logits, targets);
    if (!KILN_EXPECT_OK(out, "loss_wrong")) return;
    KILN_JUDGE {
      const Values z = doubles(logits);
      const double expected = trusted_loss(z, vocab, targets);
      if (std::fabs(out->first - expected) <= 1e-5 * (1 + std::fabs(expected))) {
        // The gradient of the mean: (softmax - one_hot)/(B·T) at every position.
        Values grad(z.size());
        for (std::int64_t r = 0; r < batch * length; ++r) {
          double largest = -INFINITY, total = 0;
          for (std::int64_t v = 0; v < vocab; ++v) largest = std::max(largest, z[at(r * vocab + v)]);
          for (std::int64_t v = 0; v < vocab; ++v) total += std::exp(z[at(r * vocab + v)] - largest);
          for (std::int64_t v = 0; v < vocab; ++v) {
            const double p = std::exp(z[at(r * vocab + v)] - largest) / total;
            grad[at(r * vocab + v)] = (p - (v == targets[at(r)] ? 1.0 : 0.0)) / static_cast<double>(batch * length);
          }
        }
        if (!testing::expect_close(__FILE__, __LINE__, testing::Observed<TensorData>(out.call(), out->second),
                                   floats(shape, grad), 1e-5, "loss_wrong", 1e-4))
          return;
        continue;
      }
      // Position-major: the targets of (b, t) read at t·B + b pair the same logits and targets as
      // the logits laid out (t, b) against the targets as they are.
      Values position_major;
      for (std::int64_t t = 0; t < length; ++t) {
        for (std::int64_t b = 0; b < batch; ++b) {
          for (std::int64_t v = 0; v < vocab; ++v) position_major.push_back(z[at((b * length + t) * vocab + v)]);
        }
      }
      const std::string detail =
          fmt::format("{}: the loss is {}, expected {}", out.call(), testing::format_number(out->first),
                      testing::format_number(expected));
      if (std::fabs(out->first - trusted_loss(position_major, vocab, targets)) <= 1e-5 * (1 + std::fabs(expected))) {
        KILN_FAIL("loss_targets_misaligned", {}, detail);
        return;
      }
      KILN_FAIL("loss_wrong", {}, detail);
      return;
    }
  }

  const Tensor logits235 = random_tensor({2, 3, 5}, 1390);
  const std::vector<std::int64_t> five{0, 1, 2, 3, 4};
  expect_loss_refused(__FILE__, __LINE__, logits235, five);
  if (::testing::Test::HasFailure()) return;
  const std::vector<std::int64_t> seven{0, 1, 2, 3, 4, 0, 1};
  expect_loss_refused(__FILE__, __LINE__, logits235, seven);
  if (::testing::Test::HasFailure()) return;
  // Logits that are not 3-D, with B·T targets for their first two sizes.
  const Tensor logits2315 = random_tensor({2, 3, 1, 5}, 1391);
  const std::vector<std::int64_t> six{0, 1, 2, 3, 4, 0};
  expect_loss_refused(__FILE__, __LINE__, logits2315, six);
}

TEST(Transformer, Gradients) {
  // One lm_loss(model(tokens), targets).backward() through a GPT of two blocks (V = 5, D = 4,
  // H = 2, B = 2, T = 3) with the test's parameters: every parameter must receive a gradient that
  // is not all zeros, and each must match central differences of the trusted model's loss.
  const GptSizes s{5, 4, 4, 2, 2};
  const Parameters p = random_parameters(gpt_parameter_shapes(s), 1391);
  const std::vector<std::int64_t> ids = random_ints(6, s.vocab, 1392), targets = random_ints(6, s.vocab, 1393);
  const Tensor tokens = tokens_of(ids, 2);
  const auto grads = observe(
      fmt::format("{} with the check's parameters: lm_loss(model(tokens), targets) with tokens (2, 3), then "
                  "backward(): every parameter's name and gradient",
                  sizes_text(s)),
      [&] {
        nn::GPT model = gpt_with(s, p);
        nn::lm_loss(model(tokens), targets).backward();
        std::vector<std::string> names;
        std::vector<Tensor> gradients;
        for (const auto& [name, parameter] : model.named_parameters()) {
          names.push_back(name);
          gradients.push_back(parameter.grad());
        }
        return std::pair(names, gradients);
      });
  if (!KILN_EXPECT_OK(grads, "gpt_grad_wrong", {{"parameter", "?"}})) return;
  KILN_JUDGE {
    const auto shapes = gpt_parameter_shapes(s);
    std::vector<std::string> expected_names;
    for (const auto& [name, shape] : shapes) expected_names.push_back(name);
    if (grads->first != expected_names || grads->second.size() != shapes.size()) {
      KILN_FAIL("gpt_grad_wrong", {{"parameter", "?"}}, grads.call() + ": the parameters are not the GPT's, in order");
      return;
    }
    for (std::size_t n = 0; n < shapes.size(); ++n) {
      const auto& values = grads->second[n].values;
      if (std::any_of(values.begin(), values.end(), [](float v) { return v != 0.0f; })) continue;
      KILN_FAIL("param_without_grad", {{"parameter", shapes[n].first}},
                grads.call() + ": the gradient of " + shapes[n].first + " is all zeros");
      return;
    }
    // L as a function of one parameter at a time, the others fixed.
    for (std::size_t n = 0; n < shapes.size(); ++n) {
      const std::string& name = shapes[n].first;
      const auto f = [&](const std::vector<Values>& in) {
        Parameters q = p;
        q[name] = in[0];
        return Values{trusted_loss(trusted_gpt(ids, 2, s, q), s.vocab, targets)};
      };
      std::string detail;
      if (!gradient_close(grads->second[n], shapes[n].second, testing::double_numeric_gradient(f, {p.at(name)}, 0, {1.0}), &detail)) {
        KILN_FAIL("gpt_grad_wrong", {{"parameter", name}}, grads.call() + ", the gradient of " + name + ": " + detail);
        return;
      }
    }
  }
}

TEST(Transformer, Sampling) {
  testing::Generator draw(1401);
  // Greedy: temperature 0 takes the first largest logit (id 1 of [0.5, 2, -1, 2, 1.5]; id 3 ties)
  // and draws nothing: the generator's next value afterwards is its first. Then 33 logits of the run.
  for (const std::vector<float>& logits : {std::vector<float>{0.5f, 2, -1, 2, 1.5f},
                                           data_of(random_tensor({33}, 1402, -3.0f, 3.0f)).values}) {
    const std::uint64_t seed = drawn_seed(draw);
    const auto out = observe(fmt::format("sample_token(logits, 0, 0, generator) with {} logits, then generator.next()",
                                         logits.size()),
                             [&] {
                               WichmannHill generator(seed);
                               const std::int64_t token = nn::sample_token(logits, 0.0, 0, generator);
                               return std::pair(token, generator.next());
                             });
    if (!KILN_EXPECT_OK(out, "greedy_wrong")) return;
    KILN_JUDGE {
      const std::int64_t expected = std::max_element(logits.begin(), logits.end()) - logits.begin();
      const double first_draw = TrustedWichmannHill(seed).next();
      if (out->first != expected || out->second != first_draw) {
        KILN_FAIL("greedy_wrong", {},
                  fmt::format("{}: got token {}{}, expected token {} and no draw", out.call(), out->first,
                              out->second == first_draw ? "" : " and a draw", expected));
        return;
      }
    }
  }

  // Draws from one generator, compared with the rule replayed: top-k with ties at the boundary
  // ([1, 3, 3, 0, 3, 2], k = 2: only ids 1 and 2; [3, 3, 3, 5, 5], k = 3: ids 3, 4 and 0, where a
  // heap selection such as std::partial_sort keeps id 1 instead, drawn for u below
  // p_0 = e^−2/(2 + e^−2) = 0.063, about 19 of the 300 draws), then temperatures 1, 0.5 and 2 with and without
  // top-k on logits of the run (7 and 31 of them); a negative top_k, like 0, keeps every id; top_k
  // 1 (only the largest); 40 logits, 30 of them equal, with k = 5 (a tie that only a stable ranking
  // keeps in id order: with 6 logits any sort would); logits 800 apart, where e^(z - z_max)
  // is the only form that does not overflow; and a temperature of 1e-50, above 0 but 0 as a float,
  // which in double puts all the probability on the largest logit; and 1e-308, at which even
  // z/T of logits [0, 2] overflows double, so that only (z - z_max)/T, the difference first,
  // gives the largest logit e^0 = 1 (z/T - z_max/T is ∞ - ∞ = NaN there); last, logits 3e38 and
  // −3e38 at temperature 1e39, p = [1/(1 + e^−0.6), e^−0.6/(1 + e^−0.6)] = [0.6457, 0.3543], whose
  // difference −6e38 is finite in double but −∞ in float, where the smaller one would never be drawn.
  struct Case {
    std::vector<float> logits;
    double temperature;
    std::int64_t top_k;
  };
  const std::vector<float> seven = data_of(random_tensor({7}, 1403, -2.0f, 2.0f)).values;
  const std::vector<float> many = data_of(random_tensor({31}, 1404, -2.0f, 2.0f)).values;
  std::vector<float> tied = data_of(random_tensor({40}, 1405, -2.0f, 0.5f)).values;
  for (std::size_t i = 0; i < tied.size(); ++i)
    if (i % 4 != 1) tied[i] = 1.0f;  // 30 equal largest logits, 10 smaller ones among them
  for (const Case& c : std::vector<Case>{{{1, 3, 3, 0, 3, 2}, 1.0, 2},
                                         {{3, 3, 3, 5, 5}, 1.0, 3},
                                         {seven, 1.0, 0},
                                         {seven, 0.5, 0},
                                         {seven, 2.0, 3},
                                         {seven, 1.0, -2},
                                         {many, 0.7, 7},
                                         {many, 1.3, 40},
                                         {seven, 1.0, 1},
                                         {tied, 1.0, 5},
                                         {{0.5f, 800.0f, -5.0f}, 1.0, 0},
                                         {seven, 1e-50, 0},
                                         {{0.0f, 2.0f}, 1e-308, 0},
                                         {{3e38f, -3e38f}, 1e39, 0}}) {
    const std::uint64_t seed = drawn_seed(draw);
    constexpr std::size_t kDraws = 300;
    const auto out = observe(fmt::format("{} draws of sample_token(logits, {}, {}, generator) with {} logits", kDraws,
                                         c.temperature, c.top_k, c.logits.size()),
                             [&] {
                               WichmannHill generator(seed);
                               std::vector<std::int64_t> tokens;
                               for (std::size_t n = 0; n < kDraws; ++n) {
                                 tokens.push_back(nn::sample_token(c.logits, c.temperature, c.top_k, generator));
                               }
                               return tokens;
                             });
    if (!KILN_EXPECT_OK(out, "sampling_wrong")) return;
    KILN_JUDGE {
      if (c.temperature < 1e-30) {
        const auto largest = std::max_element(c.logits.begin(), c.logits.end()) - c.logits.begin();
        for (const std::int64_t token : *out) {
          if (token == largest) continue;
          KILN_FAIL("tiny_temperature_wrong", {{"temperature", fmt::format("{:g}", c.temperature)}, {"token", std::to_string(token)},
                                               {"largest", std::to_string(largest)}},
                    fmt::format("{}: the logits are {}", out.call(), testing::list(c.logits, 40)));
          return;
        }
      }
      const Values p = trusted_probabilities(c.logits, c.temperature, c.top_k);
      const auto vocab = static_cast<std::int64_t>(p.size());
      for (const std::int64_t token : *out) {
        if (token >= 0 && token < vocab && p[at(token)] > 0) continue;
        if (token >= 0 && token < vocab && (c.top_k <= 0 || c.top_k >= vocab)) {
          // Every id is kept, so a probability of 0 is e^((z − z_max)/T) underflowing: only the
          // logits 800 apart have one, and only a sampler whose e^z overflowed picks it.
          const auto [lowest, highest] = std::minmax_element(c.logits.begin(), c.logits.end());
          KILN_FAIL("sampling_overflows", {{"token", std::to_string(token)}, {"spread", fmt::format("{:g}", *highest - *lowest)}},
                    fmt::format("{}: the probabilities are {}", out.call(),
                                testing::list(std::vector<float>(p.begin(), p.end()), 40)));
          return;
        }
        // The candidates the header counts: top_k, or all V where top_k <= 0 or top_k >= V.
        const std::int64_t candidates = c.top_k <= 0 || c.top_k >= vocab ? vocab : c.top_k;
        // A token whose logit equals the smallest candidate's, from draws that use no more than
        // k ids: the right number of candidates, but the tie at the boundary broken for a higher
        // id (k + 1 candidates would show k + 1 ids in 300 draws).
        float boundary = std::numeric_limits<float>::infinity();
        std::vector<std::int64_t> tied_kept;  // the tied candidates: the lowest ids of that logit
        for (std::int64_t id = 0; id < vocab; ++id) {
          if (p[at(id)] > 0) boundary = std::min(boundary, c.logits[at(id)]);
        }
        for (std::int64_t id = 0; id < vocab; ++id) {
          if (p[at(id)] > 0 && c.logits[at(id)] == boundary) tied_kept.push_back(id);
        }
        const std::set<std::int64_t> drawn(out->begin(), out->end());
        if (token >= 0 && token < vocab && c.logits[at(token)] == boundary &&
            static_cast<std::int64_t>(drawn.size()) <= candidates) {
          std::string kept = tied_kept.size() == 1 ? "id" : "ids";
          for (std::size_t n = 0; n < tied_kept.size(); ++n) kept += (n == 0 ? " " : ", ") + std::to_string(tied_kept[n]);
          KILN_FAIL("top_k_tie_not_lowest_id",
                    {{"k", std::to_string(c.top_k)}, {"token", std::to_string(token)},
                     {"logit", fmt::format("{:g}", boundary)}, {"kept", kept}},
                    fmt::format("{}: the logits are {}, the rule's probabilities {}", out.call(),
                                testing::list(c.logits, 40), testing::list(std::vector<float>(p.begin(), p.end()), 40)));
          return;
        }
        KILN_FAIL("top_k_leaks",
                  {{"k", std::to_string(c.top_k)}, {"token", std::to_string(token)},
                   {"largest_logits", testing::counted(candidates, "largest logit")}},
                  fmt::format("{}: the top {} are the ids with p > 0 in {}", out.call(), c.top_k,
                              testing::list(std::vector<float>(p.begin(), p.end()), 40)));
        return;
      }
      const auto expected = trusted_samples(c.logits, c.temperature, c.top_k, seed, kDraws);
      if (*out == expected) continue;
      std::size_t first = 0;
      while (first < expected.size() && first < out->size() && (*out)[first] == expected[first]) ++first;
      const std::string detail = fmt::format("{}: draw {} is token {}, expected {}", out.call(), first,
                                             first < out->size() ? (*out)[first] : -1, expected[first]);
      if (c.top_k < 0) {
        // The same logits and temperature with top_k = 0 came out right above.
        KILN_FAIL("negative_top_k_wrong", {{"k", std::to_string(c.top_k)}}, detail);
        return;
      }
      // Logits further apart than FLT_MAX: z_i − z_max taken in float is −∞ for the smaller one,
      // which is then never drawn (its p is 0.35 in double).
      const auto [lowest, highest] = std::minmax_element(c.logits.begin(), c.logits.end());
      const double spread = static_cast<double>(*highest) - static_cast<double>(*lowest);
      const auto lowest_id = lowest - c.logits.begin();
      if (spread > std::numeric_limits<float>::max() && std::ranges::find(*out, lowest_id) == out->end()) {
        KILN_FAIL("logit_difference_in_float",
                  {{"spread", fmt::format("{:g}", spread)}, {"temperature", fmt::format("{:g}", c.temperature)},
                   {"token", std::to_string(lowest_id)}},
                  fmt::format("{}: the logits are {}, p = {}", detail, testing::list(c.logits, 40),
                              testing::list(std::vector<float>(p.begin(), p.end()), 40)));
        return;
      }
      const bool temperature_flipped = *out == trusted_samples(c.logits, 1.0 / c.temperature, c.top_k, seed, kDraws);
      const bool temperature_ignored = *out == trusted_samples(c.logits, 1.0, c.top_k, seed, kDraws);
      if (c.temperature != 1.0 && (temperature_flipped || temperature_ignored)) {
        KILN_FAIL("temperature_wrong", {{"temperature", fmt::format("{}", c.temperature)}}, detail);
        return;
      }
      KILN_FAIL("sampling_wrong", {}, detail);
      return;
    }
  }

  // A draw whose outcome is sure still takes one number: top_k = 1, and a single logit. The
  // generator's next value afterwards must be its second.
  for (const auto& [logits, top_k] : std::vector<std::pair<std::vector<float>, std::int64_t>>{
           {{0.5f, 2, -1, 1.5f}, 1}, {{0.25f}, 0}}) {
    const std::uint64_t seed = drawn_seed(draw);
    const auto out = observe(fmt::format("sample_token(logits, 1, {}, generator) with {}, then generator.next()",
                                         top_k, testing::counted(logits.size(), "logit")),
                             [&] {
                               WichmannHill generator(seed);
                               const std::int64_t token = nn::sample_token(logits, 1.0, top_k, generator);
                               return std::pair(token, generator.next());
                             });
    if (!KILN_EXPECT_OK(out, "sampling_wrong")) return;
    KILN_JUDGE {
      const std::int64_t expected = std::max_element(logits.begin(), logits.end()) - logits.begin();
      TrustedWichmannHill trusted(seed);
      trusted.next();
      const double second_draw = trusted.next();
      if (out->first == expected && out->second != second_draw) {
        KILN_FAIL("sure_draw_skipped", {{"top_k", std::to_string(top_k)}, {"logits", testing::counted(logits.size(), "logit")}},
                  fmt::format("{}: token {}, then {}, which is the generator's {} value, not its second ({})", out.call(),
                              out->first, out->second, out->second == TrustedWichmannHill(seed).next() ? "first" : "some other",
                              second_draw));
        return;
      }
      if (out->first != expected) {
        KILN_FAIL("sampling_wrong", {}, fmt::format("{}: token {}, expected {}, the only candidate", out.call(), out->first, expected));
        return;
      }
    }
  }

  // Only temperature 0 is greedy: a temperature of 1e-9 still samples and draws one number. Two
  // equal logits stay equal at any temperature, p = [0.5, 0.5], so u < 0.5 gives id 0 and any
  // other u id 1; the generator's next value afterwards must be its second.
  {
    const std::vector<float> logits{1.0f, 1.0f};
    const std::uint64_t seed = drawn_seed(draw);
    const auto out = observe("sample_token({1, 1}, 1e-9, 0, generator), then generator.next()", [&] {
      WichmannHill generator(seed);
      const std::int64_t token = nn::sample_token(logits, 1e-9, 0, generator);
      return std::pair(token, generator.next());
    });
    if (!KILN_EXPECT_OK(out, "sampling_wrong")) return;
    KILN_JUDGE {
      TrustedWichmannHill trusted(seed);
      const double u = trusted.next();
      const std::int64_t expected = trusted_pick(trusted_probabilities(logits, 1e-9, 0), u);
      const double second_draw = trusted.next();
      if (out->second != second_draw || out->first != expected) {
        const bool drew = out->second == second_draw;
        KILN_FAIL(drew ? "sampling_wrong" : "tiny_temperature_greedy", {{"temperature", "1e-09"}},
                  fmt::format("{}: token {}, then {}; expected token {} (u = {}, p = [0.5, 0.5]), then the generator's "
                              "second value {}",
                              out.call(), out->first, out->second, expected, u, second_draw));
        return;
      }
    }
  }

  // Arguments no draw can use: a negative temperature, then no logits at all.
  const std::vector<float> three{0.5f, 2, -1};
  const auto negative = observe("sample_token({0.5, 2, -1}, -1, 0, generator)", [&] {
    WichmannHill generator(1);
    return nn::sample_token(three, -1.0, 0, generator);
  });
  KILN_JUDGE {
    testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, negative, "sample_arguments_unchecked");
    if (::testing::Test::HasFailure()) return;
  }
  // No logits at all, for every way of choosing: sampled, sampled from the top 2, and greedy (the
  // argmax of nothing is no token either).
  for (const auto& [temperature, top_k] : std::vector<std::pair<double, std::int64_t>>{{1.0, 0}, {1.0, 2}, {0.0, 0}}) {
    const auto empty = observe(fmt::format("sample_token({{}}, {}, {}, generator)", temperature, top_k), [&] {
      WichmannHill generator(1);
      return nn::sample_token({}, temperature, top_k, generator);
    });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, empty, "sample_arguments_unchecked");
      if (::testing::Test::HasFailure()) return;
    }
  }
  // A refusal comes before any effect: after refusing a negative temperature, or no logits, the
  // generator's next value is still its first.
  for (const auto& refusal : std::vector<std::pair<std::vector<float>, double>>{{three, -1.0}, {{}, 1.0}}) {
    const std::vector<float>& logits = refusal.first;
    const double temperature = refusal.second;
    const std::uint64_t seed = drawn_seed(draw);
    const auto refused = observe(
        fmt::format("sample_token({}, {}, 0, generator), refused, then generator.next()", testing::list(logits), temperature),
        [&] {
          WichmannHill generator(seed);
          bool threw = false;
          try {
            nn::sample_token(logits, temperature, 0, generator);
          } catch (const std::invalid_argument&) {
            threw = true;
          }
          return std::pair(threw, generator.next());
        });
    if (!KILN_EXPECT_OK(refused, "sample_refusal_draws")) return;
    KILN_JUDGE {
      const double first_draw = TrustedWichmannHill(seed).next();
      if (refused->first && refused->second != first_draw) {
        KILN_FAIL("sample_refusal_draws", {},
                  fmt::format("{}: {}, not the generator's first value ({})", refused.call(), refused->second, first_draw));
        return;
      }
    }
  }

  // top_k is an std::int64_t: 2^32 + 1 is at least V, so every id is a candidate (in 32 bits it
  // would be 1, the argmax alone). 60 draws at temperature 1 replay as with top_k = 0.
  {
    const std::vector<float> logits{0.5f, 2, -1, 1.5f, 1};
    const std::uint64_t seed = drawn_seed(draw);
    constexpr std::int64_t kWide = 4294967297;
    const auto wide = observe("60 draws of sample_token({0.5, 2, -1, 1.5, 1}, 1, 4294967297, generator)", [&] {
      WichmannHill generator(seed);
      std::vector<std::int64_t> tokens;
      for (int n = 0; n < 60; ++n) tokens.push_back(nn::sample_token(logits, 1.0, kWide, generator));
      return tokens;
    });
    if (!KILN_EXPECT_OK(wide, "top_k_narrowed")) return;
    KILN_JUDGE {
      const std::vector<std::int64_t> expected = trusted_samples(logits, 1.0, 0, seed, 60);
      if (*wide != expected) {
        KILN_FAIL("top_k_narrowed", {},
                  fmt::format("{}: got {}, expected {} (every id a candidate)", wide.call(),
                              testing::list(std::vector<float>(wide->begin(), wide->end()), 20),
                              testing::list(std::vector<float>(expected.begin(), expected.end()), 20)));
        return;
      }
    }
  }
}

TEST(Transformer, Generate) {
  // generate() on a GPT with the test's parameters (V = 6, max_length = 5, D = 4, H = 2): the
  // prompt [2, 5] with 6 new tokens, greedy and sampled (temperature 0.8, top-3), the sampled run
  // twice with one seed; then a prompt of 7 tokens, longer than max_length, greedy and sampled; and
  // no new tokens at all (the prompt comes back as it is). Each step is judged on the sequence itself: the trusted
  // model's logits at the last position of the last 5 tokens, and the generator's next draw, must
  // give the token that came.
  testing::Generator draw(1411);
  const GptSizes s{6, 5, 4, 2, 1};
  const Parameters p = random_parameters(gpt_parameter_shapes(s), 1412);
  struct Case {
    std::vector<std::int64_t> prompt;
    std::int64_t n_new;
    double temperature;
    std::int64_t top_k;
    std::uint64_t seed;
  };
  const std::uint64_t seed = drawn_seed(draw);
  const std::vector<std::int64_t> long_prompt = random_ints(7, s.vocab, 1413);
  std::vector<std::int64_t> first_sampled;
  for (const Case& c : std::vector<Case>{{{2, 5}, 6, 0.0, 0, seed},
                                         {{2, 5}, 6, 0.8, 3, seed},
                                         {{2, 5}, 6, 0.8, 3, seed},
                                         {long_prompt, 3, 0.0, 0, seed},
                                         {long_prompt, 3, 1.0, 0, drawn_seed(draw)},
                                         {{4}, 0, 0.0, 0, seed}}) {
    const auto out = observe(fmt::format("generate(model, prompt, {}, {}, {}, WichmannHill({})) with {} and a prompt of "
                                         "{}",
                                         c.n_new, c.temperature, c.top_k, c.seed, sizes_text(s),
                                         testing::counted(c.prompt.size(), "token")),
                             [&] {
                               nn::GPT model = gpt_with(s, p);
                               WichmannHill generator(c.seed);
                               return nn::generate(model, c.prompt, c.n_new, c.temperature, c.top_k, generator);
                             });
    if (!out.ok() && out.error().is("kiln::IndexError")) {
      KILN_FAIL("context_not_cropped", {}, out.describe_error());
      return;
    }
    if (c.n_new == 0 && !out.ok() && out.error().is(testing::error_kind_name<std::invalid_argument>())) {
      KILN_FAIL("no_new_tokens_refused", {}, out.describe_error());
      return;
    }
    if (!KILN_EXPECT_OK(out, "generate_wrong", {{"step", "0"}})) return;
    KILN_JUDGE {
      const std::vector<std::int64_t>& sequence = *out;
      if (sequence.size() != c.prompt.size() + static_cast<std::size_t>(c.n_new) ||
          !std::equal(c.prompt.begin(), c.prompt.end(), sequence.begin())) {
        KILN_FAIL("generate_wrong", {{"step", "0"}},
                  fmt::format("{} returned {}; expected the {} of the prompt followed by {} new ones", out.call(),
                              testing::counted(sequence.size(), "token"), c.prompt.size(), c.n_new));
        return;
      }
      if (c.temperature != 0 && c.seed == seed) {
        if (first_sampled.empty()) {
          first_sampled = sequence;
        } else if (sequence != first_sampled) {
          KILN_FAIL("generate_wrong", {{"step", "?"}}, out.call() + ": the same seed gave other tokens the second time");
          return;
        }
      }
      // The generator's draws, one a step when sampling.
      TrustedWichmannHill generator(c.seed);
      std::vector<double> draws(static_cast<std::size_t>(c.n_new), 0.0);
      if (c.temperature != 0) {
        for (double& u : draws) u = generator.next();
      }
      // Whether new token `step` follows from the logits at the last position of sequence[from, to),
      // and which token those logits give.
      const auto follows = [&](std::int64_t step, std::size_t from, std::size_t to, std::int64_t& expected) {
        const std::vector<std::int64_t> context(sequence.begin() + static_cast<std::ptrdiff_t>(from),
                                                sequence.begin() + static_cast<std::ptrdiff_t>(to));
        const Values logits = trusted_gpt(context, 1, s, p);
        const std::vector<float> last(logits.end() - s.vocab, logits.end());
        const std::int64_t token = sequence[c.prompt.size() + static_cast<std::size_t>(step)];
        const double u = draws[static_cast<std::size_t>(step)];
        if (c.temperature == 0) {
          expected = std::max_element(last.begin(), last.end()) - last.begin();
          return token >= 0 && token < s.vocab && last[at(token)] >= last[at(expected)] - 1e-4;
        }
        const Values prob = trusted_probabilities(last, c.temperature, c.top_k);
        expected = trusted_pick(prob, u);
        if (token < 0 || token >= s.vocab) return false;
        // The draw u must fall in token's slice of the cumulative probabilities, give or take the
        // rounding of float logits.
        double before = 0;
        for (std::int64_t id = 0; id < token; ++id) before += prob[at(id)];
        return token == expected || (prob[at(token)] > 0 && before - 1e-4 <= u && u < before + prob[at(token)] + 1e-4);
      };
      const auto max_length = static_cast<std::size_t>(s.max_length);
      for (std::int64_t step = 0; step < c.n_new; ++step) {
        const std::size_t end = c.prompt.size() + static_cast<std::size_t>(step);
        const std::size_t begin = end > max_length ? end - max_length : 0;
        std::int64_t expected = 0;
        if (follows(step, begin, end, expected)) continue;
        const auto text = [&](std::size_t from, std::size_t to) {
          return testing::list(std::vector<float>(sequence.begin() + static_cast<std::ptrdiff_t>(from),
                                                  sequence.begin() + static_cast<std::ptrdiff_t>(to)));
        };
        // Cropped to the first max_length tokens instead of the last: this token and every one
        // after it follow from those.
        bool from_first = begin > 0;
        for (std::int64_t later = step; from_first && later < c.n_new; ++later) {
          std::int64_t ignored = 0;
          from_first = follows(later, 0, max_length, ignored);
        }
        if (from_first) {
          KILN_FAIL("context_cropped_to_first", {{"step", std::to_string(step)}},
                    fmt::format("{}: new token {} is {}, which follows from the first {} tokens {}; expected {}, from the "
                                "last {}, {}",
                                out.call(), step, sequence[end], max_length, text(0, max_length), expected, max_length,
                                text(begin, end)));
          return;
        }
        // Cropped to fewer than max_length tokens: every token from the first whose context is
        // longer than `kept` (two at least, this one among them) follows from the last `kept`.
        for (std::size_t kept = std::min(max_length, end) - 1; kept >= 1; --kept) {
          const std::int64_t first = std::max<std::int64_t>(
              0, static_cast<std::int64_t>(kept) + 1 - static_cast<std::int64_t>(c.prompt.size()));
          if (c.n_new - first < 2) continue;
          bool from_last = true;
          for (std::int64_t later = first; from_last && later < c.n_new; ++later) {
            const std::size_t later_end = c.prompt.size() + static_cast<std::size_t>(later);
            std::int64_t ignored = 0;
            from_last = follows(later, later_end - kept, later_end, ignored);
          }
          if (from_last) {
            KILN_FAIL("context_cropped_short",
                      {{"kept", testing::counted(kept, "token")}, {"max_length", std::to_string(max_length)}},
                      fmt::format("{}: new token {} is {}, which follows from the last {} {}; expected {}, from "
                                  "the last {}, {}",
                                  out.call(), step, sequence[end], testing::counted(kept, "token"), text(end - kept, end),
                                  expected, end - begin,
                                  text(begin, end)));
            return;
          }
        }
        KILN_FAIL("generate_wrong", {{"step", std::to_string(step)}},
                  fmt::format("{}: new token {} is {}, expected {} (from the logits at the last position of {})",
                              out.call(), step, sequence[end], expected, text(begin, end)));
        return;
      }
    }
  }

  // The model it ran is left in evaluation mode (it starts in training mode).
  const auto mode = observe("generate(model, [2, 5], 1, 0, 0, generator), then model.training()", [&] {
    nn::GPT model = gpt_with(s, p);
    WichmannHill generator(seed);
    nn::generate(model, {2, 5}, 1, 0.0, 0, generator);
    return model.training();
  });
  if (!KILN_EXPECT_OK(mode, "generate_not_in_eval_mode")) return;
  KILN_JUDGE {
    if (*mode) {
      KILN_FAIL("generate_not_in_eval_mode", {}, mode.call() + " is true");
      return;
    }
  }

  // Nothing to continue, or a negative number of tokens to add.
  const auto arguments = [&](const std::vector<std::int64_t>& prompt, std::int64_t n_new) {
    return observe(fmt::format("generate(model, prompt, {}, 1, 0, generator) with {} and a prompt of {} tokens", n_new,
                               sizes_text(s), prompt.size()),
                   [&] {
                     nn::GPT model = gpt_with(s, p);
                     WichmannHill generator(1);
                     return nn::generate(model, prompt, n_new, 1.0, 0, generator);
                   });
  };
  const auto negative = arguments({2, 5}, -1);
  KILN_JUDGE {
    testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, negative, "generate_arguments_unchecked");
    if (::testing::Test::HasFailure()) return;
  }
  const auto no_prompt = arguments({}, 3);
  KILN_JUDGE {
    testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, no_prompt, "generate_arguments_unchecked");
    if (::testing::Test::HasFailure()) return;
  }
  // A refusal comes before any effect: the model stays in training mode (as it was built) and
  // the generator's next value is still its first.
  for (const auto& refusal : std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>>{{{2, 5}, -1}, {{}, 3}}) {
    const std::vector<std::int64_t>& prompt = refusal.first;
    const std::int64_t n_new = refusal.second;
    const auto after = observe(
        fmt::format("generate(model, prompt, {}, 1, 0, WichmannHill({})) with a prompt of {}, refused, then "
                    "model.training() and generator.next()",
                    n_new, seed, testing::counted(prompt.size(), "token")),
        [&] {
          nn::GPT model = gpt_with(s, p);
          WichmannHill generator(seed);
          bool threw = false;
          try {
            nn::generate(model, prompt, n_new, 1.0, 0, generator);
          } catch (const std::invalid_argument&) {
            threw = true;
          }
          return std::tuple(threw, model.training(), generator.next());
        });
    if (!KILN_EXPECT_OK(after, "generate_refusal_has_effects")) return;
    KILN_JUDGE {
      const auto& [threw, training, next] = *after;
      const double first_draw = TrustedWichmannHill(seed).next();
      if (threw && (!training || next != first_draw)) {
        KILN_FAIL("generate_refusal_has_effects", {},
                  fmt::format("{}: training() is {}, and the next value {} the generator's first ({})", after.call(),
                              training, next == first_draw ? "is" : "is not", first_draw));
        return;
      }
    }
  }
  // n_new is an std::int64_t: -2^32 is negative (its low 32 bits are 0, which an int would take
  // for "no new tokens" and return the prompt).
  const auto far_negative = arguments({2, 5}, -4294967296);
  KILN_JUDGE {
    testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, far_negative, "generate_count_narrowed");
  }
}

TEST(Transformer, Learns) {
  // A GPT(V = 8, max_length = 8, D = 8, H = 2, N = 1), initialised from WichmannHill(seed of the
  // run), trained with Adam (lr 0.01) for 300 steps on the six windows of the repeating sequence
  // 0 3 1 3 5 7 0 3 1 3 5 7 ...: inputs 8 tokens, targets the 8 that follow. After 3 comes 1 or 5,
  // depending on the token before it, so the model must attend: without attention the loss stays
  // above (16/48)·ln 2 = 0.23. Two windows start with a 3, whose successor no model can know, so
  // the loss cannot go below (2/48)·ln 2 = 0.029. It starts near ln 8 = 2.08 and must end below
  // 0.06.
  testing::Generator draw(1421);
  const std::uint64_t seed = drawn_seed(draw);
  const std::vector<std::int64_t> pattern{0, 3, 1, 3, 5, 7};
  constexpr std::int64_t kLength = 8, kSteps = 300;
  std::vector<std::int64_t> inputs, targets;
  for (std::size_t offset = 0; offset < pattern.size(); ++offset) {
    for (std::int64_t t = 0; t < kLength; ++t) {
      inputs.push_back(pattern[(offset + at(t)) % pattern.size()]);
      targets.push_back(pattern[(offset + at(t) + 1) % pattern.size()]);
    }
  }
  const Tensor tokens = tokens_of(inputs, static_cast<std::int64_t>(pattern.size()));
  const auto losses = observe(
      fmt::format("{} steps of Adam(lr 0.01) on lm_loss(model(tokens), targets) with GPT(V = 8, max_length = 8, D = 8, "
                  "H = 2, N = 1) from WichmannHill({}) and tokens (6, 8): the losses",
                  kSteps, seed),
      [&] {
        nn::GPT model(nn::GPTConfig{8, 8, 8, 2, 1}, seed);
        optim::Adam adam(model.parameters(), 0.01f);
        std::vector<float> out;
        for (std::int64_t step = 0; step < kSteps; ++step) {
          adam.zero_grad();
          Tensor loss = nn::lm_loss(model(tokens), targets);
          loss.backward();
          adam.step();
          out.push_back(loss.item());
        }
        return out;
      });
  if (!KILN_EXPECT_OK(losses, "does_not_learn", {{"loss", "?"}})) return;
  KILN_JUDGE {
    const float last = losses->empty() ? NAN : losses->back();
    if (losses->size() == static_cast<std::size_t>(kSteps) && last < 0.06f) return;
    KILN_FAIL("does_not_learn", {{"loss", testing::format_number(last)}},
              fmt::format("{}: {}", losses.call(),
                          losses->empty() ? std::string("none")
                                          : fmt::format("first {}, then every 50th: {}", testing::format_number(losses->front()),
                                                        [&] {
                                                          std::vector<float> every;
                                                          for (std::size_t n = 49; n < losses->size(); n += 50)
                                                            every.push_back((*losses)[n]);
                                                          return testing::list(every);
                                                        }())));
  }
}

}  // namespace kiln
