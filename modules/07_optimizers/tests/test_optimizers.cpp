// Module 07 checks: one TEST per check in module.yaml.
//
// Every value taken from the student's code passes through observe() (kiln/observe.h): a check
// builds the parameters, the optimizer and the gradients inside one lambda, runs the steps, and
// returns each parameter's trajectory as plain data, a (steps + 1, numel) tensor whose row s holds
// the parameter's values after step s (row 0: before the first step). The values are read through
// the caller's own handles, so an update that does not reach the shared storage shows.
//
// The expected trajectories come from three places, none of them the student's code:
//   * hand-worked numbers (f(x) = x² from x = 3, worked in docs/07_optimizers.md);
//   * PyTorch 1.13 (torch.optim.SGD, Adam, AdamW), run once while this file was written on
//     f(x) = Σ c·(x - 1)² with c = (1, 4, 0.25) from x = (3, -2, 0.5), lr 0.1, 8 steps:
//       x = torch.tensor([3.0, -2.0, 0.5], requires_grad=True); opt = torch.optim.SGD([x], lr=0.1, ...)
//       each step: opt.zero_grad(); (c * (x - 1) * (x - 1)).sum().backward(); opt.step()
//     the values after every step, printed with 9 significant digits, are held below;
//   * the update rules replayed here in double precision (reference_trajectories) for random
//     parameters of shapes (3, 7), (1,), (33,), (2, 5) and (7,), with random gradients of the run,
//     some of them missing on some steps.
// Gradients are set directly on each step (as backward() would leave them), except in the
// zero_grad check, which also runs module 06's backward() on a small loss.
// The schedules are judged against their formulas computed here in double, and the cosine with
// warm-up also against the 25 rates held by Stanford CS336's test of the same schedule.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/autograd.h"
#include "kiln/optimizers.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

namespace ag = autograd;

using testing::data_of;
using testing::observe;
using testing::Observed;
using testing::random_tensor;
using testing::TensorData;

// ---------------------------------------------------------------------------------------------
// The optimizer a case runs, with its settings (float, as the optimizer receives them)

struct Settings {
  enum class Kind { sgd, adam, adamw, adamw_default_decay } kind = Kind::sgd;
  float lr = 0.1f;
  float momentum = 0.0f;
  bool nesterov = false;
  float weight_decay = 0.0f;  // ignored for adamw_default_decay, which uses AdamW's default 0.01
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  std::vector<float> rates;  // when not empty: set_learning_rate(rates[s]) before step s, as a schedule does
};

Settings sgd(float lr, float momentum = 0.0f, bool nesterov = false, float weight_decay = 0.0f) {
  return {.kind = Settings::Kind::sgd, .lr = lr, .momentum = momentum, .nesterov = nesterov, .weight_decay = weight_decay};
}
Settings adam(float lr, float weight_decay = 0.0f) {
  return {.kind = Settings::Kind::adam, .lr = lr, .weight_decay = weight_decay};
}
Settings adam_with_eps(float lr, float eps) { return {.kind = Settings::Kind::adam, .lr = lr, .eps = eps}; }
Settings adamw(float lr, float weight_decay) {
  return {.kind = Settings::Kind::adamw, .lr = lr, .weight_decay = weight_decay};
}
Settings adamw_default_decay(float lr) {
  return {.kind = Settings::Kind::adamw_default_decay, .lr = lr, .weight_decay = 0.01f};
}
// The same optimizer with its learning rate changed before each of 6 steps: 0.1, 0.01, 0.05, 0.2,
// 0.02, 0.1 (down, up, back).
Settings scheduled(Settings s) {
  s.rates = {0.1f, 0.01f, 0.05f, 0.2f, 0.02f, 0.1f};
  return s;
}

// "SGD(lr 0.1, momentum 0.9)" for reports.
std::string describe_optimizer(const Settings& s) {
  switch (s.kind) {
    case Settings::Kind::sgd:
      return fmt::format("SGD(lr {}, momentum {}, nesterov {}, weight_decay {})", s.lr, s.momentum, s.nesterov,
                         s.weight_decay);
    case Settings::Kind::adam:
      if (s.eps != 1e-8f) return fmt::format("Adam(lr {}, eps {}, weight_decay {})", s.lr, s.eps, s.weight_decay);
      return fmt::format("Adam(lr {}, weight_decay {})", s.lr, s.weight_decay);
    case Settings::Kind::adamw:
      return fmt::format("AdamW(lr {}, weight_decay {})", s.lr, s.weight_decay);
    case Settings::Kind::adamw_default_decay:
      return fmt::format("AdamW(lr {}) with its default weight_decay", s.lr);
  }
  return "?";
}
std::string describe(const Settings& s) {
  if (s.rates.empty()) return describe_optimizer(s);
  return fmt::format("{} with set_learning_rate({}) before the steps", describe_optimizer(s), testing::list(s.rates));
}

// Builds the optimizer (inside an observation: it is the student's object).
std::unique_ptr<optim::Optimizer> make_optimizer(const Settings& s, const std::vector<Tensor>& parameters) {
  switch (s.kind) {
    case Settings::Kind::sgd:
      return std::make_unique<optim::SGD>(parameters, s.lr, s.momentum, s.nesterov, s.weight_decay);
    case Settings::Kind::adam:
      return std::make_unique<optim::Adam>(parameters, s.lr, s.beta1, s.beta2, s.eps, s.weight_decay);
    case Settings::Kind::adamw:
      return std::make_unique<optim::AdamW>(parameters, s.lr, s.beta1, s.beta2, s.eps, s.weight_decay);
    case Settings::Kind::adamw_default_decay:
      return std::make_unique<optim::AdamW>(parameters, s.lr);
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Runs with given gradients

// The parameters' initial values, and the gradient of every parameter at every step:
// gradients[s][k] is parameter k's gradient at step s + 1, or nothing (no gradient that step).
struct GradientRun {
  std::vector<TensorData> initial;
  std::vector<std::vector<std::optional<TensorData>>> gradients;
};

// Parameters of the given shapes, values uniform in [-2, 2), and a gradient uniform in [-1, 1)
// for every parameter at every step, all drawn from the run's seed (streams stream, stream + 1, ...).
GradientRun random_run(const std::vector<Shape>& shapes, int steps, std::uint64_t stream) {
  GradientRun run;
  for (const Shape& shape : shapes) run.initial.push_back(data_of(random_tensor(shape, stream++, -2.0f, 2.0f)));
  for (int s = 0; s < steps; ++s) {
    std::vector<std::optional<TensorData>> step;
    for (const Shape& shape : shapes) step.emplace_back(data_of(random_tensor(shape, stream++)));
    run.gradients.push_back(std::move(step));
  }
  return run;
}

// Row-major values of a (rows.size(), width) trajectory.
TensorData trajectory_data(const std::vector<std::vector<double>>& rows) {
  std::vector<float> values;
  for (const auto& row : rows)
    for (const double v : row) values.push_back(static_cast<float>(v));
  return data_of({static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows.front().size())}, values);
}

// The update rules of kiln/optimizers.h (PyTorch's), replayed in double with per-parameter state.
std::vector<TensorData> reference_trajectories(const GradientRun& run, const Settings& s) {
  const std::size_t count = run.initial.size();
  const double momentum = s.momentum, beta1 = s.beta1, beta2 = s.beta2, eps = s.eps;
  const double weight_decay = s.kind == Settings::Kind::adamw_default_decay ? 0.01f : s.weight_decay;
  const bool decoupled = s.kind == Settings::Kind::adamw || s.kind == Settings::Kind::adamw_default_decay;
  std::vector<std::vector<double>> p(count), buffer(count), m(count), v(count);
  std::vector<int> t(count, 0);
  std::vector<std::vector<std::vector<double>>> rows(count);
  for (std::size_t k = 0; k < count; ++k) {
    p[k].assign(run.initial[k].values.begin(), run.initial[k].values.end());
    m[k].assign(p[k].size(), 0.0);
    v[k].assign(p[k].size(), 0.0);
    rows[k].push_back(p[k]);
  }
  for (std::size_t n = 0; n < run.gradients.size(); ++n) {
    const auto& step = run.gradients[n];
    const double lr = s.rates.empty() ? static_cast<double>(s.lr) : static_cast<double>(s.rates.at(n));
    for (std::size_t k = 0; k < count; ++k) {
      if (step[k]) {
        const std::vector<float>& g = step[k]->values;
        if (s.kind == Settings::Kind::sgd) {
          const bool first = buffer[k].empty();
          buffer[k].resize(p[k].size());
          for (std::size_t i = 0; i < p[k].size(); ++i) {
            double d = g[i] + weight_decay * p[k][i];
            if (momentum != 0.0) {
              buffer[k][i] = first ? d : momentum * buffer[k][i] + d;
              d = s.nesterov ? d + momentum * buffer[k][i] : buffer[k][i];
            }
            p[k][i] -= lr * d;
          }
        } else {
          ++t[k];
          const double correction1 = 1.0 - std::pow(beta1, t[k]), correction2 = 1.0 - std::pow(beta2, t[k]);
          for (std::size_t i = 0; i < p[k].size(); ++i) {
            double gi = g[i];
            if (decoupled) p[k][i] -= lr * weight_decay * p[k][i];
            else gi += weight_decay * p[k][i];
            m[k][i] = beta1 * m[k][i] + (1.0 - beta1) * gi;
            v[k][i] = beta2 * v[k][i] + (1.0 - beta2) * gi * gi;
            p[k][i] -= lr * (m[k][i] / correction1) / (std::sqrt(v[k][i] / correction2) + eps);
          }
        }
      }
      rows[k].push_back(p[k]);
    }
  }
  std::vector<TensorData> out;
  for (const auto& r : rows) out.push_back(trajectory_data(r));
  return out;
}

// Inside an observation: builds the parameters and the optimizer, runs every step with the run's
// gradients, and returns each parameter's trajectory read through the caller's handles.
std::vector<Tensor> run_optimizer(const GradientRun& run, const Settings& s) {
  std::vector<Tensor> parameters;
  for (const TensorData& initial : run.initial) {
    Tensor parameter = initial.tensor();
    parameter.set_requires_grad();  // before the optimizer copies the handle
    parameters.push_back(parameter);
  }
  const auto optimizer = make_optimizer(s, parameters);
  std::vector<std::vector<float>> rows(parameters.size());
  auto record = [&] {
    for (std::size_t k = 0; k < parameters.size(); ++k) {
      const std::vector<float> values = parameters[k].to_vector();
      rows[k].insert(rows[k].end(), values.begin(), values.end());
    }
  };
  record();
  for (std::size_t n = 0; n < run.gradients.size(); ++n) {
    const auto& step = run.gradients[n];
    for (std::size_t k = 0; k < parameters.size(); ++k) {
      parameters[k].zero_grad();
      if (step[k]) parameters[k].autograd()->grad = step[k]->tensor();
    }
    if (!s.rates.empty()) optimizer->set_learning_rate(s.rates.at(n));
    optimizer->step();
    record();
  }
  std::vector<Tensor> trajectories;
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    trajectories.emplace_back(Shape{static_cast<std::int64_t>(run.gradients.size() + 1), parameters[k].numel()},
                              rows[k]);
  }
  return trajectories;
}

std::string shapes_of(const GradientRun& run) {
  std::string out;
  for (const TensorData& t : run.initial) out += (out.empty() ? "" : ", ") + to_string(t.shape);
  return out;
}

Observed<std::vector<TensorData>> observe_run(const GradientRun& run, const Settings& s) {
  const std::string steps = testing::counted(run.gradients.size(), "step");
  return observe(fmt::format("{} for {} on parameters {}", describe(s), steps, shapes_of(run)),
                 [&] { return run_optimizer(run, s); });
}

// ---------------------------------------------------------------------------------------------
// Runs on f(x) = Σ c·(x - target)², whose gradient 2c·(x - target) depends on the current x

struct Quadratic {
  std::vector<float> x0, c, target;
  bool zero_gradient = false;  // a gradient of zeros instead (weight decay alone)
};

Tensor run_quadratic(const Quadratic& q, const Settings& s, int steps) {
  const auto n = static_cast<std::int64_t>(q.x0.size());
  Tensor x(Shape{n}, q.x0);
  x.set_requires_grad();
  const auto optimizer = make_optimizer(s, {x});
  std::vector<float> rows = x.to_vector();
  for (int step = 0; step < steps; ++step) {
    const std::vector<float> now = x.to_vector();
    std::vector<float> gradient(now.size(), 0.0f);
    if (!q.zero_gradient) {
      for (std::size_t i = 0; i < now.size(); ++i) gradient[i] = 2.0f * q.c[i] * (now[i] - q.target[i]);
    }
    x.zero_grad();
    x.autograd()->grad = Tensor(Shape{n}, gradient);
    optimizer->step();
    const std::vector<float> after = x.to_vector();
    rows.insert(rows.end(), after.begin(), after.end());
  }
  return Tensor(Shape{steps + 1, n}, rows);
}

// f(x) = x² from x = 3, one (1,) parameter.
const Quadratic square_from_3{.x0 = {3.0f}, .c = {1.0f}, .target = {0.0f}};
// PyTorch's problem: Σ c·(x - 1)², c = (1, 4, 0.25), from (3, -2, 0.5).
const Quadratic torch_problem{.x0 = {3.0f, -2.0f, 0.5f}, .c = {1.0f, 4.0f, 0.25f}, .target = {1.0f, 1.0f, 1.0f}};

// A (steps + 1, n) trajectory from rows after steps 1, 2, ..., the first row being x0.
TensorData expected_trajectory(const std::vector<float>& x0, const std::vector<std::vector<float>>& after) {
  std::vector<float> values = x0;
  for (const auto& row : after) values.insert(values.end(), row.begin(), row.end());
  return data_of({static_cast<std::int64_t>(after.size() + 1), static_cast<std::int64_t>(x0.size())}, values);
}

// PyTorch 1.13's trajectories on torch_problem (lr 0.1), rows after steps 1 to 8, printed with
// 9 significant digits by the script described at the top of this file.
std::vector<std::vector<float>> torch_sgd() {
  return {
      {2.5999999f, 0.400000036f, 0.524999976f},  {2.27999997f, 0.879999995f, 0.548749983f},
      {2.02399993f, 0.976000011f, 0.571312487f}, {1.81919992f, 0.995199978f, 0.592746854f},
      {1.65535998f, 0.999040008f, 0.613109529f}, {1.52428794f, 0.999808013f, 0.632454038f},
      {1.41943038f, 0.999961615f, 0.650831342f}, {1.33554435f, 0.999992311f, 0.668289781f}};
}
// momentum 0.9
std::vector<std::vector<float>> torch_momentum() {
  return {
      {2.5999999f, 0.400000036f, 0.524999976f},     {1.91999996f, 3.03999996f, 0.571249962f},
      {1.12400007f, 3.78399968f, 0.634312451f},     {0.382800132f, 2.22639966f, 0.709353089f},
      {-0.160839826f, -0.156560123f, 0.791422009f}, {-0.417947799f, -1.37597585f, 0.875712931f},
      {-0.365755409f, -0.572669268f, 0.957789123f}, {-0.0456311852f, 1.40844214f, 1.03376818f}};
}
// momentum 0.9, nesterov
std::vector<std::vector<float>> torch_nesterov() {
  return {
      {2.24000001f, 2.55999994f, 0.547500014f},  {1.44480002f, 2.13279986f, 0.610737503f},
      {0.783296049f, 1.14966393f, 0.684268713f}, {0.350353986f, 0.852968395f, 0.762924433f},
      {0.168564931f, 0.917188466f, 0.842028856f}, {0.203963846f, 0.994997323f, 0.91756171f},
      {0.388658285f, 1.01300502f, 0.986264229f}, {0.643906593f, 1.00584245f, 1.04569161f}};
}
// momentum 0.9, weight_decay 0.1
std::vector<std::vector<float>> torch_momentum_decay() {
  return {
      {2.56999993f, 0.420000106f, 0.519999981f},    {1.84329987f, 3.05780005f, 0.556800008f},
      {1.00217688f, 3.75500202f, 0.60651201f},      {0.234709039f, 2.14093208f, 0.664862096f},
      {-0.305300891f, -0.245885879f, 0.727485418f}, {-0.527196646f, -1.39485455f, 0.790197313f},
      {-0.416191518f, -0.499094009f, 0.849226177f}, {-0.0288866814f, 1.51135671f, 0.901398599f}};
}
// Adam(lr 0.1)
std::vector<std::vector<float>> torch_adam() {
  return {
      {2.9000001f, -1.89999998f, 0.599999964f}, {2.80016661f, -1.80010271f, 0.698812544f},
      {2.70062351f, -1.70038152f, 0.795128703f}, {2.60150504f, -1.60091352f, 0.887084544f},
      {2.50295591f, -1.50177944f, 0.972185493f}, {2.40513182f, -1.40306365f, 1.04743147f},
      {2.30819964f, -1.3048538f, 1.10978878f},   {2.21233702f, -1.20724118f, 1.15694594f}};
}
// Adam(lr 0.1, weight_decay 0.1)
std::vector<std::vector<float>> torch_adam_decay() {
  return {
      {2.9000001f, -1.89999998f, 0.600000024f}, {2.80016184f, -1.80010319f, 0.697572052f},
      {2.70060539f, -1.70038331f, 0.789346099f}, {2.60146046f, -1.60091794f, 0.870064378f},
      {2.50286674f, -1.50178826f, 0.933404624f}, {2.40497398f, -1.40307903f, 0.974797845f},
      {2.30794263f, -1.30487859f, 0.993829906f}, {2.21194315f, -1.20727873f, 0.993508458f}};
}
// AdamW(lr 0.1, weight_decay 0.1)
std::vector<std::vector<float>> torch_adamw() {
  return {
      {2.87000012f, -1.88f, 0.594999969f},       {2.74153161f, -1.76132715f, 0.687959194f},
      {2.6147542f, -1.64405859f, 0.777756155f},  {2.48984241f, -1.52827454f, 0.862859249f},
      {2.36698675f, -1.41405833f, 0.941288948f}, {2.2463932f, -1.30149627f, 1.01070857f},
      {2.12828493f, -1.19067717f, 1.06872761f},  {2.01289964f, -1.08169222f, 1.11339748f}};
}

// ---------------------------------------------------------------------------------------------
// Judging

// Trajectories agree when every value is within atol + rtol·|expected|: float32 updates drift
// from the double replay by a few units in the last place per step.
constexpr double kAtol = 2e-5;
constexpr double kRtol = 2e-5;

// Observes the run; judges it against `expected`, which the observed program never computes (an
// empty TensorData there): EXPECT_QUADRATIC hands it on through KILN_JUDGE_ONLY.
bool expect_quadratic(const char* file, int line, const Quadratic& q, const Settings& s, int steps,
                      const TensorData& expected, const std::string& case_name, std::string_view failure_id) {
  const auto got = observe(fmt::format("{} for {} from x = {}", describe(s), testing::counted(steps, "step"), testing::list(q.x0)),
                           [&] { return run_quadratic(q, s, steps); });
  KILN_JUDGE {
    return testing::expect_close(file, line, got, expected, kAtol, failure_id, kRtol, {{"case", case_name}});
  }
  return got.ok();
}
#define EXPECT_QUADRATIC(q, s, steps, expected, case_name, id) \
  expect_quadratic(__FILE__, __LINE__, q, s, steps, KILN_JUDGE_ONLY(expected), case_name, id)

// Judging only: called inside KILN_JUDGE.
bool expect_trajectories(const char* file, int line, const Observed<std::vector<TensorData>>& got,
                         const std::vector<TensorData>& expected, const std::vector<std::size_t>& which,
                         const std::string& case_name, std::string_view failure_id, double atol = kAtol,
                         double rtol = kRtol, const testing::Params& extra = {}) {
  testing::Params params = extra;
  params.emplace_back("case", case_name);
  if (!testing::expect_ok(file, line, got, failure_id, params)) return false;
  for (const std::size_t k : which) {
    const Observed<TensorData> parameter(
        fmt::format("{}: parameter {} of shape {}", got.call(), k, to_string(expected[k].shape)), (*got)[k]);
    if (!testing::expect_close(file, line, parameter, expected[k], atol, failure_id, rtol, params)) return false;
  }
  return true;
}

// Judging only. A case at an offset steps twice: on fresh tensors, and on views at an offset of a
// larger storage holding the same values. When the views gave the same, the fresh step is judged
// here for the optimizer's general failure `general`, as a trajectory (row 0 the initial values,
// row 1 the parameter after the step) under the fresh case's name. True when it is right.
bool expect_fresh_step(const char* file, int line, const Observed<TensorData>& fresh, const TensorData& initial,
                       const TensorData& after, std::string_view general, const std::string& fresh_case, double atol,
                       double rtol) {
  const auto rows = [&](const TensorData& step) {
    if (step.shape != initial.shape) return step;
    std::vector<float> values = initial.values;
    values.insert(values.end(), step.values.begin(), step.values.end());
    return data_of({2, initial.numel()}, values);
  };
  const Observed<TensorData> trajectory =
      fresh.ok() ? Observed<TensorData>(fresh.call(), rows(*fresh)) : Observed<TensorData>(fresh.call(), fresh.error());
  return testing::expect_close(file, line, trajectory, rows(after), atol, general, rtol, {{"case", fresh_case}});
}

// The detail of the slice case's offset failure where the view's step is right and the fresh one
// is not.
std::string fresh_differs(const Observed<TensorData>& on_views, const Observed<TensorData>& fresh) {
  return fresh.ok() ? fmt::format("{} gave {}, but {} (the same values, fresh tensors) gave {}", on_views.call(),
                                  testing::list(on_views->values), fresh.call(), testing::list(fresh->values))
                    : fresh.describe_error() + ", but " + on_views.call() + " returned";
}

// A case at an offset for the first step of `s` (`name` in the calls, "SGD(lr 0.5)"): a parameter
// holding p_values whose gradient holds g_values, stepped once as fresh tensors (fresh_case) and
// once with each a view at offset 5 of a larger storage (shifted_case; the floats around them
// drawn from streams `stream` and `stream` + 1). `rule` gives an element after the step from its
// value and its gradient's (trusted: EXPECT_STEP_AT_OFFSET hands it on through KILN_JUDGE_ONLY).
// A step that the views change is offset_id; otherwise (the same step, or an error on both) the
// fresh step is judged for `general`. False when it fails (or, observing, when a step threw).
bool expect_step_at_offset(const char* file, int line, const Settings& s, const std::string& name,
                           const TensorData& p_values, const TensorData& g_values, std::uint64_t stream,
                           const std::string& fresh_case, const std::string& shifted_case,
                           const std::function<float(float, float)>& rule, std::string_view general,
                           std::string_view offset_id) {
  const auto step = [&](Tensor p, const Tensor& g) {
    p.set_requires_grad();
    const auto optimizer = make_optimizer(s, {p});
    p.autograd()->grad = g;
    optimizer->step();
    return p;
  };
  const auto fresh = observe(name + " for 1 step on " + fresh_case + ": the parameter",
                             [&] { return step(p_values.tensor(), g_values.tensor()); });
  const auto shifted = observe(name + " for 1 step on " + shifted_case + ": the parameter", [&] {
    return step(testing::at_offset(p_values, stream), testing::at_offset(g_values, stream + 1));
  });
  KILN_JUDGE {
    TensorData after = p_values;
    for (std::size_t i = 0; i < after.values.size(); ++i) after.values[i] = rule(p_values.values[i], g_values.values[i]);
    const bool agree = testing::expect_same_at_offset(file, line, fresh, shifted, after, 1e-6, 1e-6, "", offset_id,
                                                      {{"case", shifted_case}});
    if (!agree && (fresh.ok() || shifted.ok())) return false;
    return expect_fresh_step(file, line, fresh, p_values, after, general, fresh_case, 1e-6, 1e-6);
  }
  return fresh.ok() && shifted.ok();
}
#define EXPECT_STEP_AT_OFFSET(s, name, p_values, g_values, stream, fresh_case, shifted_case, rule, general, offset_id) \
  expect_step_at_offset(__FILE__, __LINE__, s, name, p_values, g_values, stream, fresh_case, shifted_case,           \
                        KILN_JUDGE_ONLY(rule), general, offset_id)

std::vector<std::size_t> all_of(const GradientRun& run) {
  std::vector<std::size_t> which(run.initial.size());
  for (std::size_t k = 0; k < which.size(); ++k) which[k] = k;
  return which;
}

// A random run of `settings` replayed in double, judged under failure_id.
// Whether `actual` is the float on the other side of `exact` from the nearest one, where `exact`
// lies so close to the halfway point between the two that a right computation in double, a few
// double ulps away (gamma^k by repeated products, say, rather than pow), may round either way.
bool rounds_either_way(double exact, double actual) {
  const float nearest = static_cast<float>(exact);
  const float other = std::nextafter(nearest, exact > nearest ? std::numeric_limits<float>::infinity()
                                                              : -std::numeric_limits<float>::infinity());
  const double halfway = (static_cast<double>(nearest) + static_cast<double>(other)) / 2;
  return actual == other && std::fabs(exact - halfway) <= 1e-12 * std::fabs(exact);
}

// `run` with the optimizer `s`, judged against its replay in double under failure_id; `what`
// names the case. False when it fails (or, observing, when the run threw).
bool expect_replayed(const char* file, int line, const GradientRun& run, const Settings& s, const std::string& what,
                     std::string_view failure_id, double atol = kAtol, double rtol = kRtol) {
  const auto got = observe_run(run, s);
  KILN_JUDGE {
    return expect_trajectories(file, line, got, reference_trajectories(run, s), all_of(run), what, failure_id, atol,
                               rtol);
  }
  return got.ok();
}
#define EXPECT_REPLAYED(run, s, what, ...) expect_replayed(__FILE__, __LINE__, run, s, what, __VA_ARGS__)

bool expect_random_run(const char* file, int line, const GradientRun& run, const Settings& s, std::string_view failure_id) {
  return expect_replayed(file, line, run, s, fmt::format("random parameters {}, random gradients", shapes_of(run)),
                         failure_id);
}
#define EXPECT_RANDOM_RUN(run, s, id) expect_random_run(__FILE__, __LINE__, run, s, id)

}  // namespace

// ---------------------------------------------------------------------------------------------

TEST(Optimizers, ZeroGrad) {
  // Three parameters, (3, 7) and (1,) with gradients of the run and (2, 5) without one.
  const TensorData a = data_of(random_tensor({3, 7}, 1)), b = data_of(random_tensor({1}, 2));
  const TensorData c = data_of(random_tensor({2, 5}, 3));
  const TensorData grad_a = data_of(random_tensor({3, 7}, 4)), grad_b = data_of(random_tensor({1}, 5));
  const auto flags = observe("has_grad(p) for p (3, 7), (1,) with gradients and (2, 5) without, after zero_grad()", [&] {
    std::vector<Tensor> parameters{a.tensor(), b.tensor(), c.tensor()};
    for (Tensor& p : parameters) p.set_requires_grad();
    parameters[0].autograd()->grad = grad_a.tensor();
    parameters[1].autograd()->grad = grad_b.tensor();
    optim::SGD optimizer(parameters, 0.1f);
    optimizer.zero_grad();
    std::vector<std::int64_t> has(parameters.size());
    for (std::size_t k = 0; k < parameters.size(); ++k) has[k] = ag::has_grad(parameters[k]) ? 1 : 0;
    return has;
  });
  const std::string case_a = "gradients set on (3, 7) and (1,) parameters";
  if (!KILN_EXPECT_OK(flags, "zero_grad_stale", {{"case", case_a}})) return;
  KILN_JUDGE {
    for (std::size_t k = 0; k < flags->size(); ++k) {
      if ((*flags)[k] != 0) {
        KILN_FAIL("zero_grad_stale", {{"case", case_a}},
                  fmt::format("{}: parameter {} still has a gradient", flags.call(), k));
        return;
      }
    }
  }

  // A training loop through module 06: backward() of Σ p² + Σ q², zero_grad(), then backward() of
  // Σ p ⊙ w alone. p's gradient must be w (not w + 2p), and q, absent from the second loss, has none.
  const TensorData p0 = data_of(random_tensor({3, 7}, 6)), q0 = data_of(random_tensor({1}, 7));
  const TensorData w = data_of(random_tensor({3, 7}, 8));
  const auto grads = observe("backward(Σ p² + Σ q²), zero_grad(), backward(Σ p ⊙ w): p.grad() and has_grad(q)", [&] {
    Tensor p = p0.tensor(), q = q0.tensor();
    p.set_requires_grad();
    q.set_requires_grad();
    optim::SGD optimizer({p, q}, 0.1f);
    ag::add(ag::sum(ag::mul(p, p)), ag::sum(ag::mul(q, q))).backward();
    optimizer.zero_grad();
    ag::sum(ag::mul(p, w.tensor())).backward();
    return std::pair(p.grad(), ag::has_grad(q));
  });
  const std::string case_b = "backward() of Σ p² + Σ q², zero_grad(), backward() of Σ p ⊙ w";
  if (!KILN_EXPECT_OK(grads, "zero_grad_stale", {{"case", case_b}})) return;
  KILN_JUDGE {
    if (grads->second) {
      KILN_FAIL("zero_grad_stale", {{"case", case_b}},
                grads.call() + ": q, used only in the first loss, still has a gradient");
      return;
    }
    const testing::Comparison compared = testing::compare(grads->first, w, 1e-5);
    if (!compared.close) {
      KILN_FAIL("zero_grad_stale", {{"case", case_b}},
                grads.call() + ": p.grad() should be w, the second loss's gradient alone; " + compared.describe());
    }
  }
}

TEST(Optimizers, SGD) {
  // By hand: x ← x - 0.1·2x = 0.8·x from 3.
  const Quadratic& q = square_from_3;
  const auto hand = observe("SGD(lr 0.1) for 5 steps on f(x) = x² from x = 3", [&] { return run_quadratic(q, sgd(0.1f), 5); });
  const std::string hand_case = "f(x) = x² from x = 3, lr 0.1";
  if (!KILN_EXPECT_OK(hand, "sgd_wrong", {{"case", hand_case}})) return;
  KILN_JUDGE {
    if (hand->values.size() >= 2 && hand->values[1] == hand->values[0]) {
      KILN_FAIL("not_in_place", {{"case", hand_case}}, hand.call() + ": x is still 3 after the first step");
      return;
    }
    if (!testing::expect_close(__FILE__, __LINE__, hand,
                               expected_trajectory({3.0f}, {{2.4f}, {1.92f}, {1.536f}, {1.2288f}, {0.98304f}}), kAtol,
                               "sgd_wrong", kRtol, {{"case", hand_case}}))
      return;
  }
  if (!EXPECT_QUADRATIC(torch_problem, sgd(0.1f), 8, expected_trajectory(torch_problem.x0, torch_sgd()),
                        "PyTorch's SGD on Σ c·(x - 1)²", "sgd_wrong"))
    return;
  if (!EXPECT_RANDOM_RUN(random_run({{3, 7}, {1}, {33}}, 5, 100), sgd(0.05f), "sgd_wrong")) return;

  // A parameter that is a contiguous view at an offset, one slice of a flat buffer: elements 3 to
  // 5 of base = [0, 1, 2, 3, 4, 5]. Gradient 1 and lr 1 make it [2, 3, 4] and base
  // [0, 1, 2, 2, 3, 4]: the update starts at parameter.data(), the view's offset, not at the
  // storage's first float (which would step base's [0, 1, 2] and leave the parameter as it was).
  const std::string slice_case = "a parameter (3) that is base[3:6] of a (6) base, lr 1, gradient 1";
  const std::string slice_fresh_case = "a fresh parameter [3, 4, 5], lr 1, gradient 1";
  const auto slice_fresh = observe("p = [3, 4, 5], SGD(lr 1) for 1 step with gradient [1, 1, 1]: p", [&] {
    Tensor p({3}, {3.0f, 4.0f, 5.0f});
    p.set_requires_grad();
    optim::SGD optimizer({p}, 1.0f);
    p.autograd()->grad = Tensor::ones({3});
    optimizer.step();
    return p;
  });
  const auto slice = observe(
      "p = make_view(base, {3}, {1}, 3) of base = [0, 1, 2, 3, 4, 5], SGD(lr 1) for 1 step with gradient [1, 1, 1]: p "
      "and base",
      [&] {
        const Tensor base({6}, {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f});
        Tensor p = make_view(base, {3}, {1}, 3);
        p.set_requires_grad();
        optim::SGD optimizer({p}, 1.0f);
        p.autograd()->grad = Tensor::ones({3});
        optimizer.step();
        return std::pair(p, base);
      });
  KILN_JUDGE {
    const std::vector<float> expected_p = {2.0f, 3.0f, 4.0f}, expected_base = {0.0f, 1.0f, 2.0f, 2.0f, 3.0f, 4.0f};
    const Observed<TensorData> slice_p =
        slice.ok() ? Observed<TensorData>(slice.call() + ": p", slice->first) : Observed<TensorData>(slice.call(), slice.error());
    // p and base, two tensors, judged here: the offset failure whenever the view changes p.
    const auto same_p = [](const TensorData& a, const TensorData& b) { return testing::compare(a, b, 0.0).close; };
    if (!testing::offset_changes(slice_p, slice_fresh, same_p) &&
        !expect_fresh_step(__FILE__, __LINE__, slice_fresh, data_of({3}, {3.0f, 4.0f, 5.0f}), data_of({3}, expected_p),
                           "sgd_wrong", slice_fresh_case, 0.0, 0.0))
      return;
    if (!KILN_EXPECT_OK(slice, "sgd_offset_ignored", {{"case", slice_case}})) return;
    if (!slice_fresh.ok()) {
      KILN_FAIL("sgd_offset_ignored", {{"case", slice_case}}, fresh_differs(slice_p, slice_fresh));
      return;
    }
    if (slice->first.values != expected_p || slice->second.values != expected_base) {
      KILN_FAIL("sgd_offset_ignored", {{"case", slice_case}},
                fmt::format("{}: p is {} and base {}, expected {} and {}", slice.call(),
                            testing::list(slice->first.values), testing::list(slice->second.values),
                            testing::list(expected_p), testing::list(expected_base)));
      return;
    }
    if (slice->first.values != slice_fresh->values) {
      KILN_FAIL("sgd_offset_ignored", {{"case", slice_case}}, fresh_differs(slice_p, slice_fresh));
      return;
    }
  }
  if (!slice.ok() || !slice_fresh.ok()) return;

  // A gradient that is a contiguous view at an offset too, 5 floats into a storage whose other
  // floats are random numbers in [-8, 8): the step reads it from the gradient's data(), at its
  // offset. lr 0.5 on a (2, 3) parameter of the run, itself a view at an offset.
  const TensorData p_values = data_of(random_tensor({2, 3}, 510));
  const TensorData g_values = data_of(random_tensor({2, 3}, 511));
  const std::string shifted_case = "a (2, 3) parameter and its gradient, each a view at offset 5 of a larger storage, lr 0.5";
  const std::string fresh_case = "a (2, 3) parameter and its gradient, fresh tensors of the same values, lr 0.5";
  EXPECT_STEP_AT_OFFSET(sgd(0.5f), "SGD(lr 0.5)", p_values, g_values, 512, fresh_case, shifted_case,
                        [](float p, float g) { return p - 0.5f * g; }, "sgd_wrong", "sgd_gradient_offset_ignored");
}

TEST(Optimizers, Momentum) {
  // By hand, lr 0.1, momentum 0.9 on x²: buf = 6, x = 2.4; buf = 5.4 + 4.8 = 10.2, x = 1.38;
  // buf = 9.18 + 2.76 = 11.94, x = 0.186.
  if (!EXPECT_QUADRATIC(square_from_3, sgd(0.1f, 0.9f), 3, expected_trajectory({3.0f}, {{2.4f}, {1.38f}, {0.186f}}),
                        "f(x) = x² from x = 3, lr 0.1, momentum 0.9", "momentum_wrong"))
    return;
  if (!EXPECT_QUADRATIC(torch_problem, sgd(0.1f, 0.9f), 8, expected_trajectory(torch_problem.x0, torch_momentum()),
                        "PyTorch's SGD with momentum 0.9 on Σ c·(x - 1)²", "momentum_wrong"))
    return;
  if (!EXPECT_RANDOM_RUN(random_run({{3, 7}, {1}}, 6, 200), sgd(0.05f, 0.9f), "momentum_wrong")) return;
  if (!EXPECT_RANDOM_RUN(random_run({{1}, {3, 7}}, 6, 300), sgd(0.1f, 0.5f), "momentum_wrong")) return;
  // Momentum 1, the largest the constructor accepts: buf = g, then buf + g, a sum that never
  // forgets. By hand, lr 0.1 on x²: buf = 6, x = 2.4; buf = 6 + 4.8 = 10.8, x = 1.32;
  // buf = 10.8 + 2.64 = 13.44, x = -0.024.
  if (!EXPECT_QUADRATIC(square_from_3, sgd(0.1f, 1.0f), 3, expected_trajectory({3.0f}, {{2.4f}, {1.32f}, {-0.024f}}),
                        "f(x) = x² from x = 3, lr 0.1, momentum 1", "momentum_wrong"))
    return;
  EXPECT_RANDOM_RUN(random_run({{3, 7}, {1}}, 5, 350), sgd(0.05f, 1.0f), "momentum_wrong");
}

TEST(Optimizers, Nesterov) {
  // By hand, lr 0.1, momentum 0.9: buf = 6, step 0.1·(6 + 5.4), x = 1.86; g = 3.72,
  // buf = 5.4 + 3.72 = 9.12, step 0.1·(3.72 + 8.208), x = 0.6672.
  if (!EXPECT_QUADRATIC(square_from_3, sgd(0.1f, 0.9f, true), 2, expected_trajectory({3.0f}, {{1.86f}, {0.6672f}}),
                        "f(x) = x² from x = 3, lr 0.1, momentum 0.9, nesterov", "nesterov_wrong"))
    return;
  if (!EXPECT_QUADRATIC(torch_problem, sgd(0.1f, 0.9f, true), 8, expected_trajectory(torch_problem.x0, torch_nesterov()),
                        "PyTorch's SGD with Nesterov momentum 0.9 on Σ c·(x - 1)²", "nesterov_wrong"))
    return;
  EXPECT_RANDOM_RUN(random_run({{3, 7}, {1}}, 6, 400), sgd(0.05f, 0.9f, true), "nesterov_wrong");
}

TEST(Optimizers, WeightDecay) {
  // By hand, a zero gradient, lr 0.1, weight decay 0.5: x ← x - 0.1·0.5·x = 0.95·x from 3.
  Quadratic decay_only = square_from_3;
  decay_only.zero_gradient = true;
  if (!EXPECT_QUADRATIC(decay_only, sgd(0.1f, 0.0f, false, 0.5f), 2, expected_trajectory({3.0f}, {{2.85f}, {2.7075f}}),
                        "a zero gradient from x = 3, lr 0.1, weight_decay 0.5", "weight_decay_wrong"))
    return;
  if (!EXPECT_QUADRATIC(torch_problem, sgd(0.1f, 0.9f, false, 0.1f), 8,
                        expected_trajectory(torch_problem.x0, torch_momentum_decay()),
                        "PyTorch's SGD with momentum 0.9 and weight_decay 0.1 on Σ c·(x - 1)²", "weight_decay_wrong"))
    return;
  if (!EXPECT_RANDOM_RUN(random_run({{3, 7}, {1}}, 5, 500), sgd(0.1f, 0.0f, false, 0.2f), "weight_decay_wrong")) return;
  EXPECT_RANDOM_RUN(random_run({{1}, {3, 7}}, 6, 600), sgd(0.05f, 0.9f, true, 0.1f), "weight_decay_wrong");
}

TEST(Optimizers, Adam) {
  // The first step: m̂ = g and v̂ = g², so every element moves by lr·g/(|g| + eps), about lr·sign(g).
  if (!EXPECT_QUADRATIC(square_from_3, adam(0.1f), 1, expected_trajectory({3.0f}, {{2.9f}}),
                        "f(x) = x² from x = 3, lr 0.1", "adam_first_step"))
    return;
  const GradientRun first = random_run({{3, 7}, {1}}, 1, 700);
  const Settings first_settings = adam(0.01f);
  if (!EXPECT_REPLAYED(first, first_settings, "random (3, 7) and (1,) parameters, lr 0.01", "adam_first_step", 1e-6,
                       1e-6))
    return;
  // One step of random (3, 7) and (1,) parameters whose gradients `rescale` sets, judged against
  // the replay in double.
  const auto rescaled_first_step = [&](std::uint64_t stream, const auto& rescale, const std::string& gradients,
                                       std::string_view failure) {
    GradientRun run = random_run({{3, 7}, {1}}, 1, stream);
    for (auto& step : run.gradients)
      for (auto& gradient : step)
        for (float& g : gradient->values) g = rescale(g);
    return EXPECT_REPLAYED(run, first_settings, "random (3, 7) and (1,) parameters, " + gradients + ", lr 0.01",
                           failure, 1e-6, 1e-6);
  };
  // Gradients as small as eps (1e-8, the default): the step is lr·g/(|g| + eps), between 0 and
  // 2/3·lr in size for |g| up to 2e-8, with eps added to √v̂, never subtracted from it.
  if (!rescaled_first_step(750, [](float g) { return g * 2e-8f; }, "gradients below 2e-8, eps 1e-8", "adam_first_step"))
    return;
  // Gradients of size 1e20 to 2e20: v = (1 - beta2)·g² is at most 4e37 and fits a float, but
  // v̂ = v / (1 - beta2^t), about 1e40 on the first step, does not: kept in double (as m̂ is),
  // √v̂ is about |g| and every element still moves by about lr·sign(g), as PyTorch's Adam moves it.
  // In float v̂ is inf, √v̂ too, and p does not move.
  if (!rescaled_first_step(
          770, [](float g) { return std::copysign(1e20f * (1.0f + std::fabs(g)), g); }, "gradients of size 1e20 to 2e20",
          "adam_v_hat_overflows"))
    return;

  // Step 2 on x², by hand: g = 5.8, m = 0.54 + 0.58 = 1.12, v = 0.035964 + 0.03364 = 0.069604,
  // m̂ = 1.12/0.19, v̂ = 0.069604/0.001999, x = 2.9 - 0.1·5.8947/5.9008 = 2.8001027.
  if (!EXPECT_QUADRATIC(square_from_3, adam(0.1f), 2, expected_trajectory({3.0f}, {{2.9f}, {2.8001027f}}),
                        "f(x) = x² from x = 3, lr 0.1", "adam_wrong"))
    return;
  // A gradient of exactly 0 after a nonzero one is still a gradient: m and v decay, and p moves on
  // m's memory. p = [1], lr 0.1, g = 1 then 0: step 1 gives 0.9; step 2 has m = 0.09,
  // v = 0.000999, m̂ = 0.09/0.19, v̂ = 0.000999/0.001999, so p = 0.9 - 0.1·0.4736842/0.7069299 =
  // 0.8329942. Then random parameters with every other element's gradient 0 from step 2 on.
  const std::vector<std::pair<std::string, GradientRun>> zero_after = [] {
    GradientRun by_hand{{data_of({1}, {1.0f})}, {{data_of({1}, {1.0f})}, {data_of({1}, {0.0f})}}};
    GradientRun random = random_run({{3, 7}, {1}}, 4, 760);
    for (std::size_t s = 1; s < random.gradients.size(); ++s)
      for (auto& gradient : random.gradients[s])
        for (std::size_t i = s % 2; i < gradient->values.size(); i += 2) gradient->values[i] = 0.0f;
    return std::vector<std::pair<std::string, GradientRun>>{
        {"p = [1], lr 0.1, gradient 1 then 0", by_hand},
        {"random (3, 7) and (1,) parameters, lr 0.1, every other gradient element 0 from step 2 on", random}};
  }();
  for (const auto& [what, run] : zero_after)
    if (!EXPECT_REPLAYED(run, adam(0.1f), what, "adam_zero_gradient_skipped")) return;
  // L2 decay with a zero gradient: g = 0.01·x is all Adam sees, and m̂/√v̂ = 1, so x moves by lr.
  Quadratic decay_only = square_from_3;
  decay_only.zero_gradient = true;
  if (!EXPECT_QUADRATIC(decay_only, adam(0.1f, 0.01f), 2, expected_trajectory({3.0f}, {{2.9f}, {2.80010295f}}),
                        "a zero gradient from x = 3, lr 0.1, weight_decay 0.01", "adam_wrong"))
    return;
  if (!EXPECT_QUADRATIC(torch_problem, adam(0.1f), 8, expected_trajectory(torch_problem.x0, torch_adam()),
                        "PyTorch's Adam on Σ c·(x - 1)²", "adam_wrong"))
    return;
  if (!EXPECT_QUADRATIC(torch_problem, adam(0.1f, 0.1f), 8, expected_trajectory(torch_problem.x0, torch_adam_decay()),
                        "PyTorch's Adam with weight_decay 0.1 on Σ c·(x - 1)²", "adam_wrong"))
    return;
  if (!EXPECT_RANDOM_RUN(random_run({{3, 7}, {1}}, 6, 800), adam(0.01f), "adam_wrong")) return;
  if (!EXPECT_RANDOM_RUN(random_run({{1}, {3, 7}}, 6, 900), adam(0.05f, 0.1f), "adam_wrong")) return;

  // The eps the optimizer was built with, not the default 1e-8: with eps = 1 and gradients of
  // about 1e-3, √v̂ + eps is about 1. p = [0], g = [1e-3], lr 0.1: m̂ = g and √v̂ = |g|, so
  // p = -0.1·1e-3/(1e-3 + 1) = -9.99001e-5, where eps 1e-8 moves it by about lr, to -0.1. Then
  // random parameters with gradients below 1e-3 for 3 steps. Both judged by the double replay.
  const Settings large_eps = adam_with_eps(0.1f, 1.0f);
  GradientRun small_gradients = random_run({{3, 7}, {1}}, 3, 950);
  for (auto& step : small_gradients.gradients)
    for (auto& gradient : step)
      for (float& g : gradient->values) g *= 1e-3f;
  const std::vector<std::pair<std::string, GradientRun>> with_eps = {
      {"p = [0], g = [1e-3], lr 0.1, eps 1", GradientRun{{data_of({1}, {0.0f})}, {{data_of({1}, {1e-3f})}}}},
      {"random (3, 7) and (1,) parameters, gradients below 1e-3, lr 0.1, eps 1", small_gradients}};
  for (const auto& [what, run] : with_eps)
    if (!EXPECT_REPLAYED(run, large_eps, what, "adam_eps_ignored")) return;

  KILN_JUDGE {
    if (::testing::Test::HasFailure()) return;  // one failure per check: the first
  }
  // A parameter that is a contiguous view at an offset (a slice of a flat buffer of parameters),
  // 5 floats into a storage whose other floats are random numbers, and a gradient that is such a
  // view too. The first step moves each of the parameter's own elements by lr·g/(|g| + eps):
  // read and written from parameter.data() and the gradient's data(), at their offsets, not
  // from the storages' first floats (which would leave the parameter as it was).
  const TensorData p_values = data_of(random_tensor({2, 3}, 980));
  const TensorData g_values = data_of(random_tensor({2, 3}, 981, 0.5f, 1.5f));
  const std::string shifted_case = "a (2, 3) parameter and its gradient, each a view at offset 5 of a larger storage";
  const std::string fresh_case = "a (2, 3) parameter and its gradient, fresh tensors of the same values, lr 0.1";
  EXPECT_STEP_AT_OFFSET(adam(0.1f), "Adam(lr 0.1)", p_values, g_values, 982, fresh_case, shifted_case,
                        [](float p, float g) {
                          const double gd = g;
                          return static_cast<float>(p - 0.1 * gd / (std::fabs(gd) + 1e-8));
                        },
                        "adam_first_step", "adam_offset_ignored");
}

TEST(Optimizers, AdamW) {
  // A zero gradient: AdamW only shrinks, x ← x·(1 - 0.1·0.01) = 0.999·x, to 2.997 and 2.99400306,
  // where Adam's L2 decay (the Adam check) moves x by the whole lr, to 2.9.
  Quadratic decay_only = square_from_3;
  decay_only.zero_gradient = true;
  if (!EXPECT_QUADRATIC(decay_only, adamw(0.1f, 0.01f), 2, expected_trajectory({3.0f}, {{2.997f}, {2.99400306f}}),
                        "x = 3, lr 0.1, weight_decay 0.01", "adamw_decay_wrong"))
    return;
  // The same on a random (3, 7) parameter with AdamW's default decay: p·0.999^t exactly.
  GradientRun zero = random_run({{3, 7}}, 3, 1000);
  for (auto& step : zero.gradients) step[0] = data_of({3, 7}, std::vector<float>(21, 0.0f));
  const Settings default_decay = adamw_default_decay(0.1f);
  const auto zero_run = observe_run(zero, default_decay);
  KILN_JUDGE {
    if (!expect_trajectories(__FILE__, __LINE__, zero_run, reference_trajectories(zero, default_decay), {0},
                             "a random (3, 7) parameter, lr 0.1, the default weight_decay 0.01", "adamw_decay_wrong"))
      return;
  }
  if (!zero_run.ok()) return;

  if (!EXPECT_QUADRATIC(torch_problem, adamw(0.1f, 0.1f), 8, expected_trajectory(torch_problem.x0, torch_adamw()),
                        "PyTorch's AdamW with weight_decay 0.1 on Σ c·(x - 1)²", "adamw_wrong"))
    return;
  if (!EXPECT_RANDOM_RUN(random_run({{3, 7}, {1}}, 6, 1100), adamw_default_decay(0.05f), "adamw_wrong")) return;
  EXPECT_RANDOM_RUN(random_run({{1}, {3, 7}}, 6, 1200), adamw(0.1f, 0.1f), "adamw_wrong");
}

TEST(Optimizers, RateChanges) {
  // A schedule sets a new learning rate before every step: 0.1, 0.01, 0.05, 0.2, 0.02, 0.1, ...
  // Each step must use the rate of that step alone, read from learning_rate() when it runs; state
  // kept across steps (momentum's buffer, Adam's moments) holds gradients, not steps of an old rate.
  const std::vector<Settings> optimizers = {scheduled(sgd(0.05f)), scheduled(sgd(0.05f, 0.9f)),
                                            scheduled(sgd(0.05f, 0.9f, true, 0.1f)), scheduled(adam(0.05f, 0.1f)),
                                            scheduled(adamw(0.05f, 0.1f))};
  std::uint64_t stream = 1250;
  for (const Settings& s : optimizers) {
    const GradientRun run = random_run({{3, 7}, {1}}, 6, stream);
    stream += 10;
    if (!EXPECT_REPLAYED(run, s, describe(s), "rate_change_wrong")) return;
  }
}

TEST(Optimizers, NoGradient) {
  // Four parameters over 6 steps: (3, 7) with a gradient every step; (1,) without one at steps 3
  // and 4; (2, 5) never; (7,) from step 3 on. A parameter must not move on a step without a
  // gradient, and one whose gradient comes late (or comes back) continues its own state.
  GradientRun run = random_run({{3, 7}, {1}, {2, 5}, {7}}, 6, 1300);
  for (std::size_t s = 0; s < run.gradients.size(); ++s) {
    if (s == 2 || s == 3) run.gradients[s][1].reset();
    run.gradients[s][2].reset();
    if (s < 2) run.gradients[s][3].reset();
  }
  for (const Settings& s : {sgd(0.1f, 0.9f, false, 0.1f), adam(0.05f, 0.1f), adamw(0.05f, 0.1f)}) {
    const auto got = observe_run(run, s);
    if (!KILN_EXPECT_OK(got, "no_grad_moved", {{"optimizer", describe(s)}, {"step", "1"}})) return;
    KILN_JUDGE {
      for (std::size_t k = 0; k < run.initial.size(); ++k) {
        const TensorData& trajectory = (*got)[k];
        const auto width = static_cast<std::size_t>(run.initial[k].numel());
        if (trajectory.values.size() != width * (run.gradients.size() + 1)) continue;  // judged below
        for (std::size_t step = 1; step <= run.gradients.size(); ++step) {
          if (run.gradients[step - 1][k]) continue;
          for (std::size_t i = 0; i < width; ++i) {
            const float before = trajectory.values[(step - 1) * width + i], after = trajectory.values[step * width + i];
            if (after != before) {
              const auto [now, was] = testing::format_pair(after, before);
              KILN_FAIL("no_grad_moved", {{"optimizer", describe(s)}, {"step", std::to_string(step)}},
                        fmt::format("{}: parameter {} of shape {}, element {}, went from {} to {} at step {}", got.call(),
                                    k, to_string(run.initial[k].shape), i, was, now, step));
              return;
            }
          }
        }
      }
      if (!expect_trajectories(__FILE__, __LINE__, got, reference_trajectories(run, s), {1, 3},
                               "parameters (1,) and (7,)", "late_state_wrong", kAtol, kRtol, {{"optimizer", describe(s)}}))
        return;
    }
  }
}

TEST(Optimizers, Schedules) {
  // step_lr: the hand case (PyTorch's StepLR gives the same), then rates, step sizes and gammas of
  // the run, step size 1 always among them.
  struct StepCase {
    float base_lr;
    int step_size;
    float gamma;
    int epochs = 34;
  };
  testing::Generator draw(1400);
  // gamma 0 too: base_lr for the first step_size epochs (gamma^0 = 1, as pow(0, 0) is), then 0.
  std::vector<StepCase> step_cases{
      {0.1f, 3, 0.5f, 8}, {0.1f, 2, 0.0f, 5}, {draw.uniform(0.01f, 1.0f), 1, draw.uniform(0.1f, 0.9f)}};
  for (const std::int64_t size : testing::random_ints(2, 2, 8, 1401))
    step_cases.push_back({draw.uniform(0.01f, 1.0f), static_cast<int>(size), draw.uniform(0.1f, 0.9f)});
  for (const StepCase& c : step_cases) {
    const int epochs = c.epochs;
    const auto got = observe(fmt::format("step_lr({}, epoch, {}, {}) for epoch 0 to {}", c.base_lr, c.step_size, c.gamma, epochs - 1), [&] {
      std::vector<float> rates;
      for (int epoch = 0; epoch < epochs; ++epoch) rates.push_back(optim::step_lr(c.base_lr, epoch, c.step_size, c.gamma));
      return rates;
    });
    const testing::Params setting{{"base_lr", fmt::format("{}", c.base_lr)}, {"step_size", std::to_string(c.step_size)},
                                  {"gamma", fmt::format("{}", c.gamma)}};
    testing::Params params = setting;
    params.emplace_back("epoch", "epoch");
    params.emplace_back("got", "an error");
    params.emplace_back("expected", "a rate");
    if (!KILN_EXPECT_OK(got, "step_lr_wrong", params)) return;
    KILN_JUDGE {
      for (int epoch = 0; epoch < epochs; ++epoch) {
        // In double and rounded once, as the header asks: exact. A rate kept in float is rounded
        // at every drop and is a bit off for many rates and gammas.
        const double exact = c.base_lr * std::pow(static_cast<double>(c.gamma), epoch / c.step_size);
        const double expected = static_cast<float>(exact);
        const double actual = epoch < static_cast<int>(got->size()) ? (*got)[epoch] : std::nan("");
        if (!(actual == expected || rounds_either_way(exact, actual))) {
          const auto [a, e] = testing::format_pair(actual, expected);
          testing::Params failed = setting;
          failed.insert(failed.end(), {{"epoch", std::to_string(epoch)}, {"got", a}, {"expected", e}});
          KILN_FAIL("step_lr_wrong", failed, got.call());
          return;
        }
      }
    }
  }

  // Arguments that make no schedule: a negative epoch (C++ rounds -1 / 3 toward 0, not down), a
  // step size of -2 (a drop count of -2 at epoch 5), then 0, which would divide by zero.
  for (const auto& [epoch, step_size, argument] :
       {std::tuple(-1, 3, "epoch"), std::tuple(5, -2, "step_size"), std::tuple(5, 0, "step_size")}) {
    const std::string call = fmt::format("step_lr(0.1, {}, {}, 0.5)", epoch, step_size);
    const auto got = observe(call, [&] { return optim::step_lr(0.1f, epoch, step_size, 0.5f); });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(
          __FILE__, __LINE__, got, "step_lr_arguments_unchecked", {argument},
          {{"epoch", std::to_string(epoch)}, {"step_size", std::to_string(step_size)}, {"argument", argument}});
      if (::testing::Test::HasFailure()) return;
    }
  }

  // Epochs past 2^24, which a schedule counted in iterations reaches: ⌊epoch / step_size⌋ in
  // integers. Through float, 33554433 and 16777217 round to 2^25 and 2^24, 2 drops of what is 1;
  // 33554434 is 2 drops either way; 999999999 / 7 in float is 142857136, 6 drops short of
  // 142857142, which a gamma just below 1 shows.
  struct LateCase {
    float base_lr;
    int epoch, step_size;
    float gamma;
  };
  const std::vector<LateCase> late_cases{
      {1.0f, 33554433, 16777217, 0.5f}, {1.0f, 33554434, 16777217, 0.5f}, {1.0f, 999999999, 7, 0.99999994f}};
  for (const LateCase& c : late_cases) {
    const testing::Params setting{{"base_lr", fmt::format("{}", c.base_lr)}, {"epoch", std::to_string(c.epoch)},
                                  {"step_size", std::to_string(c.step_size)}, {"gamma", fmt::format("{}", c.gamma)}};
    const auto got = observe(fmt::format("step_lr({}, {}, {}, {})", c.base_lr, c.epoch, c.step_size, c.gamma),
                             [&] { return optim::step_lr(c.base_lr, c.epoch, c.step_size, c.gamma); });
    testing::Params params = setting;
    params.insert(params.end(), {{"got", "an error"}, {"expected", "a rate"}});
    if (!KILN_EXPECT_OK(got, "step_lr_wrong", params)) return;
    KILN_JUDGE {
      const double exact = c.base_lr * std::pow(static_cast<double>(c.gamma), c.epoch / c.step_size);
      const double expected = static_cast<float>(exact);
      const double actual = *got;
      if (!(actual == expected || rounds_either_way(exact, actual))) {
        const auto [a, e] = testing::format_pair(actual, expected);
        testing::Params failed = setting;
        failed.insert(failed.end(), {{"got", a}, {"expected", e}});
        KILN_FAIL("step_lr_wrong", failed,
                  fmt::format("{}: ⌊{} / {}⌋ is {}", got.call(), c.epoch, c.step_size,
                              testing::counted(c.epoch / c.step_size, "drop")));
        return;
      }
    }
  }

  // cosine_lr: 0.1 to 0.001 over 10 steps (PyTorch's CosineAnnealingLR gives 0.1, 0.0975773,
  // 0.0905463, ..., 0.0505 at step 5, ..., 0.001), then a single step, total steps of 7, 31 and 33
  // with rates of the run, and a schedule down to 0. Steps go two past the end.
  struct CosineCase {
    float base_lr, min_lr;
    int total_steps;
  };
  std::vector<CosineCase> cosine_cases{{0.1f, 0.001f, 10}, {draw.uniform(0.01f, 1.0f), draw.uniform(0.0f, 0.01f), 1}};
  for (const int total : {7, 31, 33}) cosine_cases.push_back({draw.uniform(0.01f, 1.0f), draw.uniform(0.0f, 0.01f), total});
  cosine_cases.push_back({draw.uniform(0.01f, 1.0f), 0.0f, static_cast<int>(testing::random_ints(1, 2, 40, 1402)[0])});
  for (const CosineCase& c : cosine_cases) {
    const int steps = c.total_steps + 3;
    const auto got = observe(fmt::format("cosine_lr({}, {}, step, {}) for step 0 to {}", c.base_lr, c.min_lr, c.total_steps, steps - 1), [&] {
      std::vector<float> rates;
      for (int step = 0; step < steps; ++step) rates.push_back(optim::cosine_lr(c.base_lr, c.min_lr, step, c.total_steps));
      return rates;
    });
    const testing::Params setting{{"base_lr", fmt::format("{}", c.base_lr)}, {"min_lr", fmt::format("{}", c.min_lr)},
                                  {"total_steps", std::to_string(c.total_steps)}};
    testing::Params params = setting;
    params.insert(params.end(), {{"step", "step"}, {"got", "an error"}, {"expected", "a rate"}});
    if (!KILN_EXPECT_OK(got, "cosine_wrong", params)) return;
    KILN_JUDGE {
      for (int step = 0; step < steps; ++step) {
        // Endpoints exactly: base_lr at step 0, min_lr from total_steps on.
        double expected = c.min_lr;
        double tolerance = 0.0;
        if (step == 0) {
          expected = c.base_lr;
        } else if (step < c.total_steps) {
          const double progress = static_cast<double>(step) / c.total_steps;
          expected = static_cast<float>(c.min_lr + (static_cast<double>(c.base_lr) - c.min_lr) * 0.5 *
                                                        (1.0 + std::cos(3.14159265358979323846 * progress)));
          tolerance = 1e-6 * std::fabs(expected);
        }
        const double actual = step < static_cast<int>(got->size()) ? (*got)[step] : std::nan("");
        if (!(std::fabs(actual - expected) <= tolerance)) {
          const auto [a, e] = testing::format_pair(actual, expected);
          testing::Params failed = setting;
          failed.insert(failed.end(), {{"step", std::to_string(step)}, {"got", a}, {"expected", e}});
          KILN_FAIL("cosine_wrong", failed, got.call());
          return;
        }
      }
    }
  }
}

namespace {

// cosine_lr with warm-up, in double and rounded to float once, for arguments it accepts.
float reference_cosine_lr(float base_lr, float min_lr, int step, int total_steps, int warmup_steps) {
  if (step >= total_steps) return min_lr;
  const double base = base_lr, floor = min_lr;
  if (step < warmup_steps) return static_cast<float>(base * step / warmup_steps);
  const double progress = static_cast<double>(step - warmup_steps) / (total_steps - warmup_steps);
  return static_cast<float>(floor + (base - floor) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress)));
}

// Stanford CS336's test of get_lr_cosine_schedule (max 1, min 0.1, 7 warm-up steps, cosine to
// step 21) holds these rates for steps 0 to 24; up to its last step Hugging Face's
// get_cosine_schedule_with_warmup follows the same rule, with a floor of 0.
std::vector<double> cs336_rates() {
  return {
      0.0,                 0.14285714285714285, 0.2857142857142857,  0.42857142857142855, 0.5714285714285714,
      0.7142857142857143,  0.8571428571428571,  1.0,                 0.9887175604818206,  0.9554359905560885,
      0.9018241671106134,  0.8305704108364301,  0.7452476826029011,  0.6501344202803414,  0.55,
      0.44986557971965857, 0.3547523173970989,  0.26942958916356996, 0.19817583288938662, 0.14456400944391146,
      0.11128243951817937, 0.1,                 0.1,                 0.1,                 0.1};
}

}  // namespace

TEST(Optimizers, WarmupCosine) {
  struct Case {
    float base_lr, min_lr;
    int total_steps, warmup_steps;
  };
  testing::Generator draw(1500);
  const auto rate = [&] { return draw.uniform(0.01f, 1.0f); };
  const auto low = [&] { return draw.uniform(0.0f, 0.01f); };
  const auto sizes = testing::random_ints(2, 2, 41, 1501);
  const int random_total = static_cast<int>(sizes[0]);
  const int random_warmup = static_cast<int>(sizes[1] % (sizes[0] + 1));
  const std::vector<Case> cases = {
      {1.0f, 0.1f, 21, 7},                           // CS336's case
      {rate(), low(), 1, 1},                         // one step, all of it warm-up: 0, then min_lr
      {rate(), low(), 1, 0},                         // one step without warm-up: base_lr, then min_lr
      {rate(), low(), 7, 0},                         // no warm-up: plain cosine annealing
      {rate(), 0.0f, 33, 1},                         // one warm-up step (0), base_lr at step 1, down to 0
      {rate(), low(), 31, 30},                       // a single cosine step after a long warm-up
      {rate(), low(), 10, 10},                       // warm-up to the end, no cosine: min_lr at step 10
      {rate(), low(), random_total, random_warmup},  // 2 to 40 steps, any warm-up
      {0.0f, 0.0f, 5, 2},                            // rates of 0 make a schedule of zeros
      {0.001f, 0.0f, 12, 6},                         // step 5: 0.001·5/6 rounded twice in float is a bit off
      {std::numeric_limits<float>::max(), low(), 9, 3},  // the largest rate: base_lr·step overflows float, not double
  };
  for (const Case& c : cases) {
    // Every step from 0 to two past the end, and one far past it.
    std::vector<int> steps;
    for (int step = 0; step <= c.total_steps + 2; ++step) steps.push_back(step);
    steps.push_back(10 * c.total_steps + 7);
    const auto got = observe(fmt::format("cosine_lr({}, {}, step, {}, {}) for step 0 to {} and {}", c.base_lr, c.min_lr,
                                         c.total_steps, c.warmup_steps, c.total_steps + 2, steps.back()),
                             [&] {
                               std::vector<float> rates;
                               for (const int step : steps)
                                 rates.push_back(optim::cosine_lr(c.base_lr, c.min_lr, step, c.total_steps, c.warmup_steps));
                               return rates;
                             });
    const testing::Params setting{{"base_lr", fmt::format("{}", c.base_lr)}, {"min_lr", fmt::format("{}", c.min_lr)},
                                  {"total_steps", std::to_string(c.total_steps)},
                                  {"warmup_steps", std::to_string(c.warmup_steps)}};
    if (!KILN_EXPECT_OK(got, "valid_schedule_refused", setting)) return;
    KILN_JUDGE {
      const std::vector<double> cs336 = cs336_rates();
      const bool from_cs336 = c.base_lr == 1.0f && c.min_lr == 0.1f && c.total_steps == 21 && c.warmup_steps == 7;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const int step = steps[i];
        const bool rising = step < c.warmup_steps && step < c.total_steps;
        double expected = reference_cosine_lr(c.base_lr, c.min_lr, step, c.total_steps, c.warmup_steps);
        if (from_cs336 && i < cs336.size()) expected = cs336[i];
        // Exact through the warm-up (base_lr·step/warmup_steps in double, rounded once to float, as
        // the header asks: in float it is rounded twice, and a bit off for many rates and steps),
        // base_lr where it ends, min_lr from total_steps on.
        const bool exact = rising || step == c.warmup_steps || step >= c.total_steps;
        if (exact) expected = static_cast<float>(expected);
        const double tolerance = exact ? 0.0 : 1e-6 * std::fabs(expected);
        const double actual = i < got->size() ? (*got)[i] : std::nan("");
        if (!(std::fabs(actual - expected) <= tolerance)) {
          const auto [a, e] = testing::format_pair(actual, expected);
          testing::Params failed = setting;
          failed.insert(failed.end(), {{"step", std::to_string(step)}, {"got", a}, {"expected", e}});
          KILN_FAIL(rising ? "warmup_rise_wrong" : "warmup_decay_wrong", failed, got.call());
          return;
        }
      }
    }
  }

  // Arguments that make no schedule, each beside a valid value above: step 0, total_steps 1,
  // warmup_steps 0 and equal to total_steps, rates of 0.
  struct Refused {
    float base_lr, min_lr;
    int step, total_steps, warmup_steps;
    std::string problem, name;  // what is wrong; the argument the error must name
  };
  const int total = 2 + static_cast<int>(draw.below(30));
  const std::vector<Refused> refused = {
      {0.1f, 0.0f, -1, 10, 2, "a negative step", "step"},
      {0.1f, 0.0f, 0, 0, 0, "total_steps 0", "total_steps"},
      {0.1f, 0.0f, 3, -4, 0, "a negative total_steps", "total_steps"},
      {0.1f, 0.0f, 0, 10, -1, "a negative warmup_steps", "warmup_steps"},
      {0.1f, 0.0f, 0, total, total + 1, "warmup_steps above total_steps", "warmup_steps"},
      {0.1f, 0.0f, 0, 1, 2, "warmup_steps above total_steps", "warmup_steps"},
      {-0.1f, 0.0f, 0, 10, 2, "a negative base_lr", "base_lr"},
      {0.1f, -0.001f, 0, 10, 2, "a negative min_lr", "min_lr"},
      {std::numeric_limits<float>::quiet_NaN(), 0.0f, 0, 10, 2, "a base_lr of NaN", "base_lr"},
      {0.1f, std::numeric_limits<float>::quiet_NaN(), 0, 10, 2, "a min_lr of NaN", "min_lr"},
      {std::numeric_limits<float>::infinity(), 0.0f, 3, 10, 2, "an infinite base_lr", "base_lr"},
      {0.1f, std::numeric_limits<float>::infinity(), 3, 10, 0, "an infinite min_lr", "min_lr"},
  };
  // Each refusal must throw std::invalid_argument naming the argument, reported as failure_id.
  // False once a failure is recorded (the check ends at its first).
  const auto expect_refused = [&](const Refused& r, std::string_view failure_id) -> bool {
    const auto call = observe(fmt::format("cosine_lr({}, {}, {}, {}, {})", r.base_lr, r.min_lr, r.step, r.total_steps,
                                          r.warmup_steps),
                              [&] { return optim::cosine_lr(r.base_lr, r.min_lr, r.step, r.total_steps, r.warmup_steps); });
    const testing::Params params{{"base_lr", fmt::format("{}", r.base_lr)}, {"min_lr", fmt::format("{}", r.min_lr)},
                                 {"step", std::to_string(r.step)}, {"total_steps", std::to_string(r.total_steps)},
                                 {"warmup_steps", std::to_string(r.warmup_steps)}, {"problem", r.problem}};
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, call, failure_id, {r.name}, params);
      return !::testing::Test::HasFailure();
    }
    return true;
  };
  for (const Refused& r : refused)
    if (!expect_refused(r, "schedule_arguments_unchecked")) return;

  // The same refusals at a step at or past total_steps, where the rate would be min_lr: the
  // arguments are checked before that rule, so no step returns a rate of a schedule that is none.
  const std::vector<Refused> past_end = {
      {1.0f, -0.5f, 30, 20, 0, "a negative min_lr", "min_lr"},
      {std::numeric_limits<float>::infinity(), 0.1f, 20, 20, 0, "an infinite base_lr", "base_lr"},
      {1.0f, 0.1f, 30, 20, 25, "warmup_steps above total_steps", "warmup_steps"},
      {1.0f, 0.1f, total, total, -1, "a negative warmup_steps", "warmup_steps"},
  };
  for (const Refused& r : past_end)
    if (!expect_refused(r, "past_end_arguments_unchecked")) return;

  // Steps past 2^24, where a float no longer holds every integer (a schedule counted in
  // iterations gets there): step 16777217 is 1 step into a cosine of 2 after a warm-up of
  // 16777216, so halfway down (progress 1/2); through floats step and warm-up are both 2^24 and the
  // rate stays at base_lr. And step 16777217 of a warm-up of 16777219 is 16777217/16777219 of
  // base_lr, which floats make 16777216/16777220. The rate of the run scales both.
  struct Far {
    int step, total_steps, warmup_steps;
  };
  const float far_rate = draw.uniform(0.5f, 1.0f);
  for (const Far& f : {Far{16777217, 16777218, 16777216}, Far{16777217, 16777220, 16777219}}) {
    const auto got = observe(fmt::format("cosine_lr({}, 0, {}, {}, {})", far_rate, f.step, f.total_steps, f.warmup_steps),
                             [&] { return optim::cosine_lr(far_rate, 0.0f, f.step, f.total_steps, f.warmup_steps); });
    testing::Params params{{"base_lr", fmt::format("{}", far_rate)}, {"step", std::to_string(f.step)},
                           {"total_steps", std::to_string(f.total_steps)},
                           {"warmup_steps", std::to_string(f.warmup_steps)}};
    if (!KILN_EXPECT_OK(got, "schedule_counts_in_float", params)) return;
    KILN_JUDGE {
      const bool rising = f.step < f.warmup_steps;
      const double expected = reference_cosine_lr(far_rate, 0.0f, f.step, f.total_steps, f.warmup_steps);
      const double tolerance = rising ? 0.0 : 1e-6 * std::fabs(expected);
      if (!(std::fabs(*got - expected) <= tolerance)) {
        const auto [a, e] = testing::format_pair(*got, expected);
        params.insert(params.end(), {{"got", a}, {"expected", e}});
        KILN_FAIL("schedule_counts_in_float", params, got.call());
        return;
      }
    }
  }
}

}  // namespace kiln
