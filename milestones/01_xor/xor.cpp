// Milestone: XOR, the function one layer cannot learn.
//
// The four points (0, 0), (0, 1), (1, 0), (1, 1) with labels 0, 1, 1, 0. A single Linear layer
// draws one straight line through the plane, and no line puts (0, 1) and (1, 0) on one side and
// (0, 0) and (1, 1) on the other: it gets at most three of the four right. A hidden layer of eight
// ReLU units bends the boundary, and the MLP gets all four.
//
// Both models are built from your module 08 (Linear, ReLU, Sequential, cross_entropy_loss) and
// trained with your module 07 Adam, full batch, 300 steps each. The grader judges the logits.
#include <chrono>
#include <memory>

#include "kiln/training.h"
#include "milestone.h"

using namespace kiln;

namespace {

// Full-batch training, one epoch of `steps`: every step sees the four points.
void train(const std::string& name, nn::Module& model, const Tensor& x, const std::vector<std::int64_t>& y,
           int steps) {
  milestone::model(name);
  optim::Adam optimizer(model.parameters(), 0.05f);
  const auto started = std::chrono::steady_clock::now();
  double total = 0;
  for (int step = 1; step <= steps; ++step) {
    optimizer.zero_grad();
    Tensor loss = nn::cross_entropy_loss(model(x), y);
    loss.backward();
    optimizer.step();
    total += loss.item();
    milestone::step(1, step, loss.item());
  }
  milestone::epoch_done(1, total / steps,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
}

}  // namespace

int main(int argc, char** argv) {
  const milestone::Settings settings = milestone::parse(argc, argv);
  // The four points, one per row: x (4, 2), labels y (4).
  const Tensor x({4, 2}, {0, 0, 0, 1, 1, 0, 1, 1});
  const std::vector<std::int64_t> y = {0, 1, 1, 0};
  const int steps = 300;

  WichmannHill generator(settings.seed);
  auto mlp = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(2, 8, generator), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(8, 2, generator)});
  nn::Linear linear(2, 2, generator);

  milestone::begin(1, steps);
  milestone::parameters("initial", [&] {
    auto named = mlp->named_parameters();
    for (auto& [name, t] : linear.named_parameters()) named.emplace_back("linear." + name, t.clone());
    for (auto& [name, t] : named) t = t.clone();
    return named;
  }());
  train("mlp", *mlp, x, y, steps);
  train("linear", linear, x, y, steps);
  auto named = mlp->named_parameters();
  for (auto& [name, t] : linear.named_parameters()) named.emplace_back("linear." + name, t);
  milestone::parameters("final", named);

  mlp->eval();
  linear.eval();
  {
    nn::NoGradGuard no_grad_mlp(*mlp);
    nn::NoGradGuard no_grad_linear(linear);
    milestone::logits("mlp", (*mlp)(x));
    milestone::logits("linear", linear(x));
  }
  return 0;
}
