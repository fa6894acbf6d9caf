// Reverse-mode automatic differentiation for kiln::Tensor.
//
// Every differentiable operation runs through a Function: a node of the computation graph that
// remembers its inputs, computes its output in forward(), and turns the gradient of the loss with
// respect to its output into gradients with respect to its inputs in backward(). Function::apply
// runs forward() and, when any input requires grad, records the node as the output's grad_fn.
// Tensor::backward() walks the recorded graph from the loss back to the leaves.
//
// The graph:   leaf x ──► MulFunction ──► y ──► SumFunction ──► loss
//   loss.autograd()->grad_fn is the SumFunction; its inputs[0] is y; y.autograd()->grad_fn is the
//   MulFunction, whose inputs are the leaves. A leaf (a tensor the user built and marked with
//   set_requires_grad) has no grad_fn; backward() adds its gradient into the leaf's grad, also
//   when backward() is called on the leaf itself (x.backward(g) gives x.grad() = g).
//
// Defining a new differentiable operation (module 09's Conv2dFunction does exactly this):
//
//   struct ScaleFunction : autograd::Function {
//     float factor = 1.0f;
//     Tensor forward() override { return inputs[0] * factor; }
//     std::vector<Tensor> backward(const Tensor& grad_output) override {
//       return {grad_output * factor};  // one gradient per input, in the order of inputs
//     }
//     static Tensor apply(const Tensor& x, float factor) {
//       auto node = std::make_shared<ScaleFunction>();
//       node->factor = factor;
//       return Function::apply(node, {x});
//     }
//   };
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

namespace autograd {
struct Function;
}

// The gradient bookkeeping a Tensor carries (Tensor::autograd()). Copies of a Tensor handle share
// it; views and results of operations get their own.
struct AutogradMeta {
  // Whether gradients flow into this tensor.
  bool requires_grad = false;
  // The gradient accumulated by backward() since the last zero_grad(), with this tensor's shape.
  // Empty until backward() reaches the tensor; a gradient of zeros reaches it too (then grad
  // holds zeros). Only leaves accumulate a gradient.
  std::optional<Tensor> grad;
  // The node that computed this tensor; null for a leaf.
  std::shared_ptr<autograd::Function> grad_fn;
};

namespace autograd {

// A node of the computation graph. Subclasses add the settings their operation needs (a dim, a
// stride) and anything forward() wants to keep for backward() (an argmax, a column matrix).
struct Function {
  virtual ~Function() = default;

  // The tensors the output is computed from, set by apply(). backward() reads their values;
  // the graph walk follows their grad_fn to continue towards the leaves.
  std::vector<Tensor> inputs;

  // Computes the output from inputs (with module 01's plain operations).
  virtual Tensor forward() = 0;

  // Given dL/d(output), with the output's shape, returns dL/d(input) for every input, in the
  // order of inputs, each with that input's shape. A gradient for an input that does not require
  // grad may be returned anyway: backward() ignores it.
  virtual std::vector<Tensor> backward(const Tensor& grad_output) = 0;

  // Sets node->inputs, runs node->forward(), and when any input requires grad, makes node the
  // grad_fn of the output, which then requires grad too. Otherwise the output is a plain tensor
  // (no grad_fn, requires_grad() false) and the node is dropped.
  static Tensor apply(std::shared_ptr<Function> node, std::vector<Tensor> inputs);
};

// Whether backward() has accumulated a gradient into t since its last zero_grad().
bool has_grad(const Tensor& t);

// A handle to t's values without its gradient bookkeeping: operations on it are not recorded.
// (An optimizer updates parameters through detached handles.)
Tensor detach(const Tensor& t);

// Sums a gradient that broadcasting stretched back down to `shape`: leading dimensions that
// broadcasting added are summed away, and dimensions where `shape` has size 1 are summed with
// keepdim. Example: a (2, 3, 4) gradient reduced to (3, 1) sums over dimensions 0 and 2.
// grad may be a view, at an offset too: read it through tensor operations or data(), never
// storage_data().
Tensor reduce_to_shape(const Tensor& grad, const Shape& shape);

// The differentiable operations. Each computes the same values as module 01's plain operation
// and records a node when an input requires grad.
Tensor add(const Tensor& a, const Tensor& b);  // a + b, with broadcasting
Tensor sub(const Tensor& a, const Tensor& b);  // a - b, with broadcasting
Tensor mul(const Tensor& a, const Tensor& b);  // a * b elementwise, with broadcasting
Tensor matmul(const Tensor& a, const Tensor& b);  // (n, k) @ (k, m) -> (n, m)
Tensor sum(const Tensor& x);  // all elements, as a scalar (shape ())
Tensor sum(const Tensor& x, std::int64_t dim, bool keepdim = false);
Tensor reshape(const Tensor& x, Shape shape);
Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1);
Tensor relu(const Tensor& x);  // max(x, 0) elementwise

// The nodes behind those operations. forward() is given; backward() is yours to write
// (src/functions.cpp).
struct AddFunction : Function {
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

struct SubFunction : Function {
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

struct MulFunction : Function {
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

struct MatmulFunction : Function {
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

struct SumFunction : Function {
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

struct SumDimFunction : Function {
  std::int64_t dim = 0;  // already made non-negative by sum()
  bool keepdim = false;
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

struct ReshapeFunction : Function {
  Shape shape;  // the requested shape (may hold one -1)
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

struct TransposeFunction : Function {
  std::int64_t dim0 = 0;
  std::int64_t dim1 = 0;
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

// backward: grad_output ⊙ [x > 0], x the input: 0 at x = 0 and at a NaN x (NaN > 0 is false).
// x and grad_output may be views at an offset: read them through tensor operations or data(),
// never storage_data().
struct ReluFunction : Function {
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

}  // namespace autograd
}  // namespace kiln

// The Tensor members declared in kiln/tensor.h, for reference:
//   set_requires_grad(bool)  given: marks a leaf (creates its AutogradMeta); returns *this
//   requires_grad()          given: false for a tensor without AutogradMeta
//   grad()                   given: the accumulated gradient, or zeros of this tensor's shape
//                            when none has been accumulated
//   zero_grad()              given: forgets the accumulated gradient
//   backward()               yours: backward(ones) for a tensor with exactly one element;
//                            ShapeError naming the shape otherwise
//   backward(grad_output)    yours: the graph walk. grad_output must have this tensor's shape
//                            (ShapeError naming both shapes otherwise); throws std::logic_error
//                            when this tensor does not require grad (requires_grad() false,
//                            also for a result switched off with set_requires_grad(false),
//                            though it has a grad_fn), and when a node's
//                            backward() returns more or fewer gradients than it has inputs.
//                            The shape checks of backward() and backward(g) come first, then
//                            requires_grad: a wrong shape is a ShapeError on a constant too.
//                            grad_output is only read: the caller's tensor is left as it was.
//                            The walk follows only inputs whose requires_grad() is true: a
//                            result switched off is a cut, and what lies behind it gets nothing.
//                            The walk visits each tensor of the graph once, however many paths
//                            reach it, so it finishes at once on any graph: y = x, then 64
//                            times y = y + y, is 65 tensors (and 2^64 paths from y to x).
//                            A refused walk changes no gradient: every node's backward runs
//                            before any leaf receives its gradient, so a node that returns a
//                            wrong count leaves every leaf as it was. grad_output may be a view
//                            at an offset: a leaf receives its own elements (clone() copies
//                            them).
