// Milestone: the capstone's model. This is the trainer the capstone starts from; change it (the
// hidden width, the epochs, pruning with module 16, a second hidden layer) to make your model
// smaller, faster or more accurate, within the rules of kiln/capstone.h.
//
//   training      784 → 128 → 10 with a ReLU, your module 08's layers and module 07's Adam (lr
//                 0.001), shuffled batches of 64, on images normalised with the training set's
//                 mean and standard deviation (module 05)
//   folding       the file's model takes raw pixels x in [0, 1]; with z = (x - mean) / std,
//                   W z + b = (W / std) x + (b - (mean / std)·Σ_i W[:, i])
//                 so the first layer's weights are divided by std and its bias moved
//   quantization  each layer's weights, transposed to (out, in), quantized per output channel
//                 with your module 15 (one scale per output row); biases stay float32
//   the file      module 20's save_model; then your load_model reads it back and your predict
//                 computes the logits of the 10,000 raw test images, which the grader judges
//                 (`capstone`) beside the float model's (`float`)
// The run writes OUT/capstone_model.cpp; a passing full run of your own modules puts it in
// modules/20_capstone/src/capstone_model.cpp, keeping the file it replaces.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "fashion.h"
#include "kiln/capstone.h"
#include "kiln/quantization.h"

using namespace kiln;

namespace {

// A Linear's weights (in, out), folded and transposed, as a dense_int8 layer of the file.
capstone::Layer int8_layer(const Tensor& weight_in_out, const std::vector<float>& bias) {
  const quant::QuantizedWeight q = quant::quantize_per_channel(weight_in_out.transpose(0, 1));
  capstone::Layer layer;
  layer.kind = capstone::LayerKind::dense_int8;
  layer.in = q.cols;
  layer.out = q.rows;
  layer.scale = q.scales;
  layer.code = q.codes;
  layer.bias = bias;
  return layer;
}

}  // namespace

// The hidden layer's width: the first thing to change for a smaller, faster or more accurate model.
constexpr std::int64_t kHidden = 128;

int main(int argc, char** argv) {
  const milestone::Settings settings = milestone::parse(argc, argv);
  // Images (N, 784): one flattened image per row, normalised.
  const milestone::FashionData data = milestone::load_fashion(settings, /*flatten=*/true);

  WichmannHill generator(settings.seed);
  auto hidden = std::make_shared<nn::Linear>(784, kHidden, generator);
  auto output = std::make_shared<nn::Linear>(kHidden, 10, generator);
  nn::Sequential model({hidden, std::make_shared<nn::ReLU>(), output});
  optim::Adam optimizer(model.parameters(), 1e-3f);
  DataLoader loader(data.train, 64, /*shuffle=*/true, settings.seed);
  const auto rows = [](const Tensor& images) { return images; };
  milestone::train(model, optimizer, loader, settings.epochs, rows);
  milestone::test_logits(model, data.test, rows, "float");

  // The raw pixels' statistics, the ones load_fashion normalised with.
  const std::string dir = settings.data_dir + "/";
  const Dataset raw_train = load_dataset(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz", true);
  const auto [pixel_mean, pixel_std] = mean_and_std(milestone::first(raw_train, settings.train_count).images);

  // Fold the normalisation into the first layer: W' = W / std, b' = b - (mean / std)·Σ_i W[i, :].
  const std::vector<float> w = hidden->weight.contiguous().to_vector();  // (784, kHidden)
  std::vector<float> folded(w.size()), folded_bias = hidden->bias.to_vector();
  for (std::int64_t i = 0; i < 784; ++i)
    for (std::int64_t j = 0; j < kHidden; ++j) {
      const float wij = w[static_cast<std::size_t>(i * kHidden + j)];
      folded[static_cast<std::size_t>(i * kHidden + j)] = static_cast<float>(wij / pixel_std);
      folded_bias[static_cast<std::size_t>(j)] -= static_cast<float>(pixel_mean / pixel_std * wij);
    }

  capstone::Model file_model;
  file_model.layers.push_back(int8_layer(Tensor({784, kHidden}, folded), folded_bias));
  file_model.layers.push_back(capstone::Layer{});  // relu
  file_model.layers.push_back(int8_layer(output->weight, output->bias.to_vector()));
  const std::vector<std::uint8_t> bytes = capstone::save_model(file_model);
  milestone::size("float", quant::float_bytes(hidden->weight) + quant::float_bytes(output->weight) +
                               quant::float_bytes(hidden->bias) + quant::float_bytes(output->bias));
  milestone::size("capstone", static_cast<std::int64_t>(bytes.size()));
  milestone::note("the KCAP file is " + std::to_string(bytes.size()) + " bytes (the rules allow 262,144)");

  // Your reader and your predict, on the raw test images: what the grader's checks will see.
  const capstone::Model loaded = capstone::load_model(bytes);
  const Tensor raw_test = data.test.images * static_cast<float>(pixel_std) + static_cast<float>(pixel_mean);
  milestone::logits("capstone", capstone::predict(loaded, raw_test));

  std::ofstream(settings.out_dir + "/capstone_model.cpp") << capstone::model_source(bytes);
  return 0;
}
