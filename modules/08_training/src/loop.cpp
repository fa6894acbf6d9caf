// The training loop: one epoch of learning, one pass of measuring, and predictions.
//
// train_epoch and evaluate measure the same three things; a small struct that adds up each
// batch (Σ loss·B, the number correct, the number of examples) keeps them in one place.
#include <cstdint>
#include <vector>

#include "kiln/training.h"

namespace kiln::nn {

std::vector<std::int64_t> argmax_rows(const Tensor& logits) {
  // ShapeError naming the shape unless logits is 2-D with at least one column. Read the values
  // with to_vector() (row-major: (n, c) at n·C + c). For each row keep the first maximum: replace
  // the best so far only when a value is strictly greater (> , not >=), so ties go to the lowest
  // index. logits may be a view, at an offset too: read them through to_vector(), never
  // storage_data(). Logits (0, C) with C >= 1, a batch of no rows, give no classes.
  throw kiln::NotImplemented();
}

EpochResult train_epoch(Module& model, optim::Optimizer& optimizer, DataLoader& loader) {
  // model.train(); then for (const Batch& batch : loader.epoch()):
  //   optimizer.zero_grad();  logits = model(batch.images);
  //   loss = cross_entropy_loss(logits, batch.labels);  loss.backward();  optimizer.step();
  //   add loss.item()·B to the loss sum (B = batch.labels.size()), count the rows whose
  //   argmax is the label, add B to the examples.
  // Return {loss sum / examples, correct / examples (in double: an integer division gives 0),
  // examples}, or {0, 0, 0} without batches. The last batch may be smaller: weighting each
  // batch's mean by its B makes the result the mean per example.
  throw kiln::NotImplemented();
}

EpochResult evaluate(Module& model, DataLoader& loader) {
  // model.eval(); a NoGradGuard for the whole pass (const NoGradGuard no_grad(model);); then
  // every batch of ONE loader.epoch() as in train_epoch (for (const Batch& batch :
  // loader.epoch())), without zero_grad, backward or step. Every epoch() call starts a new
  // epoch: a shuffling loader draws a new order each time.
  throw kiln::NotImplemented();
}

std::vector<std::int64_t> predict(Module& model, const Tensor& x) {
  // model.eval(); a NoGradGuard; argmax_rows(model(x)).
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
