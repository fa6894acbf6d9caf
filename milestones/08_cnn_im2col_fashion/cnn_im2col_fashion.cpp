// Milestone: cnn_fashion's network again, its convolutions computed by your module 17 im2col.
//
// Images (N, 1, 28, 28), normalised with the training set's mean and standard deviation:
//   Conv2d(1 → 16, 3×3, padding 1) → ReLU → MaxPool 2×2     (N, 16, 14, 14)
//   Conv2d(16 → 32, 3×3, padding 1) → ReLU → MaxPool 2×2    (N, 32, 7, 7)
//   Flatten → Linear(1568 → 64) → ReLU → Linear(64 → 10)    (N, 10)
// The same layers, drawn from the same generator in the same order, as cnn_fashion: the weights
// are module 09's Conv2d's, so training starts where cnn_fashion's does and its first losses
// match the same golden values. Only the convolution's arithmetic changes: each layer's forward
// is Im2colConv2dFunction (module 17), one matrix product over the patch matrix, and its backward
// two more and a col2im, where module 09 walks every window. Compare the two runs' images a
// second in the trainers' output, or on the milestones page.
#include <memory>

#include "fashion.h"
#include "kiln/acceleration.h"
#include "kiln/conv.h"

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

class MaxPoolLayer : public nn::Module {
 public:
  explicit MaxPoolLayer(int kernel_size) : pool_(kernel_size) {}
  Tensor forward(const Tensor& x) override { return pool_.forward(x); }

 private:
  MaxPool2d pool_;
};

}  // namespace

int main(int argc, char** argv) {
  const milestone::Settings settings = milestone::parse(argc, argv);
  // Images (N, 28, 28) as loaded; the model reads them as (B, 1, 28, 28), one channel.
  const milestone::FashionData data = milestone::load_fashion(settings, /*flatten=*/false);

  WichmannHill generator(settings.seed);
  nn::Sequential model({std::make_shared<Im2colConvLayer>(1, 16, 3, 1, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<MaxPoolLayer>(2), std::make_shared<Im2colConvLayer>(16, 32, 3, 1, generator),
                        std::make_shared<nn::ReLU>(), std::make_shared<MaxPoolLayer>(2), std::make_shared<nn::Flatten>(),
                        std::make_shared<nn::Linear>(1568, 64, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(64, 10, generator)});
  const float base_lr = 2e-3f;
  optim::Adam optimizer(model.parameters(), base_lr);
  DataLoader loader(data.train, 64, /*shuffle=*/true, settings.seed);
  const int total_steps = settings.epochs * static_cast<int>(loader.num_batches());
  const auto images = [](const Tensor& x) { return x.reshape({x.shape()[0], 1, 28, 28}); };
  milestone::train(model, optimizer, loader, settings.epochs, images, [&](int step) {
    optimizer.set_learning_rate(optim::cosine_lr(base_lr, 0.0f, step, total_steps));
  });
  milestone::test_logits(model, data.test, images);
  return 0;
}
