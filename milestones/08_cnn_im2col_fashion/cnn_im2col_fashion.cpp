// Milestone: cnn_fashion's network again, its convolutions computed by your module 17 im2col.
//
// The network and its training are cnn_fashion's (milestones/support/cnn.h), drawn from the same
// generator in the same order: the weights are module 09's Conv2d's, so training starts where
// cnn_fashion's does and its first losses match the same golden values. Only the convolution's
// arithmetic changes: each layer's forward is Im2colConv2dFunction (module 17), one matrix
// product over the patch matrix, and its backward two more and a col2im, where module 09 walks
// every window. Compare the two runs' images a second in the trainers' output, or on the
// milestones page.
#include "cnn.h"
#include "kiln/acceleration.h"

using namespace kiln;

namespace {

// Module 09's Conv2d holds the parameters (and draws them, as cnn_fashion's does); module 17's
// Im2colConv2dFunction computes the layer.
class Im2colConvLayer : public nn::Module {
 public:
  Im2colConvLayer(int in_channels, int out_channels, int kernel_size, int padding, WichmannHill& generator)
      : conv_(in_channels, out_channels, kernel_size, 1, padding, true, generator), padding_(padding) {
    conv_.weight = register_parameter("weight", conv_.weight);
    conv_.bias = register_parameter("bias", conv_.bias);
  }
  Tensor forward(const Tensor& x) override {
    return Im2colConv2dFunction::apply(x, conv_.weight, conv_.bias, /*stride=*/1, padding_);
  }

 private:
  Conv2d conv_;
  int padding_;
};

}  // namespace

int main(int argc, char** argv) { return milestone::train_cnn<Im2colConvLayer>(argc, argv); }
