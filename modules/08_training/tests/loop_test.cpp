// Module 08 checks for the loop: train_epoch against a replay in double precision, evaluate,
// argmax_rows and predict, and XOR.
//
// The replay (training_testing.h) runs the same model in double: forward, the mean cross-entropy
// per batch, its gradient (softmax - one_hot)/B backpropagated through every layer, and SGD's
// p -= lr·g, over the loader's batches in the loader's order (module 05's Fisher-Yates, written
// out again, when it shuffles). A Probe module of the test's own wraps the model and records, at
// every forward, the mode it ran in and whether its output required grad.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/testing.h"
#include "kiln/training.h"
#include "training_testing.h"

namespace kiln {
namespace {

namespace ag = autograd;
namespace tt = training_testing;
using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;

// The names of a Sequential of Linear, ReLU, Linear, ...: "0.weight", "0.bias", "2.weight", ...
std::vector<std::string> mlp_names(std::size_t layers) {
  std::vector<std::string> names;
  for (std::size_t k = 0; k < layers; ++k) {
    names.push_back(std::to_string(2 * k) + ".weight");
    names.push_back(std::to_string(2 * k) + ".bias");
  }
  return names;
}

std::string number(double v) { return fmt::format("{:.9g}", v); }

// The replay's parameters as tensors: W0, b0, W1, b1, ...
std::vector<TensorData> values_of(const tt::Mlp& m) {
  std::vector<TensorData> out;
  for (std::size_t k = 0; k < m.weights.size(); ++k) {
    out.push_back(tt::data_of(m.weights[k], {m.weights[k].rows, m.weights[k].cols}));
    std::vector<float> b;
    for (const double v : m.biases[k]) b.push_back(static_cast<float>(v));
    out.push_back(data_of({static_cast<std::int64_t>(b.size())}, b));
  }
  return out;
}

// Batches of batch_size (the last one smaller) of `order`.
std::vector<std::vector<std::int64_t>> batches_of(const std::vector<std::int64_t>& order, std::size_t batch_size) {
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t at = 0; at < order.size(); at += batch_size)
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(at),
                     order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), at + batch_size)));
  return out;
}

// Reports `failure_id` with the measured and the expected loss, accuracy and examples unless
// they agree. Returns whether they do.
bool expect_measures(const char* file, int line, const std::string& failure_id, const std::string& what, double loss,
                     double accuracy, std::int64_t examples, const tt::Measures& expected) {
  const bool ok = std::fabs(loss - expected.loss()) <= 1e-5 + 1e-5 * std::fabs(expected.loss()) &&
                  std::fabs(accuracy - expected.accuracy()) <= 1e-12 && examples == expected.examples;
  if (!ok) {
    testing::report_failure(file, line, failure_id,
                            {{"case", what},
                             {"loss", number(loss)},
                             {"accuracy", number(accuracy)},
                             {"examples", std::to_string(examples)},
                             {"expected_loss", number(expected.loss())},
                             {"expected_accuracy", number(expected.accuracy())},
                             {"expected_examples", std::to_string(expected.examples)}});
  }
  return ok;
}

}  // namespace

TEST(Training, TrainEpoch) {
  // 7 examples of 3 features and 2 classes, in batches of 3, 3 and 1.
  const Tensor x = random_tensor({7, 3}, 861, -2.0f, 2.0f);
  const std::vector<std::int64_t> labels = testing::random_ints(7, 2, 862);
  const auto shuffle_seed = static_cast<std::uint64_t>(testing::Generator(863).below(1LL << 40));
  struct Case {
    std::string what;
    std::vector<std::int64_t> sizes;
    bool shuffle;
    bool leftover = false;  // every parameter holds a gradient of 5s from before the epoch
  };
  const std::vector<Case> cases = {
      {"Sequential(Linear(3, 2)), SGD lr 0.1, 7 examples in batches of 3 in order", {3, 2}, false},
      {fmt::format("Sequential(Linear(3, 4), ReLU, Linear(4, 2)), SGD lr 0.1, 7 examples in batches of 3 shuffled "
                   "with seed {}",
                   shuffle_seed),
       {3, 4, 2},
       true},
      // zero_grad comes before each batch's backward, so a gradient left from before the epoch
      // (a backward() the caller ran) never reaches a step.
      {"Sequential(Linear(3, 2)), SGD lr 0.1, 7 examples in batches of 3 in order, every parameter holding a "
       "gradient of 5s from before the epoch",
       {3, 2},
       false,
       true},
  };
  std::uint64_t stream = 864;
  for (const Case& c : cases) {
    const std::vector<TensorData> initial = tt::random_mlp_values(c.sizes, stream);
    stream += 10;
    const auto got = observe("train_epoch for one epoch of " + c.what +
                                 ", the model in evaluation mode before: its parameters, the result, the modes seen",
                             [&] {
                               auto probe = std::make_shared<tt::Probe>(tt::make_mlp(c.sizes, initial));
                               probe->eval();
                               optim::SGD sgd(probe->parameters(), 0.1f);
                               if (c.leftover)
                                 for (Tensor& p : probe->parameters()) p.autograd()->grad = Tensor::full(p.shape(), 5.0f);
                               DataLoader loader(Dataset{x.clone(), labels}, 3, c.shuffle, shuffle_seed);
                               const nn::EpochResult r = nn::train_epoch(*probe, sgd, loader);
                               return std::tuple(tt::parameter_values(*probe), r.loss, r.accuracy, r.examples,
                                                 probe->modes);
                             });
    if (!KILN_EXPECT_OK(got, "train_parameters_wrong", {{"case", c.what}, {"parameter", "the model"}})) return;
    KILN_JUDGE {
      // The replay.
      tt::Mlp model = tt::mlp_of(initial);
      const tt::Matrix xs = tt::matrix_of(data_of(x));
      std::vector<std::int64_t> order = {0, 1, 2, 3, 4, 5, 6};
      if (c.shuffle) {
        tt::TrustedWichmannHill g(shuffle_seed);
        order = tt::trusted_shuffle(7, g);
      }
      tt::Measures expected;
      for (const auto& batch : batches_of(order, 3)) {
        std::vector<std::int64_t> batch_labels;
        for (const std::int64_t i : batch) batch_labels.push_back(labels[static_cast<std::size_t>(i)]);
        const tt::Matrix rows = tt::rows_of(xs, batch);
        expected.add(tt::mlp_forward(model, rows).back(), batch_labels);
        tt::sgd_step(model, rows, batch_labels, 0.1);
      }
      const std::vector<std::string> names = mlp_names(c.sizes.size() - 1);
      const auto& [parameters, loss, accuracy, examples, modes] = *got;
      const std::vector<TensorData> replayed = values_of(model);
      if (parameters.size() != replayed.size()) {
        KILN_FAIL("train_parameters_wrong",
                  {{"case", c.what},
                   {"parameter", "the model"},
                   {"difference", "an unknown amount"},
                   {"where", fmt::format("its list of parameters ({} of them, where the replay has {})", parameters.size(),
                                         replayed.size())}},
                  fmt::format("{}, expected {}", testing::counted(parameters.size(), "parameter"), replayed.size()));
        return;
      }
      for (std::size_t k = 0; k < replayed.size(); ++k) {
        if (!testing::expect_close(__FILE__, __LINE__, testing::Observed<TensorData>(got.call() + ": " + names[k], parameters[k]),
                                   replayed[k], 1e-5, "train_parameters_wrong", 1e-4,
                                   {{"case", c.what}, {"parameter", names[k]}}))
          return;
      }
      if (!expect_measures(__FILE__, __LINE__, "train_measures_wrong", c.what, loss, accuracy, examples, expected)) return;
      const bool trained = modes == std::vector<std::int64_t>(3, 1);
      KILN_EXPECT(trained, "train_mode_not_set", {{"case", c.what}},
                  fmt::format("the modes of the 3 forward passes (1 training, 0 evaluation): [{}]", fmt::join(modes, ", ")));
      if (!trained) return;
    }
  }
  // A loader without batches (2 examples, batches of 3, the last one dropped): {0, 0, 0}.
  const Tensor two = random_tensor({2, 3}, 866);
  const std::string none = "Sequential(Linear(3, 2)), SGD lr 0.1, a loader of 2 examples in batches of 3 with drop_last: no batches";
  const auto empty = observe("train_epoch for one epoch of " + none + ": the result", [&] {
    auto model = tt::make_mlp({3, 2}, tt::random_mlp_values({3, 2}, 865));
    optim::SGD sgd(model->parameters(), 0.1f);
    DataLoader loader(Dataset{two.clone(), {labels[0], labels[1]}}, 3, false, 0, true);
    const nn::EpochResult r = nn::train_epoch(*model, sgd, loader);
    return std::tuple(r.loss, r.accuracy, r.examples);
  });
  if (!KILN_EXPECT_OK(empty, "train_measures_wrong", {{"case", none}})) return;
  KILN_JUDGE {
    const auto& [loss, accuracy, examples] = *empty;
    expect_measures(__FILE__, __LINE__, "train_measures_wrong", none, loss, accuracy, examples, tt::Measures{});
  }
}

TEST(Training, Evaluate) {
  const Tensor x = random_tensor({7, 3}, 881, -2.0f, 2.0f);
  const std::vector<std::int64_t> labels = testing::random_ints(7, 2, 882);
  const std::vector<TensorData> initial = tt::random_mlp_values({3, 4, 2}, 883);
  const std::string what = "Sequential(Linear(3, 4), ReLU, Linear(4, 2)), 7 examples in batches of 3";
  const auto got = observe(
      "evaluate of " + what + ", after a backward() that left gradients, the model in training mode before: " +
          "the parameters, the gradients before and after, the result, the modes and graphs seen",
      [&] {
        auto inner = tt::make_mlp({3, 4, 2}, initial);
        auto probe = std::make_shared<tt::Probe>(inner);
        ag::sum((*inner)(x)).backward();
        probe->train();
        std::vector<Tensor> before, after;
        for (const Tensor& p : probe->parameters()) before.push_back(p.grad().clone());
        DataLoader loader(Dataset{x.clone(), labels}, 3);
        const nn::EpochResult r = nn::evaluate(*probe, loader);
        for (const Tensor& p : probe->parameters()) after.push_back(p.grad().clone());
        return std::tuple(tt::parameter_values(*probe), before, after, r.loss, r.accuracy, r.examples, probe->modes,
                          probe->recorded);
      });
  if (!KILN_EXPECT_OK(got, "eval_changed_model", {{"case", what}, {"what", "the model"}})) return;
  KILN_JUDGE {
    const std::vector<std::string> names = mlp_names(2);
    const auto& [parameters, before, after, loss, accuracy, examples, modes, recorded] = *got;
    for (std::size_t k = 0; k < initial.size(); ++k) {
      const bool same_values = k < parameters.size() && parameters[k].values == initial[k].values;
      KILN_EXPECT(same_values, "eval_changed_model", {{"case", what}, {"what", "parameter " + names[k]}});
      if (!same_values) return;
      const bool same_gradient = k < before.size() && k < after.size() && before[k].shape == after[k].shape &&
                                 before[k].values == after[k].values;
      KILN_EXPECT(same_gradient, "eval_changed_model", {{"case", what}, {"what", "the gradient of " + names[k]}});
      if (!same_gradient) return;
    }
    const bool no_graph = recorded == std::vector<std::int64_t>(3, 0);
    KILN_EXPECT(no_graph, "eval_records_graph", {{"case", what}},
                fmt::format("whether each of the 3 forward passes' outputs required grad: [{}]", fmt::join(recorded, ", ")));
    if (!no_graph) return;
    const bool evaluated = modes == std::vector<std::int64_t>(3, 0);
    KILN_EXPECT(evaluated, "eval_mode_not_set", {{"case", what}},
                fmt::format("the modes of the 3 forward passes (1 training, 0 evaluation): [{}]", fmt::join(modes, ", ")));
    if (!evaluated) return;
    const tt::Mlp model = tt::mlp_of(initial);
    const tt::Matrix xs = tt::matrix_of(data_of(x));
    tt::Measures expected;
    for (const auto& batch : batches_of({0, 1, 2, 3, 4, 5, 6}, 3)) {
      std::vector<std::int64_t> batch_labels;
      for (const std::int64_t i : batch) batch_labels.push_back(labels[static_cast<std::size_t>(i)]);
      expected.add(tt::mlp_forward(model, tt::rows_of(xs, batch)).back(), batch_labels);
    }
    if (!expect_measures(__FILE__, __LINE__, "eval_measures_wrong", what, loss, accuracy, examples, expected)) return;
  }
  // A loader without batches (2 examples, batches of 3, the last one dropped): {0, 0, 0}.
  const Tensor two = random_tensor({2, 3}, 884);
  const std::string none = "Sequential(Linear(3, 4), ReLU, Linear(4, 2)), a loader of 2 examples in batches of 3 with "
                           "drop_last: no batches";
  const auto empty = observe("evaluate of " + none + ": the result", [&] {
    DataLoader loader(Dataset{two.clone(), {labels[0], labels[1]}}, 3, false, 0, true);
    const nn::EpochResult r = nn::evaluate(*tt::make_mlp({3, 4, 2}, initial), loader);
    return std::tuple(r.loss, r.accuracy, r.examples);
  });
  if (!KILN_EXPECT_OK(empty, "eval_measures_wrong", {{"case", none}})) return;
  KILN_JUDGE {
    const auto& [loss, accuracy, examples] = *empty;
    expect_measures(__FILE__, __LINE__, "eval_measures_wrong", none, loss, accuracy, examples, tt::Measures{});
  }

  // A shuffling loader: evaluate takes ONE epoch from it (every epoch() call draws a new order),
  // so the pass sees every example once, and the loader's next epoch is its second order.
  const auto shuffle_seed = static_cast<std::uint64_t>(testing::Generator(885).below(1LL << 40));
  const std::string shuffled = fmt::format(
      "Sequential(Linear(3, 4), ReLU, Linear(4, 2)), 7 examples in batches of 3 shuffled with seed {}", shuffle_seed);
  const auto one_epoch = observe("evaluate of " + shuffled + ": the result, then the loader's next_epoch()", [&] {
    DataLoader loader(Dataset{x.clone(), labels}, 3, true, shuffle_seed);
    const nn::EpochResult r = nn::evaluate(*tt::make_mlp({3, 4, 2}, initial), loader);
    std::vector<std::int64_t> next;
    for (const auto& batch : loader.next_epoch()) next.insert(next.end(), batch.begin(), batch.end());
    return std::tuple(r.loss, r.accuracy, r.examples, next);
  });
  if (!KILN_EXPECT_OK(one_epoch, "eval_epoch_per_batch", {{"case", shuffled}})) return;
  KILN_JUDGE {
    const auto& [loss, accuracy, examples, next] = *one_epoch;
    tt::TrustedWichmannHill g(shuffle_seed);
    const std::vector<std::int64_t> first = tt::trusted_shuffle(7, g);
    const std::vector<std::int64_t> second = tt::trusted_shuffle(7, g);
    if (next != second) {
      KILN_FAIL("eval_epoch_per_batch", {{"case", shuffled}},
                fmt::format("{}: the loader's next epoch is [{}], expected its second order [{}] (its first, the one "
                            "evaluate walks, is [{}])",
                            one_epoch.call(), fmt::join(next, ", "), fmt::join(second, ", "), fmt::join(first, ", ")));
      return;
    }
    const tt::Mlp model = tt::mlp_of(initial);
    const tt::Matrix xs = tt::matrix_of(data_of(x));
    tt::Measures expected;
    for (const auto& batch : batches_of(first, 3)) {
      std::vector<std::int64_t> batch_labels;
      for (const std::int64_t i : batch) batch_labels.push_back(labels[static_cast<std::size_t>(i)]);
      expected.add(tt::mlp_forward(model, tt::rows_of(xs, batch)).back(), batch_labels);
    }
    expect_measures(__FILE__, __LINE__, "eval_measures_wrong", shuffled, loss, accuracy, examples, expected);
  }
}

TEST(Training, Predict) {
  const auto show = [](const std::vector<std::int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); };
  // Judging only: called inside KILN_JUDGE.
  const auto expect_classes = [&](const testing::Observed<std::vector<std::int64_t>>& got,
                                  const std::vector<std::int64_t>& expected) {
    if (!KILN_EXPECT_OK(got, "predict_wrong", {{"call", got.call()}, {"got", "an error"}, {"expected", show(expected)}}))
      return false;
    KILN_EXPECT(*got == expected, "predict_wrong", {{"call", got.call()}, {"got", show(*got)}, {"expected", show(expected)}});
    return *got == expected;
  };
  // Hand-worked rows: ties go to the first maximum.
  const Tensor hand({6, 3}, {2, 5, 5, 0, 0, 0, -1, -3, -1, 7, 1, 7, 1, 2, 9, -4, -3, -2});
  const auto hand_classes =
      observe("argmax_rows([[2, 5, 5], [0, 0, 0], [-1, -3, -1], [7, 1, 7], [1, 2, 9], [-4, -3, -2]])",
              [&] { return nn::argmax_rows(hand); });
  KILN_JUDGE {
    if (!expect_classes(hand_classes, {1, 0, 0, 0, 2, 2})) return;
  }
  const Tensor one = random_tensor({1, 1}, 891);
  const auto one_classes = observe("argmax_rows(x) with x (1, 1)", [&] { return nn::argmax_rows(one); });
  KILN_JUDGE {
    if (!expect_classes(one_classes, {0})) return;
  }
  const Tensor wide = random_tensor({33, 7}, 892);
  const auto wide_classes = observe("argmax_rows(x) with x (33, 7) of the run", [&] { return nn::argmax_rows(wide); });
  KILN_JUDGE {
    if (!expect_classes(wide_classes, tt::argmax(tt::matrix_of(data_of(wide))))) return;
  }
  // Logits that are not a matrix: a ShapeError that names the shape.
  for (const Shape& bad : {Shape{2, 2, 2}, Shape{3, 4, 1}, Shape{3}, Shape{2, 0}}) {
    const Tensor t = Tensor::zeros(bad);
    KILN_EXPECT_THROWS(nn::argmax_rows(t), ShapeError, "argmax_shape_unchecked", {to_string(bad)},
                       {{"shape", to_string(bad)}});
  }
  // predict: a Linear(4, 3) of zeros gives all-equal logits, so class 0 for every row; then a
  // 4-5-3 MLP of the run on 33 rows.
  const Tensor x5 = random_tensor({5, 4}, 893);
  const std::vector<TensorData> zeros = {data_of({4, 3}, std::vector<float>(12, 0.0f)), data_of({3}, {0, 0, 0})};
  const auto zero_classes = observe("predict(model, x) with model Sequential(Linear(4, 3)) all zeros, x (5, 4)",
                                    [&] { return nn::predict(*tt::make_mlp({4, 3}, zeros), x5); });
  KILN_JUDGE {
    if (!expect_classes(zero_classes, {0, 0, 0, 0, 0})) return;
  }
  const Tensor x33 = random_tensor({33, 4}, 894);
  const std::vector<TensorData> values = tt::random_mlp_values({4, 5, 3}, 895);
  const auto mlp_classes =
      observe("predict(model, x) with model Sequential(Linear(4, 5), ReLU, Linear(5, 3)) of the run, x (33, 4)",
              [&] { return nn::predict(*tt::make_mlp({4, 5, 3}, values), x33); });
  KILN_JUDGE {
    if (!expect_classes(mlp_classes, tt::argmax(tt::mlp_forward(tt::mlp_of(values), tt::matrix_of(data_of(x33))).back())))
      return;
  }
  // predict runs the model in evaluation mode and records no graph, and leaves it in evaluation mode.
  const std::string model = "Sequential(Linear(4, 5), ReLU, Linear(5, 3)) in training mode";
  const auto how = observe("predict(model, x) with model " + model + ", x (5, 4): the modes and graphs its forward saw, "
                           "and the model's mode after",
                           [&] {
                             auto probe = std::make_shared<tt::Probe>(tt::make_mlp({4, 5, 3}, values));
                             probe->train();
                             (void)nn::predict(*probe, x5);
                             return std::tuple(probe->modes, probe->recorded, probe->training() ? 1 : 0);
                           });
  if (!KILN_EXPECT_OK(how, "predict_not_evaluating", {{"model", model}})) return;
  KILN_JUDGE {
    const auto& [modes, recorded, training_after] = *how;
    const bool evaluated = modes == std::vector<std::int64_t>{0} && recorded == std::vector<std::int64_t>{0} && training_after == 0;
    KILN_EXPECT(evaluated, "predict_not_evaluating", {{"model", model}},
                fmt::format("the forward passes' modes (1 training, 0 evaluation): [{}]; whether their outputs required "
                            "grad: [{}]; the mode after: {}",
                            fmt::join(modes, ", "), fmt::join(recorded, ", "), training_after));
    if (!evaluated) return;
  }
  if (!how.ok()) return;

  // Logits that are a contiguous view at an offset (rows of a larger batch of logits), 3 floats
  // into a storage whose other floats are random numbers in [-8, 8): each row starts at data(),
  // and contiguous() of such a view is the view itself, so rows read from storage_data() are others
  // (3 is not a whole row, so no row read there is a row of x; 8 rows leave no chance to agree).
  const TensorData shifted_values = data_of(random_tensor({8, 5}, 896));
  const Tensor shifted = testing::at_offset(shifted_values, 897, 3);
  // The same call on a fresh tensor of the same values: classes wrong on both are argmax_rows's
  // own mistake (predict_wrong), not the offset's.
  const Tensor fresh = shifted_values.tensor();
  const auto fresh_classes = observe("argmax_rows(x) with x (8, 5) of the run, a fresh tensor",
                                     [&] { return nn::argmax_rows(fresh); });
  const auto shifted_classes =
      observe("argmax_rows(x) with x (8, 5) of the run, a view at offset 3 of a larger storage",
              [&] { return nn::argmax_rows(shifted); });
  KILN_JUDGE {
    const std::vector<std::int64_t> expected = tt::argmax(tt::matrix_of(shifted_values));
    const bool offset_matters = testing::offset_changes(shifted_classes, fresh_classes, std::equal_to<>());
    if (!offset_matters) {
      if (!expect_classes(fresh_classes, expected)) return;
    }
    if (!KILN_EXPECT_OK(shifted_classes, "argmax_offset_ignored", {{"got", "an error"}, {"expected", show(expected)}}))
      return;
    if (!fresh_classes.ok()) {
      KILN_FAIL("argmax_offset_ignored", {{"got", show(*shifted_classes)}, {"expected", show(expected)}},
                fresh_classes.describe_error() + ", but " + shifted_classes.call() + " returned");
      return;
    }
    if (*shifted_classes != expected || offset_matters) {
      KILN_FAIL("argmax_offset_ignored", {{"got", show(*shifted_classes)}, {"expected", show(expected)}},
                shifted_classes.call() + (offset_matters ? "; " + fresh_classes.call() + " gave " + show(*fresh_classes) : ""));
      return;
    }
  }
  if (!shifted_classes.ok() || !fresh_classes.ok()) return;
  // A batch of no rows: logits (0, 3) have columns, so they are no error, and give no classes.
  const Tensor no_rows = Tensor::zeros({0, 3});
  const auto none = observe("argmax_rows(x) with x (0, 3)", [&] { return nn::argmax_rows(no_rows); });
  KILN_JUDGE {
    if (!KILN_EXPECT_OK(none, "argmax_no_rows_wrong", {{"got", "an error"}})) return;
    KILN_EXPECT(none->empty(), "argmax_no_rows_wrong", {{"got", show(*none)}}, none.call());
  }
}

TEST(Training, Xor) {
  // The four corners, each moved by up to 0.1 by the run, with XOR's labels.
  const TensorData jitter = data_of(random_tensor({4, 2}, 901, -0.1f, 0.1f));
  const std::vector<float> corners = {0, 0, 0, 1, 1, 0, 1, 1};
  std::vector<float> points(8);
  for (std::size_t i = 0; i < 8; ++i) points[i] = corners[i] + jitter.values[i];
  const Tensor x({4, 2}, points);
  const std::vector<std::int64_t> labels = {0, 1, 1, 0};
  // The initial weights come from a fixed seed: from some starting points (about one seed in
  // twenty-five) a 2-8-2 MLP settles at 3 of 4 and no number of epochs gets it out; from this one it
  // reaches 100% within 50 epochs for every jitter tried, and the check gives it 150.
  const std::uint64_t seed = 42;
  constexpr int kEpochs = 150;
  const auto got = observe(fmt::format("{} epochs of train_epoch with Adam (lr 0.05) on XOR for "
                                       "Sequential(Linear(2, 8), ReLU, Linear(8, 2)) and for Linear(2, 2), both from "
                                       "WichmannHill({}); then evaluate's accuracy of each",
                                       kEpochs, seed),
                           [&] {
                             WichmannHill g(seed);
                             nn::Sequential mlp({std::make_shared<nn::Linear>(2, 8, g), std::make_shared<nn::ReLU>(),
                                                 std::make_shared<nn::Linear>(8, 2, g)});
                             nn::Linear linear(2, 2, g);
                             DataLoader loader(Dataset{x.clone(), labels}, 4);
                             std::vector<double> accuracies;
                             for (nn::Module* model : {static_cast<nn::Module*>(&mlp), static_cast<nn::Module*>(&linear)}) {
                               optim::Adam adam(model->parameters(), 0.05f);
                               for (int epoch = 0; epoch < kEpochs; ++epoch) nn::train_epoch(*model, adam, loader);
                               accuracies.push_back(nn::evaluate(*model, loader).accuracy);
                             }
                             return accuracies;
                           });
  if (!KILN_EXPECT_OK(got, "xor_not_learned", {{"epochs", std::to_string(kEpochs)}, {"mlp", "unknown (the call threw)"}, {"linear", "unknown"}})) return;
  const double mlp = got->at(0), linear = got->at(1);
  KILN_EXPECT(mlp == 1.0 && linear <= 0.75, "xor_not_learned",
              {{"epochs", std::to_string(kEpochs)}, {"mlp", number(mlp)}, {"linear", number(linear)}});
}

}  // namespace kiln
