// Speed-graded checks (kiln/testing.h): the three observed calls of a check run, and the two
// modes of the grader's timed runs.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "kiln/protocol.h"
#include "kiln/testing.h"
#include "session.h"

namespace kiln::testing {

namespace {

long environment_number(const char* name, long fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::strtol(text, nullptr, 10) : fallback;
}

// Streams of their own, apart from every stream a check draws from.
constexpr std::uint64_t kCheckStreams = 0x5eed000000000000ULL;
std::uint64_t timed_stream(long round, long call) {
  return kCheckStreams + 0x100000ULL + static_cast<std::uint64_t>(round) * 1000 + static_cast<std::uint64_t>(call);
}

void write_all(const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(session::speed_results_fd(), p, bytes);
    if (n <= 0) std::_Exit(4);
    p += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void write_tensor(const Tensor& t) {
  const Tensor result = t.contiguous();
  const Shape& shape = result.shape();
  const std::int64_t ndim = static_cast<std::int64_t>(shape.size());
  write_all(&ndim, sizeof ndim);
  write_all(shape.data(), shape.size() * sizeof(std::int64_t));
  write_all(result.data(), static_cast<std::size_t>(result.numel()) * sizeof(float));
}

// FNV-1a over a context's shape and the bits of its values: what ties a timed run's context to
// the checked run's.
std::string digest(const TensorData& t) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  };
  mix(t.shape.data(), t.shape.size() * sizeof(std::int64_t));
  mix(t.values.data(), t.values.size() * sizeof(float));
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
  return text;
}

// A timed run: the context first when the kernel has one, then the inputs of every call, then
// the calls, each tensor written out as [ndim, shape..., values] (int64 and float32, this
// machine's byte order). Nothing is judged here: the judge's program reads the results back
// (verify_timed).
void timed(const SpeedKernel& kernel, long round, long calls, bool skip) {
  if (kernel.context && !skip) write_tensor(kernel.context());
  std::vector<std::vector<Tensor>> inputs;
  for (long i = 0; i < calls; ++i) inputs.push_back(kernel.inputs(timed_stream(round, i)));
  if (skip) return;  // the empty run: what starting and drawing the inputs cost
  for (long i = 0; i < calls; ++i) write_tensor(kernel.call(inputs[static_cast<std::size_t>(i)]));
}

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

void note_context(const TensorData& context) { session::set_speed_context(digest(context)); }

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
  const auto& draw = kernel.check_inputs ? kernel.check_inputs : kernel.inputs;
  // 1. Fresh inputs.
  std::vector<Tensor> inputs = draw(kCheckStreams + 1);
  if (!judged(inputs, "on fresh inputs", kernel.name)) return;
  // 2. The same tensors, their values overwritten in place.
  const std::vector<Tensor> replacement = draw(kCheckStreams + 2);
  if (replacement.size() != inputs.size()) throw std::logic_error("a speed check's inputs must not vary in number");
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (replacement[k].shape() != inputs[k].shape())
      throw std::logic_error("a speed check's check_inputs must draw the same shapes for every stream");
    const std::vector<float> values = replacement[k].to_vector();
    float* storage = inputs[k].data();
    std::copy(values.begin(), values.end(), storage);
  }
  if (!judged(inputs, "on the same tensors after their values changed", kernel.name + ", again on the same tensors")) return;
  // 3. New tensors.
  judged(draw(kCheckStreams + 3), "on new tensors", kernel.name + ", on new tensors");
}

}  // namespace kiln::testing
