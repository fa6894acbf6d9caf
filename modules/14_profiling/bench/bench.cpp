// Given: the bench of module 14, `grader bench 14`: a profile of the two milestone models, layer by
// layer, at the milestones' batch of 64.
//
//   MLP   Linear(784 → 256) → ReLU → Linear(256 → 128) → ReLU → Linear(128 → 10)       (milestone 02)
//   CNN   Conv2d(1 → 16, 3×3, padding 1) → ReLU → MaxPool 2×2 → Conv2d(16 → 32, 3×3, padding 1)
//         → ReLU → MaxPool 2×2 → Flatten → Linear(1568 → 64) → ReLU → Linear(64 → 10)  (milestone 03)
//
// Each model is built from your layers (modules 08 and 09), as its milestone builds it, and run
// as inference (under an nn::NoGradGuard: no graph is recorded). One group per model, one kernel
// per layer (but Flatten, a view with nothing to time): the layer's forward on the input it gets inside the model, with the FLOPs and bytes
// of your layer_cost, so that the table's GFLOP/s and FLOP/B and the roofline plot are your cost
// model applied to your layers. Every layer's output is checked against a reference computed here
// in double from the same input and parameters before the layer is timed.
//
// While the bench is set up, your profile_forward times each model (2 warm-up passes, 10 timed)
// and your estimate_memory sizes a training step of it; both head the group, in its title. The
// bar chart draws each layer's speed against the slowest layer of its model: the shortest bar is
// where the time goes.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/bench.h"
#include "kiln/profiling.h"
#include "kiln/tensor.h"

namespace {

using kiln::Shape;
using kiln::Tensor;
using kiln::bench::Role;

constexpr std::int64_t kBatch = 64;

// Values uniform in [-1, 1), the same on every machine.
Tensor uniform(const Shape& shape, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> distribution(-1.0f, 1.0f);
  std::int64_t count = 1;
  for (const std::int64_t size : shape) count *= size;
  std::vector<float> values(static_cast<std::size_t>(count));
  for (float& v : values) v = distribution(engine);
  return Tensor(shape, std::move(values));
}

// The elements of a tensor in row-major order, as plain floats.
std::vector<float> values_of(const Tensor& t) {
  const Tensor rows = t.contiguous();
  return std::vector<float>(rows.data(), rows.data() + rows.numel());
}

// The layer's output for input x, computed here in double from the layer's own parameters:
// the reference its forward is checked against.
std::vector<float> reference_forward(const kiln::nn::Module& layer, const Tensor& x) {
  const Shape s = x.shape();
  const std::vector<float> in = values_of(x);
  std::vector<float> out;
  if (const auto* linear = dynamic_cast<const kiln::nn::Linear*>(&layer)) {
    // x (N, in), weight (in, out), bias (out), row-major.
    const std::int64_t n = s[0], fan_in = linear->in_features, fan_out = linear->out_features;
    const std::vector<float> w = values_of(linear->weight), b = values_of(linear->bias);
    out.resize(static_cast<std::size_t>(n * fan_out));
    for (std::int64_t row = 0; row < n; ++row)
      for (std::int64_t o = 0; o < fan_out; ++o) {
        double sum = b[o];
        for (std::int64_t i = 0; i < fan_in; ++i) sum += static_cast<double>(in[row * fan_in + i]) * w[i * fan_out + o];
        out[row * fan_out + o] = static_cast<float>(sum);
      }
  } else if (const auto* conv_layer = dynamic_cast<const kiln::nn::Conv2dLayer*>(&layer)) {
    // x (N, C, H, W), weight (oc, C, k, k), output (N, oc, oh, ow).
    const kiln::Conv2d& conv = conv_layer->conv;
    const std::int64_t n = s[0], channels = s[1], height = s[2], width = s[3];
    const std::int64_t oc_count = conv.out_channels, k = conv.kernel_size, stride = conv.stride, pad = conv.padding;
    const std::int64_t oh_count = (height + 2 * pad - k) / stride + 1, ow_count = (width + 2 * pad - k) / stride + 1;
    const std::vector<float> w = values_of(conv.weight);
    const std::vector<float> b = conv.has_bias() ? values_of(conv.bias) : std::vector<float>();
    out.resize(static_cast<std::size_t>(n * oc_count * oh_count * ow_count));
    for (std::int64_t img = 0; img < n; ++img)
      for (std::int64_t oc = 0; oc < oc_count; ++oc)
        for (std::int64_t oh = 0; oh < oh_count; ++oh)
          for (std::int64_t ow = 0; ow < ow_count; ++ow) {
            double sum = b.empty() ? 0.0 : b[oc];
            for (std::int64_t c = 0; c < channels; ++c)
              for (std::int64_t kh = 0; kh < k; ++kh)
                for (std::int64_t kw = 0; kw < k; ++kw) {
                  const std::int64_t h = oh * stride - pad + kh, w_at = ow * stride - pad + kw;
                  if (h < 0 || h >= height || w_at < 0 || w_at >= width) continue;
                  sum += static_cast<double>(in[((img * channels + c) * height + h) * width + w_at]) *
                         w[((oc * channels + c) * k + kh) * k + kw];
                }
            out[((img * oc_count + oc) * oh_count + oh) * ow_count + ow] = static_cast<float>(sum);
          }
  } else if (const auto* pool_layer = dynamic_cast<const kiln::nn::MaxPool2dLayer*>(&layer)) {
    const std::int64_t n = s[0], channels = s[1], height = s[2], width = s[3];
    const std::int64_t k = pool_layer->pool.kernel_size, stride = pool_layer->pool.stride;
    const std::int64_t oh_count = (height - k) / stride + 1, ow_count = (width - k) / stride + 1;
    for (std::int64_t plane = 0; plane < n * channels; ++plane)
      for (std::int64_t oh = 0; oh < oh_count; ++oh)
        for (std::int64_t ow = 0; ow < ow_count; ++ow) {
          float largest = in[(plane * height + oh * stride) * width + ow * stride];
          for (std::int64_t kh = 0; kh < k; ++kh)
            for (std::int64_t kw = 0; kw < k; ++kw)
              largest = std::max(largest, in[(plane * height + oh * stride + kh) * width + ow * stride + kw]);
          out.push_back(largest);
        }
  } else if (dynamic_cast<const kiln::nn::ReLU*>(&layer)) {
    for (const float v : in) out.push_back(v > 0 ? v : 0.0f);
  } else {
    out = in;  // Flatten: the same values in the same order
  }
  return out;
}

// One layer of a model at its place in the model: the input it gets, and its reference output.
struct Stage {
  std::shared_ptr<kiln::nn::Module> layer;
  Tensor input;
  std::optional<std::vector<float>> expected;  // computed on first use
  Tensor output;

  std::string check() {
    if (!expected) expected = reference_forward(*layer, input);
    const std::vector<float> got = values_of(output);
    if (got.size() != expected->size())
      return fmt::format("{} values, expected {}", got.size(), expected->size());
    return kiln::bench::compare(got.data(), expected->data(), expected->size(), 1e-4);
  }
};

// A milestone model, run as inference, with the input of each of its layers.
struct Model {
  std::shared_ptr<kiln::nn::Sequential> model;
  std::unique_ptr<kiln::nn::NoGradGuard> no_grad;
  Tensor x;
  std::vector<std::shared_ptr<Stage>> stages;

  Model(std::shared_ptr<kiln::nn::Sequential> m, Tensor input) : model(std::move(m)), x(std::move(input)) {
    no_grad = std::make_unique<kiln::nn::NoGradGuard>(*model);
    Tensor h = x;
    for (const auto& [name, layer] : model->children()) {
      auto stage = std::make_shared<Stage>();
      stage->layer = layer;
      stage->input = h;
      h = (*layer)(h);
      stages.push_back(stage);
    }
  }
};

std::string mib(std::int64_t bytes) { return fmt::format("{:.3g} MiB", static_cast<double>(bytes) / (1 << 20)); }

// "your profile: 1.56 ms a pass, 80% in layer 0 · training peak 2.43 MiB, 16% activations": your
// profile_forward (2 warm-up passes, 10 timed) and your estimate_memory of a training step.
std::string your_profile(Model& m) {
  std::string text;
  try {
    const std::vector<kiln::LayerRecord> records = kiln::profile_forward(*m.model, m.x, kiln::ProfileOptions{2, 10});
    double total = 0;
    const kiln::LayerRecord* slowest = nullptr;
    for (const auto& r : records) {
      total += r.seconds_per_call();
      if (!slowest || r.seconds > slowest->seconds) slowest = &r;
    }
    text = fmt::format("your profile: {:.3g} ms a pass", total * 1e3);
    if (slowest && total > 0)
      text += fmt::format(", {:.0f}% in layer {}", 100 * slowest->seconds_per_call() / total, slowest->name);
    const kiln::MemoryEstimate memory = kiln::estimate_memory(*m.model, records);
    const double peak = static_cast<double>(memory.peak_bytes());
    text += fmt::format(" · training peak {}, {:.0f}% activations", mib(memory.peak_bytes()),
                        peak > 0 ? 100 * static_cast<double>(memory.activation_bytes) / peak : 0.0);
  } catch (const kiln::NotImplemented& e) {
    text += (text.empty() ? "" : " · ") + ("not profiled: " + e.function() + " is not written yet");
  } catch (const std::exception& e) {
    text += (text.empty() ? "" : " · ") + std::string("not profiled, it threw: ") + e.what();
  }
  return text;
}

// "0 Linear 784→256", "2 MaxPool2d 2×2", "0 Conv2d 1→16 3×3".
std::string layer_name(const std::string& name, const kiln::nn::Module& layer) {
  const std::string kind = kiln::layer_kind(layer);
  if (const auto* linear = dynamic_cast<const kiln::nn::Linear*>(&layer))
    return fmt::format("{} Linear {}→{}", name, linear->in_features, linear->out_features);
  if (const auto* conv = dynamic_cast<const kiln::nn::Conv2dLayer*>(&layer))
    return fmt::format("{} Conv2d {}→{} {}×{}", name, conv->conv.in_channels, conv->conv.out_channels,
                       conv->conv.kernel_size, conv->conv.kernel_size);
  if (const auto* pool = dynamic_cast<const kiln::nn::MaxPool2dLayer*>(&layer))
    return fmt::format("{} MaxPool2d {}×{}", name, pool->pool.kernel_size, pool->pool.kernel_size);
  return name + " " + kind;
}

// Google Benchmark's names split at their first '/': a title shows U+2215 (∕) in its place.
std::string no_slash(const std::string& text) {
  std::string out;
  for (const char ch : text) out += ch == '/' ? std::string("\u2215") : std::string(1, ch);
  return out;
}

void register_model(const std::string& title, const std::function<std::shared_ptr<kiln::nn::Sequential>()>& build,
                    const Shape& input_shape) {
  std::shared_ptr<Model> m;
  std::string group = title;
  try {
    m = std::make_shared<Model>(build(), uniform(input_shape, 14));
    group = no_slash(title + " · " + your_profile(*m));
  } catch (const kiln::NotImplemented& e) {
    group = title + " · not built: " + e.function() + " is not written yet";
  } catch (const std::exception& e) {
    group = no_slash(title + " · not built, it threw: " + e.what());
  }
  if (!m) {  // the model cannot be built: one entry that says why
    kiln::bench::Kernel none;
    none.group = group;
    none.name = "the model";
    none.run = [] {};
    none.validate = [] { return std::string("the model could not be built"); };
    kiln::bench::add(std::move(none));
    return;
  }
  const auto& children = m->model->children();
  for (std::size_t i = 0; i < m->stages.size(); ++i) {
    const std::shared_ptr<Stage> stage = m->stages[i];
    if (kiln::layer_kind(*stage->layer) == "Flatten") continue;  // a view: nothing to time
    kiln::bench::Kernel kernel;
    kernel.group = group;
    kernel.name = layer_name(children[i].first, *stage->layer);
    kernel.role = Role::kernel;
    try {  // your cost model; a layer_cost not written yet leaves the rates at 0
      const kiln::Cost cost = kiln::layer_cost(*stage->layer, stage->input.shape());
      kernel.flops = static_cast<double>(cost.flops);
      kernel.bytes = static_cast<double>(cost.bytes);
    } catch (const std::exception&) {
    }
    kernel.run = [m, stage] { stage->output = (*stage->layer)(stage->input); };
    kernel.validate = [stage] { return stage->check(); };
    kiln::bench::add(std::move(kernel));
  }
}

}  // namespace

void register_benchmarks(const kiln::bench::Options&) {
  using namespace kiln;
  register_model(
      "MLP 784-256-128-10, batch 64",
      [] {
        WichmannHill g(1);
        return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
            std::make_shared<nn::Linear>(784, 256, g), std::make_shared<nn::ReLU>(),
            std::make_shared<nn::Linear>(256, 128, g), std::make_shared<nn::ReLU>(),
            std::make_shared<nn::Linear>(128, 10, g)});
      },
      {kBatch, 784});
  register_model(
      "CNN 1-16-32 conv, 1568-64-10, batch 64",
      [] {
        WichmannHill g(1);
        return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
            std::make_shared<nn::Conv2dLayer>(1, 16, 3, 1, 1, true, g), std::make_shared<nn::ReLU>(),
            std::make_shared<nn::MaxPool2dLayer>(2), std::make_shared<nn::Conv2dLayer>(16, 32, 3, 1, 1, true, g),
            std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2dLayer>(2), std::make_shared<nn::Flatten>(),
            std::make_shared<nn::Linear>(1568, 64, g), std::make_shared<nn::ReLU>(),
            std::make_shared<nn::Linear>(64, 10, g)});
      },
      {kBatch, 1, 28, 28});
}
