// Given: what `grader bench 20` times. Your model (capstone_model_bytes(), read once with your
// load_model, outside the timing) on a batch of images, four ways:
//
//   plain loops      the layers' formula as three loops a layer, given here (the naive baseline)
//   Eigen (float)    each weighted layer's weights turned into float32 once (codes times their
//                    scales, a sparse layer made dense), then one Eigen product a layer (the
//                    library baseline: blocked for the caches, SIMD)
//   predict          your predict on the model loaded once
//   capstone_predict your timed function, as the grader times it (what it does once, it does on
//                    the first call, before the timing here)
//
// Images: 1,000 (and 1 with --full, the latency of one image), pixels uniform in [0, 1): the time
// of these layers does not depend on the values. Before a kernel is timed its result is checked
// against the plain loops' to 1e-3·(1 + the row's largest |logit|), the capstone's tolerance. Until
// you have a model (`grader milestone capstone_fashion`) or a load_model, nothing can be timed,
// and the bench says which function is not written.
//
// The counts given for each kernel, per call of N images:
//   flops        2·N·(the multiply-adds of an image: in·out per dense layer, nnz per sparse one)
//   bytes        the file's bytes (its weights, read once a call) and the images and logits in
//                float32; Eigen's float32 weights instead of the file's
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/bench.h"
#include "kiln/capstone.h"
#include "kiln/eigen.h"

namespace {

using kiln::Tensor;
using kiln::bench::Role;
using kiln::capstone::Layer;
using kiln::capstone::LayerKind;
using kiln::capstone::Model;

// The layers' formula, three loops a layer, in float32.
Tensor plain_loops(const Model& model, const Tensor& images) {
  const std::int64_t n = images.shape()[0];
  std::vector<float> x = images.contiguous().to_vector();
  std::int64_t width = model.input_width;
  for (const Layer& layer : model.layers) {
    if (layer.kind == LayerKind::relu) {
      for (float& v : x) v = std::max(v, 0.0f);
      continue;
    }
    std::vector<float> y(static_cast<std::size_t>(n * layer.out));
    for (std::int64_t row = 0; row < n; ++row)
      for (std::int64_t j = 0; j < layer.out; ++j) {
        const std::size_t jj = static_cast<std::size_t>(j);
        float sum = 0;
        if (layer.kind == LayerKind::dense) {
          for (std::int64_t i = 0; i < layer.in; ++i)
            sum += layer.weight[static_cast<std::size_t>(j * layer.in + i)] * x[static_cast<std::size_t>(row * width + i)];
        } else if (layer.kind == LayerKind::dense_int8) {
          for (std::int64_t i = 0; i < layer.in; ++i)
            sum += static_cast<float>(layer.code[static_cast<std::size_t>(j * layer.in + i)]) *
                   x[static_cast<std::size_t>(row * width + i)];
          sum *= layer.scale[jj];
        } else {
          for (std::uint32_t e = layer.row_start[jj]; e < layer.row_start[jj + 1]; ++e)
            sum += static_cast<float>(layer.code[e]) * x[static_cast<std::size_t>(row * width + layer.column[e])];
          sum *= layer.scale[jj];
        }
        y[static_cast<std::size_t>(row * layer.out + j)] = sum + layer.bias[jj];
      }
    x = std::move(y);
    width = layer.out;
  }
  return Tensor({n, width}, std::move(x));
}

// A weighted layer as float32 weights (in, out) for Eigen, and its bias; relu as empty weights.
struct FloatLayer {
  kiln::eigen::RowMajorMatrix weight_t;  // (in, out)
  Eigen::RowVectorXf bias;
  bool relu = false;
};

std::vector<FloatLayer> float_layers(const Model& model) {
  std::vector<FloatLayer> out;
  for (const Layer& layer : model.layers) {
    FloatLayer f;
    if (layer.kind == LayerKind::relu) {
      f.relu = true;
      out.push_back(std::move(f));
      continue;
    }
    f.weight_t = kiln::eigen::RowMajorMatrix::Zero(layer.in, layer.out);
    f.bias = Eigen::RowVectorXf::Map(layer.bias.data(), layer.out);
    for (std::int64_t j = 0; j < layer.out; ++j) {
      const std::size_t jj = static_cast<std::size_t>(j);
      if (layer.kind == LayerKind::dense) {
        for (std::int64_t i = 0; i < layer.in; ++i) f.weight_t(i, j) = layer.weight[static_cast<std::size_t>(j * layer.in + i)];
      } else if (layer.kind == LayerKind::dense_int8) {
        for (std::int64_t i = 0; i < layer.in; ++i)
          f.weight_t(i, j) = layer.scale[jj] * static_cast<float>(layer.code[static_cast<std::size_t>(j * layer.in + i)]);
      } else {
        for (std::uint32_t e = layer.row_start[jj]; e < layer.row_start[jj + 1]; ++e)
          f.weight_t(layer.column[e], j) += layer.scale[jj] * static_cast<float>(layer.code[e]);
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

Tensor eigen_predict(const std::vector<FloatLayer>& layers, const Tensor& images) {
  kiln::eigen::RowMajorMatrix x = kiln::eigen::ConstMatrixView(images.data(), images.shape()[0], images.shape()[1]);
  for (const FloatLayer& f : layers) {
    if (f.relu) {
      x = x.cwiseMax(0.0f);
      continue;
    }
    kiln::eigen::RowMajorMatrix y = x * f.weight_t;
    y.rowwise() += f.bias;
    x = std::move(y);
  }
  Tensor out = Tensor::zeros({x.rows(), x.cols()});
  kiln::eigen::MatrixView(out.data(), x.rows(), x.cols()) = x;
  return out;
}

// The model, read on first use (a kernel that cannot read it reports why, as not written).
struct Setup {
  std::int64_t images_count;
  std::optional<Model> model;
  std::vector<FloatLayer> eigen_layers;
  std::optional<Tensor> images, expected;

  const Model& get() {
    if (!model) {
      model = kiln::capstone::load_model(kiln::capstone::capstone_model_bytes());
      eigen_layers = float_layers(*model);
      std::vector<float> pixels = kiln::bench::uniform_values(static_cast<std::size_t>(images_count * model->input_width), 7);
      for (float& p : pixels) p = (p + 1.0f) / 2.0f;
      images = Tensor({images_count, model->input_width}, std::move(pixels));
      expected = plain_loops(*model, *images);
    }
    return *model;
  }

  std::string check(const Tensor& y) const {
    const std::int64_t classes = expected->shape()[1];
    if (y.shape() != expected->shape())
      return "the logits have shape " + kiln::to_string(y.shape()) + ", expected " + kiln::to_string(expected->shape());
    const Tensor got = y.contiguous();
    for (std::int64_t n = 0; n < images_count; ++n) {
      float largest = 0;
      for (std::int64_t j = 0; j < classes; ++j) largest = std::max(largest, std::fabs(expected->data()[n * classes + j]));
      for (std::int64_t j = 0; j < classes; ++j) {
        const float want = expected->data()[n * classes + j], have = got.data()[n * classes + j];
        if (!(std::fabs(have - want) <= 1e-3f * (1 + largest)))
          return "logit [" + std::to_string(n) + ", " + std::to_string(j) + "] is " + std::to_string(have) +
                 " where the plain loops give " + std::to_string(want);
      }
    }
    return "";
  }
};

void add_group(std::int64_t count) {
  auto setup = std::make_shared<Setup>(Setup{.images_count = count});
  const std::string group = "your model on " + std::to_string(count) + (count == 1 ? " image" : " images");
  // Counts from the file's layers, known once the model is read; 0 until then.
  auto counts = [setup, count](bool eigen) {
    double multiply_adds = 0, weight_bytes = 0;
    try {
      const Model& m = setup->get();
      for (const Layer& l : m.layers) {
        if (l.kind == LayerKind::relu) continue;
        const double terms = l.kind == LayerKind::sparse_int8 ? static_cast<double>(l.code.size()) : double(l.in) * double(l.out);
        multiply_adds += terms;
        weight_bytes += eigen ? 4.0 * (double(l.in) * double(l.out) + double(l.out)) : 0;
      }
      if (!eigen) weight_bytes = static_cast<double>(kiln::capstone::capstone_model_bytes().size());
      return std::pair(2.0 * double(count) * multiply_adds,
                       weight_bytes + 4.0 * double(count) * double(m.input_width + m.output_width));
    } catch (...) {
      return std::pair(0.0, 0.0);
    }
  };
  struct Entry {
    const char* name;
    Role role;
    bool eigen;
    std::function<Tensor(Setup&)> call;
  };
  const std::vector<Entry> entries = {
      {"plain loops", Role::naive, false, [](Setup& s) { return plain_loops(s.get(), *s.images); }},
      {"Eigen (float)", Role::library, true,
       [](Setup& s) {
         s.get();
         return eigen_predict(s.eigen_layers, *s.images);
       }},
      {"predict", Role::kernel, false, [](Setup& s) { return kiln::capstone::predict(s.get(), *s.images); }},
      {"capstone_predict", Role::kernel, false,
       [](Setup& s) {
         s.get();
         return kiln::capstone::capstone_predict(*s.images);
       }},
  };
  for (const Entry& e : entries) {
    auto result = std::make_shared<Tensor>();
    const auto [flops, bytes] = counts(e.eigen);
    kiln::bench::Kernel kernel;
    kernel.group = group;
    kernel.name = e.name;
    kernel.role = e.role;
    kernel.flops = flops;
    kernel.bytes = bytes;
    kernel.run = [setup, result, call = e.call] { *result = call(*setup); };
    kernel.validate = [setup, result] { return setup->check(*result); };
    kiln::bench::add(std::move(kernel));
  }
}

}  // namespace

void register_benchmarks(const kiln::bench::Options& options) {
  add_group(1000);
  if (options.full) add_group(1);
}
