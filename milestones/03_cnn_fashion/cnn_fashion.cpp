// Milestone: a convolutional network learns Fashion-MNIST, on your module 09's Conv2d.
//
// Images (N, 1, 28, 28), normalised with the training set's mean and standard deviation:
//   Conv2d(1 → 16, 3×3, padding 1) → ReLU → MaxPool 2×2     (N, 16, 14, 14)
//   Conv2d(16 → 32, 3×3, padding 1) → ReLU → MaxPool 2×2    (N, 32, 7, 7)
//   Flatten → Linear(1568 → 64) → ReLU → Linear(64 → 10)    (N, 10)
// Your Conv2d and MaxPool2d (module 09) sit inside module 08 Modules, so that the model has
// named parameters and your Adam (module 07) updates them, with your cosine schedule taking the
// learning rate from 0.002 down to 0 over the run. The grader judges the test logits and checks
// that the filters moved.
#include <memory>

#include "fashion.h"
#include "kiln/conv.h"

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
  nn::Sequential model({std::make_shared<ConvLayer>(1, 16, 3, 1, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<MaxPoolLayer>(2), std::make_shared<ConvLayer>(16, 32, 3, 1, generator),
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
