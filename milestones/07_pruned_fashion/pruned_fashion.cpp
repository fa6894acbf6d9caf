// Milestone: a Fashion-MNIST MLP, pruned to 90% sparsity and fine-tuned, and factorised to low rank.
//
// The model and its training are milestone 02's exactly: 784 → 256 → 128 → 10 with ReLUs, your
// module 08's layers, your module 07's Adam (lr 0.001), batches of 64 from your module 05's loader,
// so the first steps follow the same golden losses. Then your module 16 compresses it:
//   dense      the trained model, every weight a float: its test logits, and its bytes
//   rank-r     the first layer's (784, 256) weight replaced by your low_rank factors u (784, r) and
//              v (r, 256), x·u·v + b, for r = 8, 16, 32, 64; the other layers as trained
//   pruned     every weight matrix pruned by magnitude to 90% (prune_magnitude, per layer; the
//              biases are kept), evaluated through your CSR: y = (Wᵀ_csr · xᵀ)ᵀ + b
//   finetuned  the pruned model trained on for a third of the epochs (at least one) with a fresh
//              Adam, its learning rate annealed from 0.001 to 0 by your cosine schedule, and your
//              masked_step, so that it stays 90% sparse; evaluated through CSR again
// Each output's weight bytes go to the grader beside its accuracy: 4 per float of a dense matrix,
// csr_bytes for a sparse one, 4·r(784 + 256) for the factors, 4 per bias.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fashion.h"
#include "kiln/compression.h"

using namespace kiln;

namespace {

// A Linear layer kept as CSR: weight (in, out) is stored transposed, Wᵀ (out, in), so that the
// CSR matrix is the left operand: y = x·W + b = (Wᵀ·xᵀ)ᵀ + b for x (N, in), y (N, out).
class CsrLinear : public nn::Module {
 public:
  CsrLinear(const nn::Linear& dense) : weight_t_(compress::to_csr(dense.weight.transpose(0, 1))), bias_(dense.bias) {}
  Tensor forward(const Tensor& x) override {
    const Tensor y_t = compress::csr_matmul(weight_t_, x.transpose(0, 1));  // (out, N)
    return y_t.transpose(0, 1) + bias_;                                    // (N, out), the bias on every row
  }
  std::int64_t bytes() const { return compress::csr_bytes(weight_t_) + 4 * bias_.numel(); }

 private:
  compress::CsrMatrix weight_t_;
  Tensor bias_;
};

// A Linear layer whose weight is two low-rank factors: y = (x·u)·v + b, u (in, r), v (r, out).
class LowRankLinear : public nn::Module {
 public:
  LowRankLinear(const nn::Linear& dense, std::int64_t rank)
      : factors_(compress::low_rank(dense.weight, rank)), bias_(dense.bias) {}
  Tensor forward(const Tensor& x) override {
    return autograd::add(autograd::matmul(autograd::matmul(x, factors_.u), factors_.v), bias_);
  }
  std::int64_t bytes() const { return 4 * (factors_.u.numel() + factors_.v.numel() + bias_.numel()); }

 private:
  compress::LowRank factors_;
  Tensor bias_;
};

std::int64_t dense_bytes(const nn::Linear& layer) { return 4 * (layer.weight.numel() + layer.bias.numel()); }

// One epoch of milestone::train's loop (zero_grad, forward, loss, backward, step, each step's loss
// reported), with `step_of` doing the optimizer step.
void run_epoch(nn::Module& model, DataLoader& loader, int epoch, optim::Optimizer& optimizer,
               const std::function<void()>& step_of) {
  const auto started = std::chrono::steady_clock::now();
  model.train();
  double total = 0;
  std::int64_t seen = 0, batch_index = 0;
  for (const Batch& batch : loader.epoch()) {
    optimizer.zero_grad();
    Tensor loss = nn::cross_entropy_loss(model(batch.images), batch.labels);
    loss.backward();
    step_of();
    const double value = loss.item();
    total += value * static_cast<double>(batch.labels.size());
    seen += static_cast<std::int64_t>(batch.labels.size());
    milestone::step(epoch, ++batch_index, value);
  }
  milestone::epoch_done(epoch, total / static_cast<double>(seen),
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

std::string kilobytes(std::int64_t bytes) { return std::to_string((bytes + 512) / 1024) + " KiB"; }

}  // namespace

int main(int argc, char** argv) {
  const milestone::Settings settings = milestone::parse(argc, argv);
  // Images (N, 784): one flattened image per row.
  const milestone::FashionData data = milestone::load_fashion(settings, /*flatten=*/true);
  const auto rows = [](const Tensor& images) { return images; };

  WichmannHill generator(settings.seed);
  const auto first = std::make_shared<nn::Linear>(784, 256, generator);
  const auto second = std::make_shared<nn::Linear>(256, 128, generator);
  const auto third = std::make_shared<nn::Linear>(128, 10, generator);
  nn::Sequential model({first, std::make_shared<nn::ReLU>(), second, std::make_shared<nn::ReLU>(), third});
  DataLoader loader(data.train, 64, /*shuffle=*/true, settings.seed);
  const int finetune_epochs = std::max(1, settings.epochs / 3);

  // Training, as milestone 02 trains (milestone::train's loop, with the fine-tuning epochs after it).
  auto initial = model.named_parameters();
  for (auto& [name, t] : initial) t = t.clone();
  milestone::parameters("initial", initial);
  milestone::begin(settings.epochs + finetune_epochs, loader.num_batches());
  optim::Adam optimizer(model.parameters(), 1e-3f);
  for (int epoch = 1; epoch <= settings.epochs; ++epoch)
    run_epoch(model, loader, epoch, optimizer, [&] { optimizer.step(); });

  // The dense model.
  const std::int64_t dense_size = dense_bytes(*first) + dense_bytes(*second) + dense_bytes(*third);
  milestone::test_logits(model, data.test, rows, "dense");
  milestone::size("dense", dense_size);
  milestone::note("dense: " + kilobytes(dense_size) + " of float32 weights and biases");

  // Low rank: the first layer (784 · 256 = 200,704 weights) as r·(784 + 256) numbers.
  for (const std::int64_t rank : {8, 16, 32, 64}) {
    const auto factorised = std::make_shared<LowRankLinear>(*first, rank);
    nn::Sequential low_rank_model({factorised, std::make_shared<nn::ReLU>(), second, std::make_shared<nn::ReLU>(), third});
    const std::string name = "rank-" + std::to_string(rank);
    const std::int64_t size = factorised->bytes() + dense_bytes(*second) + dense_bytes(*third);
    milestone::test_logits(low_rank_model, data.test, rows, name);
    milestone::size(name, size);
    milestone::note(name + ": the first layer as (784, " + std::to_string(rank) + ")·(" + std::to_string(rank) +
                    ", 256), " + kilobytes(size) + " in all");
  }

  // Pruning: each weight matrix to 90% sparsity, in place; the biases stay.
  std::vector<Tensor> weights = {first->weight, second->weight, third->weight}, masks;
  for (Tensor& w : weights) masks.push_back(compress::prune_magnitude(w, 0.9));
  const auto sparse_model = [&] {
    std::vector<std::shared_ptr<CsrLinear>> layers = {std::make_shared<CsrLinear>(*first),
                                                      std::make_shared<CsrLinear>(*second),
                                                      std::make_shared<CsrLinear>(*third)};
    const std::int64_t size = layers[0]->bytes() + layers[1]->bytes() + layers[2]->bytes();
    return std::pair(std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
                         layers[0], std::make_shared<nn::ReLU>(), layers[1], std::make_shared<nn::ReLU>(), layers[2]}),
                     size);
  };
  {
    const auto [pruned, size] = sparse_model();
    milestone::test_logits(*pruned, data.test, rows, "pruned");
    milestone::size("pruned", size);
    milestone::note("pruned: 90% of every weight matrix zeroed, " + kilobytes(size) + " as CSR");
  }

  // Fine-tuning, kept pruned by masked_step.
  const float finetune_lr = 1e-3f;
  const int finetune_steps = finetune_epochs * static_cast<int>(loader.num_batches());
  int finetune_step = 0;
  optim::Adam finetune(model.parameters(), finetune_lr);
  for (int epoch = 1; epoch <= finetune_epochs; ++epoch)
    run_epoch(model, loader, settings.epochs + epoch, finetune, [&] {
      finetune.set_learning_rate(optim::cosine_lr(finetune_lr, 0.0f, finetune_step++, finetune_steps));
      compress::masked_step(finetune, weights, masks);
    });
  milestone::parameters("final", model.named_parameters());
  {
    const auto [finetuned, size] = sparse_model();
    milestone::test_logits(*finetuned, data.test, rows, "finetuned");
    milestone::size("finetuned", size);
    milestone::note("finetuned: " + std::to_string(finetune_epochs) + " epoch(s) with the masks, " + kilobytes(size) +
                    " as CSR");
  }
  return 0;
}
