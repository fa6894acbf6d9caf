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
#include <chrono>
#include <memory>
#include <numeric>

#include "kiln/conv.h"
#include "kiln/training.h"
#include "milestone.h"

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

Dataset first(const Dataset& data, std::int64_t count) {
  if (count < 0 || count >= data.size()) return data;
  std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
  std::iota(indices.begin(), indices.end(), 0);
  Batch b = collate(data, indices);
  return {b.images, b.labels};
}

}  // namespace

int main(int argc, char** argv) {
  const milestone::Settings settings = milestone::parse(argc, argv);
  const std::string dir = settings.data_dir + "/";
  // Images (N, 28, 28) as loaded; the loader's batches are reshaped to (B, 1, 28, 28) below.
  Dataset train = first(load_dataset(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz"),
                        settings.train_count);
  Dataset test = first(load_dataset(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz"),
                       settings.test_count);
  const auto [mean, std] = mean_and_std(train.images);
  train.images = normalize(train.images, mean, std);
  test.images = normalize(test.images, mean, std);
  milestone::note("training on " + std::to_string(train.size()) + " images, testing on " + std::to_string(test.size()));

  WichmannHill generator(settings.seed);
  nn::Sequential model({std::make_shared<ConvLayer>(1, 16, 3, 1, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<MaxPoolLayer>(2), std::make_shared<ConvLayer>(16, 32, 3, 1, generator),
                        std::make_shared<nn::ReLU>(), std::make_shared<MaxPoolLayer>(2), std::make_shared<nn::Flatten>(),
                        std::make_shared<nn::Linear>(1568, 64, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(64, 10, generator)});
  const float base_lr = 2e-3f;
  optim::Adam optimizer(model.parameters(), base_lr);
  DataLoader loader(train, 64, /*shuffle=*/true, settings.seed);
  const int total_steps = settings.epochs * static_cast<int>(loader.num_batches());
  int steps_taken = 0;
  auto as_images = [](const Tensor& x) { return x.reshape({x.shape()[0], 1, 28, 28}); };

  auto snapshot = [&] {
    auto named = model.named_parameters();
    for (auto& [name, t] : named) t = t.clone();
    return named;
  };
  milestone::parameters("initial", snapshot());
  milestone::begin(settings.epochs, loader.num_batches());
  for (int epoch = 1; epoch <= settings.epochs; ++epoch) {
    const auto started = std::chrono::steady_clock::now();
    model.train();
    double total = 0;
    std::int64_t seen = 0, step = 0;
    for (const Batch& batch : loader.epoch()) {
      optimizer.set_learning_rate(optim::cosine_lr(base_lr, 0.0f, steps_taken++, total_steps));
      optimizer.zero_grad();
      Tensor loss = nn::cross_entropy_loss(model(as_images(batch.images)), batch.labels);
      loss.backward();
      optimizer.step();
      const double value = loss.item();
      total += value * static_cast<double>(batch.labels.size());
      seen += static_cast<std::int64_t>(batch.labels.size());
      milestone::step(epoch, ++step, value);
    }
    milestone::epoch_done(epoch, total / static_cast<double>(seen),
                          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  milestone::parameters("final", model.named_parameters());

  // The test set in batches of 1,000: the logits of every image, in the data set's order.
  model.eval();
  nn::NoGradGuard no_grad(model);
  std::vector<float> logits;
  for (std::int64_t start = 0; start < test.size(); start += 1000) {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(std::min<std::int64_t>(1000, test.size() - start)));
    std::iota(indices.begin(), indices.end(), start);
    const std::vector<float> part = model(as_images(collate(test, indices).images)).to_vector();
    logits.insert(logits.end(), part.begin(), part.end());
  }
  milestone::logits("test", Tensor({test.size(), 10}, logits));
  return 0;
}
