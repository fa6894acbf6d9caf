// Trusted helpers shared by module 08's checks: the Wichmann-Hill generator and Fisher-Yates
// written out again, models replayed in double precision (forward, cross-entropy, backward, SGD),
// small modules of the test's own, and a scratch folder. None of them calls the module's code,
// except the test modules, which the checks only use inside observations.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/testing.h"
#include "kiln/trusted.h"
#include "kiln/training.h"

namespace kiln::training_testing {

using testing::ScratchDir;
using testing::TrustedWichmannHill;

namespace fs = std::filesystem;
using testing::TensorData;
using Bytes = std::vector<std::uint8_t>;


// Module 05's Fisher-Yates shuffle of 0 .. n-1, written out here.
inline std::vector<std::int64_t> trusted_shuffle(std::int64_t n, TrustedWichmannHill& g) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<std::int64_t>(std::floor(g.next() * static_cast<double>(i + 1)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

// A matrix in double, row-major.
struct Matrix {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double& at(std::int64_t r, std::int64_t c) { return v[static_cast<std::size_t>(r * cols + c)]; }
  double at(std::int64_t r, std::int64_t c) const { return v[static_cast<std::size_t>(r * cols + c)]; }
};

inline Matrix matrix_of(const TensorData& t) {
  Matrix m{t.shape[0], t.shape.size() > 1 ? t.shape[1] : 1, {}};
  for (const float x : t.values) m.v.push_back(x);
  return m;
}

inline TensorData data_of(const Matrix& m, const Shape& shape) {
  std::vector<float> values;
  for (const double x : m.v) values.push_back(static_cast<float>(x));
  return testing::data_of(shape, values);
}

// An MLP in double: layers of (W (in, out), b (out)), a ReLU between two layers.
struct Mlp {
  std::vector<Matrix> weights;
  std::vector<std::vector<double>> biases;
};

inline Mlp mlp_of(const std::vector<TensorData>& parameters) {  // W0, b0, W1, b1, ...
  Mlp m;
  for (std::size_t k = 0; k + 1 < parameters.size(); k += 2) {
    m.weights.push_back(matrix_of(parameters[k]));
    m.biases.emplace_back(parameters[k + 1].values.begin(), parameters[k + 1].values.end());
  }
  return m;
}

// The activations of every layer: acts[0] = x, acts[k + 1] = layer k's output (after the ReLU
// for all but the last).
inline std::vector<Matrix> mlp_forward(const Mlp& m, const Matrix& x) {
  std::vector<Matrix> acts = {x};
  for (std::size_t k = 0; k < m.weights.size(); ++k) {
    const Matrix& in = acts.back();
    const Matrix& w = m.weights[k];
    Matrix out{in.rows, w.cols, std::vector<double>(static_cast<std::size_t>(in.rows * w.cols))};
    for (std::int64_t n = 0; n < in.rows; ++n) {
      for (std::int64_t o = 0; o < w.cols; ++o) {
        double total = m.biases[k][static_cast<std::size_t>(o)];
        for (std::int64_t i = 0; i < w.rows; ++i) total += in.at(n, i) * w.at(i, o);
        out.at(n, o) = k + 1 < m.weights.size() ? std::max(total, 0.0) : total;
      }
    }
    acts.push_back(out);
  }
  return acts;
}

// Mean cross-entropy of logits (N, C) against targets, through the log-sum-exp.
inline double cross_entropy(const Matrix& z, const std::vector<std::int64_t>& targets) {
  double total = 0.0;
  for (std::int64_t n = 0; n < z.rows; ++n) {
    double top = z.at(n, 0);
    for (std::int64_t c = 1; c < z.cols; ++c) top = std::max(top, z.at(n, c));
    double sum = 0.0;
    for (std::int64_t c = 0; c < z.cols; ++c) sum += std::exp(z.at(n, c) - top);
    total += top + std::log(sum) - z.at(n, targets[static_cast<std::size_t>(n)]);
  }
  return total / static_cast<double>(z.rows);
}

// The first maximum of every row.
inline std::vector<std::int64_t> argmax(const Matrix& z) {
  std::vector<std::int64_t> best(static_cast<std::size_t>(z.rows), 0);
  for (std::int64_t n = 0; n < z.rows; ++n) {
    for (std::int64_t c = 1; c < z.cols; ++c) {
      if (z.at(n, c) > z.at(n, best[static_cast<std::size_t>(n)])) best[static_cast<std::size_t>(n)] = c;
    }
  }
  return best;
}

// What an epoch measures, replayed.
struct Measures {
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  std::int64_t examples = 0;
  void add(const Matrix& logits, const std::vector<std::int64_t>& labels) {
    loss_sum += cross_entropy(logits, labels) * static_cast<double>(labels.size());
    const auto predicted = argmax(logits);
    for (std::size_t n = 0; n < labels.size(); ++n) correct += predicted[n] == labels[n] ? 1 : 0;
    examples += static_cast<std::int64_t>(labels.size());
  }
  double loss() const { return examples ? loss_sum / static_cast<double>(examples) : 0.0; }
  double accuracy() const { return examples ? static_cast<double>(correct) / static_cast<double>(examples) : 0.0; }
};

// The rows of x (N, features) at `indices`.
inline Matrix rows_of(const Matrix& x, const std::vector<std::int64_t>& indices) {
  Matrix out{static_cast<std::int64_t>(indices.size()), x.cols, {}};
  for (const std::int64_t i : indices) {
    for (std::int64_t c = 0; c < x.cols; ++c) out.v.push_back(x.at(i, c));
  }
  return out;
}

// One SGD step (lr) on the batch: the gradient of the mean cross-entropy backpropagated through
// the MLP, then p -= lr·g for every weight and bias.
inline void sgd_step(Mlp& m, const Matrix& x, const std::vector<std::int64_t>& labels, double lr) {
  const std::vector<Matrix> acts = mlp_forward(m, x);
  Matrix g = acts.back();  // dL/dz = (softmax - one_hot)/N
  for (std::int64_t n = 0; n < g.rows; ++n) {
    double top = g.at(n, 0);
    for (std::int64_t c = 1; c < g.cols; ++c) top = std::max(top, g.at(n, c));
    double sum = 0.0;
    for (std::int64_t c = 0; c < g.cols; ++c) sum += std::exp(g.at(n, c) - top);
    for (std::int64_t c = 0; c < g.cols; ++c) {
      const double p = std::exp(g.at(n, c) - top) / sum;
      g.at(n, c) = (p - (c == labels[static_cast<std::size_t>(n)] ? 1.0 : 0.0)) / static_cast<double>(g.rows);
    }
  }
  for (std::size_t k = m.weights.size(); k-- > 0;) {
    const Matrix& in = acts[k];
    Matrix& w = m.weights[k];
    // The gradient for the layer below, through this layer's weights (before they change) and
    // the ReLU that produced `in` (its output is > 0 exactly where it passed the gradient).
    Matrix below{in.rows, in.cols, std::vector<double>(in.v.size(), 0.0)};
    for (std::int64_t n = 0; n < in.rows; ++n) {
      for (std::int64_t i = 0; i < w.rows; ++i) {
        double total = 0.0;
        for (std::int64_t o = 0; o < w.cols; ++o) total += g.at(n, o) * w.at(i, o);
        below.at(n, i) = k > 0 && in.at(n, i) <= 0.0 ? 0.0 : total;
      }
    }
    for (std::int64_t i = 0; i < w.rows; ++i) {
      for (std::int64_t o = 0; o < w.cols; ++o) {
        double total = 0.0;
        for (std::int64_t n = 0; n < in.rows; ++n) total += in.at(n, i) * g.at(n, o);
        w.at(i, o) -= lr * total;
      }
    }
    for (std::int64_t o = 0; o < w.cols; ++o) {
      double total = 0.0;
      for (std::int64_t n = 0; n < g.rows; ++n) total += g.at(n, o);
      m.biases[k][static_cast<std::size_t>(o)] -= lr * total;
    }
    g = below;
  }
}

// Writes values into a parameter's storage, in place (inside an observation only).
inline void set_values(Tensor parameter, const TensorData& values) {
  std::copy(values.values.begin(), values.values.end(), parameter.data());
}

// The values of every parameter of a module, in named_parameters() order (inside an observation).
inline std::vector<Tensor> parameter_values(const nn::Module& model) {
  std::vector<Tensor> out;
  for (const auto& [name, parameter] : model.named_parameters()) out.push_back(autograd::detach(parameter).clone());
  return out;
}

// A Sequential of Linear(sizes[0], sizes[1]), ReLU, Linear(sizes[1], sizes[2]), ... whose
// parameters are set to `values` (W0, b0, W1, b1, ...), built from the student's modules.
inline std::shared_ptr<nn::Sequential> make_mlp(const std::vector<std::int64_t>& sizes, const std::vector<TensorData>& values,
                                                std::uint64_t seed = 1) {
  WichmannHill generator(seed);
  std::vector<std::shared_ptr<nn::Module>> layers;
  std::vector<std::shared_ptr<nn::Linear>> linears;
  for (std::size_t k = 0; k + 1 < sizes.size(); ++k) {
    if (k > 0) layers.push_back(std::make_shared<nn::ReLU>());
    linears.push_back(std::make_shared<nn::Linear>(sizes[k], sizes[k + 1], generator));
    layers.push_back(linears.back());
  }
  for (std::size_t k = 0; k < linears.size() && 2 * k + 1 < values.size(); ++k) {
    set_values(linears[k]->weight, values[2 * k]);
    set_values(linears[k]->bias, values[2 * k + 1]);
  }
  return std::make_shared<nn::Sequential>(std::move(layers));
}

// Random parameters for make_mlp: W (in, out) and b (out) per layer, from the run.
inline std::vector<TensorData> random_mlp_values(const std::vector<std::int64_t>& sizes, std::uint64_t stream) {
  std::vector<TensorData> values;
  for (std::size_t k = 0; k + 1 < sizes.size(); ++k) {
    values.push_back(testing::data_of(testing::random_tensor({sizes[k], sizes[k + 1]}, stream++)));
    values.push_back(testing::data_of(testing::random_tensor({sizes[k + 1]}, stream++)));
  }
  return values;
}

// A module of the test's own around `inner`: records, at every forward, whether it was in
// training mode and whether the output required grad (a graph was recorded).
struct Probe : nn::Module {
  explicit Probe(std::shared_ptr<nn::Module> inner) { register_module("inner", std::move(inner)); }
  Tensor forward(const Tensor& x) override {
    Tensor y = (*children()[0].second)(x);
    modes.push_back(training() ? 1 : 0);
    recorded.push_back(y.requires_grad() ? 1 : 0);
    return y;
  }
  std::vector<std::int64_t> modes, recorded;
};


inline Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace kiln::training_testing
