// Module 08 checks for the modules: names and order of parameters, training mode, Linear's
// initialisation and forward pass, ReLU, Flatten, Sequential, and the cross-entropy node.
//
// Models are built, used and read inside observations; what comes out is plain data (names,
// flags, tensors). Expected values come from loops in double written here, the Wichmann-Hill
// generator written out again, and central finite differences of a cross-entropy computed here.
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
#include <fmt/ranges.h>

#include "kiln/testing.h"
#include "kiln/training.h"
#include "training_testing.h"

namespace kiln {
namespace {

namespace ag = autograd;
using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;
using training_testing::TrustedWichmannHill;

// A module of the test's own with two parameters around a child, registered as
// scale, body, shift: its own parameters come first in named_parameters().
struct Wrapper : nn::Module {
  Wrapper(std::shared_ptr<nn::Module> body, const Tensor& scale, const Tensor& shift) {
    register_parameter("scale", scale);
    register_module("body", std::move(body));
    register_parameter("shift", shift);
  }
  Tensor forward(const Tensor& x) override { return (*children()[0].second)(x); }
};

// A module that lets the test call the protected registration functions.
struct Open : nn::Module {
  using Module::register_module;
  using Module::register_parameter;
  Tensor forward(const Tensor& x) override { return x; }
};

std::vector<std::string> names_of(const nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& [name, parameter] : m.named_parameters()) names.push_back(name);
  return names;
}

std::string quoted(const std::vector<std::string>& names) {
  std::vector<std::string> q;
  for (const auto& n : names) q.push_back("\"" + n + "\"");
  return fmt::format("[{}]", fmt::join(q, ", "));
}

// Σ G ⊙ y recorded in the graph, so that backward() sends G into y.
Tensor weighted(const Tensor& y, const Tensor& g) { return ag::sum(ag::mul(y, g)); }

// Linear on x's last dimension, in double: x (*, in) taken as R rows of in values, W (in, out),
// b (out), G (*, out). The values y (*, out) = x·W + b, and the gradients of Σ G ⊙ y:
// dx = G·Wᵀ (*, in), dW = Σ over the R rows of xᵀ·G (in, out), db = Σ over the R rows of G (out).
struct LinearExpected {
  TensorData y, dx, dw, db;
};

LinearExpected reference_linear(const TensorData& x, const TensorData& w, const TensorData& b, const TensorData& g) {
  const std::int64_t in = w.shape[0], out = w.shape[1];
  const std::int64_t rows = static_cast<std::int64_t>(x.values.size()) / in;
  Shape y_shape = x.shape;
  y_shape.back() = out;
  std::vector<double> y(static_cast<std::size_t>(rows * out)), dx(static_cast<std::size_t>(rows * in)),
      dw(static_cast<std::size_t>(in * out), 0.0), db(static_cast<std::size_t>(out), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t o = 0; o < out; ++o) {
      double total = b.values[static_cast<std::size_t>(o)];
      for (std::int64_t i = 0; i < in; ++i) total += static_cast<double>(x.values[r * in + i]) * w.values[i * out + o];
      y[static_cast<std::size_t>(r * out + o)] = total;
      db[static_cast<std::size_t>(o)] += g.values[r * out + o];
    }
    for (std::int64_t i = 0; i < in; ++i) {
      double total = 0.0;
      for (std::int64_t o = 0; o < out; ++o) {
        total += static_cast<double>(g.values[r * out + o]) * w.values[i * out + o];
        dw[static_cast<std::size_t>(i * out + o)] += static_cast<double>(x.values[r * in + i]) * g.values[r * out + o];
      }
      dx[static_cast<std::size_t>(r * in + i)] = total;
    }
  }
  const auto floats = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  return {data_of(y_shape, floats(y)), data_of(x.shape, floats(dx)), data_of({in, out}, floats(dw)), data_of({out}, floats(db))};
}

}  // namespace

TEST(Training, NamedParameters) {
  // Linear(3, 2): its own two.
  const auto linear = observe("named_parameters() of Linear(3, 2)", [&] {
    WichmannHill g(1);
    return names_of(nn::Linear(3, 2, g));
  });
  const std::vector<std::string> models = {
      "Linear(3, 2)",
      "Sequential(Linear(4, 3), ReLU, Linear(3, 5), ReLU, Linear(5, 2))",
      "a module registering scale, body = Sequential(Flatten, Linear(6, 3)), shift",
  };
  const auto sequential = observe("named_parameters() of " + models[1], [&] {
    WichmannHill g(2);
    nn::Sequential model({std::make_shared<nn::Linear>(4, 3, g), std::make_shared<nn::ReLU>(),
                          std::make_shared<nn::Linear>(3, 5, g), std::make_shared<nn::ReLU>(),
                          std::make_shared<nn::Linear>(5, 2, g)});
    return names_of(model);
  });
  const Tensor scale = random_tensor({3}, 801), shift = random_tensor({1}, 802);
  const auto nested = observe("named_parameters() of " + models[2], [&] {
    WichmannHill g(3);
    auto body = std::make_shared<nn::Sequential>(
        std::vector<std::shared_ptr<nn::Module>>{std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(6, 3, g)});
    Wrapper model(body, scale.clone(), shift.clone());
    return names_of(model);
  });
  KILN_JUDGE {
    const std::vector<std::vector<std::string>> expected_names = {
        {"weight", "bias"},
        {"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"},
        {"scale", "shift", "body.1.weight", "body.1.bias"},
    };
    const std::vector<const testing::Observed<std::vector<std::string>>*> got = {&linear, &sequential, &nested};
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (!KILN_EXPECT_OK(*got[k], "names_wrong",
                          {{"model", models[k]}, {"got", "an error"}, {"expected", quoted(expected_names[k])}}))
        return;
      if (**got[k] != expected_names[k]) {
        KILN_FAIL("names_wrong", {{"model", models[k]}, {"got", quoted(**got[k])}, {"expected", quoted(expected_names[k])}});
        return;
      }
    }
  }

  // The leaves: parameters() requires grad, a write through it reaches the layer, and backward()
  // of a loss through the model gives every one of them (and the same handles of
  // named_parameters()) a gradient.
  const Tensor x = random_tensor({5, 3}, 803);
  const std::string model = "Sequential(Linear(3, 4), ReLU, Linear(4, 2))";
  const auto shared = observe(model + ": parameters() requires grad, a write through parameters()[0], backward()", [&] {
    WichmannHill g(4);
    auto first = std::make_shared<nn::Linear>(3, 4, g);
    nn::Sequential m({first, std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(4, 2, g)});
    std::vector<std::int64_t> flags;  // requires_grad of parameters(), then has_grad of both lists
    std::vector<Tensor> p = m.parameters();
    for (const Tensor& t : p) flags.push_back(t.requires_grad() ? 1 : 0);
    p[0].data()[0] = 0.25f;
    const float seen = first->weight.at({0, 0});
    ag::sum(m(x)).backward();
    for (const Tensor& t : p) flags.push_back(ag::has_grad(t) ? 1 : 0);
    for (const auto& [name, t] : m.named_parameters()) flags.push_back(ag::has_grad(t) ? 1 : 0);
    return std::tuple(static_cast<std::int64_t>(p.size()), flags, seen);
  });
  if (!KILN_EXPECT_OK(shared, "parameters_not_shared", {{"model", model}})) return;
  KILN_JUDGE {
    const auto& [count, flags, seen] = *shared;
    const bool leaves = count == 4 && flags == std::vector<std::int64_t>(12, 1) && seen == 0.25f;
    KILN_EXPECT(leaves, "parameters_not_shared", {{"model", model}},
                fmt::format("{}; requires_grad, then has_grad after backward() of parameters() and of "
                            "named_parameters(): {}; first weight after writing 0.25 through parameters()[0]: {}",
                            testing::counted(count, "tensor"), fmt::join(flags, ", "), seen));
    if (!leaves) return;
  }

  // Names that must be refused.
  const Tensor t = random_tensor({2}, 804);
  const auto refuse = [&](const std::string& call, const std::string& name, const std::function<void(Open&)>& bad) {
    const auto error = observe(call, [&] {
      Open m;
      m.register_parameter("w", t.clone());
      m.register_module("child", std::make_shared<Open>());
      bad(m);
    });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, error, "bad_name_accepted",
                                                    name.empty() ? std::vector<std::string>{} : std::vector<std::string>{name},
                                                    {{"call", call}, {"name", name}});
    }
    return !error.ok();
  };
  const std::string after = " after registering parameter \"w\" and child \"child\"";
  if (!refuse("register_parameter(\"w\", t)" + after, "w", [&](Open& m) { m.register_parameter("w", t.clone()); })) return;
  if (!refuse("register_module(\"w\", m)" + after, "w",
              [&](Open& m) { m.register_module("w", std::make_shared<Open>()); }))
    return;
  if (!refuse("register_parameter(\"child\", t)" + after, "child",
              [&](Open& m) { m.register_parameter("child", t.clone()); }))
    return;
  if (!refuse("register_parameter(\"a.b\", t)" + after, "a.b", [&](Open& m) { m.register_parameter("a.b", t.clone()); }))
    return;
  if (!refuse("register_parameter(\"\", t)" + after, "", [&](Open& m) { m.register_parameter("", t.clone()); })) return;
  if (!refuse("register_module(\"none\", nullptr)" + after, "none", [&](Open& m) { m.register_module("none", nullptr); }))
    return;
  if (!refuse("register_module(\"child\", m)" + after, "child",
              [&](Open& m) { m.register_module("child", std::make_shared<Open>()); }))
    return;
  if (!refuse("register_module(\"a.b\", m)" + after, "a.b", [&](Open& m) { m.register_module("a.b", std::make_shared<Open>()); }))
    return;
  if (!refuse("register_module(\"\", m)" + after, "", [&](Open& m) { m.register_module("", std::make_shared<Open>()); }))
    return;
  const auto null_layer = observe("Sequential({ReLU, nullptr})", [&] {
    nn::Sequential s({std::make_shared<nn::ReLU>(), nullptr});
  });
  KILN_JUDGE {
    testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, null_layer, "bad_name_accepted", {"1"},
                                                  {{"call", null_layer.call()}, {"name", "1"}});
  }
  if (null_layer.ok()) return;

  // A refused registration registers nothing: after register_module("head", nullptr) threw, the
  // children are still only "child" (a null child stored anyway would crash named_parameters()
  // and train()), and "head" is free for a valid module.
  const std::string refused_call = "register_module(\"head\", nullptr)" + after;
  const auto kept = observe(refused_call + ", then the children, and register_module(\"head\", m)", [&] {
    Open m;
    m.register_parameter("w", t.clone());
    m.register_module("child", std::make_shared<Open>());
    bool refused = false;
    try {
      m.register_module("head", nullptr);
    } catch (const std::invalid_argument&) {
      refused = true;
    }
    std::vector<std::string> children_after_refusal;
    for (const auto& [name, child] : m.children()) children_after_refusal.push_back(name);
    bool head_accepted = true;
    try {
      m.register_module("head", std::make_shared<Open>());
    } catch (const std::invalid_argument&) {
      head_accepted = false;
    }
    return std::tuple(refused, children_after_refusal, head_accepted);
  });
  if (!KILN_EXPECT_OK(kept, "refused_registration_kept",
                      {{"call", refused_call}, {"got", "an error"}, {"expected", quoted({"child"})}}))
    return;
  KILN_JUDGE {
    const auto& [refused, children_after_refusal, head_accepted] = *kept;
    if (!refused) {
      KILN_FAIL("bad_name_accepted", {{"call", refused_call}, {"name", "head"}});
      return;
    }
    const bool nothing_kept = children_after_refusal == std::vector<std::string>{"child"} && head_accepted;
    KILN_EXPECT(nothing_kept, "refused_registration_kept",
                {{"call", refused_call}, {"got", quoted(children_after_refusal)}, {"expected", quoted({"child"})}},
                fmt::format("a later valid register_module(\"head\", m) was {}", head_accepted ? "accepted" : "refused"));
  }
}

TEST(Training, TrainEval) {
  // outer (a Wrapper) > body (Sequential) > Linear, ReLU, Sequential > Linear: five descendants.
  const std::string model = "Wrapper(Sequential(Linear(2, 3), ReLU, Sequential(Linear(3, 1))))";
  const Tensor scale = random_tensor({2}, 811), shift = random_tensor({2}, 812);
  const auto modes = observe(model + ": the modes after construction, train(false), train(), eval()", [&] {
    WichmannHill g(5);
    auto inner = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{std::make_shared<nn::Linear>(3, 1, g)});
    auto body = std::make_shared<nn::Sequential>(
        std::vector<std::shared_ptr<nn::Module>>{std::make_shared<nn::Linear>(2, 3, g), std::make_shared<nn::ReLU>(), inner});
    Wrapper outer(body, scale.clone(), shift.clone());
    // The flags of the module and every descendant, depth first (children() and training() are given).
    const auto flags = [&] {
      std::vector<std::int64_t> out;
      const std::function<void(const nn::Module&)> walk = [&](const nn::Module& m) {
        out.push_back(m.training() ? 1 : 0);
        for (const auto& [name, child] : m.children()) walk(*child);
      };
      walk(outer);
      return out;
    };
    std::vector<std::vector<std::int64_t>> steps = {flags()};
    outer.train(false);
    steps.push_back(flags());
    outer.train();
    steps.push_back(flags());
    outer.eval();
    steps.push_back(flags());
    return steps;
  });
  if (!KILN_EXPECT_OK(modes, "mode_not_recursive", {{"call", "train(false)"}, {"model", model}, {"got", "unknown (the call threw)"}, {"expected", "every one in the mode asked for"}}))
    return;
  KILN_JUDGE {
    const std::vector<std::string> calls = {"construction", "train(false)", "train()", "eval()"};
    for (std::size_t s = 0; s < calls.size(); ++s) {
      const std::vector<std::int64_t> expected(6, s == 0 || s == 2 ? 1 : 0);
      const auto& got = (*modes).at(s);
      if (got != expected) {
        const auto show = [](const std::vector<std::int64_t>& v) {
          std::vector<std::string> words;
          for (const auto f : v) words.push_back(f ? "train" : "eval");
          return fmt::format("[{}]", fmt::join(words, ", "));
        };
        KILN_FAIL("mode_not_recursive", {{"call", calls[s]}, {"model", model}, {"got", show(got)}, {"expected", show(expected)}});
        return;
      }
    }
  }
}

TEST(Training, LinearInit) {
  // Seeds of the run, and fast.ai's seed for a (784, 10) layer.
  testing::Generator seeds(821);
  struct Case {
    std::vector<std::pair<std::int64_t, std::int64_t>> layers;  // built one after the other from one generator
    std::uint64_t seed;
  };
  const std::vector<Case> cases = {
      {{{3, 2}}, static_cast<std::uint64_t>(seeds.below(1LL << 40))},
      {{{1, 1}}, static_cast<std::uint64_t>(seeds.below(1LL << 40))},
      {{{7, 5}}, static_cast<std::uint64_t>(seeds.below(1LL << 40))},
      {{{4, 3}, {3, 2}}, static_cast<std::uint64_t>(seeds.below(1LL << 40))},
      {{{784, 10}}, 457428938475ULL},
  };
  for (const Case& c : cases) {
    std::string sizes;
    for (const auto& [in, out] : c.layers) sizes += fmt::format("{}Linear({}, {})", sizes.empty() ? "" : " then ", in, out);
    const auto got = observe(fmt::format("{} from WichmannHill({}): weight and bias", sizes, c.seed), [&] {
      WichmannHill g(c.seed);
      std::vector<Tensor> tensors;
      for (const auto& [in, out] : c.layers) {
        nn::Linear layer(in, out, g);
        tensors.push_back(layer.weight);
        tensors.push_back(layer.bias);
      }
      return tensors;
    });
    KILN_JUDGE {
      TrustedWichmannHill g(c.seed);
      for (std::size_t k = 0; k < c.layers.size(); ++k) {
        const auto [in, out] = c.layers[k];
        const double bound = 1.0 / std::sqrt(static_cast<double>(in));
        std::vector<float> w(static_cast<std::size_t>(in * out)), b(static_cast<std::size_t>(out));
        for (float& v : w) v = static_cast<float>(bound * (2.0 * g.next() - 1.0));
        for (float& v : b) v = static_cast<float>(bound * (2.0 * g.next() - 1.0));
        const testing::Params params = {{"in", std::to_string(in)}, {"out", std::to_string(out)}};
        for (const auto& [which, expected, index] :
             {std::tuple(std::string("weight"), data_of({in, out}, w), 2 * k), std::tuple(std::string("bias"), data_of({out}, b), 2 * k + 1)}) {
          testing::Params p = params;
          p.emplace_back("which", which);
          if (!KILN_EXPECT_OK(got, "linear_init_wrong", p)) return;
          const TensorData& actual = (*got).at(index);
          testing::Observed<TensorData> one(got.call() + ", the " + which + " of layer " + std::to_string(k + 1), actual);
          if (!testing::expect_close(__FILE__, __LINE__, one, expected, 1e-7, "linear_init_wrong", 1e-6, p)) return;
        }
      }
    }
  }
  // Sizes below 1.
  for (const auto& [in, out] : {std::pair<std::int64_t, std::int64_t>(0, 3), std::pair<std::int64_t, std::int64_t>(3, 0)}) {
    const auto error = observe(fmt::format("Linear({}, {}, generator)", in, out), [&] {
      WichmannHill g(7);
      nn::Linear layer(in, out, g);
    });
    KILN_JUDGE {
      testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, error, "linear_sizes_unchecked", {},
                                                    {{"in", std::to_string(in)}, {"out", std::to_string(out)}});
    }
    if (error.ok()) return;
  }
  // The sizes are checked before anything is drawn: a refused Linear(0, 3) leaves the generator
  // as it was, so the next Linear(2, 2) from it gets the first draws (a check after the draws
  // would have spent 3 bias draws of the refused layer).
  const auto seed = static_cast<std::uint64_t>(seeds.below(1LL << 40));
  const auto after_refusal = observe(
      fmt::format("Linear(0, 3) from WichmannHill({}), refused, then Linear(2, 2) from the same generator: weight and bias", seed),
      [&] {
        WichmannHill g(seed);
        try {
          nn::Linear refused(0, 3, g);
        } catch (const std::invalid_argument&) {
        }
        nn::Linear layer(2, 2, g);
        return std::vector<Tensor>{layer.weight, layer.bias};
      });
  KILN_JUDGE {
    TrustedWichmannHill g(seed);
    const double bound = 1.0 / std::sqrt(2.0);
    std::vector<float> w(4), b(2);
    for (float& v : w) v = static_cast<float>(bound * (2.0 * g.next() - 1.0));
    for (float& v : b) v = static_cast<float>(bound * (2.0 * g.next() - 1.0));
    const testing::Params p = {{"in", "0"}, {"out", "3"}};
    if (!KILN_EXPECT_OK(after_refusal, "refused_layer_drew", p)) return;
    const std::vector<float> expected = {w[0], w[1], w[2], w[3], b[0], b[1]};
    std::vector<float> got = (*after_refusal).at(0).values;
    got.insert(got.end(), (*after_refusal).at(1).values.begin(), (*after_refusal).at(1).values.end());
    const testing::Observed<TensorData> both(after_refusal.call() + ", the 4 weights then the 2 biases",
                                             data_of({6}, got));
    if (!testing::expect_close(__FILE__, __LINE__, both, data_of({6}, expected), 1e-7, "refused_layer_drew", 1e-6, p))
      return;
  }
  // A negative size is refused the same way (not left to the vector's length_error).
  const auto negative = observe("Linear(-1, 3, generator)", [&] {
    WichmannHill g(7);
    nn::Linear layer(-1, 3, g);
  });
  KILN_JUDGE {
    testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, negative, "linear_sizes_unchecked", {},
                                                  {{"in", "-1"}, {"out", "3"}});
  }
}

TEST(Training, LinearForward) {
  struct Case {
    Tensor x, w, b, g;  // input (*, in), weight, bias, and G (*, out) for the gradients
  };
  // Module 03's hand case as a (2, 3) batch, with two more rows as a (2, 2, 3) and its first row
  // alone as a (3); then layers of the run on 2-D, 3-D (B, T, in), 4-D and 1-D inputs.
  const Tensor w_hand({3, 2}, {7, 8, 9, 10, 11, 12}), b_hand({2}, {0.5f, -1.0f});
  const std::vector<Case> cases = {
      {Tensor({2, 3}, {1, 2, 3, 4, 5, 6}), w_hand, b_hand, Tensor({2, 2}, {1, -2, 0.5f, 3})},
      {Tensor({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), w_hand, b_hand,
       Tensor({2, 2, 2}, {1, -2, 0.5f, 3, -1, 0, 2, 0.25f})},
      {Tensor({3}, {1, 2, 3}), w_hand, b_hand, Tensor({2}, {1, -2})},
      {random_tensor({5, 7}, 831), random_tensor({7, 3}, 832), random_tensor({3}, 833), random_tensor({5, 3}, 834)},
      {random_tensor({1, 1}, 835), random_tensor({1, 1}, 836), random_tensor({1}, 837), random_tensor({1, 1}, 838)},
      {random_tensor({3, 5, 4}, 839), random_tensor({4, 6}, 840), random_tensor({6}, 851), random_tensor({3, 5, 6}, 852)},
      {random_tensor({2, 1, 3, 5}, 853), random_tensor({5, 2}, 854), random_tensor({2}, 855), random_tensor({2, 1, 3, 2}, 856)},
      {random_tensor({7}, 857), random_tensor({7, 3}, 858), random_tensor({3}, 859), random_tensor({3}, 860)},
  };
  for (const Case& c : cases) {
    const std::int64_t in = c.w.shape()[0], out = c.w.shape()[1];
    const testing::Params params = {{"in", std::to_string(in)}, {"out", std::to_string(out)}, {"x_shape", to_string(c.x.shape())}};
    const TensorData x = data_of(c.x), w = data_of(c.w), b = data_of(c.b), g = data_of(c.g);
    const std::string layer = fmt::format("Linear({}, {}) with W {} and b set", in, out, to_string(c.w.shape()));
    const auto y = observe(layer + ": forward(x) on x " + to_string(c.x.shape()), [&] {
      WichmannHill generator(8);
      nn::Linear linear(in, out, generator);
      training_testing::set_values(linear.weight, w);
      training_testing::set_values(linear.bias, b);
      return linear(c.x);
    });
    KILN_JUDGE {
      if (!testing::expect_close(__FILE__, __LINE__, y, reference_linear(x, w, b, g).y, 1e-4, "linear_forward_wrong", 1e-5,
                                 params))
        return;
    }

    const auto grads = observe(layer + ": backward() of Σ G ⊙ forward(x) on x " + to_string(c.x.shape()) +
                                   ", the gradients of x, W and b",
                               [&] {
                                 WichmannHill generator(8);
                                 nn::Linear linear(in, out, generator);
                                 training_testing::set_values(linear.weight, w);
                                 training_testing::set_values(linear.bias, b);
                                 Tensor input = c.x.clone();
                                 input.set_requires_grad();
                                 weighted(linear(input), c.g).backward();
                                 return std::tuple(input.grad(), linear.weight.grad(), linear.bias.grad());
                               });
    KILN_JUDGE {
      const LinearExpected expected = reference_linear(x, w, b, g);
      testing::Params p = params;
      p.emplace_back("which", "x");
      if (!KILN_EXPECT_OK(grads, "linear_not_recorded", p)) return;
      const std::vector<std::tuple<std::string, TensorData, TensorData>> parts = {
          {"x", std::get<0>(*grads), expected.dx},
          {"the weight", std::get<1>(*grads), expected.dw},
          {"the bias", std::get<2>(*grads), expected.db},
      };
      for (const auto& [which, actual, want] : parts) {
        testing::Params q = params;
        q.emplace_back("which", which);
        if (!testing::expect_close(__FILE__, __LINE__, testing::Observed<TensorData>(grads.call() + ": " + which, actual),
                                   want, 1e-4, "linear_not_recorded", 1e-5, q))
          return;
      }
    }
  }

  // x whose last dimension is not in_features, or 0-D: a ShapeError naming x's shape and the
  // weight's (3, 2). A (4, 2, 6) holds a whole number of rows of 3, so reshaping to (-1, 3)
  // alone would not notice.
  for (const Tensor& x : {random_tensor({2, 4}, 861), random_tensor({4, 2, 6}, 862), random_tensor({2}, 863),
                          Tensor::scalar(0.5f)}) {
    const std::string shape = to_string(x.shape());
    const auto error = observe("Linear(3, 2).forward(x) on x " + shape, [&] {
      WichmannHill generator(9);
      nn::Linear linear(3, 2, generator);
      return linear(x);
    });
    KILN_JUDGE {
      testing::expect_throws<ShapeError>(__FILE__, __LINE__, error, "linear_shape_unchecked", {shape, "(3, 2)"},
                                         {{"in", "3"}, {"out", "2"}, {"x_shape", shape}});
    }
    if (error.ok()) return;
  }
}

TEST(Training, Layers) {
  // ReLU on (3, 7) values of the run with exact zeros planted, and on a (1) of -0.5.
  std::vector<float> xs = data_of(random_tensor({3, 7}, 841)).values;
  xs[0] = 0.0f;
  xs[8] = 0.0f;
  xs[20] = -0.0f;
  for (const auto& [what, x, g] :
       {std::tuple(std::string("(3, 7) values of the run, zeros included"), Tensor({3, 7}, xs), random_tensor({3, 7}, 842)),
        std::tuple(std::string("(1) [-0.5]"), Tensor({1}, {-0.5f}), Tensor({1}, {2.0f}))}) {
    const auto got = observe("ReLU()(x), then backward() of Σ G ⊙ y, on " + what + ": y and the gradient of x", [&] {
      Tensor input = x.clone();
      input.set_requires_grad();
      nn::ReLU relu;
      const Tensor y = relu(input);
      weighted(y, g).backward();
      return std::pair(y, input.grad());
    });
    KILN_JUDGE {
      const TensorData xd = data_of(x), gd = data_of(g);
      TensorData y = xd, gx = gd;
      for (std::size_t i = 0; i < xd.values.size(); ++i) {
        y.values[i] = xd.values[i] > 0.0f ? xd.values[i] : 0.0f;
        gx.values[i] = xd.values[i] > 0.0f ? gd.values[i] : 0.0f;
      }
      if (!KILN_EXPECT_OK(got, "relu_wrong", {{"case", what}, {"what", "the output"}})) return;
      if (!testing::expect_close(__FILE__, __LINE__, testing::Observed<TensorData>(got.call(), got->first), y, 0.0,
                                 "relu_wrong", 0.0, {{"case", what}, {"what", "the output"}}))
        return;
      if (!testing::expect_close(__FILE__, __LINE__, testing::Observed<TensorData>(got.call(), got->second), gx, 0.0,
                                 "relu_wrong", 0.0, {{"case", what}, {"what", "the gradient of x"}}))
        return;
    }
  }

  // Flatten: the shape, the same row-major values, and the gradient back in the input's shape.
  for (const auto& [x, flat] : {std::pair(random_tensor({5, 2, 3}, 843), Shape{5, 6}),
                                std::pair(random_tensor({4, 1, 3, 2}, 844), Shape{4, 6}),
                                std::pair(random_tensor({7}, 845), Shape{7, 1}),
                                std::pair(Tensor(Shape{0, 3, 2}, {}), Shape{0, 6})}) {
    const std::string what = "x " + to_string(x.shape());
    const Tensor g = random_tensor(flat, 846);
    const auto got = observe("Flatten()(x), then backward() of Σ G ⊙ y, on " + what + ": y and the gradient of x", [&] {
      Tensor input = x.clone();
      input.set_requires_grad();
      nn::Flatten flatten;
      const Tensor y = flatten(input);
      weighted(y, g).backward();
      return std::pair(y, input.grad());
    });
    if (!KILN_EXPECT_OK(got, "flatten_wrong", {{"case", what}, {"what", "the output"}})) return;
    KILN_JUDGE {
      const TensorData xd = data_of(x), gd = data_of(g);
      if (got->first.shape != flat || got->first.values != xd.values) {
        KILN_FAIL("flatten_wrong", {{"case", what}, {"what", "the output"}},
                  fmt::format("got shape {}, expected {} with x's values in the same order", to_string(got->first.shape),
                              to_string(flat)));
        return;
      }
      if (got->second.shape != x.shape() || got->second.values != gd.values) {
        KILN_FAIL("flatten_wrong", {{"case", what}, {"what", "the gradient of x"}},
                  fmt::format("got shape {}, expected {} holding G's values", to_string(got->second.shape), to_string(x.shape())));
        return;
      }
    }
  }
  const auto scalar = observe("Flatten()(x) on a scalar x of shape ()", [&] {
    nn::Flatten flatten;
    return flatten(Tensor::scalar(1.0f));
  });
  KILN_JUDGE {
    testing::expect_throws<ShapeError>(__FILE__, __LINE__, scalar, "flatten_wrong", {"()"},
                                       {{"case", "a scalar"}, {"what", "the error"}});
  }
  if (scalar.ok()) return;

  // Sequential(Flatten, Linear(6, 4), ReLU, Linear(4, 3)) on (5, 2, 3), and an empty one.
  const Tensor x = random_tensor({5, 2, 3}, 847);
  const std::vector<TensorData> values = training_testing::random_mlp_values({6, 4, 3}, 848);
  const std::string what = "Sequential(Flatten, Linear(6, 4), ReLU, Linear(4, 3)) with x (5, 2, 3)";
  const auto y = observe(what, [&] {
    WichmannHill generator(9);
    auto first = std::make_shared<nn::Linear>(6, 4, generator), second = std::make_shared<nn::Linear>(4, 3, generator);
    training_testing::set_values(first->weight, values[0]);
    training_testing::set_values(first->bias, values[1]);
    training_testing::set_values(second->weight, values[2]);
    training_testing::set_values(second->bias, values[3]);
    nn::Sequential model({std::make_shared<nn::Flatten>(), first, std::make_shared<nn::ReLU>(), second});
    return model(x);
  });
  KILN_JUDGE {
    TensorData flat_x = data_of(x);
    flat_x.shape = {5, 6};
    const auto acts = training_testing::mlp_forward(training_testing::mlp_of(values), training_testing::matrix_of(flat_x));
    if (!testing::expect_close(__FILE__, __LINE__, y, training_testing::data_of(acts.back(), {5, 3}), 1e-4, "sequential_wrong",
                               1e-5, {{"case", what}}))
      return;
  }
  const Tensor z = random_tensor({3, 7}, 849);
  const auto empty_y = observe("Sequential({})(x) with x (3, 7)", [&] {
    nn::Sequential empty({});
    return empty(z);
  });
  KILN_JUDGE {
    testing::expect_close(__FILE__, __LINE__, empty_y, data_of(z), 0.0, "sequential_wrong", 0.0,
                          {{"case", "an empty Sequential"}});
  }
}

namespace {

// The mean cross-entropy of logits in[0] (N, C) against targets, times factor, as a scalar.
std::function<TensorData(const std::vector<TensorData>&)> reference_loss(const std::vector<std::int64_t>& targets,
                                                                        double factor) {
  return [targets, factor](const std::vector<TensorData>& in) {
    const double loss = training_testing::cross_entropy(training_testing::matrix_of(in[0]), targets);
    return data_of({}, {static_cast<float>(factor * loss)});
  };
}

}  // namespace

TEST(Training, CrossEntropyLoss) {
  struct Case {
    std::string what;
    Tensor logits;
    std::vector<std::int64_t> targets;
  };
  const std::vector<Case> cases = {
      {"[[0, 0]] against class 0", Tensor({1, 2}, {0.0f, 0.0f}), {0}},
      {"(1, 1) logits, one class", random_tensor({1, 1}, 851), {0}},
      {"(3, 7) logits of the run", random_tensor({3, 7}, 852, -3.0f, 3.0f), testing::random_ints(3, 7, 853)},
      {"(33, 5) logits of the run", random_tensor({33, 5}, 854, -3.0f, 3.0f), testing::random_ints(33, 5, 855)},
  };
  // The values.
  for (const Case& c : cases) {
    const auto got = observe("cross_entropy_loss(logits, targets).item() on " + c.what,
                             [&] { return nn::cross_entropy_loss(c.logits, c.targets).item(); });
    KILN_JUDGE {
      const double expected = training_testing::cross_entropy(training_testing::matrix_of(data_of(c.logits)), c.targets);
      if (!KILN_EXPECT_OK(got, "ce_value_wrong", {{"case", c.what}, {"got", "an error"}, {"expected", testing::format_number(expected)}}))
        return;
      if (!(std::fabs(*got - expected) <= 1e-5 + 1e-5 * std::fabs(expected))) {
        const auto [a, e] = testing::format_pair(*got, expected);
        KILN_FAIL("ce_value_wrong", {{"case", c.what}, {"got", a}, {"expected", e}});
        return;
      }
    }
  }
  // Module 04's errors come through: a count of targets other than N, a target outside [0, C).
  const Tensor three = random_tensor({2, 3}, 859);
  const std::vector<std::tuple<std::string, std::vector<std::int64_t>, std::string>> refused = {
      {"(2, 3) logits against 3 targets", {0, 1, 2}, "kiln::ShapeError"},
      {"(2, 3) logits against the targets [0, 3]", {0, 3}, "kiln::IndexError"},
      {"(2, 3) logits against the targets [-1, 2]", {-1, 2}, "kiln::IndexError"}};
  for (const auto& [what, targets, error] : refused) {
    const auto got = observe("cross_entropy_loss(logits, targets) on " + what,
                             [&] { return nn::cross_entropy_loss(three, targets).item(); });
    KILN_JUDGE {
      const testing::Params params = {{"case", what}, {"got", "no such error"}, {"expected", "a " + error}};
      if (error == "kiln::ShapeError") {
        testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "ce_value_wrong", {}, params);
      } else {
        testing::expect_throws<IndexError>(__FILE__, __LINE__, got, "ce_value_wrong", {}, params);
      }
    }
    if (got.ok()) return;
  }

  // The gradient of the logits through backward(), of the loss and of 3·loss.
  for (const double factor : {1.0, 3.0}) {
    for (const Case& c : cases) {
      const std::string what = (factor == 1.0 ? "" : "3·loss, ") + c.what;
      const auto got = observe("backward() of " + (factor == 1.0 ? std::string("cross_entropy_loss(z, targets)")
                                                                 : std::string("3·cross_entropy_loss(z, targets)")) +
                                   " on " + c.what + ": the gradient of z",
                               [&] {
                                 Tensor z = c.logits.clone();
                                 z.set_requires_grad();
                                 Tensor loss = nn::cross_entropy_loss(z, c.targets);
                                 if (factor != 1.0) loss = ag::mul(loss, Tensor::scalar(static_cast<float>(factor)));
                                 loss.backward();
                                 return z.grad();
                               });
      KILN_JUDGE {
        const TensorData expected =
            testing::numeric_gradient(reference_loss(c.targets, factor), {data_of(c.logits)}, 0, data_of({}, {1.0f}));
        if (!testing::expect_close(__FILE__, __LINE__, got, expected, 1e-3, "ce_gradient_wrong", 1e-3,
                                   {{"case", what}, {"which", "the logits"}}))
          return;
      }
    }
  }
  // Behind a matrix product: logits = x·W for x (4, 3) and W (3, 5); the gradient reaches W.
  const Tensor x = random_tensor({4, 3}, 856), w = random_tensor({3, 5}, 857);
  const std::vector<std::int64_t> targets = testing::random_ints(4, 5, 858);
  const auto got = observe("backward() of cross_entropy_loss(autograd::matmul(x, W), targets), x (4, 3), W (3, 5): the gradient of W", [&] {
    Tensor weight = w.clone();
    weight.set_requires_grad();
    nn::cross_entropy_loss(ag::matmul(x, weight), targets).backward();
    return weight.grad();
  });
  KILN_JUDGE {
    const TensorData xd = data_of(x);
    const auto through_matmul = [&](const std::vector<TensorData>& in) {
      TensorData logits = testing::reference_matmul(xd, in[0]);
      return reference_loss(targets, 1.0)({logits});
    };
    testing::expect_close(__FILE__, __LINE__, got,
                          testing::numeric_gradient(through_matmul, {data_of(w)}, 0, data_of({}, {1.0f})), 1e-3,
                          "ce_gradient_wrong", 1e-3, {{"case", "logits x·W"}, {"which", "W"}});
  }
}

}  // namespace kiln
