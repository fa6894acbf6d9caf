// Given: the plumbing of autograd. The Tensor members that mark and read gradients, the node
// recording in Function::apply, and the forward() of every operation with the free function that
// builds its node. Read it: your backward() walks the graph that apply() builds here.
#include <memory>
#include <stdexcept>
#include <utility>

#include "kiln/autograd.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// The Tensor members that only read or reset the bookkeeping

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  if (!autograd_) autograd_ = std::make_shared<AutogradMeta>();
  autograd_->requires_grad = requires_grad;
  return *this;
}

bool Tensor::requires_grad() const { return autograd_ && autograd_->requires_grad; }

Tensor Tensor::grad() const {
  if (autograd_ && autograd_->grad) return *autograd_->grad;
  return Tensor::zeros(shape_);
}

void Tensor::zero_grad() {
  if (autograd_) autograd_->grad.reset();
}

namespace autograd {

bool has_grad(const Tensor& t) { return t.autograd() && t.autograd()->grad.has_value(); }

Tensor detach(const Tensor& t) {
  Tensor values = t;  // shares the storage...
  values.autograd().reset();  // ...but not the bookkeeping
  return values;
}

// ---------------------------------------------------------------------------------------------
// Recording a node

Tensor Function::apply(std::shared_ptr<Function> node, std::vector<Tensor> inputs) {
  bool any_requires_grad = false;
  for (const Tensor& input : inputs) any_requires_grad = any_requires_grad || input.requires_grad();
  node->inputs = std::move(inputs);
  Tensor output = node->forward();
  // forward() may hand back a handle that shares an input's bookkeeping (contiguous() of a
  // contiguous tensor returns the tensor itself): the output always gets bookkeeping of its own.
  output.autograd().reset();
  if (any_requires_grad) {
    auto meta = std::make_shared<AutogradMeta>();
    meta->requires_grad = true;
    meta->grad_fn = std::move(node);
    output.autograd() = std::move(meta);
  } else {
    node->inputs.clear();  // nothing will walk back through this node
  }
  return output;
}

// ---------------------------------------------------------------------------------------------
// forward() of each operation (module 01's plain operations) and the function that records it

Tensor AddFunction::forward() { return inputs[0] + inputs[1]; }
Tensor SubFunction::forward() { return inputs[0] - inputs[1]; }
Tensor MulFunction::forward() { return inputs[0] * inputs[1]; }
Tensor MatmulFunction::forward() { return kiln::matmul(inputs[0], inputs[1]); }
Tensor SumFunction::forward() { return inputs[0].sum(); }
Tensor SumDimFunction::forward() { return inputs[0].sum(dim, keepdim); }
Tensor ReshapeFunction::forward() { return inputs[0].reshape(shape); }
Tensor TransposeFunction::forward() { return inputs[0].transpose(dim0, dim1); }
Tensor ReluFunction::forward() {
  return map(inputs[0], [](float v) { return v > 0.0f ? v : 0.0f; });
}

Tensor add(const Tensor& a, const Tensor& b) {
  return Function::apply(std::make_shared<AddFunction>(), {a, b});
}

Tensor sub(const Tensor& a, const Tensor& b) {
  return Function::apply(std::make_shared<SubFunction>(), {a, b});
}

Tensor mul(const Tensor& a, const Tensor& b) {
  return Function::apply(std::make_shared<MulFunction>(), {a, b});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  return Function::apply(std::make_shared<MatmulFunction>(), {a, b});
}

Tensor sum(const Tensor& x) { return Function::apply(std::make_shared<SumFunction>(), {x}); }

Tensor sum(const Tensor& x, std::int64_t dim, bool keepdim) {
  if (dim < -x.dim() || dim >= x.dim()) {
    throw IndexError("sum over dimension " + std::to_string(dim) + " of a tensor of shape " +
                     to_string(x.shape()));
  }
  auto node = std::make_shared<SumDimFunction>();
  node->dim = dim < 0 ? dim + x.dim() : dim;
  node->keepdim = keepdim;
  return Function::apply(node, {x});
}

Tensor reshape(const Tensor& x, Shape shape) {
  auto node = std::make_shared<ReshapeFunction>();
  node->shape = std::move(shape);
  return Function::apply(node, {x});
}

Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1) {
  auto node = std::make_shared<TransposeFunction>();
  node->dim0 = dim0;
  node->dim1 = dim1;
  return Function::apply(node, {x});
}

Tensor relu(const Tensor& x) { return Function::apply(std::make_shared<ReluFunction>(), {x}); }

}  // namespace autograd
}  // namespace kiln
