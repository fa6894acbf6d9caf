// Milestone: a convolutional network learns Fashion-MNIST, on your module 09's Conv2d.
//
// The network and its training are in milestones/support/cnn.h. Your Conv2d and MaxPool2d
// (module 09) sit inside module 08 Modules, so that the model has named parameters and your Adam
// (module 07) updates them, with your cosine schedule taking the learning rate from 0.002 down
// to 0 over the run.
#include "cnn.h"

using namespace kiln;

namespace {

// Module 09's Conv2d as a module 08 Module: its weight and bias registered as parameters.
class ConvLayer : public nn::Module {
 public:
  ConvLayer(int in_channels, int out_channels, int kernel_size, int padding, WichmannHill& generator)
      : conv_(in_channels, out_channels, kernel_size, 1, padding, true, generator) {
    conv_.weight = register_parameter("weight", conv_.weight);
    conv_.bias = register_parameter("bias", conv_.bias);
  }
  Tensor forward(const Tensor& x) override { return conv_.forward(x); }

 private:
  Conv2d conv_;
};

}  // namespace

int main(int argc, char** argv) { return milestone::train_cnn<ConvLayer>(argc, argv); }
