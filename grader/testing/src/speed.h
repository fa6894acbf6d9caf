// Speed-graded checks underneath (kiln/testing.h): what the observed program and the judge share.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/testing.h"

namespace kiln::testing::speed {

// A number from the environment, or fallback.
long environment_number(const char* name, long fallback);
// Streams of their own, apart from every stream a check draws from.
inline constexpr std::uint64_t kCheckStreams = 0x5eed000000000000ULL;
std::uint64_t timed_stream(long round, long call);
void write_all(const void* data, std::size_t bytes);
// FNV-1a over a context's shape and the bits of its values: what ties a timed run's context to
// the checked run's.
std::string digest(const TensorData& t);
// A timed run (KILN_SPEED_CALLS): inputs drawn, the kernel called, results written unjudged.
void timed(const SpeedKernel& kernel, long round, long calls, bool skip);
// The three inputs of a check run: fresh, the same tensors overwritten in place, new tensors.
// `observed` observes one call and answers whether to go on.
void check_calls(const SpeedKernel& kernel,
                 const std::function<bool(const std::vector<Tensor>&, const char* which, const std::string& call)>& observed);

}  // namespace kiln::testing::speed
