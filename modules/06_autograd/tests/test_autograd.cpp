// Module 06 checks: one TEST per check in module.yaml.
//
// Every value taken from the student's code passes through observe() (kiln/observe.h): the checks
// judge plain data only.
//
// The backward formulas are checked one node at a time: the given forward (autograd::mul and the
// others) records the node, and the check calls that node's backward(w) itself, so that a formula
// is judged without the graph walk. Its result is compared with central finite differences of a
// forward written here with module 01's plain operations: for L = Σ w ⊙ f(inputs) with fixed
// random weights w, dL/dx_j ≈ (L(x_j + ε) - L(x_j - ε)) / 2ε, with L summed in double. Every
// operation here is at most quadratic in any one input element, and relu is only probed away from
// its kink, so the central difference is exact up to float32 rounding.
//
// The walk (Tensor::backward) is checked on graphs of nodes whose backward is written here
// (Trusted* below), so that those checks depend on no backward formula of this module.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/autograd.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

namespace ag = autograd;

using testing::data_of;
using testing::observe;
using testing::Observed;
using testing::random_tensor;
using testing::report_failure;
using testing::TensorData;

using testing::counted;  // "1 gradient", "3 gradients"
std::string gradients(std::size_t count) { return counted(count, "gradient"); }

// ---------------------------------------------------------------------------------------------
// Trusted references

// reduce_to_shape(grad, shape) by plain loops: every element of grad adds into the element of
// `shape` it was broadcast from (leading dimensions dropped, size-1 dimensions read at index 0).
TensorData reduced(const TensorData& grad, const Shape& shape) {
  const std::size_t lead = grad.shape.size() - shape.size();
  std::vector<double> sums(static_cast<std::size_t>(numel(shape)), 0.0);
  Shape index(grad.shape.size(), 0);
  for (const float g : grad.values) {
    std::int64_t target = 0;
    for (std::size_t d = 0; d < shape.size(); ++d) target = target * shape[d] + (shape[d] == 1 ? 0 : index[lead + d]);
    sums[static_cast<std::size_t>(target)] += g;
    for (std::size_t d = index.size(); d-- > 0;)
      if (++index[d] < grad.shape[d]) break;
      else index[d] = 0;
  }
  return data_of(shape, std::vector<float>(sums.begin(), sums.end()));
}

// relu by a plain loop.
TensorData relu_reference(const TensorData& x) {
  TensorData out = data_of(x.shape, x.values);
  for (float& v : out.values) v = v > 0.0f ? v : 0.0f;
  return out;
}

// Graph nodes whose backward is written here, for the checks of the walk. Their inputs always
// have equal shapes, so no gradient needs reducing.
struct TrustedAdd : ag::Function {
  Tensor forward() override { return inputs[0] + inputs[1]; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g.clone(), g.clone()}; }
};
struct TrustedMul : ag::Function {
  Tensor forward() override { return inputs[0] * inputs[1]; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g * inputs[1], g * inputs[0]}; }
};
struct TrustedSum : ag::Function {
  Tensor forward() override { return inputs[0].sum(); }
  std::vector<Tensor> backward(const Tensor& g) override { return {g.expand(inputs[0].shape()).contiguous()}; }
};
struct TrustedReshape : ag::Function {
  Shape shape;
  Tensor forward() override { return inputs[0].reshape(shape); }
  std::vector<Tensor> backward(const Tensor& g) override { return {g.reshape(inputs[0].shape())}; }
};
// An addition whose backward hands the same tensor, g itself, to both inputs, as a node may: the
// leaves must each keep a copy of their own.
struct SharingAdd : ag::Function {
  Tensor forward() override { return inputs[0] + inputs[1]; }
  std::vector<Tensor> backward(const Tensor& g) override { return {g, g}; }
};
// A product node whose backward returns `count` gradients for its two inputs: a node written
// wrong, which the walk must refuse rather than read past the list or drop a gradient.
struct MiscountedMul : ag::Function {
  std::size_t count = 0;
  Tensor forward() override { return inputs[0] * inputs[1]; }
  std::vector<Tensor> backward(const Tensor& g) override { return std::vector<Tensor>(count, g * inputs[1]); }
};
Tensor trusted_add(const Tensor& a, const Tensor& b) { return ag::Function::apply(std::make_shared<TrustedAdd>(), {a, b}); }
Tensor trusted_mul(const Tensor& a, const Tensor& b) { return ag::Function::apply(std::make_shared<TrustedMul>(), {a, b}); }
Tensor trusted_sum(const Tensor& x) { return ag::Function::apply(std::make_shared<TrustedSum>(), {x}); }
Tensor trusted_reshape(const Tensor& x, Shape shape) {
  auto node = std::make_shared<TrustedReshape>();
  node->shape = std::move(shape);
  return ag::Function::apply(node, {x});
}

// Elementwise a op b of equal shapes, by a plain loop.
TensorData zip(const TensorData& a, const TensorData& b, float (*op)(float, float)) {
  TensorData out = data_of(a.shape, a.values);
  for (std::size_t i = 0; i < out.values.size(); ++i) out.values[i] = op(a.values[i], b.values[i]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Judging

// Judging only: reports reduce_shape_wrong or reduce_values_wrong for got, reduce_to_shape of a
// gradient holding grad_values.
void judge_reduced(const char* file, int line, const Observed<TensorData>& got, const TensorData& grad_values,
                   const Shape& shape) {
  const TensorData expected = reduced(grad_values, shape);
  if (!testing::expect_ok(file, line, got, "reduce_shape_wrong", {{"got", "an error"}, {"expected", to_string(shape)}}))
    return;
  if (got->shape != shape) {
    report_failure(file, line, "reduce_shape_wrong", {{"got", to_string(got->shape)}, {"expected", to_string(shape)}},
                   got.call() + " has shape " + to_string(got->shape));
    return;
  }
  testing::expect_close(file, line, got, expected, 1e-4, "reduce_values_wrong", 1e-5);
}

// Reports reduce_shape_wrong or reduce_values_wrong for reduce_to_shape(grad, shape).
void expect_reduced(const char* file, int line, const Tensor& grad, const std::string& grad_text, const Shape& shape) {
  const TensorData grad_values = data_of(grad);
  const auto got = observe("reduce_to_shape(" + grad_text + ", " + to_string(shape) + ")",
                           [&] { return ag::reduce_to_shape(grad_values.tensor(), shape); });
  KILN_JUDGE { judge_reduced(file, line, got, grad_values, shape); }
}

#define EXPECT_REDUCED(grad, grad_text, shape) expect_reduced(__FILE__, __LINE__, grad, grad_text, shape)

using StudentForward = std::function<Tensor(const std::vector<Tensor>&)>;
using TrustedForward = std::function<TensorData(const std::vector<TensorData>&)>;

// Builds y = forward(inputs) with the given autograd operation (which records one node), calls
// that node's backward(w) with random weights w of y's shape `out` (given by the check, so that the
// observed program runs no trusted forward), and compares every returned gradient with central
// differences of `trusted` (the same operation written with module 01's plain operations; empty in
// the observed program: KILN_JUDGE_ONLY). Any error on the way is reported under failure_id,
// naming the call. Returns whether all matched (in the observed program: whether the call returned).
bool check_gradients(const char* file, int line, const std::string& node, const StudentForward& forward,
                     const TrustedForward& trusted, const std::vector<Tensor>& values, const Shape& out,
                     std::uint64_t weight_stream, std::string_view failure_id, const std::string& what) {
  std::vector<TensorData> inputs;
  for (const Tensor& v : values) inputs.push_back(data_of(v));
  KILN_JUDGE {
    if (trusted(inputs).shape != out)
      throw std::logic_error("the check of " + what + " gives y the shape " + to_string(out) + ", but it is " +
                             to_string(trusted(inputs).shape));
  }
  const TensorData weights = data_of(random_tensor(out, weight_stream, 0.5f, 1.5f));
  const auto grads = observe(node + "::backward(w) for " + what, [&] {
    std::vector<Tensor> leaves;
    for (const TensorData& v : inputs) leaves.push_back(v.tensor().set_requires_grad(true));
    const Tensor y = forward(leaves);
    return y.autograd()->grad_fn->backward(weights.tensor());
  });
  KILN_JUDGE {
    if (!testing::expect_ok(file, line, grads, failure_id)) return false;
  }
  if (!grads.ok()) return false;
  KILN_JUDGE {
    if (grads->size() != inputs.size()) {
      report_failure(file, line, failure_id, {},
                     grads.call() + " returned " + gradients(grads->size()) + " for " +
                         counted(inputs.size(), "input"));
      return false;
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const TensorData numeric = testing::numeric_gradient(trusted, inputs, i, weights);
      const Observed<TensorData> grad(grads.call() + ", the gradient of input " + std::to_string(i), (*grads)[i]);
      if (!testing::expect_close(file, line, grad, numeric, 1e-3, failure_id, 1e-3)) return false;
    }
  }
  return true;
}
// CHECK_GRADIENTS(node, forward, trusted, values, out, stream, id, what): `trusted` is judging
// code, handed on only in the judge.
#define CHECK_GRADIENTS(node, forward, trusted, values, out, stream, id, what) \
  check_gradients(__FILE__, __LINE__, node, forward, KILN_JUDGE_ONLY(trusted), values, out, stream, id, what)

TensorData trusted_plus(const std::vector<TensorData>& in) { return data_of(in[0].tensor() + in[1].tensor()); }
TensorData trusted_minus(const std::vector<TensorData>& in) { return data_of(in[0].tensor() - in[1].tensor()); }
TensorData trusted_times(const std::vector<TensorData>& in) { return data_of(in[0].tensor() * in[1].tensor()); }

TEST(Autograd, ReduceToShape) {
  // g(i, j, k) = 12i + 4j + k, shape (2, 3, 4).
  const Tensor g3 = Tensor::arange(24).reshape({2, 3, 4});
  // To (3, 1): Σ_i Σ_k (12i + 4j + k) = 48 + 32j + 12 = 60, 92, 124.
  EXPECT_REDUCED(g3, "0..23 in shape (2, 3, 4)", (Shape{3, 1}));
  // To (4): Σ_i Σ_j (12i + 4j + k) = 36 + 24 + 6k = 60, 66, 72, 78.
  EXPECT_REDUCED(g3, "0..23 in shape (2, 3, 4)", (Shape{4}));
  EXPECT_REDUCED(g3, "0..23 in shape (2, 3, 4)", (Shape{2, 1, 4}));

  const Tensor g2({2, 3}, {0, 1, 2, 3, 4, 5});
  const std::string g2_text = "[[0, 1, 2], [3, 4, 5]]";
  EXPECT_REDUCED(g2, g2_text, (Shape{2, 3}));
  EXPECT_REDUCED(g2, g2_text, (Shape{3}));
  EXPECT_REDUCED(g2, g2_text, (Shape{1, 3}));
  EXPECT_REDUCED(g2, g2_text, (Shape{2, 1}));
  EXPECT_REDUCED(g2, g2_text, (Shape{}));

  // Random gradients of the run, in shapes with no two sizes alike.
  const Tensor r = random_tensor({3, 4, 5}, 1);
  const std::string r_text = "a random (3, 4, 5) gradient";
  for (const Shape& shape : {Shape{4, 1}, Shape{5}, Shape{3, 1, 5}, Shape{1, 4, 1}, Shape{1, 5}, Shape{3, 4, 5}})
    EXPECT_REDUCED(r, r_text, shape);
  EXPECT_REDUCED(random_tensor({2, 7}, 2), "a random (2, 7) gradient", (Shape{1, 7}));

  // Empty gradients: a size 1 broadcast to 0 is summed back to 1 as well, here to zeros.
  EXPECT_REDUCED(Tensor::zeros({0, 3}), "an empty (0, 3) gradient", (Shape{1, 3}));
  EXPECT_REDUCED(Tensor::zeros({2, 0}), "an empty (2, 0) gradient", (Shape{2, 1}));
  EXPECT_REDUCED(Tensor::zeros({0, 3}), "an empty (0, 3) gradient", (Shape{3}));

  KILN_JUDGE {
    if (::testing::Test::HasFailure()) return;  // one failure per check: the first
  }
  // A gradient that is a contiguous view at an offset, 5 floats into a storage whose other floats
  // are random numbers (a slice that a caller's backward(g) may pass): its elements start at
  // data(), and its contiguous() is the view itself, so reading from storage_data() sums others.
  const TensorData shifted = data_of(random_tensor({2, 3}, 3));
  // The same call on a fresh tensor of the same values: a result wrong on both is reduce_to_shape's
  // own mistake (reduce_shape_wrong, reduce_values_wrong), not the offset's.
  const auto fresh = observe("reduce_to_shape(a fresh (2, 3) gradient of the same values, (3))",
                             [&] { return ag::reduce_to_shape(shifted.tensor(), Shape{3}); });
  const auto got = observe("reduce_to_shape(a random (2, 3) gradient that is a view at offset 5 of a larger storage, (3))",
                           [&] { return ag::reduce_to_shape(testing::at_offset(shifted, 4), Shape{3}); });
  KILN_JUDGE {
    // The offset failure where the view changes the result; otherwise (the same result, or an
    // error on both) the fresh one is judged as reduce_to_shape's, its shape and then its values.
    if (KILN_EXPECT_SAME_AT_OFFSET(fresh, got, reduced(shifted, {3}), 1e-4, 1e-5, "", "reduce_offset_ignored") ||
        (!fresh.ok() && !got.ok()))
      judge_reduced(__FILE__, __LINE__, fresh, shifted, Shape{3});
  }
}

TEST(Autograd, BroadcastGradients) {
  const auto add = [](const std::vector<Tensor>& in) { return ag::add(in[0], in[1]); };
  const char* node = "AddFunction";
  CHECK_GRADIENTS(node, add, trusted_plus, (std::vector<Tensor>{random_tensor({3, 1}, 1), random_tensor({1, 4}, 2)}),
                  (Shape{3, 4}), 101, "broadcast_grad_not_reduced", "add of (3, 1) and (1, 4)");
  CHECK_GRADIENTS(node, add, trusted_plus, (std::vector<Tensor>{random_tensor({4}, 3), random_tensor({3, 4}, 4)}),
                  (Shape{3, 4}), 102, "broadcast_grad_not_reduced", "add of (4) and (3, 4)");
  CHECK_GRADIENTS(node, add, trusted_plus, (std::vector<Tensor>{random_tensor({2, 3}, 5), Tensor::scalar(0.5f)}),
                  (Shape{2, 3}), 103, "broadcast_grad_not_reduced", "add of (2, 3) and a scalar");
  CHECK_GRADIENTS(node, add, trusted_plus,
                  (std::vector<Tensor>{random_tensor({2, 1, 5}, 6), random_tensor({3, 1}, 7)}), (Shape{2, 3, 5}), 104,
                  "broadcast_grad_not_reduced", "add of (2, 1, 5) and (3, 1)");
}

TEST(Autograd, AddSubGradients) {
  const auto add = [](const std::vector<Tensor>& in) { return ag::add(in[0], in[1]); };
  const auto sub = [](const std::vector<Tensor>& in) { return ag::sub(in[0], in[1]); };
  CHECK_GRADIENTS("AddFunction", add, trusted_plus,
                  (std::vector<Tensor>{random_tensor({2, 3}, 11), random_tensor({2, 3}, 12)}), (Shape{2, 3}), 111,
                  "add_sub_grad_wrong", "add of (2, 3) and (2, 3)");
  CHECK_GRADIENTS("SubFunction", sub, trusted_minus,
                  (std::vector<Tensor>{random_tensor({2, 3}, 13), random_tensor({2, 3}, 14)}), (Shape{2, 3}), 112,
                  "add_sub_grad_wrong", "sub of (2, 3) and (2, 3)");
  CHECK_GRADIENTS("SubFunction", sub, trusted_minus,
                  (std::vector<Tensor>{random_tensor({2, 3}, 15), random_tensor({3}, 16)}), (Shape{2, 3}), 113,
                  "add_sub_grad_wrong", "sub of (2, 3) and (3)");
  CHECK_GRADIENTS("SubFunction", sub, trusted_minus,
                  (std::vector<Tensor>{random_tensor({3, 1}, 17), random_tensor({2, 3, 4}, 18)}), (Shape{2, 3, 4}), 114,
                  "add_sub_grad_wrong", "sub of (3, 1) and (2, 3, 4)");
}

TEST(Autograd, MulGradients) {
  const auto mul = [](const std::vector<Tensor>& in) { return ag::mul(in[0], in[1]); };
  CHECK_GRADIENTS("MulFunction", mul, trusted_times,
                  (std::vector<Tensor>{random_tensor({2, 3}, 21), random_tensor({2, 3}, 22)}), (Shape{2, 3}), 121,
                  "mul_grad_wrong", "mul of (2, 3) and (2, 3)");
  CHECK_GRADIENTS("MulFunction", mul, trusted_times,
                  (std::vector<Tensor>{random_tensor({2, 3}, 23), random_tensor({2, 1}, 24)}), (Shape{2, 3}), 122,
                  "mul_grad_wrong", "mul of (2, 3) and (2, 1)");
  CHECK_GRADIENTS("MulFunction", mul, trusted_times,
                  (std::vector<Tensor>{random_tensor({1, 3}, 25), random_tensor({4, 3}, 26)}), (Shape{4, 3}), 123,
                  "mul_grad_wrong", "mul of (1, 3) and (4, 3)");
  CHECK_GRADIENTS("MulFunction", mul, trusted_times,
                  (std::vector<Tensor>{Tensor::scalar(1.5f), random_tensor({2, 3}, 27)}), (Shape{2, 3}), 124,
                  "mul_grad_wrong", "mul of a scalar and (2, 3)");
}

TEST(Autograd, MatmulGradients) {
  const auto matmul = [](const std::vector<Tensor>& in) { return ag::matmul(in[0], in[1]); };
  const auto product = [](const std::vector<TensorData>& in) { return testing::reference_matmul(in[0], in[1]); };
  CHECK_GRADIENTS("MatmulFunction", matmul, product,
                  (std::vector<Tensor>{random_tensor({2, 3}, 31), random_tensor({3, 4}, 32)}), (Shape{2, 4}), 131,
                  "matmul_grad_wrong", "matmul of (2, 3) and (3, 4)");
  CHECK_GRADIENTS("MatmulFunction", matmul, product,
                  (std::vector<Tensor>{random_tensor({4, 1}, 33), random_tensor({1, 2}, 34)}), (Shape{4, 2}), 132,
                  "matmul_grad_wrong", "matmul of (4, 1) and (1, 2)");
}

TEST(Autograd, SumGradients) {
  const std::vector<Tensor> x{random_tensor({2, 3}, 41)};
  const auto all = [](const std::vector<TensorData>& in) { return data_of(in[0].tensor().sum()); };
  CHECK_GRADIENTS("SumFunction", [](const std::vector<Tensor>& in) { return ag::sum(in[0]); }, all, x, Shape{}, 141,
                  "sum_grad_wrong", "sum of all elements of (2, 3)");
  struct Case {
    std::int64_t dim;
    bool keepdim;
    Tensor x;
    Shape out;
    std::string what;
  };
  const std::vector<Case> cases = {
      {1, false, x[0], {2}, "sum of (2, 3) over dim 1"},
      {0, true, x[0], {1, 3}, "sum of (2, 3) over dim 0 with keepdim"},
      {-1, true, x[0], {2, 1}, "sum of (2, 3) over dim -1 with keepdim"},
      {1, false, random_tensor({3, 4, 2}, 42), {3, 2}, "sum of (3, 4, 2) over dim 1"},
      {0, false, random_tensor({3, 4, 2}, 43), {4, 2}, "sum of (3, 4, 2) over dim 0"},
  };
  std::uint64_t stream = 142;
  for (const Case& c : cases) {
    const bool ok = CHECK_GRADIENTS(
        "SumDimFunction", [&](const std::vector<Tensor>& in) { return ag::sum(in[0], c.dim, c.keepdim); },
        [&](const std::vector<TensorData>& in) { return data_of(in[0].tensor().sum(c.dim, c.keepdim)); },
        std::vector<Tensor>{c.x}, c.out, stream++, "sum_grad_wrong", c.what);
    if (!ok) return;
  }
}

TEST(Autograd, ViewGradients) {
  const std::vector<Tensor> x{random_tensor({2, 3}, 51)};
  const std::vector<Tensor> x3{random_tensor({2, 3, 4}, 52)};
  const auto reshaped = [](Shape shape) {
    return [shape](const std::vector<TensorData>& in) { return data_of(in[0].tensor().reshape(shape).contiguous()); };
  };
  const auto transposed = [](std::int64_t dim0, std::int64_t dim1) {
    return [=](const std::vector<TensorData>& in) { return data_of(in[0].tensor().transpose(dim0, dim1).contiguous()); };
  };
  if (!CHECK_GRADIENTS("ReshapeFunction", [](const std::vector<Tensor>& in) { return ag::reshape(in[0], {3, 2}); },
                       reshaped({3, 2}), x, (Shape{3, 2}), 151, "view_grad_wrong", "reshape of (2, 3) to (3, 2)"))
    return;
  if (!CHECK_GRADIENTS("ReshapeFunction", [](const std::vector<Tensor>& in) { return ag::reshape(in[0], {-1}); },
                       reshaped({-1}), x, Shape{6}, 152, "view_grad_wrong", "reshape of (2, 3) to (-1)"))
    return;
  if (!CHECK_GRADIENTS("ReshapeFunction", [](const std::vector<Tensor>& in) { return ag::reshape(in[0], {4, 6}); },
                       reshaped({4, 6}), x3, (Shape{4, 6}), 153, "view_grad_wrong", "reshape of (2, 3, 4) to (4, 6)"))
    return;
  if (!CHECK_GRADIENTS("TransposeFunction", [](const std::vector<Tensor>& in) { return ag::transpose(in[0], 0, 1); },
                       transposed(0, 1), x, (Shape{3, 2}), 154, "view_grad_wrong", "transpose of (2, 3)"))
    return;
  CHECK_GRADIENTS("TransposeFunction", [](const std::vector<Tensor>& in) { return ag::transpose(in[0], 2, 0); },
                  transposed(2, 0), x3, (Shape{4, 3, 2}), 155, "view_grad_wrong", "transpose of (2, 3, 4), dims 2 and 0");
}

TEST(Autograd, ReluGradients) {
  const auto relu = [](const std::vector<Tensor>& in) { return ag::relu(in[0]); };
  const auto reference = [](const std::vector<TensorData>& in) { return relu_reference(in[0]); };
  // Away from the kink at 0, so that a step of 0.01 never crosses it.
  const Tensor x({2, 4}, {-1.5f, -0.3f, 0.2f, 0.9f, 1.7f, -0.8f, 0.4f, -0.1f});
  if (!CHECK_GRADIENTS("ReluFunction", relu, reference, std::vector<Tensor>{x}, (Shape{2, 4}), 161, "relu_grad_wrong",
                       "relu of (2, 4)"))
    return;
  // Random values of the run, moved at least 0.05 away from 0.
  TensorData r = data_of(random_tensor({3, 5}, 62));
  for (float& v : r.values) v = v >= 0.0f ? v + 0.05f : v - 0.05f;
  if (!CHECK_GRADIENTS("ReluFunction", relu, reference, std::vector<Tensor>{r.tensor()}, (Shape{3, 5}), 162,
                       "relu_grad_wrong", "relu of a random (3, 5) tensor"))
    return;
  // At the kink the slope is taken as 0: x = 0 and x = -0 pass no gradient.
  const Tensor kink({2, 3}, {0.0f, 0.7f, -0.0f, -0.4f, 0.0f, 1e-30f});
  const TensorData w = data_of(random_tensor({2, 3}, 163, 0.5f, 1.5f));
  const auto at_zero = observe("ReluFunction::backward(w) for relu of [[0, 0.7, -0], [-0.4, 0, 1e-30]]", [&] {
    Tensor leaf = kink.clone().set_requires_grad(true);
    return ag::relu(leaf).autograd()->grad_fn->backward(w.tensor());
  });
  if (!KILN_EXPECT_OK(at_zero, "relu_grad_at_zero")) return;
  KILN_JUDGE {
    const TensorData x = data_of(kink);
    TensorData expected = w;
    for (std::size_t i = 0; i < expected.values.size(); ++i) expected.values[i] = x.values[i] > 0.0f ? w.values[i] : 0.0f;
    const bool one = at_zero->size() == 1;
    KILN_EXPECT(one, "relu_grad_at_zero", {}, fmt::format("{} returned, expected 1", gradients(at_zero->size())));
    if (!one) return;
    if (!testing::expect_close(__FILE__, __LINE__, Observed<TensorData>(at_zero.call(), (*at_zero)[0]), expected, 0.0,
                               "relu_grad_at_zero", 0.0))
      return;
  }
  // A NaN input: relu gives 0 there (NaN > 0 is false), and the mask [x > 0] is 0, so no gradient
  // passes; a mask "0 where x <= 0, else 1" is 1 for NaN. The infinities: [inf > 0] = 1, [-inf > 0] = 0.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const Tensor odd({5}, {nan, -1.0f, 2.0f, -inf, inf});
  const auto at_nan = observe("ReluFunction::backward(g) for relu of [NaN, -1, 2, -inf, inf], g = [5, 5, 5, 5, 5]", [&] {
    Tensor leaf = odd.clone().set_requires_grad(true);
    return ag::relu(leaf).autograd()->grad_fn->backward(Tensor({5}, {5.0f, 5.0f, 5.0f, 5.0f, 5.0f}));
  });
  if (!KILN_EXPECT_OK(at_nan, "relu_grad_nan_passed")) return;
  KILN_JUDGE {
    const bool one = at_nan->size() == 1;
    KILN_EXPECT(one, "relu_grad_nan_passed", {}, fmt::format("{} returned, expected 1", gradients(at_nan->size())));
    if (!one) return;
    if (!testing::expect_close(__FILE__, __LINE__, Observed<TensorData>(at_nan.call(), (*at_nan)[0]),
                               data_of({5}, {0.0f, 0.0f, 5.0f, 0.0f, 5.0f}), 0.0, "relu_grad_nan_passed", 0.0))
      return;
  }
  if (!at_nan.ok()) return;
  // Views at an offset: the input x (a leaf) and g are each a contiguous view 5 floats into a
  // storage whose other floats are random numbers in [-8, 8) (rows of a larger batch). Their
  // elements start at data(); contiguous() of such a view is the view itself, so a mask or a
  // product read from storage_data() takes other numbers.
  TensorData xs = data_of(random_tensor({2, 3}, 164));
  for (float& v : xs.values) v = v >= 0.0f ? v + 0.05f : v - 0.05f;
  const TensorData gs = data_of(random_tensor({2, 3}, 165, 0.5f, 1.5f));
  const auto backward_of = [](const Tensor& x, const Tensor& g) {
    Tensor leaf = x;
    leaf.set_requires_grad(true);
    return ag::relu(leaf).autograd()->grad_fn->backward(g);
  };
  // The same call on fresh tensors of the same values: a gradient wrong on both is relu's own
  // mistake (relu_grad_wrong), not the offset's.
  const auto fresh = observe("ReluFunction::backward(g) for relu of a random (2, 3) x, x and g fresh tensors of the "
                             "same values",
                             [&] { return backward_of(xs.tensor(), gs.tensor()); });
  const auto shifted = observe("ReluFunction::backward(g) for relu of a random (2, 3) x, x and g each a view at offset 5 "
                               "of a larger storage",
                               [&] { return backward_of(testing::at_offset(xs, 166), testing::at_offset(gs, 167)); });
  KILN_JUDGE {
    TensorData expected = gs;
    for (std::size_t i = 0; i < expected.values.size(); ++i) expected.values[i] = xs.values[i] > 0.0f ? gs.values[i] : 0.0f;
    // A wrong count of gradients is relu's own mistake, with or without an offset; the one
    // gradient is then judged for the offset like any tensor.
    for (const auto* o : {&fresh, &shifted}) {
      if (o->ok() && (*o)->size() != 1) {
        KILN_FAIL("relu_grad_wrong", {}, fmt::format("{}: {} returned, expected 1", o->call(), gradients((*o)->size())));
        return;
      }
    }
    const auto only = [](const Observed<std::vector<TensorData>>& o) {
      return o.ok() ? Observed<TensorData>(o.call(), (*o)[0]) : Observed<TensorData>(o.call(), o.error());
    };
    KILN_EXPECT_SAME_AT_OFFSET(only(fresh), only(shifted), expected, 0.0, 0.0, "relu_grad_wrong",
                               "relu_grad_offset_ignored");
  }
}

TEST(Autograd, AccumulatesAcrossUses) {
  // y = x·x + x: x reaches y along three edges, so dy/dx = 2x + 1, and with y.backward(w) the
  // gradient is w ⊙ (2x + 1).
  const auto two_x_plus_one = [](const TensorData& x, const TensorData& w) {
    return zip(x, w, [](float xv, float wv) { return wv * (2.0f * xv + 1.0f); });
  };
  struct Case {
    TensorData x, w;
    std::string what;
  };
  const std::vector<Case> squares = {
      {data_of({2, 2}, {-1.0f, 0.5f, 2.0f, 3.0f}), data_of({2, 2}, {1, 1, 1, 1}),
       "x.grad() after y.backward(ones) for y = x·x + x, x = [[-1, 0.5], [2, 3]]"},
      {data_of(random_tensor({2, 3}, 71)), data_of(random_tensor({2, 3}, 72, 0.5f, 1.5f)),
       "x.grad() after y.backward(w) for y = x·x + x, x a random (2, 3) tensor"},
  };
  for (const Case& c : squares) {
    const auto grad = observe(c.what, [&] {
      Tensor x = c.x.tensor().set_requires_grad(true);
      Tensor y = trusted_add(trusted_mul(x, x), x);
      y.backward(c.w.tensor());
      return x.grad();
    });
    if (!KILN_EXPECT_CLOSE(grad, two_x_plus_one(c.x, c.w), 1e-4, "uses_not_accumulated")) return;
  }
  // A shared tensor inside the graph: a = x + 1, y = a + a·a. Walking a before a·a has passed on
  // its gradient loses that part: dy/dx = 1 + 2a = 3 + 2x.
  const std::vector<Case> shared = {
      {data_of({3}, {-1.0f, 0.0f, 2.0f}), data_of({3}, {1, 1, 1}),
       "x.grad() after y.backward(ones) for a = x + 1, y = a + a·a, x = [-1, 0, 2]"},
      {data_of(random_tensor({3, 4}, 73)), data_of(random_tensor({3, 4}, 74, 0.5f, 1.5f)),
       "x.grad() after y.backward(w) for a = x + 1, y = a + a·a, x a random (3, 4) tensor"},
  };
  for (const Case& c : shared) {
    const auto grad = observe(c.what, [&] {
      Tensor x = c.x.tensor().set_requires_grad(true);
      const Tensor a = trusted_add(x, Tensor::ones(c.x.shape));
      Tensor y = trusted_add(a, trusted_mul(a, a));
      y.backward(c.w.tensor());
      return x.grad();
    });
    if (!KILN_EXPECT_CLOSE(grad, zip(c.x, c.w, [](float xv, float wv) { return wv * (3.0f + 2.0f * xv); }), 1e-4,
                           "node_processed_early"))
      return;
  }

  // A pending gradient may be a handle that another tensor's entry, or the caller's g, holds too:
  // the additions below go through a node that hands g itself to both inputs (as add's backward
  // does when reduce_to_shape has nothing to sum). With a = 2x and b = 3x, y = (a + b) + a gives
  // dy/dx = 7, and y = a + a gives 4; in both, g read back after backward(g) is g as it was.
  // Adding a's second share into its entry in place writes into the g that b (and the caller)
  // hold: x.grad() becomes 10·g and g becomes 2·g.
  struct Shared {
    std::string what;
    bool with_b;        // y = (a + b) + a, else y = a + a
    float derivative;   // dy/dx
  };
  const std::vector<Shared> handed_on = {
      {"x.grad() and g after y.backward(g) for a = 2x, b = 3x, y = (a + b) + a, through adds that pass g itself "
       "to both inputs, x and g random (2, 3) tensors",
       true, 7.0f},
      {"x.grad() and g after y.backward(g) for a = 2x, y = a + a, through an add that passes g itself to both "
       "inputs, x and g random (2, 3) tensors",
       false, 4.0f},
  };
  for (std::size_t k = 0; k < handed_on.size(); ++k) {
    const Shared& c = handed_on[k];
    const TensorData x = data_of(random_tensor({2, 3}, 75 + 2 * static_cast<std::uint64_t>(k)));
    const TensorData g = data_of(random_tensor({2, 3}, 76 + 2 * static_cast<std::uint64_t>(k), 0.5f, 1.5f));
    const auto after = observe(c.what, [&] {
      Tensor leaf = x.tensor().set_requires_grad(true);
      const auto sharing_add = [](const Tensor& p, const Tensor& q) {
        return ag::Function::apply(std::make_shared<SharingAdd>(), {p, q});
      };
      const Tensor a = trusted_mul(leaf, Tensor::full({2, 3}, 2.0f));
      const Tensor b = trusted_mul(leaf, Tensor::full({2, 3}, 3.0f));
      Tensor y = c.with_b ? sharing_add(sharing_add(a, b), a) : sharing_add(a, a);
      Tensor passed = g.tensor();
      y.backward(passed);
      return std::vector<Tensor>{leaf.grad().clone(), passed.clone()};
    });
    if (!KILN_EXPECT_OK(after, "pending_gradient_shared")) return;
    KILN_JUDGE {
      std::vector<float> grad_expected = g.values;
      for (float& v : grad_expected) v *= c.derivative;
      const std::vector<std::pair<std::string, std::vector<float>>> expected = {
          {"x.grad()", grad_expected}, {"g read back after the call", g.values}};
      for (std::size_t i = 0; i < expected.size(); ++i) {
        // A stream with fewer results than were returned is not believed: a missing one compares as empty.
        const Observed<TensorData> value(after.call() + ": " + expected[i].first,
                                         i < after->size() ? (*after)[i] : TensorData{});
        if (!KILN_EXPECT_CLOSE(value, data_of({2, 3}, expected[i].second), 1e-4, "pending_gradient_shared")) return;
      }
    }
  }

  // Last, since a walk that searches a tensor again along every path never finishes it: y = x,
  // then 64 times y = y + y. 65 tensors, each reached along two edges, and 2^64 paths from y to
  // x: a visited set marked on entry walks the 65 at once. dy/dx = 2^64, so x.grad() = 2^64·g,
  // exactly (every addition doubles a power-of-two multiple of g).
  const TensorData doubling_x = data_of(random_tensor({3}, 79));
  const TensorData doubling_g = data_of(random_tensor({3}, 80, 0.5f, 1.5f));
  const auto doubled = observe("x.grad() after y.backward(g) for y = x, then 64 times y = y + y (65 tensors, 2^64 "
                               "paths from y to x), x and g random (3) tensors",
                               [&] {
                                 Tensor x = doubling_x.tensor().set_requires_grad(true);
                                 Tensor y = x;
                                 for (int k = 0; k < 64; ++k) y = trusted_add(y, y);
                                 y.backward(doubling_g.tensor());
                                 return x.grad();
                               });
  KILN_JUDGE {
    std::vector<float> expected = doubling_g.values;
    for (float& v : expected) v = std::ldexp(v, 64);
    KILN_EXPECT_CLOSE_REL(doubled, data_of({3}, expected), 0.0, 1e-6, "node_processed_early");
  }
}

TEST(Autograd, AccumulatesAcrossCalls) {
  // y = x reshaped to (3, 2): y.backward(g) gives x the gradient g in x's shape.
  const TensorData x = data_of(random_tensor({2, 3}, 81));
  const TensorData g1 = data_of(random_tensor({3, 2}, 82));
  const TensorData g2 = data_of(random_tensor({3, 2}, 83));
  const auto grads = observe(
      "x.grad() after y.backward(g1), after y.backward(g2), after sum(x).backward(), and after x.zero_grad() and "
      "y.backward(g1), for y = x reshaped from (2, 3) to (3, 2)",
      [&] {
        Tensor leaf = x.tensor().set_requires_grad(true);
        Tensor y = trusted_reshape(leaf, {3, 2});
        std::vector<Tensor> seen;
        y.backward(g1.tensor());
        seen.push_back(leaf.grad().clone());
        y.backward(g2.tensor());
        seen.push_back(leaf.grad().clone());
        // A second graph built from the same leaf adds to the same gradient.
        Tensor loss = trusted_sum(leaf);
        loss.backward();
        seen.push_back(leaf.grad().clone());
        // zero_grad starts over.
        leaf.zero_grad();
        y.backward(g1.tensor());
        seen.push_back(leaf.grad().clone());
        return seen;
      });
  if (!KILN_EXPECT_OK(grads, "calls_not_accumulated")) return;
  if (grads->size() != 4) {
    KILN_FAIL("calls_not_accumulated", {}, grads.call() + " did not give four gradients");
    return;
  }
  KILN_JUDGE {
    std::vector<float> once = g1.values, twice(6), thrice(6);
    for (std::size_t i = 0; i < 6; ++i) {
      twice[i] = g1.values[i] + g2.values[i];
      thrice[i] = twice[i] + 1.0f;
    }
    const std::vector<std::pair<std::string, std::vector<float>>> expected = {
        {"x.grad() after y.backward(g1)", once},
        {"x.grad() after y.backward(g1) and y.backward(g2)", twice},
        {"x.grad() after y.backward(g1), y.backward(g2) and sum(x).backward()", thrice},
        {"x.grad() after x.zero_grad() and y.backward(g1)", once},
    };
    for (std::size_t k = 0; k < expected.size(); ++k) {
      const Observed<TensorData> grad(expected[k].first, (*grads)[k]);
      if (!KILN_EXPECT_CLOSE(grad, data_of({2, 3}, expected[k].second), 1e-5, "calls_not_accumulated")) return;
    }
  }

  // A leaf's first gradient is a copy: writing into a.grad(), or into the g the caller passed to
  // backward(), leaves b.grad() alone, though one node handed the same g to both.
  const TensorData b_values = data_of(random_tensor({2, 3}, 84));
  const TensorData g = data_of(random_tensor({2, 3}, 85));
  const auto owned = observe(
      "a.grad() and b.grad() after c = a + b (a node that passes g itself to both), c.backward(g), then "
      "a.grad()[0] += 100 and g[1] += 200",
      [&] {
        Tensor a = x.tensor().set_requires_grad(true), b = b_values.tensor().set_requires_grad(true);
        Tensor passed = g.tensor();
        ag::Function::apply(std::make_shared<SharingAdd>(), {a, b}).backward(passed);
        a.grad().data()[0] += 100.0f;
        passed.data()[1] += 200.0f;
        return std::vector<Tensor>{a.grad().clone(), b.grad().clone()};
      });
  if (!KILN_EXPECT_OK(owned, "gradient_shared")) return;
  KILN_JUDGE {
    std::vector<float> a_expected = g.values;
    a_expected[0] += 100.0f;
    const std::vector<std::pair<std::string, std::vector<float>>> expected = {{"a.grad()", a_expected},
                                                                              {"b.grad()", g.values}};
    for (std::size_t k = 0; k < expected.size(); ++k) {
      const Observed<TensorData> grad(owned.call() + ": " + expected[k].first, (*owned)[k]);
      if (!KILN_EXPECT_CLOSE(grad, data_of({2, 3}, expected[k].second), 1e-5, "gradient_shared")) return;
    }
  }

  // backward() called on a leaf itself: the root is the whole graph and a leaf, so its gradient is
  // added into its own grad, g after x.backward(g) and 2·g after a second call; a 0-D leaf's
  // backward() gives it 1. (A one-element tensor that is not 0-D is backward_shape_errors' case:
  // a seed of the wrong shape is its mistake, not the leaf's.)
  const TensorData leaf_values = data_of(random_tensor({2, 3}, 86));
  const TensorData leaf_g = data_of(random_tensor({2, 3}, 87, 0.5f, 1.5f));
  const auto root_leaf = observe(
      "has_grad(x), then x.grad() after x.backward(g) and after a second x.backward(g), for a leaf x of shape "
      "(2, 3); then s.grad() after s.backward() for a 0-D leaf s = 3",
      [&] {
        Tensor leaf = leaf_values.tensor().set_requires_grad(true);
        leaf.backward(leaf_g.tensor());
        const bool credited = ag::has_grad(leaf);
        std::vector<Tensor> seen{leaf.grad().clone()};
        leaf.backward(leaf_g.tensor());
        seen.push_back(leaf.grad().clone());
        Tensor one = Tensor::scalar(3.0f).set_requires_grad(true);
        one.backward();
        seen.push_back(one.grad().clone());
        return std::pair(credited, seen);
      });
  if (!KILN_EXPECT_OK(root_leaf, "root_leaf_not_credited")) return;
  KILN_JUDGE {
    if (!root_leaf->first) {
      KILN_FAIL("root_leaf_not_credited", {}, root_leaf.call() + ": has_grad(x) is false after x.backward(g)");
      return;
    }
    std::vector<float> twice = leaf_g.values;
    for (float& v : twice) v *= 2.0f;
    const std::vector<std::pair<std::string, TensorData>> expected = {
        {"x.grad() after x.backward(g)", leaf_g},
        {"x.grad() after x.backward(g) twice", data_of({2, 3}, twice)},
        {"s.grad() after s.backward()", data_of({}, {1.0f})}};
    for (std::size_t k = 0; k < expected.size(); ++k) {
      // A stream with fewer results than were returned is not believed: a missing one compares as empty.
      const Observed<TensorData> grad(root_leaf.call() + ": " + expected[k].first,
                                      k < root_leaf->second.size() ? root_leaf->second[k] : TensorData{});
      if (!KILN_EXPECT_CLOSE(grad, expected[k].second, 1e-5, "root_leaf_not_credited")) return;
    }
  }

  // A gradient of zeros is still a gradient: a leaf that backward() reaches holds it, and a node
  // whose gradient is zeros still passes it on. y = (x + x)·0 gives x.grad() = 0 through a node
  // whose gradient is zeros, and x.backward(zeros) gives the leaf zeros; has_grad is true in both.
  const TensorData zero_leaf = data_of(random_tensor({2, 3}, 88));
  const TensorData zero_g = data_of(random_tensor({2, 3}, 89, 0.5f, 1.5f));
  const auto zero_reached = observe(
      "has_grad(x) and x.grad() after y.backward(g) for a = x + x, y = a·0 (a's gradient is zeros), x of shape "
      "(2, 3); then has_grad(z) and z.grad() after z.backward(zeros) for a leaf z of shape (2, 3)",
      [&] {
        Tensor x = zero_leaf.tensor().set_requires_grad(true);
        Tensor y = trusted_mul(trusted_add(x, x), Tensor::zeros({2, 3}));
        y.backward(zero_g.tensor());
        Tensor z = zero_leaf.tensor().set_requires_grad(true);
        z.backward(Tensor::zeros({2, 3}));
        return std::tuple(ag::has_grad(x), x.grad(), ag::has_grad(z), z.grad());
      });
  if (!KILN_EXPECT_OK(zero_reached, "zero_gradient_dropped")) return;
  KILN_JUDGE {
    const auto& [x_credited, x_grad, z_credited, z_grad] = *zero_reached;
    const TensorData zeros = data_of({2, 3}, std::vector<float>(6, 0.0f));
    const std::vector<std::tuple<std::string, bool, TensorData>> expected = {
        {"x, reached through a = x + x whose gradient is zeros", x_credited, x_grad},
        {"z after z.backward(zeros)", z_credited, z_grad}};
    for (const auto& [leaf, credited, grad] : expected) {
      if (!credited) {
        KILN_FAIL("zero_gradient_dropped", {}, zero_reached.call() + ": has_grad is false for " + leaf);
        return;
      }
      const Observed<TensorData> value(zero_reached.call() + ": the gradient of " + leaf, grad);
      if (!KILN_EXPECT_CLOSE(value, zeros, 0.0, "zero_gradient_dropped")) return;
    }
  }

  KILN_JUDGE {
    if (::testing::Test::HasFailure()) return;  // one failure per check: the first
  }
  // g a contiguous view at an offset, 5 floats into a storage whose other floats are random
  // numbers (a slice of a larger block of gradients): the leaf's gradient is g's own elements,
  // which start at g.data(); a copy read from storage_data() takes the floats before them.
  const TensorData g_shifted = data_of(random_tensor({2, 3}, 90));
  const auto leaf_grad = [](const Tensor& g) {
    Tensor leaf = data_of(random_tensor({2, 3}, 93)).tensor().set_requires_grad(true);
    leaf.backward(g);
    return leaf.grad();
  };
  // The same call with g a fresh tensor of the same values: a gradient wrong on both is backward's
  // own mistake on a leaf (root_leaf_not_credited), not the offset's.
  const auto fresh = observe("x.grad() after x.backward(g) on a leaf x of shape (2, 3), g a fresh tensor",
                             [&] { return leaf_grad(g_shifted.tensor()); });
  const auto shifted = observe(
      "x.grad() after x.backward(g) on a leaf x of shape (2, 3), g a view at offset 5 of a larger storage",
      [&] { return leaf_grad(testing::at_offset(g_shifted, 94)); });
  KILN_JUDGE {
    KILN_EXPECT_SAME_AT_OFFSET(fresh, shifted, g_shifted, 0.0, 0.0, "root_leaf_not_credited", "leaf_grad_offset_ignored");
  }
}

TEST(Autograd, BackwardShapeErrors) {
  const TensorData x = data_of(random_tensor({2, 3}, 91));
  const TensorData column = data_of(random_tensor({4, 1}, 92));
  // y = x·x has x's shape and more than one element.
  const auto square_backward = [](const TensorData& x) {
    return [x] {
      Tensor leaf = x.tensor().set_requires_grad(true);
      trusted_mul(leaf, leaf).backward();
    };
  };
  const auto matrix_backward = observe("y.backward() on y = x·x of shape (2, 3)", square_backward(x));
  KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, matrix_backward, "nonscalar_backward_allowed",
                                                {"(2, 3)"});
  const auto column_backward = observe("y.backward() on y = x·x of shape (4, 1)", square_backward(column));
  KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, column_backward, "nonscalar_backward_allowed",
                                                {"(4, 1)"});

  if (matrix_backward.ok() || column_backward.ok()) return;  // one message for one missing check

  // An empty tensor has no element to seed with 1 either.
  const auto empty_backward =
      observe("y.backward() on y = x·x of shape (2, 0)", square_backward(data_of(Tensor::zeros({2, 0}))));
  KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, empty_backward, "empty_backward_allowed",
                                                {"(2, 0)"});

  const auto leaf_backward = observe("x.backward(Tensor::ones({3, 2})) on a leaf x of shape (2, 3)", [&] {
    x.tensor().set_requires_grad(true).backward(Tensor::ones({3, 2}));
  });
  KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, leaf_backward, "grad_output_shape_unchecked",
                                                {"(2, 3)", "(3, 2)"});
  const auto flat_backward = observe("y.backward(Tensor::ones({6})) on y = x·x of shape (2, 3)", [&] {
    Tensor leaf = x.tensor().set_requires_grad(true);
    trusted_mul(leaf, leaf).backward(Tensor::ones({6}));
  });
  KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, flat_backward, "grad_output_shape_unchecked",
                                                {"(2, 3)", "(6)"});
  // Gradients that broadcast to (2, 3) but do not have its shape: (1, 3), (3) and ().
  for (const Shape& shape : {Shape{1, 3}, Shape{3}, Shape{}}) {
    const auto broadcast_backward =
        observe(fmt::format("y.backward(Tensor::ones({{{}}})) on y = x·x of shape (2, 3)", fmt::join(shape, ", ")), [&] {
          Tensor leaf = x.tensor().set_requires_grad(true);
          trusted_mul(leaf, leaf).backward(Tensor::ones(shape));
        });
    KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, broadcast_backward, "grad_output_shape_unchecked",
                                                  {"(2, 3)", to_string(shape)});
  }

  // A tensor of one element that is not a scalar: backward() is backward(ones of its shape).
  const TensorData one = data_of(random_tensor({1, 1}, 93));
  const auto one_backward = observe("y.backward() on y = x·x of shape (1, 1), then x.grad()", [&] {
    Tensor leaf = one.tensor().set_requires_grad(true);
    trusted_mul(leaf, leaf).backward();
    return leaf.grad();
  });
  if (!KILN_EXPECT_OK(one_backward, "one_element_backward_refused")) return;
  KILN_JUDGE {
    const TensorData expected = data_of({1, 1}, {2.0f * one.values[0]});
    if (!testing::expect_close(__FILE__, __LINE__, one_backward, expected, 1e-6, "one_element_backward_refused", 1e-6)) return;
  }

  // A tensor that does not require grad has no graph to walk: a constant, a frozen parameter, the
  // plain result of an operation on it, and a one-element constant through backward().
  const auto constant_backward = observe("c.backward(Tensor::ones({2, 3})) on a constant c of shape (2, 3)", [&] {
    x.tensor().backward(Tensor::ones({2, 3}));
  });
  KILN_JUDGE testing::expect_throws<std::logic_error>(__FILE__, __LINE__, constant_backward,
                                                      "untracked_backward_allowed");
  const auto frozen_backward = observe(
      "w.backward(Tensor::ones({4, 1})) on a parameter w of shape (4, 1) after w.set_requires_grad(false)", [&] {
        Tensor w = column.tensor().set_requires_grad(true);
        w.set_requires_grad(false);
        w.backward(Tensor::ones({4, 1}));
      });
  KILN_JUDGE testing::expect_throws<std::logic_error>(__FILE__, __LINE__, frozen_backward,
                                                      "untracked_backward_allowed");
  const auto product_backward = observe("y.backward() on y = sum(w·w) of a frozen parameter w of shape (2, 3)", [&] {
    Tensor w = x.tensor().set_requires_grad(true);
    w.set_requires_grad(false);
    trusted_sum(trusted_mul(w, w)).backward();
  });
  KILN_JUDGE testing::expect_throws<std::logic_error>(__FILE__, __LINE__, product_backward,
                                                      "untracked_backward_allowed");
  // A result of an operation switched off with set_requires_grad(false) does not require grad
  // either, though it still has its grad_fn: the test is requires_grad(), not the grad_fn.
  const auto frozen_result_backward = observe(
      "y.backward(Tensor::ones({2, 3})) on y = x·x of a parameter x, after y.set_requires_grad(false)", [&] {
        Tensor leaf = x.tensor().set_requires_grad(true);
        Tensor y = trusted_mul(leaf, leaf);
        y.set_requires_grad(false);
        y.backward(Tensor::ones({2, 3}));
      });
  KILN_JUDGE testing::expect_throws<std::logic_error>(__FILE__, __LINE__, frozen_result_backward,
                                                      "untracked_backward_allowed");
  const auto scalar_backward = observe("c.backward() on a constant c = Tensor::scalar(2)", [&] {
    Tensor::scalar(2.0f).backward();
  });
  KILN_JUDGE testing::expect_throws<std::logic_error>(__FILE__, __LINE__, scalar_backward,
                                                      "untracked_backward_allowed");

  // The shape checks come first, then requires_grad (PyTorch's order too): a wrong shape is a
  // ShapeError on a tensor that does not require grad as well. (Asked only of a walk that has a
  // shape check: one message for one missing check.)
  if (!leaf_backward.ok() && !flat_backward.ok()) {
    const auto untracked_wrong_shape = observe("c.backward(Tensor::ones({3, 2})) on a constant c of shape (2, 3)",
                                               [&] { x.tensor().backward(Tensor::ones({3, 2})); });
    KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, untracked_wrong_shape,
                                                  "requires_grad_checked_first");
    const auto untracked_matrix = observe("c.backward() on a constant c of shape (2, 3)", [&] { x.tensor().backward(); });
    KILN_JUDGE testing::expect_throws<ShapeError>(__FILE__, __LINE__, untracked_matrix, "requires_grad_checked_first");
  }

  // A node whose backward returns three gradients for its two inputs, then one (last: a walk
  // without the check reads past the list there).
  for (const std::size_t count : {std::size_t(3), std::size_t(1)}) {
    const auto miscounted = observe(
        fmt::format("y.backward() on y = sum(a·b) whose product node's backward returns {} for 2 inputs",
                    gradients(count)),
        [&] {
          Tensor a = x.tensor().set_requires_grad(true), b = x.tensor().set_requires_grad(true);
          auto node = std::make_shared<MiscountedMul>();
          node->count = count;
          trusted_sum(ag::Function::apply(node, {a, b})).backward();
        });
    KILN_JUDGE testing::expect_throws<std::logic_error>(__FILE__, __LINE__, miscounted, "gradient_count_unchecked",
                                                        {std::to_string(count), "2"}, {{"returned", gradients(count)}});
    if (miscounted.ok()) return;
  }

  KILN_JUDGE {
    if (::testing::Test::HasFailure()) return;  // one failure per check: the first
  }
  // A refused walk changes no gradient: y = sum(m + c), where the product node m returns 3
  // gradients for 2 inputs. A depth-first walk reaches the leaf c before m (c is the later input
  // of the add), so a walk that adds into each leaf as it goes has given c its gradient before m
  // refuses. Every node's backward must have returned before any leaf receives anything.
  const auto refused = observe(
      "c.has_grad() after y.backward() raised on y = sum(m + c), m a product node whose backward returns 3 gradients "
      "for 2 inputs, c a leaf of shape (2, 3)",
      [&] {
        Tensor a = x.tensor().set_requires_grad(true), b = x.tensor().set_requires_grad(true);
        Tensor c = data_of(random_tensor({2, 3}, 86)).tensor().set_requires_grad(true);
        auto node = std::make_shared<MiscountedMul>();
        node->count = 3;
        bool raised = false;
        try {
          trusted_sum(trusted_add(ag::Function::apply(node, {a, b}), c)).backward();
        } catch (const std::logic_error&) {
          raised = true;
        }
        return std::pair(raised, ag::has_grad(c));
      });
  if (!KILN_EXPECT_OK(refused, "gradient_before_refusal")) return;
  KILN_JUDGE {
    KILN_EXPECT(refused->first && !refused->second, "gradient_before_refusal", {},
                refused->first ? refused.call() + ": c holds a gradient"
                               : refused.call() + ": y.backward() did not raise std::logic_error");
  }
}

TEST(Autograd, FrozenTensorsGetNoGrad) {
  // A frozen parameter w (requires_grad switched off again) and a constant that never required
  // grad take part in a loss with a parameter x that does require grad.
  const TensorData w = data_of(random_tensor({2, 3}, 101));
  const TensorData x = data_of(random_tensor({2, 3}, 102));
  const TensorData constant = data_of(random_tensor({2, 3}, 103));
  const auto received = observe(
      "has_grad(x), has_grad(w) and has_grad(constant) after sum(w·x·constant).backward(), w frozen", [&] {
        Tensor frozen = w.tensor().set_requires_grad(true);
        frozen.set_requires_grad(false);
        const Tensor parameter = x.tensor().set_requires_grad(true);
        const Tensor fixed = constant.tensor();
        Tensor loss = trusted_sum(trusted_mul(trusted_mul(frozen, parameter), fixed));
        loss.backward();
        return std::tuple<bool, bool, bool>{ag::has_grad(parameter), ag::has_grad(frozen), ag::has_grad(fixed)};
      });
  if (!KILN_EXPECT_OK(received, "grad_for_frozen_tensor")) return;
  KILN_JUDGE {
    const auto [x_got, w_got, constant_got] = *received;
    KILN_EXPECT(x_got, "grad_missing_beside_frozen", {}, "x requires grad but received none");
    KILN_EXPECT(!w_got, "grad_for_frozen_tensor", {}, "w.set_requires_grad(false) was called, yet w received a gradient");
    KILN_EXPECT(!constant_got, "grad_for_frozen_tensor", {}, "a constant that never required grad received a gradient");
    if (::testing::Test::HasFailure()) return;
  }

  // Constants of different shapes beside x: loss = Σ reshape(x·c, (3, 2))·d with c (2, 3) and d
  // (3, 2). The nodes return gradients for c and d anyway (Function::backward may): the walk must
  // drop them, not keep them, nor add the (3, 2) one to the (2, 3) one.
  const TensorData d = data_of(random_tensor({3, 2}, 104));
  const auto mixed = observe(
      "has_grad(x), has_grad(c) and has_grad(d) after sum(reshape(x·c, (3, 2))·d).backward(), c (2, 3) and d (3, 2) "
      "constants",
      [&] {
        const Tensor parameter = x.tensor().set_requires_grad(true);
        const Tensor c = constant.tensor(), fixed = d.tensor();
        Tensor loss = trusted_sum(trusted_mul(trusted_reshape(trusted_mul(parameter, c), {3, 2}), fixed));
        loss.backward();
        return std::tuple<bool, bool, bool>{ag::has_grad(parameter), ag::has_grad(c), ag::has_grad(fixed)};
      });
  if (!KILN_EXPECT_OK(mixed, "grad_for_frozen_tensor")) return;
  KILN_JUDGE {
    const auto [x_got, c_got, d_got] = *mixed;
    KILN_EXPECT(x_got, "grad_missing_beside_frozen", {}, mixed.call() + ": x requires grad but received none");
    KILN_EXPECT(!c_got && !d_got, "grad_for_frozen_tensor", {},
                mixed.call() + ": a constant that never required grad received a gradient");
    if (::testing::Test::HasFailure()) return;
  }

  // Only leaves accumulate a gradient: y = x·c and the loss itself require grad, but they are
  // results of nodes (grad_fn set), and keep none after backward().
  const auto intermediate = observe(
      "has_grad(y) and has_grad(loss) after loss = sum(y), y = x·c, loss.backward(), x a leaf, c a constant",
      [&] {
        const Tensor parameter = x.tensor().set_requires_grad(true);
        const Tensor y = trusted_mul(parameter, constant.tensor());
        Tensor loss = trusted_sum(y);
        loss.backward();
        return std::tuple<bool, bool>{ag::has_grad(y), ag::has_grad(loss)};
      });
  if (!KILN_EXPECT_OK(intermediate, "intermediate_grad_kept")) return;
  KILN_JUDGE {
    const auto [y_got, loss_got] = *intermediate;
    KILN_EXPECT(!y_got && !loss_got, "intermediate_grad_kept", {},
                intermediate.call() + ": " + (y_got && loss_got ? "y and the loss" : y_got ? "y" : "the loss") +
                    " kept a gradient");
    if (::testing::Test::HasFailure()) return;
  }

  // A result switched off with set_requires_grad(false) cuts the graph there (as detach() does in
  // PyTorch): y = x·x, y frozen, loss = sum(y·v) with v a parameter. v receives y; x, reached only
  // through y, receives nothing, though y still has its grad_fn. Following y would give x 2x·v.
  const TensorData v = data_of(random_tensor({2, 3}, 105));
  const auto cut = observe(
      "has_grad(x) and has_grad(v) after y = x·x, y.set_requires_grad(false), sum(y·v).backward(), x and v "
      "parameters",
      [&] {
        const Tensor parameter = x.tensor().set_requires_grad(true);
        Tensor y = trusted_mul(parameter, parameter);
        y.set_requires_grad(false);
        const Tensor weight = v.tensor().set_requires_grad(true);
        trusted_sum(trusted_mul(y, weight)).backward();
        return std::pair<bool, bool>{ag::has_grad(parameter), ag::has_grad(weight)};
      });
  if (!KILN_EXPECT_OK(cut, "grad_through_frozen_result")) return;
  KILN_JUDGE {
    const auto [x_got, v_got] = *cut;
    KILN_EXPECT(v_got, "grad_for_frozen_tensor", {}, cut.call() + ": v requires grad but received none");
    if (::testing::Test::HasFailure()) return;
    KILN_EXPECT(!x_got, "grad_through_frozen_result", {},
                cut.call() + ": x, reached only through the frozen y, received a gradient");
  }
}

}  // namespace
}  // namespace kiln
