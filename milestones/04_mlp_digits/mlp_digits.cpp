// Milestone: an MLP learns handwritten digits.
//
// scikit-learn's digits (Debian's python3-sklearn): 1,797 handwritten digits of 8×8 pixels, gray
// levels 0 to 16, one per line of digits.csv.gz as 64 pixel values and the label. Every fifth
// image (line 4, 9, 14, ... counting from 0) is held out for testing: 359 test images, 1,438 for
// training. The pixels become p/16, normalised with the training images' mean and standard
// deviation; the model, 64 → 256 → 128 → 10 with ReLUs, is your module 08's, trained with your
// Adam and your cosine schedule (from 0.002 down to 0) for the epochs the run asks (50, or 5 in a
// quick run) of shuffled batches of 32.
#include <fstream>
#include <memory>
#include <sstream>

#include "fashion.h"

using namespace kiln;

namespace {

// The images as rows of 64 values p/16 and their labels, held-out lines apart.
milestone::FashionData read_digits(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> compressed{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::vector<std::uint8_t> bytes = gunzip(compressed, path);  // module 05's given gunzip
  std::istringstream text(std::string(bytes.begin(), bytes.end()));
  std::vector<float> train_pixels, test_pixels;
  std::vector<std::int64_t> train_labels, test_labels;
  std::string line;
  for (std::int64_t row = 0; std::getline(text, line); ++row) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::vector<float> values;
    for (std::string field; std::getline(fields, field, ',');) values.push_back(std::stof(field));
    if (values.size() != 65) throw std::runtime_error(path + ": line " + std::to_string(row + 1) + " does not hold 65 values");
    const bool held_out = row % 5 == 4;
    auto& pixels = held_out ? test_pixels : train_pixels;
    for (int p = 0; p < 64; ++p) pixels.push_back(values[p] / 16.0f);
    (held_out ? test_labels : train_labels).push_back(static_cast<std::int64_t>(values[64]));
  }
  // Images (N, 64): one 8×8 image per row, row-major.
  return {{Tensor({static_cast<std::int64_t>(train_labels.size()), 64}, train_pixels), train_labels},
          {Tensor({static_cast<std::int64_t>(test_labels.size()), 64}, test_pixels), test_labels}};
}

}  // namespace

int main(int argc, char** argv) {
  const milestone::Settings settings = milestone::parse(argc, argv);
  milestone::FashionData data = read_digits(settings.data_dir + "/digits.csv.gz");
  const auto [mean, std] = mean_and_std(data.train.images);
  data.train.images = normalize(data.train.images, mean, std);
  data.test.images = normalize(data.test.images, mean, std);
  milestone::note("training on " + std::to_string(data.train.size()) + " digits, testing on " +
                  std::to_string(data.test.size()));

  WichmannHill generator(settings.seed);
  nn::Sequential model({std::make_shared<nn::Linear>(64, 256, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(256, 128, generator), std::make_shared<nn::ReLU>(),
                        std::make_shared<nn::Linear>(128, 10, generator)});
  const float base_lr = 2e-3f;
  optim::Adam optimizer(model.parameters(), base_lr);
  DataLoader loader(data.train, 32, /*shuffle=*/true, settings.seed);
  const int total_steps = settings.epochs * static_cast<int>(loader.num_batches());
  const auto rows = [](const Tensor& images) { return images; };
  milestone::train(model, optimizer, loader, settings.epochs, rows, [&](int step) {
    optimizer.set_learning_rate(optim::cosine_lr(base_lr, 0.0f, step, total_steps));
  });
  milestone::test_logits(model, data.test, rows);
  return 0;
}
