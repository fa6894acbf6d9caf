// Modules: named parameters in a tree, the Linear layer, ReLU, Flatten and Sequential.
//
// kiln/training.h states each rule; this file says how. Every forward() goes through module 06's
// recorded operations (autograd::matmul, autograd::add, autograd::relu, autograd::reshape), never
// module 01's plain ones, or loss.backward() cannot reach the parameters.
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/training.h"

namespace kiln::nn {

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  // parameters_ first, as they are; then, for each (child_name, child) of children_, every
  // (name, tensor) of child->named_parameters() as (child_name + "." + name, tensor). The
  // recursion gives grandchildren their full path ("body.1.weight") for free.
  throw kiln::NotImplemented();
}

std::vector<Tensor> Module::parameters() const {
  // The tensors of named_parameters(), in its order.
  throw kiln::NotImplemented();
}

void Module::train(bool on) {
  // Set training_ here, then call train(on) on every child (which passes it on to its own).
  throw kiln::NotImplemented();
}

Tensor Module::register_parameter(const std::string& name, Tensor parameter) {
  // Reject a bad name first (std::invalid_argument naming it): empty, containing '.', or already
  // the name of an entry of parameters_ or children_. Then parameter.set_requires_grad(true),
  // append (name, parameter) to parameters_ and return parameter: the handle that now carries the
  // gradient bookkeeping, shared with the stored one.
  throw kiln::NotImplemented();
}

void Module::register_module(const std::string& name, std::shared_ptr<Module> module) {
  // The same name rules as register_parameter, and std::invalid_argument for a null module, all
  // checked before anything is stored (a refused call registers nothing); then append
  // (name, module) to children_.
  throw kiln::NotImplemented();
}

Linear::Linear(std::int64_t in, std::int64_t out, WichmannHill& generator) : in_features(in), out_features(out) {
  // std::invalid_argument unless in >= 1 and out >= 1, before drawing anything (a refused layer
  // leaves the generator as it was). Then PyTorch's initialisation, exactly:
  //   bound = 1.0 / std::sqrt(double(in))
  //   weight (in, out), row-major (element (i, o) at i·out + o): in·out values
  //     static_cast<float>(bound * (2.0 * generator.next() - 1.0)), drawn in row-major order
  //   bias (out): out more values, the same formula, drawn after all the weights
  // weight = register_parameter("weight", ...), then bias = register_parameter("bias", ...).
  throw kiln::NotImplemented();
}

Tensor Linear::forward(const Tensor& x) {
  // x (*, in) -> (*, out), on x's last dimension. First ShapeError, naming x's shape and
  // weight.shape(), when x.dim() < 1 or x.shape().back() != in_features (check the dimension
  // first: a 0-D shape has no back()). Then R = the product of the leading sizes (x.numel() /
  // in_features, 1 for a 1-D x), and, all recorded:
  //   autograd::reshape(x, {R, in}), autograd::matmul by weight (in, out), autograd::add the bias
  //   (out), which broadcasts it over the R rows and sums its gradient back over them, and
  //   autograd::reshape to x's shape with the last size out_features.
  throw kiln::NotImplemented();
}

Tensor ReLU::forward(const Tensor& x) {
  // autograd::relu (kiln::relu of module 02 records nothing: no gradient would flow back).
  throw kiln::NotImplemented();
}

Tensor Flatten::forward(const Tensor& x) {
  // ShapeError naming the shape for a 0-D x. Otherwise rest = the product of the sizes after the
  // first (1 for a 1-D x), and autograd::reshape(x, {N, rest}). Compute rest yourself rather than
  // passing -1: with N = 0 a -1 cannot be inferred.
  throw kiln::NotImplemented();
}

Sequential::Sequential(std::vector<std::shared_ptr<Module>> layers) {
  // For k = 0, 1, ...: std::invalid_argument naming k for a null layer, else
  // register_module(std::to_string(k), layers[k]).
  throw kiln::NotImplemented();
}

Tensor Sequential::forward(const Tensor& x) {
  // Each child in children() order, the output of one the input of the next: y = (*layer)(y).
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
