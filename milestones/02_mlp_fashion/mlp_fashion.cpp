// Milestone: an MLP learns Fashion-MNIST.
//
// 60,000 training images of clothing (28×28 gray levels, ten classes: T-shirt, trouser, pullover,
// dress, coat, sandal, shirt, sneaker, bag, ankle boot) read by your module 05, normalised with the
// training set's mean and standard deviation, and served in shuffled batches of 64. The model,
// 784 → 256 → 128 → 10 with ReLUs, is your module 08's; the optimizer your module 07's Adam. After
// training, the logits of the 10,000 test images go to the grader, which computes the accuracy
// against the labels it reads itself.
#include <memory>

#include "fashion.h"

using namespace kiln;

int main(int argc, char** argv) {
  const milestone::Settings settings = milestone::parse(argc, argv);
  // Images (N, 784): one flattened image per row.
  const milestone::FashionData data = milestone::load_fashion(settings, /*flatten=*/true);

  WichmannHill generator(settings.seed);
  nn::Sequential model({std::make_shared<nn::Linear>(784, 256, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(256, 128, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(128, 10, generator)});
  optim::Adam optimizer(model.parameters(), 1e-3f);
  DataLoader loader(data.train, 64, /*shuffle=*/true, settings.seed);
  const auto rows = [](const Tensor& images) { return images; };
  milestone::train(model, optimizer, loader, settings.epochs, rows);
  milestone::test_logits(model, data.test, rows);
  return 0;
}
