// What module 02's checks share: the promise that every activation, softmax and backward pass
// returns a tensor of its own and leaves the tensors it was given as they were.
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "kiln/testing.h"

namespace kiln::activations_testing {

// An input of the call: its name in the report ("x", "g") and its values, contiguous.
struct Input {
  std::string name;
  testing::TensorData values;
};

// Observes `call` on fresh contiguous tensors built from `inputs` (for a contiguous tensor,
// contiguous() is the tensor itself, so a result computed in its data() is computed in the
// caller's input), then each input as it is after the call, and whether the result shares the
// storage of one of them. Reports failure_id unless every input kept its values and the result
// has storage of its own; returns whether it did. `call` is "sigmoid_backward(y, g)", say.
template <class Call>
bool check_new_tensor(const char* file, int line, const std::string& call, const std::vector<Input>& inputs,
                      Call compute, const std::string& failure_id) {
  const auto run = [&] {
    std::vector<Tensor> given;
    for (const Input& in : inputs) given.push_back(in.values.tensor());
    const Tensor result = compute(given);
    bool shared = false;
    for (const Tensor& t : given) shared = shared || result.storage_data() == t.storage_data();
    return std::tuple<std::vector<Tensor>, bool>{given, shared};
  };
  const auto seen =
      testing::observe(call + " on contiguous inputs, then its inputs, and whether the result shares their storage", run);
  if constexpr (!testing::kJudging) {
    return seen.ok();  // the observed program stops where the judge does
  } else {
    if (!testing::expect_ok(file, line, seen, failure_id)) return false;
    const auto& [after, shared] = *seen;
    std::string what;
    for (std::size_t i = 0; i < inputs.size() && i < after.size(); ++i) {
      if (after[i].shape == inputs[i].values.shape && after[i].values == inputs[i].values.values) continue;
      what += (what.empty() ? "" : ", ") + inputs[i].name + " became " + testing::list(after[i].values);
    }
    if (after.size() != inputs.size()) what = "the inputs could not be read back";
    if (shared) what += std::string(what.empty() ? "" : ", and ") + "the result shares the storage of an input";
    if (!what.empty()) {
      testing::report_failure(file, line, failure_id, {}, call + ": " + what);
      return false;
    }
    return true;
  }
}

}  // namespace kiln::activations_testing

// check_new_tensor(call, inputs, compute, failure_id) at the caller's file and line.
#define CHECK_NEW_TENSOR(...) ::kiln::activations_testing::check_new_tensor(__FILE__, __LINE__, __VA_ARGS__)
