// Given: module 09's layers as module 08 Modules, the name of each kind of layer, and the real
// clock.
#include <chrono>
#include <string>

#include "kiln/profiling.h"

namespace kiln {
namespace nn {

Conv2dLayer::Conv2dLayer(int in_channels, int out_channels, int kernel_size, int stride, int padding, bool with_bias,
                         WichmannHill& generator)
    : conv(in_channels, out_channels, kernel_size, stride, padding, with_bias, generator) {
  conv.weight = register_parameter("weight", conv.weight);
  if (conv.has_bias()) conv.bias = register_parameter("bias", conv.bias);
}

Tensor Conv2dLayer::forward(const Tensor& x) { return conv.forward(x); }

MaxPool2dLayer::MaxPool2dLayer(int kernel_size, int stride) : pool(kernel_size, stride) {}

Tensor MaxPool2dLayer::forward(const Tensor& x) { return pool.forward(x); }

}  // namespace nn

std::string layer_kind(const nn::Module& layer) {
  if (dynamic_cast<const nn::Linear*>(&layer)) return "Linear";
  if (dynamic_cast<const nn::ReLU*>(&layer)) return "ReLU";
  if (dynamic_cast<const nn::Flatten*>(&layer)) return "Flatten";
  if (dynamic_cast<const nn::Conv2dLayer*>(&layer)) return "Conv2d";
  if (dynamic_cast<const nn::MaxPool2dLayer*>(&layer)) return "MaxPool2d";
  return "other";
}

double steady_clock_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace kiln
