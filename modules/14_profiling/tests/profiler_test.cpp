// Module 14 checks for the profiler: layer_cost on real layers, then profile_forward with a
// scripted clock. The clock returns the next of a list of times drawn from the run's seed, so
// every duration the profiler should record is known exactly in advance and no check depends on
// how fast this machine is. The clock writes 'C' into a log at every reading, and the test's Probe
// layer writes 'F' at every forward call: a correct profiler of three probes with warmup 1 and
// repetitions 2 leaves "FFF" then "CFCCFCCFC" twice.
//
// Models are built inside the observed calls (their constructors are your module 08 and 09
// code); what comes back is plain data: one tuple per record.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/profiling.h"
#include "kiln/testing.h"
#include "profiling_testing.h"

namespace kiln {
namespace {

using namespace profiling_testing;
using testing::observe;
using testing::random_tensor;

// A layer the profiler knows nothing about: it notes each call in `log` and returns its input.
class Probe : public nn::Module {
 public:
  explicit Probe(std::string& log) : log_(log) {}
  Tensor forward(const Tensor& x) override {
    log_ += 'F';
    return x;
  }

 private:
  std::string& log_;
};

// A layer that notes the shape of every input it is called on in `seen` and returns one column
// fewer, so that a pass started from the last pass's output shows in the shapes its layers see.
class Narrow : public nn::Module {
 public:
  explicit Narrow(std::vector<std::string>& seen) : seen_(seen) {}
  Tensor forward(const Tensor& x) override {
    seen_.push_back(to_string(x.shape()));
    return Tensor::zeros({x.shape()[0], x.shape()[1] - 1});
  }

 private:
  std::vector<std::string>& seen_;
};

// A layer of a kind the profiler does not know: it returns its input.
class Passthrough : public nn::Module {
 public:
  Tensor forward(const Tensor& x) override { return x; }
};

// Times that only grow, from the run's generator: a start in the first 1000 s after boot, then
// steps of 1 µs to 10 ms.
std::vector<double> scripted_times(std::size_t readings, std::uint64_t stream) {
  testing::Generator generator(stream);
  std::vector<double> times(readings);
  double now = 50 + 1000 * generator.uniform();
  for (double& t : times) {
    t = now;
    now += 1e-6 + 0.01 * generator.uniform();
  }
  return times;
}

// A clock that reads `times` in order, writing 'C' into `log` at every reading.
Clock scripted_clock(const std::vector<double>& times, std::size_t& next, std::string& log) {
  return [&times, &next, &log] {
    log += 'C';
    if (next == times.size()) throw std::runtime_error("the scripted clock ran out of readings");
    return times[next++];
  };
}

// A record as plain data: name, kind, input shape, output shape, calls, seconds, flops, bytes.
using PlainRecord = std::tuple<std::string, std::string, Shape, Shape, std::int64_t, double, std::int64_t, std::int64_t>;

std::vector<PlainRecord> plain(const std::vector<LayerRecord>& records) {
  std::vector<PlainRecord> out;
  for (const LayerRecord& r : records)
    out.emplace_back(r.name, r.kind, r.input_shape, r.output_shape, r.calls, r.seconds, r.cost.flops, r.cost.bytes);
  return out;
}

// What a profile must say about a layer on a given input: its kind, output shape and cost.
struct LayerWant {
  std::string kind;
  Shape output;
  PlainCost cost;
};

// One layer of a test model: how to build it, and (in the judge only) what a profile must say about
// it on an input of a given shape, worked out by trusted code.
struct LayerSpec {
  std::string text;  // "Linear(7, 5)"
  std::function<std::shared_ptr<nn::Module>(WichmannHill&)> build;  // student code: inside observe
  std::function<LayerWant(const Shape& input)> want;                  // trusted code: judge only
};

// The test's models: layer specs and the input shape.
struct ModelSpec {
  std::string name;
  Shape input;
  std::vector<LayerSpec> layers;
};

LayerSpec linear(std::int64_t in, std::int64_t out) {
  return {fmt::format("Linear({}, {})", in, out),
          [in, out](WichmannHill& g) { return std::make_shared<nn::Linear>(in, out, g); },
          KILN_JUDGE_ONLY([in, out](const Shape& input) {
            return LayerWant{"Linear", Shape{input[0], out}, trusted_linear(input[0], in, out)};
          })};
}
LayerSpec relu() {
  return {"ReLU", [](WichmannHill&) { return std::make_shared<nn::ReLU>(); },
          KILN_JUDGE_ONLY([](const Shape& input) { return LayerWant{"ReLU", input, trusted_relu(count(input))}; })};
}
LayerSpec conv(std::int64_t in_channels, int out_channels, int k, int stride, int padding, bool bias) {
  return {fmt::format("Conv2dLayer({}, {}, {}, {}, {}, {})", in_channels, out_channels, k, stride, padding, bias),
          [=](WichmannHill& g) {
            return std::make_shared<nn::Conv2dLayer>(static_cast<int>(in_channels), out_channels, k, stride, padding, bias, g);
          },
          KILN_JUDGE_ONLY([=](const Shape& input) {
            return LayerWant{"Conv2d", trusted_conv_shape(input, out_channels, k, stride, padding),
                             trusted_conv(input, out_channels, k, stride, padding, bias)};
          })};
}
// MaxPool2dLayer(k), windows side by side, or MaxPool2dLayer(k, stride).
LayerSpec pool(int k, int stride = -1) {
  const int step = stride < 0 ? k : stride;
  return {stride < 0 ? fmt::format("MaxPool2dLayer({})", k) : fmt::format("MaxPool2dLayer({}, {})", k, stride),
          [k, stride](WichmannHill&) { return std::make_shared<nn::MaxPool2dLayer>(k, stride); },
          KILN_JUDGE_ONLY([k, step](const Shape& input) {
            return LayerWant{"MaxPool2d", trusted_pool_shape(input, k, step), trusted_pool(input, k, step)};
          })};
}
LayerSpec passthrough() {
  return {"Passthrough", [](WichmannHill&) { return std::make_shared<Passthrough>(); },
          KILN_JUDGE_ONLY([](const Shape& input) { return LayerWant{"other", input, PlainCost{0, 0}}; })};
}
LayerSpec flatten() {
  return {"Flatten", [](WichmannHill&) { return std::make_shared<nn::Flatten>(); },
          KILN_JUDGE_ONLY([](const Shape& input) {
            return LayerWant{"Flatten", Shape{input[0], count(input) / input[0]}, PlainCost{0, 0}};
          })};
}

// An MLP at `batch` with the given widths, and a CNN on (batch, channels, side, side + 2).
ModelSpec mlp(std::int64_t batch, std::int64_t in, std::int64_t hidden, std::int64_t out) {
  return {fmt::format("Linear({0}, {1}), ReLU, Linear({1}, {2}) at batch {3}", in, hidden, out, batch),
          {batch, in},
          {linear(in, hidden), relu(), linear(hidden, out)}};
}
ModelSpec cnn(std::int64_t batch, std::int64_t channels, std::int64_t side) {
  ModelSpec m{"", {batch, channels, side, side + 2}, {}};
  // The last Linear's input width, an input of the model: 4 channels of what the 3×3 convolution
  // with padding 1, the 2×2 pooling and the 3×3 convolution with stride 2 and padding 1 leave.
  const auto left = [](std::int64_t size) { return positions(positions(positions(size, 3, 1, 1), 2, 2, 0), 3, 2, 1); };
  const std::int64_t flat = 4 * left(side) * left(side + 2);
  m.layers = {conv(channels, 3, 3, 1, 1, true), relu(), pool(2), conv(3, 4, 3, 2, 1, false), flatten(), linear(flat, 5)};
  std::string names;
  for (const LayerSpec& layer : m.layers) names += (names.empty() ? "" : ", ") + layer.text;
  m.name = names + " on images " + shape_text(m.input);
  return m;
}

// profile_forward of the model `spec` on an input from the run's seed, with the scripted clock.
auto observe_profile(const ModelSpec& spec, const ProfileOptions& options, const std::vector<double>& times,
                     std::uint64_t stream) {
  const Tensor x = random_tensor(spec.input, stream);
  return observe(fmt::format("profile_forward(model, x, {{.warmup = {}, .repetitions = {}}}, scripted_clock) of {}",
                             options.warmup, options.repetitions, spec.name),
                 [&] {
                   WichmannHill generator(14);
                   std::vector<std::shared_ptr<nn::Module>> layers;
                   for (const LayerSpec& layer : spec.layers) layers.push_back(layer.build(generator));
                   nn::Sequential model(layers);
                   std::size_t next = 0;
                   std::string log;
                   return plain(profile_forward(model, x, options, scripted_clock(times, next, log)));
                 });
}

}  // namespace

TEST(Profiling, LayerCost) {
  // Each kind of layer, alone, on an input of its own; built inside the observation.
  const auto r = testing::random_ints(3, 1, 40, 1410);
  const std::vector<std::pair<LayerSpec, Shape>> cases = {
      {linear(7, 5), {3, 7}},
      {linear(r[1], r[2]), {r[0], r[1]}},
      {relu(), {2, 3, 5}},
      {flatten(), {2, 3, 5, 7}},
      {conv(3, 4, 3, 2, 1, false), {2, 3, 7, 5}},
      {conv(2, 3, 3, 1, 1, true), {1, 2, 6, 6}},
      {pool(2), {2, 3, 7, 5}},
      {pool(3), {1, 1, 9, 9}},
      {pool(3, 1), {1, 2, 6, 5}},  // overlapping windows: the stride is not the kernel's size
      {pool(2, 3), {2, 1, 8, 7}},
      {passthrough(), {4, 6}}};  // a layer of another kind: {0, 0}
  for (const auto& [spec, input] : cases) {
    const auto got = observe(fmt::format("layer_cost({}, {})", spec.text, shape_text(input)), [&] {
      WichmannHill generator(14);
      const std::shared_ptr<nn::Module> layer = spec.build(generator);
      const Cost cost = layer_cost(*layer, input);
      return PlainCost{cost.flops, cost.bytes};
    });
    const testing::Params params = {{"layer", spec.text}, {"input", shape_text(input)}};
    if (!KILN_EXPECT_OK(got, "layer_cost_wrong", params)) return;
    KILN_JUDGE {
      const PlainCost cost = spec.want(input).cost;
      if (*got != cost) {
        KILN_FAIL("layer_cost_wrong", params, got_expected(*got, cost));
        return;
      }
    }
  }
  // A ReLU on (65536, 65536): 2³² elements, a count an int holds as 0. Only the shape is given.
  const auto big = observe("layer_cost(ReLU, (65536, 65536))", [&] {
    const Cost cost = layer_cost(nn::ReLU(), {65536, 65536});
    return PlainCost{cost.flops, cost.bytes};
  });
  if (!KILN_EXPECT_OK(big, "layer_cost_narrowed")) return;
  KILN_JUDGE {
    const PlainCost want = trusted_relu(std::int64_t{65536} * 65536);
    if (*big != want) KILN_FAIL("layer_cost_narrowed", {}, got_expected(*big, want));
  }
}

TEST(Profiling, ProfileOrder) {
  testing::Generator generator(1411);
  const int warmup = static_cast<int>(generator.below(4));
  const int repetitions = 1 + static_cast<int>(generator.below(5));
  const struct {
    int layers, warmup, repetitions;
  } plans[] = {{3, 1, 2}, {1, 0, 1}, {3, 2, 3}, {2, 0, 7}, {1 + static_cast<int>(generator.below(4)), warmup, repetitions}};
  const Tensor x = random_tensor({3, 5}, 1412);
  for (const auto& plan : plans) {
    const std::vector<double> times = scripted_times(4 * static_cast<std::size_t>((plan.warmup + plan.repetitions) * plan.layers) + 8, 1413);
    const auto log = observe(fmt::format("profile_forward(Sequential of {}, x, {{.warmup = {}, .repetitions = {}}}, scripted_clock)",
                                         testing::counted(plan.layers, "probe"), plan.warmup,
                                         plan.repetitions),
                             [&] {
                               std::string events;
                               std::vector<std::shared_ptr<nn::Module>> probes;
                               for (int i = 0; i < plan.layers; ++i) probes.push_back(std::make_shared<Probe>(events));
                               nn::Sequential model(probes);
                               std::size_t next = 0;
                               profile_forward(model, x, ProfileOptions{plan.warmup, plan.repetitions},
                                               scripted_clock(times, next, events));
                               return events;
                             });
    const testing::Params params = {{"layers", testing::counted(plan.layers, "layer")},
                                    {"warmup", std::to_string(plan.warmup)},
                                    {"repetitions", std::to_string(plan.repetitions)}};
    if (!KILN_EXPECT_OK(log, "profile_order_wrong", params)) return;
    KILN_JUDGE {
      std::string expected;
      for (int pass = 0; pass < plan.warmup; ++pass) expected += std::string(static_cast<std::size_t>(plan.layers), 'F');
      for (int pass = 0; pass < plan.repetitions; ++pass)
        for (int layer = 0; layer < plan.layers; ++layer) expected += "CFC";
      if (*log != expected) {
        KILN_FAIL("profile_order_wrong", params,
                  "clock readings (C) and layer calls (F), in order:\n  got      " + *log + "\n  expected " + expected);
        return;
      }
    }
  }
  // Every pass, warm-up or timed, is model(x): two Narrow layers (5 columns to 4 to 3) with
  // warmup 2 and repetitions 2 must see (3, 5) then (3, 4) in each of the four passes. A second
  // warm-up pass started from the first one's output would see (3, 3) then (3, 2).
  {
    const std::vector<double> times = scripted_times(16, 1417);
    const auto seen = observe("profile_forward(Sequential of 2 layers that each drop a column, x (3, 5), "
                              "{.warmup = 2, .repetitions = 2}, scripted_clock): the input shapes they see",
                              [&] {
                                std::vector<std::string> shapes;
                                nn::Sequential model({std::make_shared<Narrow>(shapes), std::make_shared<Narrow>(shapes)});
                                std::size_t next = 0;
                                std::string events;
                                profile_forward(model, x, ProfileOptions{2, 2}, scripted_clock(times, next, events));
                                return shapes;
                              });
    const testing::Params params = {{"layers", "2 layers"}, {"warmup", "2"}};
    if (!KILN_EXPECT_OK(seen, "warmup_not_from_x", params)) return;
    KILN_JUDGE {
      std::vector<std::string> expected;
      for (int pass = 0; pass < 4; ++pass) expected.insert(expected.end(), {"(3, 5)", "(3, 4)"});
      if (*seen != expected) {
        const auto joined = [](const std::vector<std::string>& shapes) {
          std::string text;
          for (const std::string& shape : shapes) text += (text.empty() ? "" : " ") + shape;
          return text;
        };
        KILN_FAIL("warmup_not_from_x", params,
                  "the input shapes of the layers' calls, warm-up passes first:\n  got      " + joined(*seen) +
                      "\n  expected " + joined(expected));
        return;
      }
    }
  }
  // Options that make no sense are refused before anything runs.
  const auto refused = [&](int warmup, int repetitions) {
    return observe(fmt::format("profile_forward(model, x, {{.warmup = {}, .repetitions = {}}})", warmup, repetitions), [&] {
      nn::Sequential model({std::make_shared<nn::ReLU>()});
      (void)profile_forward(model, x, ProfileOptions{warmup, repetitions});
    });
  };
  for (const auto& [w, reps] : {std::pair{1, 0}, std::pair{-1, 3}, std::pair{0, -2}}) {
    const auto refusal = refused(w, reps);
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, refusal, "profile_options_unchecked");
      if (::testing::Test::HasFailure()) return;
    }
  }
  // An empty Sequential gives no records, but only for options that make sense: the refusal comes
  // first, so repetitions 0 or warmup -1 are refused there too.
  for (const auto& [w, reps] : {std::pair{0, 0}, std::pair{-1, 1}}) {
    const auto refusal =
        observe(fmt::format("profile_forward(an empty Sequential, x, {{.warmup = {}, .repetitions = {}}})", w, reps), [&] {
          nn::Sequential model(std::vector<std::shared_ptr<nn::Module>>{});
          (void)profile_forward(model, x, ProfileOptions{w, reps});
        });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, refusal, "empty_model_options_unchecked",
                                                    {}, {{"warmup", std::to_string(w)}, {"repetitions", std::to_string(reps)}});
      if (::testing::Test::HasFailure()) return;
    }
  }
  // ... before any layer runs: warmup 2 with repetitions 0 calls nothing.
  const auto calls_before = observe("profile_forward(Sequential of 1 probe, x, {.warmup = 2, .repetitions = 0}, scripted_clock)", [&] {
    std::string events;
    nn::Sequential model({std::make_shared<Probe>(events)});
    const std::vector<double> times = scripted_times(8, 1416);
    std::size_t next = 0;
    bool refused_it = false;
    try {
      (void)profile_forward(model, x, ProfileOptions{2, 0}, scripted_clock(times, next, events));
    } catch (const std::invalid_argument&) {
      refused_it = true;
    }
    return std::make_pair(refused_it, events);
  });
  if (!KILN_EXPECT_OK(calls_before, "profile_options_unchecked")) return;
  KILN_JUDGE {
    const auto& [refused_it, events] = *calls_before;
    if (!refused_it || !events.empty()) {
      KILN_FAIL("profile_options_unchecked", {},
                fmt::format("warmup 2, repetitions 0: {}; clock readings (C) and layer calls (F) before that: \"{}\"",
                            refused_it ? "refused" : "not refused", events));
      return;
    }
  }
}

TEST(Profiling, ProfileRecords) {
  const auto r = testing::random_ints(4, 1, 40, 1414);
  // Warmup 1 and repetitions 3; then warmup 0, which every record must survive with its shapes
  // (taken in the timed passes), first for a ReLU and a Flatten, whose costs need no sizes of
  // their own, then for an MLP, whose Linear reads its batch from the input shape.
  struct Plan {
    ModelSpec spec;
    ProfileOptions options;
  };
  const std::vector<Plan> plans = {{mlp(3, 7, 5, 3), {1, 3}},
                                   {mlp(r[0], r[1], r[2], r[3]), {1, 3}},
                                   {cnn(2, 2, 7), {1, 3}},
                                   {cnn(1 + r[0] % 3, 1 + r[1] % 3, 5 + r[2] % 9), {1, 3}},
                                   {ModelSpec{"an empty Sequential", {3, 5}, {}}, {1, 3}},
                                   {ModelSpec{"ReLU, Flatten on (2, 3, 4)", {2, 3, 4}, {relu(), flatten()}}, {0, 2}},
                                   {mlp(2, 4, 6, 3), {0, 1}}};
  for (std::size_t m = 0; m < plans.size(); ++m) {
    const ModelSpec& spec = plans[m].spec;
    const ProfileOptions& options = plans[m].options;
    const std::size_t layers = spec.layers.size();
    const std::vector<double> times = scripted_times(4 * layers * 4 + 8, 1415 + m);
    const auto got = observe_profile(spec, options, times, 1420 + m);
    const testing::Params params = {{"model", spec.name}, {"warmup", std::to_string(options.warmup)}};
    if (!KILN_EXPECT_OK(got, "record_layout_wrong", params)) return;
    KILN_JUDGE {
      if (got->size() != layers) {
        KILN_FAIL("record_layout_wrong", params, fmt::format("got {}, expected {}", testing::counted(got->size(), "record"), layers));
        return;
      }
      Shape input = spec.input;
      for (std::size_t i = 0; i < layers; ++i) {
        const auto& [name, kind, in, out, calls, seconds, flops, bytes] = (*got)[i];
        const LayerWant want = spec.layers[i].want(input);
        const auto layout = std::make_tuple(std::to_string(i), want.kind, input, want.output, std::int64_t{options.repetitions});
        if (options.warmup == 0 && in.empty() && out.empty()) {  // shapes noted only in a warm-up pass
          KILN_FAIL("record_shapes_from_warmup", params,
                    fmt::format("record {} ({}): shapes () -> (), expected {} -> {}", i, kind, shape_text(input),
                                shape_text(want.output)));
          return;
        }
        if (std::tie(name, kind, in, out, calls) != layout) {
          KILN_FAIL("record_layout_wrong", params,
                    fmt::format("record {}: got name \"{}\", kind \"{}\", shapes {} -> {}, {}; expected name \"{}\", "
                                "kind \"{}\", shapes {} -> {}, {} calls",
                                i, name, kind, shape_text(in), shape_text(out), testing::counted(calls, "call"), i, want.kind, shape_text(input),
                                shape_text(want.output), options.repetitions));
          return;
        }
        // Pass p times layer i between readings 2(p·layers + i) and 2(p·layers + i) + 1.
        double expected_seconds = 0;
        for (int pass = 0; pass < options.repetitions; ++pass) {
          const std::size_t start = 2 * (static_cast<std::size_t>(pass) * layers + i);
          expected_seconds += times[start + 1] - times[start];
        }
        if (!(std::fabs(seconds - expected_seconds) <= 1e-9 * expected_seconds)) {
          const auto [g, w] = testing::format_pair(seconds, expected_seconds);
          KILN_FAIL("record_seconds_wrong", params, fmt::format("record {} ({}): got {} s, expected {} s", i, kind, g, w));
          return;
        }
        if (PlainCost{flops, bytes} != want.cost) {
          KILN_FAIL("record_cost_wrong", params,
                    fmt::format("record {} ({}): ", i, kind) + got_expected(PlainCost{flops, bytes}, want.cost));
          return;
        }
        input = want.output;
      }
    }
  }
}

}  // namespace kiln
