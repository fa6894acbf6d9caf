// What the Fashion-MNIST trainers share: the data, read and normalised by the student's module
// 05, and the training loop of module 08's pieces, reporting every step to the grader. Given code,
// like the trainers.
#pragma once

#include <chrono>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "kiln/training.h"
#include "milestone.h"

namespace kiln::milestone {

struct FashionData {
  Dataset train, test;
};

// The first `count` examples of `data` (all of them for -1), as a dataset of their own.
inline Dataset first(const Dataset& data, std::int64_t count) {
  if (count < 0 || count >= data.size()) return data;
  std::vector<std::int64_t> indices(static_cast<std::size_t>(count));
  std::iota(indices.begin(), indices.end(), 0);
  Batch b = collate(data, indices);
  return {b.images, b.labels};
}

// The training and test sets of the run's settings, both normalised with the training images'
// mean and standard deviation. Images are (N, 784) with `flatten`, (N, 28, 28) without.
inline FashionData load_fashion(const Settings& settings, bool flatten) {
  const std::string dir = settings.data_dir + "/";
  FashionData d{first(load_dataset(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz", flatten),
                      settings.train_count),
                first(load_dataset(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz", flatten),
                      settings.test_count)};
  const auto [mean, std] = mean_and_std(d.train.images);
  d.train.images = normalize(d.train.images, mean, std);
  d.test.images = normalize(d.test.images, mean, std);
  note("training on " + std::to_string(d.train.size()) + " images, testing on " + std::to_string(d.test.size()) +
       " (mean " + std::to_string(mean) + ", std " + std::to_string(std) + ")");
  return d;
}

// Trains for settings.epochs epochs: per batch zero_grad, forward, cross-entropy, backward, step,
// each step's loss reported; `before_step(k)` runs before the k-th step (0, 1, ...: a learning-rate
// schedule). The parameters are reported before and after. `as_input` turns a batch's images
// into the model's input.
inline void train(nn::Module& model, optim::Optimizer& optimizer, DataLoader& loader, int epochs,
                  const std::function<Tensor(const Tensor&)>& as_input,
                  const std::function<void(int)>& before_step = {}) {
  auto named = model.named_parameters();
  for (auto& [name, t] : named) t = t.clone();
  parameters("initial", named);
  begin(epochs, loader.num_batches());
  int steps_taken = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto started = std::chrono::steady_clock::now();
    model.train();
    double total = 0;
    std::int64_t seen = 0, batch_index = 0;
    for (const Batch& batch : loader.epoch()) {
      if (before_step) before_step(steps_taken);
      ++steps_taken;
      optimizer.zero_grad();
      Tensor loss = nn::cross_entropy_loss(model(as_input(batch.images)), batch.labels);
      loss.backward();
      optimizer.step();
      const double value = loss.item();
      total += value * static_cast<double>(batch.labels.size());
      seen += static_cast<std::int64_t>(batch.labels.size());
      step(epoch, ++batch_index, value);
    }
    epoch_done(epoch, total / static_cast<double>(seen),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  parameters("final", model.named_parameters());
}

// The model's logits for every test image, in the data set's order, computed 1,000 at a time
// without recording a graph, reported as `name`.
inline void test_logits(nn::Module& model, const Dataset& test, const std::function<Tensor(const Tensor&)>& as_input,
                        const std::string& name = "test") {
  model.eval();
  nn::NoGradGuard no_grad(model);
  std::vector<float> values;
  std::int64_t classes = 0;
  for (std::int64_t start = 0; start < test.size(); start += 1000) {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(std::min<std::int64_t>(1000, test.size() - start)));
    std::iota(indices.begin(), indices.end(), start);
    const Tensor part = model(as_input(collate(test, indices).images));
    classes = part.shape()[1];
    const std::vector<float> v = part.to_vector();
    values.insert(values.end(), v.begin(), v.end());
  }
  logits(name, Tensor({test.size(), classes}, values));
}

}  // namespace kiln::milestone
