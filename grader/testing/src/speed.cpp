// Speed-graded checks (kiln/testing.h): the three observed calls of a check run, and the two
// modes of the grader's timed runs.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

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

// A timed run: the inputs of every call first, then the calls, each result written out as
// [ndim, shape..., values] (int64 and float32, this machine's byte order). Nothing is judged
// here: the judge's program reads the results back (verify_timed).
void timed(const SpeedKernel& kernel, long round, long calls, bool skip) {
  std::vector<std::vector<Tensor>> inputs;
  for (long i = 0; i < calls; ++i) inputs.push_back(kernel.inputs(timed_stream(round, i)));
  if (skip) return;  // the empty run: what starting and drawing the inputs cost
  for (long i = 0; i < calls; ++i) {
    const Tensor result = kernel.call(inputs[static_cast<std::size_t>(i)]).contiguous();
    const Shape& shape = result.shape();
    const std::int64_t ndim = static_cast<std::int64_t>(shape.size());
    write_all(&ndim, sizeof ndim);
    write_all(shape.data(), shape.size() * sizeof(std::int64_t));
    write_all(result.data(), static_cast<std::size_t>(result.numel()) * sizeof(float));
  }
}

// The judge's side of a timed run: the same inputs, the results read back, each judged. Prints
// "ok", or "wrong: ..." for the first that is not right.
void verify_timed(const SpeedKernel& kernel, const char* path, long round, long calls) {
  std::ifstream in(path, std::ios::binary);
  std::string verdict = "ok";
  for (long i = 0; i < calls && verdict == "ok"; ++i) {
    std::int64_t ndim = -1;
    in.read(reinterpret_cast<char*>(&ndim), sizeof ndim);
    if (!in || ndim < 0 || ndim > 8) {
      verdict = "wrong: the timed run wrote " + std::to_string(i) + " of its " + std::to_string(calls) + " results";
      break;
    }
    Shape shape(static_cast<std::size_t>(ndim));
    in.read(reinterpret_cast<char*>(shape.data()), static_cast<std::streamsize>(shape.size() * sizeof(std::int64_t)));
    constexpr std::int64_t kMost = std::int64_t{1} << 28;  // values in one result
    std::int64_t count = 1;
    for (const std::int64_t d : shape) count = count < 0 || d < 0 || (d > 0 && count > kMost / d) ? -1 : count * d;
    if (!in || count < 0 || count > kMost) {
      verdict = "wrong: result " + std::to_string(i + 1) + " of the timed run is malformed";
      break;
    }
    std::vector<float> values(static_cast<std::size_t>(count));
    in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
    if (!in) {
      verdict = "wrong: result " + std::to_string(i + 1) + " of the timed run is cut short";
      break;
    }
    const std::string problem = kernel.judge(kernel.inputs(timed_stream(round, i)), data_of(shape, std::move(values)));
    if (!problem.empty()) verdict = "wrong: call " + std::to_string(i + 1) + " of round " + std::to_string(round) + ": " + problem;
  }
  if (verdict == "ok" && in.peek() != std::char_traits<char>::eof()) verdict = "wrong: the timed run wrote more than its results";
  const std::string line = verdict + "\n";
  write_all(line.data(), line.size());
}

}  // namespace

bool speed_run() {
  const char* verify = std::getenv("KILN_SPEED_VERIFY");
  return (verify && *verify) || environment_number("KILN_SPEED_CALLS", -1) >= 0;
}

void speed_check(const char* file, int line, const SpeedKernel& kernel, std::string_view failure_id) {
  const long round = environment_number("KILN_SPEED_ROUND", 0);
  const long calls = environment_number("KILN_SPEED_CALLS", -1);
  if (const char* verify = std::getenv("KILN_SPEED_VERIFY"); verify && *verify) return verify_timed(kernel, verify, round, calls);
  if (calls >= 0) return timed(kernel, round, calls, environment_number("KILN_SPEED_SKIP", 0) != 0);

  auto judged = [&](const std::vector<Tensor>& inputs, const char* which, const std::string& call) {
    const auto result = observe(call, [&] { return kernel.call(inputs); });
    if (!expect_ok(file, line, result, failure_id, {{"which", which}, {"problem", "it threw"}})) return false;
    const std::string problem = kernel.judge(inputs, *result);
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
