// The harness: warm-up calls, then each repetition timed alone between two clock readings.
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/benchmarking.h"

namespace kiln {

double steady_seconds() {
  const auto since_origin = std::chrono::steady_clock::now().time_since_epoch();
  return std::chrono::duration<double>(since_origin).count();
}

std::vector<double> measure(const std::function<void()>& workload, const MeasureOptions& options,
                            const Clock& clock) {
  if (options.warmup < 0) {
    throw std::invalid_argument("measure: warmup must be at least 0, got " + std::to_string(options.warmup));
  }
  if (options.repetitions < 1) {
    throw std::invalid_argument("measure: repetitions must be at least 1, got " +
                                std::to_string(options.repetitions));
  }
  for (int call = 0; call < options.warmup; ++call) workload();
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(options.repetitions));
  for (int repetition = 0; repetition < options.repetitions; ++repetition) {
    const double start = clock();
    workload();
    const double stop = clock();
    samples.push_back(stop - start);
  }
  return samples;
}

}  // namespace kiln
