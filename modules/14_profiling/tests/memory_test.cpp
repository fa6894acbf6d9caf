// Module 14 checks for the memory model. saved_activation_bytes and largest_transient_bytes are
// judged on profile records written here (the milestone MLP and CNN at batch 64, small and
// random-sized versions of them); estimate_memory on models built inside the observed call,
// with the same records. Every answer is an exact count of bytes.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/profiling.h"
#include "kiln/testing.h"
#include "profiling_testing.h"

namespace kiln {
namespace {

using namespace profiling_testing;
using testing::observe;

struct MemoryCase {
  std::string name;
  std::vector<LayerRecord> records;
};

// Linear(3, 5), ReLU, Linear(5, 9) at batch 2, then a layer the profiler does not know on (2, 9):
// every layer is larger than the one before, so the largest transient is the last layer's.
std::vector<LayerRecord> widening_records() {
  std::vector<LayerRecord> records = mlp_records(2, {3, 5, 9});
  records.push_back(record("other", {2, 9}, {2, 9}));
  return records;
}

// A Flatten of (batch, channels, side, side) images, then a Linear to `out` < channels·side²
// features: the Flatten's input and output are both the largest tensors, so its transient,
// 4·2·batch·channels·side², is the largest. For (64, 1, 28, 28) and 256: 401,408 bytes, where the
// Linear alone gives 266,240.
std::vector<LayerRecord> flatten_first_records(std::int64_t batch, std::int64_t channels, std::int64_t side,
                                               std::int64_t out) {
  const std::int64_t flat = channels * side * side;
  return {record("Flatten", {batch, channels, side, side}, {batch, flat}),
          record("Linear", {batch, flat}, {batch, out})};
}

// Linear(100, 10), ReLU, Linear(10, 50) at batch 1: the largest input (the first layer's 100) and
// the largest output (the last layer's 50) belong to different layers, so the largest transient,
// one layer's 4·(100 + 10) = 440 bytes, is not 4·(100 + 50) = 600.
std::vector<LayerRecord> narrow_middle_records() { return mlp_records(1, {100, 10, 50}); }

// 4·(the largest input + the largest output), each over all the layers: the two maxima taken
// from different layers, which is only the transient when one layer holds both.
[[maybe_unused]] std::int64_t mixed_maxima_bytes(const std::vector<LayerRecord>& records) {
  std::int64_t largest_input = 0, largest_output = 0;
  for (const LayerRecord& r : records) {
    largest_input = std::max(largest_input, numel(r.input_shape));
    largest_output = std::max(largest_output, numel(r.output_shape));
  }
  return 4 * (largest_input + largest_output);
}

std::vector<MemoryCase> memory_cases(std::uint64_t stream) {
  const auto r = testing::random_ints(5, 1, 65, stream);
  const std::int64_t flat_side = 2 + r[2] % 7, flat_channels = 1 + r[3] % 4;
  return {{"the MLP 784-256-128-10 at batch 64", mlp_records(64, {784, 256, 128, 10})},
          {"the CNN of the milestone at batch 64", cnn_records(64, 28, 16, 32, 64)},
          {"an MLP 7-5-3 at batch 1", mlp_records(1, {7, 5, 3})},
          {"a CNN on 4×4 images at batch 3", cnn_records(3, 4, 1, 2, 3)},
          {fmt::format("an MLP {}-{}-{} at batch {}", r[1], r[2], r[3], r[0]), mlp_records(r[0], {r[1], r[2], r[3]})},
          {fmt::format("a CNN on {0}×{0} images at batch {1}", 4 * (1 + r[4] % 8), r[0]),
           cnn_records(r[0], 4 * (1 + r[4] % 8), 1 + r[1] % 7, 1 + r[2] % 9, r[3])},
          {"an MLP 3-5-9 at batch 2 and a last layer of another kind", widening_records()},
          {"a Flatten of (64, 1, 28, 28) then Linear(784, 256)", flatten_first_records(64, 1, 28, 256)},
          {fmt::format("a Flatten of ({0}, {1}, {2}, {2}) then Linear({3}, {4})", r[0], flat_channels, flat_side,
                       flat_channels * flat_side * flat_side, 1 + r[4] % (flat_channels * flat_side * flat_side - 1)),
           flatten_first_records(r[0], flat_channels, flat_side, 1 + r[4] % (flat_channels * flat_side * flat_side - 1))},
          {"an MLP 100-10-50 at batch 1, narrow in the middle", narrow_middle_records()},
          {"no layers", {}}};
}

// Which parameters require grad while estimate_memory runs: all of them (as every Module
// registers them), all but the last Linear's bias (frozen with set_requires_grad(false)), or none
// (a NoGradGuard alive during the call). The estimate is of a training step either way.
enum class Grad { all, last_bias_frozen, no_grad_guard };

// The test models of estimate_memory, built inside the observation: layers and their records.
struct ModelCase {
  std::string name;
  std::function<std::int64_t()> parameters;  // the count of parameter floats, worked out by hand (judge only)
  std::function<std::shared_ptr<nn::Sequential>(WichmannHill&)> build;
  std::vector<LayerRecord> records;
  Grad grad = Grad::all;
  std::int64_t trainable = 0;  // the parameter floats that require grad during the call, when not all
};

std::shared_ptr<nn::Sequential> build_mlp(const std::vector<std::int64_t>& widths, WichmannHill& g) {
  std::vector<std::shared_ptr<nn::Module>> layers;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    if (i > 0) layers.push_back(std::make_shared<nn::ReLU>());
    layers.push_back(std::make_shared<nn::Linear>(widths[i], widths[i + 1], g));
  }
  return std::make_shared<nn::Sequential>(layers);
}

std::shared_ptr<nn::Sequential> build_cnn(std::int64_t side, int c1, int c2, std::int64_t hidden, WichmannHill& g) {
  const std::int64_t flat = c2 * (side / 4) * (side / 4);
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2dLayer>(1, c1, 3, 1, 1, true, g), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2dLayer>(2), std::make_shared<nn::Conv2dLayer>(c1, c2, 3, 1, 1, true, g),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2dLayer>(2), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(flat, hidden, g), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(hidden, 10, g)});
}

[[maybe_unused]] std::int64_t mlp_parameters(const std::vector<std::int64_t>& widths) {
  std::int64_t total = 0;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) total += widths[i] * widths[i + 1] + widths[i + 1];
  return total;
}

[[maybe_unused]] std::int64_t cnn_parameters(std::int64_t side, std::int64_t c1, std::int64_t c2, std::int64_t hidden) {
  const std::int64_t flat = c2 * (side / 4) * (side / 4);
  return (c1 * 9 + c1) + (c2 * c1 * 9 + c2) + (flat * hidden + hidden) + (hidden * 10 + 10);
}

}  // namespace

TEST(Profiling, SavedActivations) {
  for (const MemoryCase& c : memory_cases(1430)) {
    const testing::Params params = {{"model", c.name}};
    const auto got = observe(fmt::format("saved_activation_bytes(the records of {})", c.name),
                             [&] { return saved_activation_bytes(c.records); });
    if (!KILN_EXPECT_OK(got, "activations_wrong", params)) return;
    KILN_JUDGE {
      const std::int64_t want = trusted_activations(c.records);
      if (*got != want) {
        KILN_FAIL("activations_wrong", params, fmt::format("got {}, expected {}", testing::counted(*got, "byte"), want));
        return;
      }
    }
  }
  // A ReLU on (65536, 32768) then a Linear(32768, 10): the ReLU keeps 4·2³¹ = 8,589,934,592 bytes,
  // past what an int holds. Records only: nothing allocated.
  const std::vector<LayerRecord> large = {record("ReLU", {65536, 32768}, {65536, 32768}),
                                          record("Linear", {65536, 32768}, {65536, 10})};
  const auto got = observe("saved_activation_bytes(the records of a ReLU on (65536, 32768) then Linear(32768, 10))",
                           [&] { return saved_activation_bytes(large); });
  if (!KILN_EXPECT_OK(got, "activations_narrowed")) return;
  KILN_JUDGE {
    const std::int64_t want = trusted_activations(large);
    if (*got != want)
      KILN_FAIL("activations_narrowed", {}, fmt::format("got {}, expected {}", testing::counted(*got, "byte"), want));
  }
}

TEST(Profiling, Transient) {
  for (const MemoryCase& c : memory_cases(1431)) {
    const testing::Params params = {{"model", c.name}};
    const auto got = observe(fmt::format("largest_transient_bytes(the records of {})", c.name),
                             [&] { return largest_transient_bytes(c.records); });
    if (!KILN_EXPECT_OK(got, "transient_wrong", params)) return;
    KILN_JUDGE {
      const std::int64_t want = trusted_transient(c.records);
      if (*got != want) {
        // The largest over every layer but the Flatten: its gradients left out, as if a view that
        // keeps nothing for backward also had no gradients passing through it.
        std::vector<LayerRecord> without_flatten;
        for (const LayerRecord& r : c.records)
          if (r.kind != "Flatten") without_flatten.push_back(r);
        const bool flatten_skipped = *got == trusted_transient(without_flatten);
        // The largest input of one layer added to the largest output of another.
        const bool maxima_mixed = !flatten_skipped && *got == mixed_maxima_bytes(c.records);
        KILN_FAIL(flatten_skipped ? "transient_flatten_skipped" : maxima_mixed ? "transient_maxima_mixed" : "transient_wrong",
                  params, fmt::format("got {}, expected {}", testing::counted(*got, "byte"), want));
        return;
      }
    }
  }
}

TEST(Profiling, MemoryEstimate) {
  const auto r = testing::random_ints(4, 1, 40, 1432);
  const std::int64_t side = 4 * (1 + r[3] % 4);
  const std::vector<ModelCase> cases = {
      {"the MLP 784-256-128-10 at batch 64", KILN_JUDGE_ONLY([] { return mlp_parameters({784, 256, 128, 10}); }),
       [](WichmannHill& g) { return build_mlp({784, 256, 128, 10}, g); }, mlp_records(64, {784, 256, 128, 10})},
      {"the CNN of the milestone at batch 64", KILN_JUDGE_ONLY([] { return cnn_parameters(28, 16, 32, 64); }),
       [](WichmannHill& g) { return build_cnn(28, 16, 32, 64, g); }, cnn_records(64, 28, 16, 32, 64)},
      {fmt::format("an MLP {}-{}-{}-{} at batch 3", r[0], r[1], r[2], r[3]),
       KILN_JUDGE_ONLY([&r] { return mlp_parameters({r[0], r[1], r[2], r[3]}); }),
       [&r](WichmannHill& g) { return build_mlp({r[0], r[1], r[2], r[3]}, g); }, mlp_records(3, {r[0], r[1], r[2], r[3]})},
      {fmt::format("a CNN on {0}×{0} images with 3 and 5 filters at batch 7", side),
       KILN_JUDGE_ONLY([side] { return cnn_parameters(side, 3, 5, 31); }),
       [side](WichmannHill& g) { return build_cnn(side, 3, 5, 31, g); }, cnn_records(7, side, 3, 5, 31)},
      // 7·5 + 5 + 5·3 + 3 = 58 parameters; the frozen bias holds 3 of them, the guard all.
      {"an MLP 7-5-3 at batch 2 whose last bias is frozen (set_requires_grad(false))",
       KILN_JUDGE_ONLY([] { return mlp_parameters({7, 5, 3}); }),
       [](WichmannHill& g) { return build_mlp({7, 5, 3}, g); }, mlp_records(2, {7, 5, 3}), Grad::last_bias_frozen, 55},
      {"an MLP 7-5-3 at batch 2, estimated while a NoGradGuard lives",
       KILN_JUDGE_ONLY([] { return mlp_parameters({7, 5, 3}); }),
       [](WichmannHill& g) { return build_mlp({7, 5, 3}, g); }, mlp_records(2, {7, 5, 3}), Grad::no_grad_guard, 0}};
  for (const ModelCase& c : cases) {
    const testing::Params params = {{"model", c.name}};
    const auto got = observe(fmt::format("estimate_memory(the model {0}, the records of {0})", c.name), [&] {
      WichmannHill generator(14);
      const std::shared_ptr<nn::Sequential> model = c.build(generator);
      // parameters() hands out handles that share each tensor's autograd bookkeeping, so freezing
      // the handle freezes the model's own last bias.
      if (c.grad == Grad::last_bias_frozen) model->parameters().back().set_requires_grad(false);
      std::optional<nn::NoGradGuard> guard;
      if (c.grad == Grad::no_grad_guard) guard.emplace(*model);
      const MemoryEstimate m = estimate_memory(*model, c.records);
      return std::make_tuple(m.parameter_bytes, m.gradient_bytes, m.activation_bytes, m.transient_bytes);
    });
    if (!KILN_EXPECT_OK(got, "memory_estimate_wrong", params)) return;
    KILN_JUDGE {
      const std::int64_t parameters = c.parameters();
      const auto want = std::make_tuple(4 * parameters, 4 * parameters, trusted_activations(c.records),
                                        trusted_transient(c.records));
      if (*got != want) {
        const auto text = [](const auto& t) {
          return fmt::format("parameters {}, gradients {}, activations {}, transient {}", std::get<0>(t), std::get<1>(t),
                             std::get<2>(t), std::get<3>(t));
        };
        // Gradients counted only for the parameters that require grad during the call.
        const bool follows_requires_grad = c.grad != Grad::all && std::get<1>(*got) == 4 * c.trainable &&
                                           std::get<0>(*got) == std::get<0>(want) &&
                                           std::get<2>(*got) == std::get<2>(want) && std::get<3>(*got) == std::get<3>(want);
        KILN_FAIL(follows_requires_grad ? "gradients_follow_requires_grad" : "memory_estimate_wrong", params,
                  "got " + text(*got) + "\n  expected " + text(want));
        return;
      }
    }
  }
}

}  // namespace kiln
