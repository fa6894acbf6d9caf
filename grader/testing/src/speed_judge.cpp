// Speed-graded checks (kiln/testing.h): the judge's side of a check run and of a timed run.
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "kiln/protocol.h"
#include "kiln/testing.h"
#include "speed.h"

namespace kiln::testing {

using namespace speed;

namespace {

// Reads one tensor a timed run wrote; "" when it was whole, else what was wrong with it.
std::string read_tensor(std::istream& in, TensorData& out, const std::string& which) {
  std::int64_t ndim = -1;
  in.read(reinterpret_cast<char*>(&ndim), sizeof ndim);
  if (!in || ndim < 0 || ndim > 8) return "the timed run did not write " + which;
  Shape shape(static_cast<std::size_t>(ndim));
  in.read(reinterpret_cast<char*>(shape.data()), static_cast<std::streamsize>(shape.size() * sizeof(std::int64_t)));
  constexpr std::int64_t kMost = std::int64_t{1} << 28;  // values in one result
  std::int64_t count = 1;
  for (const std::int64_t d : shape) count = count < 0 || d < 0 || (d > 0 && count > kMost / d) ? -1 : count * d;
  if (!in || count < 0 || count > kMost) return which + " of the timed run is malformed";
  std::vector<float> values(static_cast<std::size_t>(count));
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!in) return which + " of the timed run is cut short";
  out = data_of(shape, std::move(values));
  return "";
}

// The judge's side of a timed run: the same inputs, the results read back, each judged. Prints
// "ok" (followed by the context's digest when the kernel has one), or "wrong: ..." for the first
// result that is not right.
void verify_timed(const SpeedKernel& kernel, const char* path, long round, long calls) {
  std::ifstream in(path, std::ios::binary);
  std::string verdict = "ok", problem;
  std::optional<Tensor> context;
  if (kernel.context) {
    TensorData data;
    problem = read_tensor(in, data, kernel.context_name);
    if (problem.empty()) {
      verdict = "ok " + digest(data);
      context = data.tensor();
    } else {
      verdict = "wrong: " + problem;
    }
  }
  for (long i = 0; i < calls && verdict.rfind("ok", 0) == 0; ++i) {
    TensorData result;
    problem = read_tensor(in, result, "result " + std::to_string(i + 1) + " of " + std::to_string(calls));
    if (problem.empty()) {
      std::vector<Tensor> inputs = kernel.inputs(timed_stream(round, i));
      if (context) inputs.push_back(*context);
      problem = kernel.judge(inputs, result);
      if (!problem.empty()) problem = "call " + std::to_string(i + 1) + " of round " + std::to_string(round) + ": " + problem;
    }
    if (!problem.empty()) verdict = "wrong: " + problem;
  }
  if (verdict.rfind("ok", 0) == 0 && in.peek() != std::char_traits<char>::eof())
    verdict = "wrong: the timed run wrote more than its results";
  const std::string line = verdict + "\n";
  write_all(line.data(), line.size());
}

}  // namespace

void speed_check(const char* file, int line, const SpeedKernel& kernel, std::string_view failure_id) {
  const long round = environment_number(kiln::protocol::kSpeedRound, 0);
  const long calls = environment_number(kiln::protocol::kSpeedCalls, -1);
  if (const char* verify = std::getenv(kiln::protocol::kSpeedVerify); verify && *verify) return verify_timed(kernel, verify, round, calls);
  if (calls >= 0) return timed(kernel, round, calls, environment_number(kiln::protocol::kSpeedSkip, 0) != 0);

  // The context, observed once: the judge gets it as its last input.
  std::optional<Tensor> context;
  if (kernel.context) {
    const auto observed = observe(kernel.context_name, [&] { return kernel.context(); });
    if (!expect_ok(file, line, observed, failure_id, {{"which", "before any call"}, {"problem", kernel.context_name + " threw"}}))
      return;
    note_context(*observed);
    context = observed->tensor();
  }
  auto judged = [&](const std::vector<Tensor>& inputs, const char* which, const std::string& call) {
    const auto result = observe(call, [&] { return kernel.call(inputs); });
    if (!expect_ok(file, line, result, failure_id, {{"which", which}, {"problem", "it threw"}})) return false;
    std::vector<Tensor> judged_inputs = inputs;
    if (context) judged_inputs.push_back(*context);
    const std::string problem = kernel.judge(judged_inputs, *result);
    if (problem.empty()) return true;
    report_failure(file, line, failure_id, {{"which", which}, {"problem", problem}});
    return false;
  };
  check_calls(kernel, judged);
}

}  // namespace kiln::testing
