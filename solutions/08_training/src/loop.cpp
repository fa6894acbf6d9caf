// The training loop: one epoch of learning, one pass of measuring, and predictions.
#include <cstdint>
#include <vector>

#include "kiln/training.h"

namespace kiln::nn {

namespace {

// Running sums over the batches of one pass.
struct Tally {
  double loss_sum = 0.0;  // Σ loss·B: each batch's mean loss weighted by its size
  std::int64_t correct = 0;
  std::int64_t examples = 0;

  void add(const Tensor& logits, const Tensor& loss, const std::vector<std::int64_t>& labels) {
    const auto batch_size = static_cast<std::int64_t>(labels.size());
    loss_sum += static_cast<double>(loss.item()) * static_cast<double>(batch_size);
    const std::vector<std::int64_t> predicted = argmax_rows(logits);
    for (std::size_t n = 0; n < labels.size(); ++n) correct += predicted[n] == labels[n] ? 1 : 0;
    examples += batch_size;
  }

  EpochResult result() const {
    if (examples == 0) return {};
    return {loss_sum / static_cast<double>(examples), static_cast<double>(correct) / static_cast<double>(examples),
            examples};
  }
};

}  // namespace

std::vector<std::int64_t> argmax_rows(const Tensor& logits) {
  if (logits.dim() != 2 || logits.shape()[1] < 1) {
    throw ShapeError("argmax_rows needs logits (N, C) with C >= 1, got shape " + to_string(logits.shape()));
  }
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const std::vector<float> values = logits.to_vector();  // row-major: (n, c) at n·classes + c
  std::vector<std::int64_t> best(static_cast<std::size_t>(rows), 0);
  for (std::int64_t n = 0; n < rows; ++n) {
    const float* row = values.data() + n * classes;
    for (std::int64_t c = 1; c < classes; ++c) {
      if (row[c] > row[best[n]]) best[n] = c;
    }
  }
  return best;
}

EpochResult train_epoch(Module& model, optim::Optimizer& optimizer, DataLoader& loader) {
  model.train();
  Tally tally;
  for (const Batch& batch : loader.epoch()) {
    optimizer.zero_grad();
    const Tensor logits = model(batch.images);
    Tensor loss = cross_entropy_loss(logits, batch.labels);
    loss.backward();
    optimizer.step();
    tally.add(logits, loss, batch.labels);
  }
  return tally.result();
}

EpochResult evaluate(Module& model, DataLoader& loader) {
  model.eval();
  const NoGradGuard no_grad(model);
  Tally tally;
  for (const Batch& batch : loader.epoch()) {
    const Tensor logits = model(batch.images);
    tally.add(logits, cross_entropy_loss(logits, batch.labels), batch.labels);
  }
  return tally.result();
}

std::vector<std::int64_t> predict(Module& model, const Tensor& x) {
  model.eval();
  const NoGradGuard no_grad(model);
  return argmax_rows(model(x));
}

}  // namespace kiln::nn
