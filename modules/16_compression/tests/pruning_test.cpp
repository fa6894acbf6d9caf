// Module 16 checks for pruning: the mask, pruning in place, and the masked optimizer step.
//
// The expected masks come from a trusted ordering written here (a stable sort of the flat
// indices by |w| in double); the expected optimizer steps from SGD's update rule replayed in
// double. Every value taken from the module's functions passes through observe(); parameters,
// optimizers and gradients that a call changes are built inside its lambda.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/autograd.h"
#include "kiln/compression.h"
#include "compression_testing.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using compress::magnitude_mask;
using compress::masked_step;
using compress::prune_magnitude;
using testing::data_of;
using testing::observe;
using testing::random_ints;
using testing::random_tensor;
using testing::TensorData;

using compression_testing::transposed;

// The trusted mask: llround(sparsity·n) entries of smallest |w| get 0, ties to the lower flat index.
std::vector<float> expected_mask(const std::vector<float>& w, double sparsity) {
  const auto n = static_cast<std::int64_t>(w.size());
  const std::int64_t count = std::llround(sparsity * static_cast<double>(n));
  std::vector<std::int64_t> order(w.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    const double wa = std::fabs(static_cast<double>(w[a])), wb = std::fabs(static_cast<double>(w[b]));
    return wa < wb || (wa == wb && a < b);
  });
  std::vector<float> mask(w.size(), 1.0f);
  for (std::int64_t k = 0; k < count; ++k) mask[order[k]] = 0.0f;
  return mask;
}

// Judges an observed mask of `weight` (its values in row-major order) against the trusted one:
// first the count and the form, then that no kept |w| is below a pruned one, then the tie order.
// Returns false after reporting. Judging only: called inside KILN_JUDGE.
bool expect_mask(const char* file, int line, const std::string& name, const Shape& shape,
                 const std::vector<float>& w, double sparsity, const testing::Observed<TensorData>& mask) {
  const std::int64_t count = std::llround(sparsity * static_cast<double>(w.size()));
  const testing::Params params = {{"case", name}, {"sparsity", fmt::format("{}", sparsity)},
                                  {"entries", testing::counted(count, "entry", "entries")}};
  if (!testing::expect_ok(file, line, mask, "prune_count_wrong", params)) return false;
  if (mask->shape != shape) {
    testing::report_failure(file, line, "prune_count_wrong", params,
                            mask.call() + " has shape " + to_string(mask->shape) + ", expected " + to_string(shape));
    return false;
  }
  std::int64_t pruned = 0;
  for (const float m : mask->values) {
    if (m != 0.0f && m != 1.0f) {
      testing::report_failure(file, line, "prune_count_wrong", params,
                              fmt::format("{} holds {}, where a mask holds only 0 and 1", mask.call(), m));
      return false;
    }
    pruned += m == 0.0f;
  }
  if (pruned != count) {
    testing::report_failure(file, line, "prune_count_wrong", params,
                            fmt::format("{} prunes {} of {}", mask.call(), pruned, testing::counted(w.size(), "entry", "entries")));
    return false;
  }
  double largest_pruned = -1.0, smallest_kept = INFINITY;
  std::size_t at_pruned = 0, at_kept = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    const double magnitude = std::fabs(static_cast<double>(w[k]));
    if (mask->values[k] == 0.0f && magnitude > largest_pruned) largest_pruned = magnitude, at_pruned = k;
    if (mask->values[k] == 1.0f && magnitude < smallest_kept) smallest_kept = magnitude, at_kept = k;
  }
  if (largest_pruned > smallest_kept) {
    testing::report_failure(file, line, "prune_wrong_entries", params,
                            fmt::format("{} prunes flat index {} (|w| = {}) but keeps flat index {} (|w| = {})",
                                        mask.call(), at_pruned, largest_pruned, at_kept, smallest_kept));
    return false;
  }
  const std::vector<float> expected = expected_mask(w, sparsity);
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (mask->values[k] != expected[k]) {
      testing::report_failure(file, line, "prune_ties_wrong", params,
                              fmt::format("{}: flat index {} (|w| = {}) is {}, expected {}", mask.call(), k,
                                          std::fabs(w[k]), mask->values[k] == 0.0f ? "pruned" : "kept",
                                          expected[k] == 0.0f ? "pruned" : "kept"));
      return false;
    }
  }
  return true;
}

// Observes magnitude_mask(weight, sparsity), named `name` in the report, and judges it.
bool check_mask(const char* file, int line, const std::string& name, const Tensor& weight, double sparsity) {
  const auto mask = observe(fmt::format("magnitude_mask({}, {})", name, sparsity),
                            [&] { return magnitude_mask(weight, sparsity); });
  KILN_JUDGE { return expect_mask(file, line, name, weight.shape(), data_of(weight).values, sparsity, mask); }
  return mask.ok();
}

#define CHECK_MASK(name, weight, sparsity) \
  if (!check_mask(__FILE__, __LINE__, name, weight, sparsity)) return

// A tensor of the run whose values are few multiples of 0.25 in [-1, 1]: many equal magnitudes.
Tensor tied_tensor(const Shape& shape, std::uint64_t stream) {
  std::vector<float> values;
  for (const std::int64_t q : random_ints(static_cast<std::size_t>(numel(shape)), -4, 5, stream))
    values.push_back(0.25f * static_cast<float>(q));
  return Tensor(shape, values);
}

}  // namespace

TEST(Compression, MagnitudeMask) {
  // Hand-worked: 0.5 of 7 entries is 3.5, which rounds to 4. The smallest |w| are 0 (index 2),
  // 0.5 (5), -1 (1) and -2 (4): the mask is [1, 0, 0, 1, 0, 0, 1].
  const Tensor seven({1, 7}, {3, -1, 0, 4, -2, 0.5f, 6});
  CHECK_MASK("[[3, -1, 0, 4, -2, 0.5, 6]]", seven, 0.5);
  // Ties: |w| = 0.5 at flat indices 0, 1, 2 and 5; 0.5 of 6 is 3, so 0, 1 and 2 are pruned.
  const Tensor tied({2, 3}, {0.5f, -0.5f, 0.5f, 2, -3, 0.5f});
  CHECK_MASK("[[0.5, -0.5, 0.5], [2, -3, 0.5]]", tied, 0.5);
  // Nothing pruned, everything pruned, and a single entry.
  CHECK_MASK("a (3, 7) weight", random_tensor({3, 7}, 1601), 0.0);
  CHECK_MASK("a (3, 7) weight", random_tensor({3, 7}, 1601), 1.0);
  CHECK_MASK("a (1, 1) weight", random_tensor({1, 1}, 1602), 1.0);
  CHECK_MASK("a (1, 1) weight", random_tensor({1, 1}, 1602), 0.4);
  // Sizes of the run's values: 0.9 of 21, 0.5 of 1023, 0.3 of 33 (9.9 rounds to 10).
  CHECK_MASK("a (3, 7) weight", random_tensor({3, 7}, 1603), 0.9);
  CHECK_MASK("a (31, 33) weight", random_tensor({31, 33}, 1604), 0.5);
  CHECK_MASK("a (33) weight", random_tensor({33}, 1605), 0.3);
  // Products a hair under a half in double, exactly a half in float: 0.7 of 45 is
  // 31.499999999999996 (31 pruned), 0.58 of 25 is 14.499999999999998 (14 pruned).
  CHECK_MASK("a (5, 9) weight", random_tensor({5, 9}, 1611), 0.7);
  CHECK_MASK("a (25) weight", random_tensor({25}, 1612), 0.58);
  // The largest double below a half, sparsity·n = 0.49999999999999994: llround gives 0 and prunes
  // nothing, where adding 0.5 and truncating rounds the sum up to 1.0 and prunes one. 1 entry at
  // 0.49999999999999994, 2 at 0.24999999999999997 (the same product), then 1 at 0.5 itself, 1.
  const double below_half = std::nextafter(0.5, 0.0), below_quarter = std::nextafter(0.25, 0.0);
  CHECK_MASK("a (1, 1) weight", random_tensor({1, 1}, 1613), below_half);
  CHECK_MASK("a (2) weight", random_tensor({2}, 1614), below_quarter);
  CHECK_MASK("a (1, 1) weight", random_tensor({1, 1}, 1613), 0.5);
  // Magnitudes at float's ends, ranked by |w| itself: their squares would underflow to 0 or
  // overflow to inf and tie. 0.25 of 8 prunes 1e-40 and 3e-30; 0.75 keeps -1e25 and 1e20.
  const Tensor extremes({2, 4}, {2e-23f, 1e-23f, 3e-30f, 1e20f, 3e19f, -1e25f, 1e-40f, 4e19f});
  CHECK_MASK("[[2e-23, 1e-23, 3e-30, 1e20], [3e19, -1e25, 1e-40, 4e19]]", extremes, 0.25);
  CHECK_MASK("[[2e-23, 1e-23, 3e-30, 1e20], [3e19, -1e25, 1e-40, 4e19]]", extremes, 0.75);
  // A transposed view: flat indices count in the view's own row-major order.
  const Tensor view = transposed(random_tensor({3, 7}, 1606));
  CHECK_MASK("a transposed (7, 3) view", view, 0.6);
  // Many equal magnitudes (multiples of 0.25, zeros among them), and a sparsity drawn by the run.
  const double sparsity = static_cast<double>(random_ints(1, 1, 20, 1607)[0]) / 20.0;
  CHECK_MASK("a (31, 33) weight of tied magnitudes", tied_tensor({31, 33}, 1608), sparsity);
  CHECK_MASK("a (7, 3) weight of tied magnitudes", tied_tensor({7, 3}, 1609), 0.5);
  // A contiguous view at an offset: a (3, 5) weight of the run 5 floats into a storage of other
  // numbers. Its entries start at data(), not at the storage's first float.
  const Tensor shifted = testing::at_offset(data_of(random_tensor({3, 5}, 1615)), 1616);
  const std::vector<float> shifted_values = data_of(shifted).values;
  // The same call on a fresh tensor of the same values: only a mask that differs between the two
  // is the offset's fault; one wrong on both is magnitude_mask's own.
  const auto fresh_mask = observe("magnitude_mask(the same (3, 5) values in a fresh tensor, 0.4)",
                                  [&] { return magnitude_mask(Tensor({3, 5}, shifted_values), 0.4); });
  const auto offset_mask = observe("magnitude_mask(a (3, 5) contiguous view at offset 5, 0.4)",
                                   [&] { return magnitude_mask(shifted, 0.4); });
  KILN_JUDGE {
    const auto same = [](const TensorData& a, const TensorData& b) { return testing::compare(a, b, 0.0).close; };
    const auto text = [](const TensorData& mask) { return testing::list(mask.values, 15); };
    if (testing::offset_changes(offset_mask, fresh_mask, same)) {
      KILN_FAIL("mask_offset_ignored", {},
                testing::offset_detail(offset_mask, fresh_mask, text) + "; expected " +
                    testing::list(expected_mask(shifted_values, 0.4), 15));
      return;
    }
    expect_mask(__FILE__, __LINE__, "the same (3, 5) values in a fresh tensor", Shape{3, 5}, shifted_values, 0.4, fresh_mask);
  }
}

TEST(Compression, PruneInPlace) {
  struct Case {
    std::string name;
    Tensor values;  // the weight's initial values (copied into a fresh weight inside the lambda)
    double sparsity;
  };
  const std::vector<Case> cases = {
      {"[[3, -1, 0, 4, -2, 0.5, 6]]", Tensor({1, 7}, {3, -1, 0, 4, -2, 0.5f, 6}), 0.5},
      {"a (31, 33) weight", random_tensor({31, 33}, 1610), 0.75},
      // Every entry pruned, infinities among them: each becomes 0 (inf·0 would be NaN).
      {"[[inf, -2, 1, -inf]]",
       Tensor({1, 4}, {std::numeric_limits<float>::infinity(), -2, 1, -std::numeric_limits<float>::infinity()}), 1.0},
  };
  for (const Case& c : cases) {
    // The weight and a second handle to it (as the model and the optimizer hold one each); the
    // second is read after the call.
    const auto result = observe(fmt::format("prune_magnitude({}, {}), then read a second handle", c.name, c.sparsity), [&] {
      Tensor weight = c.values.clone();
      const Tensor other_handle = weight;
      const Tensor mask = prune_magnitude(weight, c.sparsity);
      return std::pair(mask, other_handle);
    });
    const testing::Params params = {{"case", c.name}, {"sparsity", fmt::format("{}", c.sparsity)}};
    if (!KILN_EXPECT_OK(result, "prune_not_in_place", params)) return;
    KILN_JUDGE {
      const std::vector<float> w = data_of(c.values).values;
      const std::vector<float> mask = expected_mask(w, c.sparsity);
      std::vector<float> pruned(w.size());
      for (std::size_t k = 0; k < w.size(); ++k) pruned[k] = mask[k] == 0.0f ? 0.0f : w[k];
      const testing::Comparison mask_diff = testing::compare(result->first, data_of(c.values.shape(), mask), 0.0);
      if (!mask_diff.close) {
        KILN_FAIL("prune_not_in_place", params, result.call() + ": the returned mask " + mask_diff.describe());
        return;
      }
      const testing::Comparison weight_diff = testing::compare(result->second, data_of(c.values.shape(), pruned), 0.0);
      if (!weight_diff.close) {
        KILN_FAIL("prune_not_in_place", params, result.call() + ": the weight, read through the second handle, " +
                                                    weight_diff.describe());
        return;
      }
    }
  }

  // A contiguous view at an offset: rows 2 and 3 of a (4, 3) matrix, whose first element is
  // float 6 of the shared storage. weight.data() points there; the storage's first float is row
  // 0's. Its 6 entries [0.5, -7, 2, -1, 8, 0.25] at 0.5 prune 0.25, 0.5 and -1 (flat 5, 0 and 3),
  // and rows 0 and 1 of the matrix, outside the weight, stay as they were.
  const std::vector<float> matrix{1, 2, 3, 4, 5, 6, 0.5f, -7, 2, -1, 8, 0.25f};
  const std::string name = "rows 2 and 3 of a (4, 3) matrix (a view at offset 6)";
  const auto view = observe(fmt::format("prune_magnitude({}, 0.5), then read a second handle and the matrix", name), [&] {
    const Tensor base({4, 3}, matrix);
    Tensor weight = make_view(base, {2, 3}, {3, 1}, 6);
    const Tensor other_handle = weight;
    const Tensor mask = prune_magnitude(weight, 0.5);
    return std::tuple(mask, other_handle, base);
  });
  // The same call on a fresh (2, 3) weight of the same 6 values: only a mask or weight that
  // differs between the two is the offset's fault; one wrong on both is prune_magnitude's own.
  const auto fresh = observe("prune_magnitude(the same 6 values in a fresh (2, 3) weight, 0.5), then read a second handle",
                             [&] {
                               Tensor weight({2, 3}, std::vector<float>(matrix.begin() + 6, matrix.end()));
                               const Tensor other_handle = weight;
                               const Tensor mask = prune_magnitude(weight, 0.5);
                               return std::tuple(mask, other_handle);
                             });
  const testing::Params params = {{"case", name}, {"sparsity", "0.5"}};
  KILN_JUDGE {
    const auto text = [](const auto& parts) {
      return fmt::format("the mask {} and the weight {}", testing::list(std::get<0>(parts).values),
                         testing::list(std::get<1>(parts).values));
    };
    bool differs = view.ok() != fresh.ok();
    if (view.ok() && fresh.ok())
      differs = std::get<0>(*view).values != std::get<0>(*fresh).values || std::get<1>(*view).values != std::get<1>(*fresh).values;
    if (differs) {
      KILN_FAIL("prune_from_storage_start", params, testing::offset_detail(view, fresh, text));
      return;
    }
  }
  if (!KILN_EXPECT_OK(view, "prune_not_in_place", params)) return;
  KILN_JUDGE {
    const auto& [mask, weight, base] = *view;
    const std::vector<float> expected_mask{0, 1, 1, 0, 1, 0};
    std::vector<float> expected_base = matrix;
    for (std::size_t k = 0; k < expected_mask.size(); ++k)
      if (expected_mask[k] == 0.0f) expected_base[6 + k] = 0.0f;
    const std::vector<float> expected_weight(expected_base.begin() + 6, expected_base.end());
    const testing::Comparison mask_diff = testing::compare(mask, data_of({2, 3}, expected_mask), 0.0);
    if (!mask_diff.close) {
      KILN_FAIL("prune_not_in_place", params, view.call() + ": the returned mask " + mask_diff.describe());
      return;
    }
    // Rows 0 and 1 are no part of the weight: a zero there was written from the storage's first
    // float instead of the weight's.
    const std::vector<float> outside(base.values.begin(), base.values.begin() + 6);
    if (outside != std::vector<float>(matrix.begin(), matrix.begin() + 6)) {
      KILN_FAIL("prune_from_storage_start", params,
                fmt::format("{}: rows 0 and 1 of the matrix are {}, expected {} (untouched); the weight reads {}, "
                            "expected {}",
                            view.call(), testing::list(outside), testing::list(std::vector<float>(matrix.begin(), matrix.begin() + 6)),
                            testing::list(weight.values), testing::list(expected_weight)));
      return;
    }
    const testing::Comparison weight_diff = testing::compare(weight, data_of({2, 3}, expected_weight), 0.0);
    if (!weight_diff.close) {
      KILN_FAIL("prune_not_in_place", params, view.call() + ": the weight, read through the second handle, " +
                                                  weight_diff.describe());
      return;
    }
    const testing::Comparison base_diff = testing::compare(base, data_of({4, 3}, expected_base), 0.0);
    if (!base_diff.close) {
      KILN_FAIL("prune_not_in_place", params, view.call() + ": the matrix " + base_diff.describe());
      return;
    }
  }
}

namespace {

// SGD(lr 0.1, momentum 0.9) over parameters: one dense step with gradients g1, the masks applied
// to the weights (pruning), then `masked_steps` masked steps with gradients g2, g3, ...
struct MaskedRun {
  std::vector<Tensor> initial;                 // the parameters' values before the dense step
  std::vector<Tensor> masks;                   // one per parameter
  std::vector<std::vector<Tensor>> gradients;  // gradients[s][k]: step s (0 = the dense step)
};

constexpr float kLearningRate = 0.1f;
constexpr float kMomentum = 0.9f;

// The weights and gradients after the run, replayed in double with SGD's rule: the gradient
// masked before each masked step, the weights masked after it.
std::pair<std::vector<std::vector<double>>, std::vector<std::vector<double>>> replay(const MaskedRun& run) {
  std::vector<std::vector<double>> weights, grads;
  for (std::size_t k = 0; k < run.initial.size(); ++k) {
    const std::vector<float> w0 = data_of(run.initial[k]).values, mask = data_of(run.masks[k]).values;
    std::vector<double> w(w0.begin(), w0.end()), buffer(w.size(), 0.0), grad(w.size(), 0.0);
    for (std::size_t s = 0; s < run.gradients.size(); ++s) {
      const std::vector<float> g = data_of(run.gradients[s][k]).values;
      for (std::size_t i = 0; i < w.size(); ++i) {
        grad[i] = s == 0 ? g[i] : g[i] * mask[i];
        buffer[i] = s == 0 ? grad[i] : kMomentum * buffer[i] + grad[i];
        w[i] -= kLearningRate * buffer[i];
        // After the dense step the model is pruned; after every masked step, masked again.
        w[i] *= mask[i];
      }
    }
    weights.push_back(w);
    grads.push_back(grad);
  }
  return {weights, grads};
}

// Runs `run` on the library: SGD, the dense step, pruning by the masks, then masked_step. Returns
// every parameter's values and gradient, read through the caller's handles.
std::vector<std::pair<Tensor, Tensor>> run_library(const MaskedRun& run) {
  std::vector<Tensor> parameters;
  for (const Tensor& t : run.initial) {
    Tensor p = t.clone();
    p.set_requires_grad(true);
    parameters.push_back(p);
  }
  optim::SGD optimizer(parameters, kLearningRate, kMomentum);
  for (std::size_t s = 0; s < run.gradients.size(); ++s) {
    for (std::size_t k = 0; k < parameters.size(); ++k) parameters[k].autograd()->grad = run.gradients[s][k].clone();
    if (s == 0) {
      optimizer.step();
      // Pruning: the weights times their masks, written into the parameters' storage.
      for (std::size_t k = 0; k < parameters.size(); ++k) {
        const std::vector<float> mask = data_of(run.masks[k]).values;
        for (std::size_t i = 0; i < mask.size(); ++i) parameters[k].data()[i] *= mask[i];
      }
    } else {
      masked_step(optimizer, parameters, run.masks);
    }
  }
  std::vector<std::pair<Tensor, Tensor>> out;
  for (const Tensor& p : parameters) out.emplace_back(p, p.grad());
  return out;
}

// Judges the observed parameters and gradients of a run against the replay. Judging only: called
// inside KILN_JUDGE.
bool expect_masked_run(const char* file, int line, const MaskedRun& run,
                       const testing::Observed<std::vector<std::pair<TensorData, TensorData>>>& got) {
  if (!testing::expect_ok(file, line, got, "kept_weights_wrong", {{"shape", "masked"}})) return false;
  const auto [weights, grads] = replay(run);
  for (std::size_t k = 0; k < run.initial.size(); ++k) {
    const Shape& shape = run.initial[k].shape();
    const testing::Params params = {{"shape", to_string(shape)}};
    const std::vector<float> mask = data_of(run.masks[k]).values;
    const auto& [w, g] = (*got)[k];
    if (w.shape != shape || g.shape != shape) {
      testing::report_failure(file, line, "kept_weights_wrong", params,
                              fmt::format("{}: parameter {} has shape {} and its gradient {}, expected {}", got.call(), k,
                                          to_string(w.shape), to_string(g.shape), to_string(shape)));
      return false;
    }
    for (std::size_t i = 0; i < mask.size(); ++i) {
      if (mask[i] == 0.0f && g.values[i] != 0.0f) {
        testing::report_failure(file, line, "gradient_not_masked", params,
                                fmt::format("{}: the gradient at flat index {} is {}", got.call(), i, g.values[i]));
        return false;
      }
    }
    for (std::size_t i = 0; i < mask.size(); ++i) {
      if (mask[i] == 0.0f && w.values[i] != 0.0f) {
        testing::report_failure(file, line, "pruned_weights_moved", params,
                                fmt::format("{}: the weight at flat index {} is {}", got.call(), i, w.values[i]));
        return false;
      }
    }
    std::vector<float> expected(weights[k].begin(), weights[k].end());
    const testing::Comparison c = testing::compare(w, data_of(shape, expected), 1e-5, 1e-5);
    if (!c.close) {
      testing::Params with_difference = params;
      with_difference.emplace_back("difference", testing::format_number(c.max_abs_diff));
      testing::report_failure(file, line, "kept_weights_wrong", with_difference, got.call() + ": " + c.describe());
      return false;
    }
  }
  return true;
}

// A mask of the run: each entry kept with probability 1/2.
Tensor random_mask(const Shape& shape, std::uint64_t stream) {
  std::vector<float> values;
  for (const std::int64_t bit : random_ints(static_cast<std::size_t>(numel(shape)), 2, stream))
    values.push_back(static_cast<float>(bit));
  return Tensor(shape, values);
}

}  // namespace

TEST(Compression, MaskedStep) {
  // Hand-worked (docs/16_compression.md): w = [1, -2, 3], mask [1, 0, 1], every gradient 1.
  // The dense step gives [0.9, -2.1, 2.9] and the momentum buffer [1, 1, 1]; pruning gives
  // [0.9, 0, 2.9]. The masked step: gradient [1, 0, 1], buffer 0.9·[1, 1, 1] + [1, 0, 1] =
  // [1.9, 0.9, 1.9], so the step alone gives [0.71, -0.09, 2.71], and masking [0.71, 0, 2.71].
  const MaskedRun hand{{Tensor({1, 3}, {1, -2, 3})},
                       {Tensor({1, 3}, {1, 0, 1})},
                       {{Tensor::ones({1, 3})}, {Tensor::ones({1, 3})}}};
  const auto hand_result = observe("SGD(lr 0.1, momentum 0.9): a dense step, pruning by [1, 0, 1], then masked_step",
                                   [&] { return run_library(hand); });
  KILN_JUDGE {
    if (!expect_masked_run(__FILE__, __LINE__, hand, hand_result)) return;
  }
  if (!hand_result.ok()) return;

  // Two parameters of the run, (7, 3) and (1, 33), half of their entries pruned, two masked steps.
  MaskedRun run;
  run.initial = {random_tensor({7, 3}, 1620, -2.0f, 2.0f), random_tensor({1, 33}, 1621, -2.0f, 2.0f)};
  run.masks = {random_mask({7, 3}, 1622), random_mask({1, 33}, 1623)};
  for (std::uint64_t s = 0; s < 3; ++s)
    run.gradients.push_back({random_tensor({7, 3}, 1624 + 2 * s), random_tensor({1, 33}, 1625 + 2 * s)});
  const auto result = observe("SGD(lr 0.1, momentum 0.9) on (7, 3) and (1, 33): a dense step, pruning, two masked_steps",
                              [&] { return run_library(run); });
  KILN_JUDGE {
    if (!expect_masked_run(__FILE__, __LINE__, run, result)) return;
  }
  if (!result.ok()) return;

  // A parameter that has no gradient for the masked step (zero_grad, and no backward since): SGD
  // skips it, so its momentum from the dense step must not move it. The hand-worked w = [1, -2, 3]
  // is [0.9, 0, 2.9] after the dense step and pruning, and stays so. Masking a gradient that is
  // not there would give it a zero one, and momentum would then take 0.1·0.9 off the kept weights.
  const auto no_grad = observe(
      "SGD(lr 0.1, momentum 0.9): a dense step, pruning by [1, 0, 1], zero_grad(), then masked_step", [&] {
        Tensor p = Tensor({1, 3}, {1, -2, 3});
        p.set_requires_grad(true);
        optim::SGD optimizer({p}, kLearningRate, kMomentum);
        p.autograd()->grad = Tensor::ones({1, 3});
        optimizer.step();
        for (std::int64_t i = 0; i < 3; ++i) p.data()[i] *= i == 1 ? 0.0f : 1.0f;
        p.autograd()->grad.reset();
        masked_step(optimizer, {p}, {Tensor({1, 3}, {1, 0, 1})});
        return p;
      });
  KILN_JUDGE {
    const testing::Params params = {{"shape", "(1, 3)"}};
    if (!testing::expect_ok(__FILE__, __LINE__, no_grad, "kept_weights_wrong",
                            {{"shape", "(1, 3)"}}))
      return;
    if (no_grad->shape == Shape{1, 3} && no_grad->values[1] != 0.0f) {
      testing::report_failure(__FILE__, __LINE__, "pruned_weights_moved", params,
                              fmt::format("{}: the weight at flat index 1 is {}", no_grad.call(), no_grad->values[1]));
      return;
    }
    const testing::Comparison c = testing::compare(*no_grad, data_of({1, 3}, {0.9f, 0, 2.9f}), 1e-6, 1e-6);
    if (!c.close) {
      testing::report_failure(__FILE__, __LINE__, "kept_weights_wrong",
                              {{"shape", "(1, 3)"}, {"difference", testing::format_number(c.max_abs_diff)}},
                              no_grad.call() + ": " + c.describe());
      return;
    }
  }
  if (!no_grad.ok()) return;

  // Step 3 masks every weight, also one without a gradient: a weight whose mask came from
  // magnitude_mask and that was never pruned itself, [5, 1, 3] with mask [1, 0, 1], comes out
  // [5, 0, 3] although the step skipped it.
  const auto unpruned = observe("SGD(lr 0.1, momentum 0.9) on [5, 1, 3] without a gradient: masked_step by [1, 0, 1]", [&] {
    Tensor p = Tensor({1, 3}, {5, 1, 3});
    p.set_requires_grad(true);
    optim::SGD optimizer({p}, kLearningRate, kMomentum);
    masked_step(optimizer, {p}, {Tensor({1, 3}, {1, 0, 1})});
    return p;
  });
  KILN_JUDGE {
    const testing::Params params = {{"shape", "(1, 3)"}};
    if (!testing::expect_ok(__FILE__, __LINE__, unpruned, "gradless_weight_not_masked", params)) return;
    const testing::Comparison c = testing::compare(*unpruned, data_of({1, 3}, {5, 0, 3}), 0.0);
    if (!c.close) {
      KILN_FAIL("gradless_weight_not_masked", params, unpruned.call() + ": " + c.describe());
      return;
    }
  }
  if (!unpruned.ok()) return;

  // Arguments that do not fit are refused before anything changes: two weights with one mask
  // (std::invalid_argument naming both counts), a (2, 3) mask for the (2, 2) second weight and a
  // (3) mask, which broadcasts, for the (1, 3) first (ShapeError naming both shapes). After the
  // refusal both weights and both gradients are as they were: no gradient masked, no step. Judging the second mask only when its product is formed
  // masks the first weight's gradient first.
  struct Refusal {
    std::string what, kind;
    std::vector<Tensor> masks;
    std::vector<std::string> names;
  };
  const std::vector<Refusal> refusals = {
      {"one mask for two weights", "std::invalid_argument", {Tensor({1, 3}, {1, 0, 1})}, {"2", "1"}},
      {"a (2, 3) mask for the (2, 2) weight",
       "kiln::ShapeError",
       {Tensor({1, 3}, {1, 0, 1}), Tensor::ones({2, 3})},
       {"(2, 2)", "(2, 3)"}},
      // The first weight's mask too, and one that broadcasts against it: grad ⊙ mask would work.
      {"a (3) mask for the (1, 3) weight", "kiln::ShapeError", {Tensor({3}, {1, 0, 1}), Tensor::ones({2, 2})},
       {"(1, 3)", "(3)"}}};
  for (const Refusal& r : refusals) {
    // Weights [1, -2, 3] and [[1, 2], [3, 4]], every gradient 1, on a fresh SGD(lr 0.1, momentum 0.9).
    const auto refused_state = [&](bool after) {
      Tensor p0 = Tensor({1, 3}, {1, -2, 3});
      Tensor p1 = Tensor({2, 2}, {1, 2, 3, 4});
      p0.set_requires_grad(true);
      p1.set_requires_grad(true);
      optim::SGD optimizer({p0, p1}, kLearningRate, kMomentum);
      p0.autograd()->grad = Tensor::ones({1, 3});
      p1.autograd()->grad = Tensor::ones({2, 2});
      if (!after) {
        masked_step(optimizer, {p0, p1}, r.masks);
      } else {
        try {
          masked_step(optimizer, {p0, p1}, r.masks);
        } catch (const std::exception&) {
        }
      }
      return std::vector<Tensor>{p0.clone(), p0.grad().clone(), p1.clone(), p1.grad().clone()};
    };
    const std::string call = fmt::format("masked_step on weights (1, 3) and (2, 2) with {}", r.what);
    const auto refused = observe(call, [&] { return refused_state(false); });
    const testing::Params params = {{"what", r.what}, {"kind", r.kind}};
    KILN_JUDGE {
      testing::expect_error(__FILE__, __LINE__, refused.ok() ? nullptr : &refused.error(), refused.call(), r.kind,
                            "masked_step_arguments_unchecked", r.names, params);
      if (::testing::Test::HasFailure()) return;
    }
    if (refused.ok()) return;
    const auto after = observe(call + ", then both weights and both gradients", [&] { return refused_state(true); });
    KILN_JUDGE {
      if (!testing::expect_ok(__FILE__, __LINE__, after, "masked_step_refusal_changed", params)) return;
      const std::vector<TensorData> before = {data_of({1, 3}, {1, -2, 3}), data_of({1, 3}, {1, 1, 1}),
                                              data_of({2, 2}, {1, 2, 3, 4}), data_of({2, 2}, {1, 1, 1, 1})};
      const char* names[] = {"the first weight", "the first weight's gradient", "the second weight",
                             "the second weight's gradient"};
      for (std::size_t k = 0; k < before.size(); ++k) {
        const bool same = k < after->size() && testing::compare((*after)[k], before[k], 0.0).close;
        if (!same) {
          KILN_FAIL("masked_step_refusal_changed", params,
                    fmt::format("{}: {} is {}, where it was {}", after.call(), names[k],
                                k < after->size() ? testing::list((*after)[k].values) : "missing",
                                testing::list(before[k].values)));
          return;
        }
      }
    }
    if (!after.ok()) return;
  }

  // Step 1 comes before the step, so that the optimizer's state gathers nothing for a pruned
  // entry. A fresh SGD, w = [1, 0], mask [1, 0], gradient [1, 1]: masked_step gives [0.9, 0] and a
  // momentum buffer of [1, 0]. A plain step after it with a zero gradient then gives [0.81, 0];
  // had the step seen the unmasked gradient, the buffer would be [1, 1] and that plain step
  // would move the pruned weight to -0.09.
  const auto state = observe(
      "a fresh SGD(lr 0.1, momentum 0.9) on [1, 0]: gradient [1, 1], masked_step by [1, 0], then gradient [0, 0] "
      "and a plain optimizer.step()",
      [&] {
        Tensor p = Tensor({1, 2}, {1, 0});
        p.set_requires_grad(true);
        optim::SGD optimizer({p}, kLearningRate, kMomentum);
        p.autograd()->grad = Tensor::ones({1, 2});
        masked_step(optimizer, {p}, {Tensor({1, 2}, {1, 0})});
        const Tensor after_masked_step = p.clone();
        p.autograd()->grad = Tensor::zeros({1, 2});
        optimizer.step();
        return std::pair(after_masked_step, p);
      });
  KILN_JUDGE {
    const testing::Params params = {{"shape", "(1, 2)"}};
    if (!testing::expect_ok(__FILE__, __LINE__, state, "kept_weights_wrong", params)) return;
    const auto& [after_masked_step, after_plain_step] = *state;
    const testing::Comparison first = testing::compare(after_masked_step, data_of({1, 2}, {0.9f, 0}), 1e-6, 1e-6);
    if (!first.close) {
      KILN_FAIL("kept_weights_wrong", {{"shape", "(1, 2)"}, {"difference", testing::format_number(first.max_abs_diff)}},
                state.call() + ": after masked_step, " + first.describe());
      return;
    }
    if (after_plain_step.shape == Shape{1, 2} && after_plain_step.values[1] != 0.0f) {
      KILN_FAIL("pruned_gradient_in_state", params,
                fmt::format("{}: the plain step moved the pruned weight to {} (0.81 and 0 expected)", state.call(),
                            after_plain_step.values[1]));
      return;
    }
  }
}

}  // namespace kiln
