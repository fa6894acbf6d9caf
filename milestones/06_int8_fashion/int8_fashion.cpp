// Milestone: the Fashion-MNIST MLP, quantized to int8.
//
// First exactly the mlp_fashion milestone: 784 → 256 → 128 → 10 with ReLUs, your module 08's
// layers, your module 07's Adam (lr 0.001), shuffled batches of 64 from your module 05. Then your
// module 15 turns the trained model into an int8 one:
//   calibration   the float model runs on the first 1,000 training images, 100 at a time, and one
//                 ActivationObserver per Linear layer sees that layer's inputs
//   quantization  each Linear becomes a QuantizedLinear: its weight int8 with one scale per
//                 output, its input quantized with the observer's scale, its bias kept in float
// Both models' logits for the test images go to the grader, as `float` and `int8`, which computes
// their accuracies against the labels it reads itself. The weights' bytes are reported beside each accuracy.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "fashion.h"
#include "kiln/quantization.h"

using namespace kiln;

namespace {

// The MLP with every Linear replaced by a QuantizedLinear, the ReLUs between them as before.
class Int8MLP : public nn::Module {
 public:
  explicit Int8MLP(std::vector<quant::QuantizedLinear> layers) : layers_(std::move(layers)) {}

  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (std::size_t i = 0; i < layers_.size(); ++i) {
      h = layers_[i].forward(h);
      if (i + 1 < layers_.size()) h = relu_(h);
    }
    return h;
  }

 private:
  std::vector<quant::QuantizedLinear> layers_;
  nn::ReLU relu_;
};

// One observer per Linear, fed that layer's inputs while the float model runs on `images`,
// `batch` rows at a time.
std::vector<quant::ActivationObserver> calibrate(nn::Sequential& model, const std::vector<std::shared_ptr<nn::Linear>>& linears,
                                                 const Dataset& images, std::int64_t count, std::int64_t batch) {
  model.eval();
  nn::NoGradGuard no_grad(model);
  std::vector<quant::ActivationObserver> observers(linears.size());
  nn::ReLU relu;
  for (std::int64_t start = 0; start < count; start += batch) {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(std::min(batch, count - start)));
    std::iota(indices.begin(), indices.end(), start);
    Tensor h = collate(images, indices).images;  // (batch, 784)
    for (std::size_t i = 0; i < linears.size(); ++i) {
      observers[i].update(h);
      h = linears[i]->forward(h);
      if (i + 1 < linears.size()) h = relu(h);
    }
  }
  return observers;
}

}  // namespace

int main(int argc, char** argv) {
  const milestone::Settings settings = milestone::parse(argc, argv);
  // Images (N, 784): one flattened image per row.
  const milestone::FashionData data = milestone::load_fashion(settings, /*flatten=*/true);

  WichmannHill generator(settings.seed);
  const std::vector<std::shared_ptr<nn::Linear>> linears = {std::make_shared<nn::Linear>(784, 256, generator),
                                                            std::make_shared<nn::Linear>(256, 128, generator),
                                                            std::make_shared<nn::Linear>(128, 10, generator)};
  nn::Sequential model({linears[0], std::make_shared<nn::ReLU>(), linears[1], std::make_shared<nn::ReLU>(), linears[2]});
  optim::Adam optimizer(model.parameters(), 1e-3f);
  DataLoader loader(data.train, 64, /*shuffle=*/true, settings.seed);
  const auto rows = [](const Tensor& images) { return images; };
  milestone::train(model, optimizer, loader, settings.epochs, rows);
  milestone::test_logits(model, data.test, rows, "float");

  // Calibrate on the first 1,000 training images, then quantize every Linear.
  const std::int64_t calibration_images = std::min<std::int64_t>(1000, data.train.size());
  const std::vector<quant::ActivationObserver> observers = calibrate(model, linears, data.train, calibration_images, 100);
  std::vector<quant::QuantizedLinear> quantized;
  std::int64_t float_weight_bytes = 0, int8_weight_bytes = 0, bias_bytes = 0;
  std::string scales;
  for (std::size_t i = 0; i < linears.size(); ++i) {
    quantized.emplace_back(*linears[i], observers[i].scale());
    float_weight_bytes += quant::float_bytes(linears[i]->weight);
    int8_weight_bytes += quant::weight_bytes(quantized.back().weight);
    bias_bytes += quant::float_bytes(quantized.back().bias);
    scales += (scales.empty() ? "" : ", ") + std::to_string(observers[i].max_abs());
  }
  milestone::note("calibrated on " + std::to_string(calibration_images) + " training images: largest input of each layer " +
                  scales);
  char share[16];
  std::snprintf(share, sizeof share, "%.1f%%", 100.0 * static_cast<double>(int8_weight_bytes) / static_cast<double>(float_weight_bytes));
  milestone::note("weights: float32 " + std::to_string(float_weight_bytes) + " bytes, int8 " +
                  std::to_string(int8_weight_bytes) + " bytes (codes and scales, " + share + " of float32); biases " +
                  std::to_string(bias_bytes) + " bytes of float32 in both");

  milestone::size("float", float_weight_bytes + bias_bytes);
  milestone::size("int8", int8_weight_bytes + bias_bytes);
  Int8MLP int8_model(std::move(quantized));
  milestone::test_logits(int8_model, data.test, rows, "int8");
  return 0;
}
