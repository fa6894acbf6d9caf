// The convolutional network of cnn_fashion and cnn_im2col_fashion, and its training: the two
// milestones differ only in the layer that computes a convolution. Given code, like the trainers.
//
// Images (N, 1, 28, 28), normalised with the training set's mean and standard deviation:
//   Conv(1 → 16, 3×3, padding 1) → ReLU → MaxPool 2×2     (N, 16, 14, 14)
//   Conv(16 → 32, 3×3, padding 1) → ReLU → MaxPool 2×2    (N, 32, 7, 7)
//   Flatten → Linear(1568 → 64) → ReLU → Linear(64 → 10)  (N, 10)
// Adam, with the cosine schedule taking the learning rate from 0.002 down to 0 over the run,
// batches of 64. The grader judges the test logits and checks that the filters moved.
#pragma once

#include <memory>

#include "fashion.h"
#include "kiln/conv.h"

namespace kiln::milestone {

// Module 09's MaxPool2d as a module 08 Module.
class MaxPoolLayer : public nn::Module {
 public:
  explicit MaxPoolLayer(int kernel_size) : pool_(kernel_size) {}
  Tensor forward(const Tensor& x) override { return pool_.forward(x); }

 private:
  MaxPool2d pool_;
};

// Trains the network with ConvLayer(in_channels, out_channels, kernel_size, padding, generator)
// as its convolutions (drawn from the generator in the order of the layers, before the Linears),
// then writes the test logits.
template <class ConvLayer>
int train_cnn(int argc, char** argv) {
  const Settings settings = parse(argc, argv);
  // Images (N, 28, 28) as loaded; the model reads them as (B, 1, 28, 28), one channel.
  const FashionData data = load_fashion(settings, /*flatten=*/false);

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
  train(model, optimizer, loader, settings.epochs, images, [&](int step) {
    optimizer.set_learning_rate(optim::cosine_lr(base_lr, 0.0f, step, total_steps));
  });
  test_logits(model, data.test, images);
  return 0;
}

}  // namespace kiln::milestone
