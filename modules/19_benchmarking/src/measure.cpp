// The harness: warm-up calls, then each repetition timed alone between two clock readings.
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/benchmarking.h"

namespace kiln {

double steady_seconds() {
  // std::chrono::steady_clock::now().time_since_epoch() is a duration in the clock's own ticks
  // (often nanoseconds). std::chrono::duration<double>(d).count() converts it to seconds as a
  // double, keeping every tick; duration_cast<milliseconds>(d).count() would give whole
  // milliseconds instead (and duration_cast<microseconds> / 1e6 seconds rounded down to a µs).
  throw kiln::NotImplemented();
}

std::vector<double> measure(const std::function<void()>& workload, const MeasureOptions& options,
                            const Clock& clock) {
  // First check the options: std::invalid_argument when options.warmup < 0 or
  // options.repetitions < 1, before calling anything.
  // Then call workload() options.warmup times, reading no clock.
  // Then, for each of options.repetitions: start = clock(); workload(); stop = clock(); and
  // record stop - start (a double, as the clock gives it). Two readings per sample, none shared.
  throw kiln::NotImplemented();
}

}  // namespace kiln
