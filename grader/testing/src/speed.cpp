// Speed-graded checks (kiln/testing.h): the observed side of a check run, and the timed runs.
// Nothing here judges: the observed program links it.
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "kiln/protocol.h"
#include "kiln/testing.h"
#include "session.h"
#include "speed.h"

namespace kiln::testing {

namespace speed {


long environment_number(const char* name, long fallback) {
  const char* text = std::getenv(name);
  return text && *text ? std::strtol(text, nullptr, 10) : fallback;
}

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
  // Large blocks from the heap, and freed ones kept for the next call, instead of fresh pages from
  // the kernel for every result: page faults cost what the machine's other work decides, and that
  // noise is not the kernel's.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  if (kernel.context && !skip) write_tensor(kernel.context());
  std::vector<std::vector<Tensor>> inputs;
  for (long i = 0; i < calls; ++i) inputs.push_back(kernel.inputs(timed_stream(round, i)));
  if (skip) return;  // the empty run: what starting and drawing the inputs cost
  for (long i = 0; i < calls; ++i) write_tensor(kernel.call(inputs[static_cast<std::size_t>(i)]));
}

void check_calls(const SpeedKernel& kernel,
                 const std::function<bool(const std::vector<Tensor>&, const char* which, const std::string& call)>& observed) {
  const auto& draw = kernel.check_inputs ? kernel.check_inputs : kernel.inputs;
  // 1. Fresh inputs.
  std::vector<Tensor> inputs = draw(kCheckStreams + 1);
  if (!observed(inputs, "on fresh inputs", kernel.name)) return;
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
  if (!observed(inputs, "on the same tensors after their values changed", kernel.name + ", again on the same tensors"))
    return;
  // 3. New tensors.
  observed(draw(kCheckStreams + 3), "on new tensors", kernel.name + ", on new tensors");
}

}  // namespace speed

using namespace speed;

void note_context(const TensorData& context) { session::set_speed_context(digest(context)); }

void speed_observe(const SpeedKernel& kernel) {
  const long round = environment_number(kiln::protocol::kSpeedRound, 0);
  const long calls = environment_number(kiln::protocol::kSpeedCalls, -1);
  if (calls >= 0) return timed(kernel, round, calls, environment_number(kiln::protocol::kSpeedSkip, 0) != 0);
  if (kernel.context) {
    const auto observed = observe(kernel.context_name, [&] { return kernel.context(); });
    if (!observed.ok()) return;
    note_context(*observed);
  }
  check_calls(kernel, [&](const std::vector<Tensor>& inputs, const char*, const std::string& call) {
    return observe(call, [&] { return kernel.call(inputs); }).ok();
  });
}

}  // namespace kiln::testing
