// Milestone: an MLP learns Fashion-MNIST.
//
// 60,000 training images of clothing (28×28 gray levels, ten classes: T-shirt, trouser, pullover,
// dress, coat, sandal, shirt, sneaker, bag, ankle boot) read by your module 05, normalised with the
// training set's mean and standard deviation, and served in shuffled batches of 64. The model,
// 784 → 256 → 128 → 10 with ReLUs, is your module 08's; the optimizer your module 07's Adam. After
// training, the logits of the 10,000 test images go to the grader, which computes the accuracy
// against the labels it reads itself.
#include <chrono>
#include <memory>
#include <numeric>

#include "kiln/training.h"
#include "milestone.h"

using namespace kiln;

namespace {

// The first `count` examples of `data` (all of them for -1), as a dataset of their own.
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
  // Images (N, 784): one flattened image per row, pixels x/255.
  Dataset train = first(load_dataset(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz", true),
                        settings.train_count);
  Dataset test = first(load_dataset(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz", true),
                       settings.test_count);
  const auto [mean, std] = mean_and_std(train.images);
  train.images = normalize(train.images, mean, std);
  test.images = normalize(test.images, mean, std);
  milestone::note("training on " + std::to_string(train.size()) + " images, testing on " +
                  std::to_string(test.size()) + " (mean " + std::to_string(mean) + ", std " + std::to_string(std) + ")");

  WichmannHill generator(settings.seed);
  nn::Sequential model({std::make_shared<nn::Linear>(784, 256, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(256, 128, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(128, 10, generator)});
  optim::Adam optimizer(model.parameters(), 1e-3f);
  DataLoader loader(train, 64, /*shuffle=*/true, settings.seed);

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
      optimizer.zero_grad();
      Tensor loss = nn::cross_entropy_loss(model(batch.images), batch.labels);
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

  model.eval();
  nn::NoGradGuard no_grad(model);
  milestone::logits("test", model(test.images));
  return 0;
}
