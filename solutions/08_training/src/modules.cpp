// Modules: named parameters in a tree, the Linear layer, ReLU, Flatten and Sequential.
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/training.h"

namespace kiln::nn {

namespace {

// Throws std::invalid_argument unless `name` can be registered in a module that already has
// `parameters` and `children`.
void check_new_name(const std::string& name, const std::vector<std::pair<std::string, Tensor>>& parameters,
                    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children) {
  if (name.empty()) throw std::invalid_argument("a parameter or module name must not be empty");
  if (name.find('.') != std::string::npos) {
    throw std::invalid_argument("the name \"" + name + "\" contains a '.', which separates the names of a path");
  }
  for (const auto& [taken, parameter] : parameters) {
    if (taken == name) throw std::invalid_argument("the name \"" + name + "\" is already a parameter");
  }
  for (const auto& [taken, child] : children) {
    if (taken == name) throw std::invalid_argument("the name \"" + name + "\" is already a child module");
  }
}

}  // namespace

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> all = parameters_;
  for (const auto& [child_name, child] : children_) {
    for (const auto& [name, parameter] : child->named_parameters()) all.emplace_back(child_name + "." + name, parameter);
  }
  return all;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> tensors;
  for (const auto& [name, parameter] : named_parameters()) tensors.push_back(parameter);
  return tensors;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

Tensor Module::register_parameter(const std::string& name, Tensor parameter) {
  check_new_name(name, parameters_, children_);
  parameter.set_requires_grad(true);
  parameters_.emplace_back(name, parameter);
  return parameter;
}

void Module::register_module(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, parameters_, children_);
  if (!module) throw std::invalid_argument("the module registered as \"" + name + "\" is null");
  children_.emplace_back(name, std::move(module));
}

Linear::Linear(std::int64_t in, std::int64_t out, WichmannHill& generator) : in_features(in), out_features(out) {
  if (in < 1 || out < 1) {
    throw std::invalid_argument("Linear(" + std::to_string(in) + ", " + std::to_string(out) +
                                "): both sizes must be at least 1");
  }
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  // weight (in, out), row-major: element (i, o) at i·out + o, drawn in that order; then the bias.
  std::vector<float> weight_values(static_cast<std::size_t>(in * out));
  for (float& w : weight_values) w = static_cast<float>(bound * (2.0 * generator.next() - 1.0));
  std::vector<float> bias_values(static_cast<std::size_t>(out));
  for (float& b : bias_values) b = static_cast<float>(bound * (2.0 * generator.next() - 1.0));
  weight = register_parameter("weight", Tensor({in, out}, std::move(weight_values)));
  bias = register_parameter("bias", Tensor({out}, std::move(bias_values)));
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() < 1 || x.shape().back() != in_features) {
    throw ShapeError("Linear: x of shape " + to_string(x.shape()) + " must end in in_features = " +
                     std::to_string(in_features) + ", the rows of weight " + to_string(weight.shape()));
  }
  // x (*, in) as R rows (R, in), R the product of the leading sizes, then back to (*, out). For a
  // 2-D x the reshapes change no value: the result is matmul(x, W) + b bit for bit.
  const std::int64_t rows = x.numel() / in_features;
  Shape y_shape = x.shape();
  y_shape.back() = out_features;
  const Tensor y = autograd::add(autograd::matmul(autograd::reshape(x, {rows, in_features}), weight), bias);
  return autograd::reshape(y, y_shape);
}

Tensor ReLU::forward(const Tensor& x) { return autograd::relu(x); }

Tensor Flatten::forward(const Tensor& x) {
  if (x.dim() < 1) throw ShapeError("Flatten needs a batch dimension, got shape " + to_string(x.shape()));
  std::int64_t rest = 1;
  for (std::int64_t d = 1; d < x.dim(); ++d) rest *= x.shape()[d];
  return autograd::reshape(x, {x.shape()[0], rest});
}

Sequential::Sequential(std::vector<std::shared_ptr<Module>> layers) {
  for (std::size_t k = 0; k < layers.size(); ++k) {
    if (!layers[k]) throw std::invalid_argument("Sequential: layer " + std::to_string(k) + " is null");
    register_module(std::to_string(k), std::move(layers[k]));
  }
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [name, layer] : children()) y = (*layer)(y);
  return y;
}

}  // namespace kiln::nn
