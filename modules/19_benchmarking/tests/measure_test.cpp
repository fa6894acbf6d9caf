// Module 19 checks for the harness, measure(). A scripted clock stands in for the real one: each
// reading returns the next of a list of times drawn from the run's seed, so every sample the
// harness should return is known exactly in advance, and no check depends on how fast this
// machine is. The clock and the workload also write down, in one string, each reading ('C') and
// each call ('W'): a correct harness with warmup 2 and repetitions 3 leaves "WW" then "CWC" three
// times. Only the last check uses the real clock, and asks no more of it than that it is
// steady_clock's time in seconds, to that clock's resolution, and that a sleep of a few
// milliseconds lasts a few milliseconds.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "benchmarking_testing.h"
#include "kiln/benchmarking.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using namespace benchmarking_testing;
using testing::observe;

// Times that only grow, from the run's generator: a start somewhere in the first 1000 seconds
// after boot, then alternately a workload's duration (1 to 21 ms) and the harness's own gap
// between two repetitions (1 to 101 µs). Enough readings for a harness that reads too often.
Samples scripted_times(std::size_t readings, std::uint64_t stream) {
  testing::Generator generator(stream);
  Samples times(readings);
  double now = 50 + 1000 * generator.uniform();
  for (std::size_t k = 0; k < readings; ++k) {
    times[k] = now;
    now += k % 2 == 0 ? 0.001 + 0.020 * generator.uniform() : 1e-6 + 1e-4 * generator.uniform();
  }
  return times;
}

// One call of measure: its warm-up and repetitions.
struct Plan {
  int warmup = 0;
  int repetitions = 0;
};

// The hand-picked runs and one of the run's own (warmup 0 to 4, repetitions 1 to 33).
std::vector<Plan> plans(std::uint64_t stream) {
  testing::Generator generator(stream);
  const int warmup = static_cast<int>(generator.below(5));
  const int repetitions = 1 + static_cast<int>(generator.below(33));
  return {{3, 5}, {0, 1}, {1, 7}, {0, 33}, {warmup, repetitions}};
}

// measure() on the workload and clock that log what happens, observed as (samples, log).
auto observe_scripted(const Plan& plan, const Samples& times) {
  return observe(fmt::format("measure(workload, {{.warmup = {}, .repetitions = {}}}, scripted_clock)", plan.warmup,
                             plan.repetitions),
                 [&] {
                   std::string log;
                   std::size_t next = 0;
                   const std::function<void()> workload = [&] { log += 'W'; };
                   const Clock clock = [&] {
                     log += 'C';
                     if (next == times.size()) throw std::runtime_error("the scripted clock ran out of readings");
                     return times[next++];
                   };
                   std::vector<double> samples = measure(workload, MeasureOptions{plan.warmup, plan.repetitions}, clock);
                   return std::make_tuple(std::move(samples), std::move(log));
                 });
}

testing::Params plan_params(const Plan& plan) {
  return {{"warmup", std::to_string(plan.warmup)}, {"repetitions", std::to_string(plan.repetitions)}};
}

// The plan's options as numbers, and its calls counted with their nouns ("1 time", "7 calls").
testing::Params order_params(const Plan& plan) {
  testing::Params params = plan_params(plan);
  params.emplace_back("warmup_times", testing::counted(plan.warmup, "time"));
  params.emplace_back("timed_calls", testing::counted(plan.repetitions, "call"));
  return params;
}

}  // namespace

TEST(Benchmarking, MeasureOrder) {
  for (const Plan& plan : plans(1901)) {
    const Samples times = scripted_times(4 * static_cast<std::size_t>(plan.warmup + plan.repetitions) + 8, 1902);
    const auto got = observe_scripted(plan, times);
    if (!KILN_EXPECT_OK(got, "measure_order_wrong", order_params(plan))) return;
    KILN_JUDGE {
      std::string expected(static_cast<std::size_t>(plan.warmup), 'W');
      for (int r = 0; r < plan.repetitions; ++r) expected += "CWC";
      const std::string& log = std::get<1>(*got);
      if (log != expected) {
        KILN_FAIL("measure_order_wrong", order_params(plan),
                  "clock readings (C) and workload calls (W), in order:\n  got      " + log + "\n  expected " + expected);
        return;
      }
    }
  }
  // Options that make no sense are refused before anything runs.
  const auto nothing = [] {};
  KILN_EXPECT_THROWS(measure(nothing, MeasureOptions{0, 0}), std::invalid_argument, "measure_options_unchecked");
  KILN_EXPECT_THROWS(measure(nothing, MeasureOptions{2, -3}), std::invalid_argument, "measure_options_unchecked");
  KILN_EXPECT_THROWS(measure(nothing, MeasureOptions{-1, 5}), std::invalid_argument, "measure_options_unchecked");
  if (::testing::Test::HasFailure()) return;
  // Before anything runs: with warmup 2 and repetitions 0, the refusal comes before the warm-up
  // calls, and the clock is never read.
  const auto refused = observe("measure(workload, {.warmup = 2, .repetitions = 0}, scripted_clock), counting its calls", [] {
    std::string log;
    const std::function<void()> workload = [&] { log += 'W'; };
    const Clock clock = [&] {
      log += 'C';
      return 0.0;
    };
    bool threw = false;
    try {
      measure(workload, MeasureOptions{2, 0}, clock);
    } catch (const std::invalid_argument&) {
      threw = true;
    }
    return std::make_pair(threw, log);
  });
  if (!KILN_EXPECT_OK(refused, "measure_options_unchecked")) return;
  KILN_JUDGE {
    if (!refused->first || !refused->second.empty()) {
      KILN_FAIL("measure_options_unchecked", {},
                fmt::format("{}: {}; clock readings (C) and workload calls (W) before it: \"{}\"", refused.call(),
                            refused->first ? "raised std::invalid_argument" : "did not raise std::invalid_argument",
                            refused->second));
    }
  }
}

TEST(Benchmarking, MeasureSamples) {
  for (const Plan& plan : plans(1903)) {
    const Samples times = scripted_times(4 * static_cast<std::size_t>(plan.warmup + plan.repetitions) + 8, 1904);
    const auto got = observe_scripted(plan, times);
    if (!KILN_EXPECT_OK(got, "samples_wrong", plan_params(plan))) return;
    KILN_JUDGE {
      // Repetition r reads times[2r] before its call and times[2r + 1] after it.
      Samples expected;
      for (int r = 0; r < plan.repetitions; ++r) expected.push_back(times[2 * r + 1] - times[2 * r]);
      const Samples& samples = std::get<0>(*got);
      if (samples.size() != expected.size()) {
        KILN_FAIL("samples_wrong", plan_params(plan),
                  fmt::format("got {}, expected {}", testing::counted(samples.size(), "sample"), expected.size()));
        return;
      }
      for (std::size_t r = 0; r < expected.size(); ++r) {
        if (samples[r] != expected[r]) {  // the same subtraction of the same doubles: exact
          KILN_FAIL("samples_wrong", plan_params(plan), got_expected(fmt::format("sample {}", r), samples[r], expected[r]));
          return;
        }
      }
    }
  }
}

// steady_clock's current time in seconds, as a double: the test's own reading of the clock, which
// the student's steady_seconds() is held against.
double steady_clock_now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

TEST(Benchmarking, RealClock) {
  // The real clock read twice never goes backwards, and it is steady_clock's: each reading lies
  // between steady_clock's own time, in seconds, read just before and just after it (another
  // clock, system_clock's seconds since 1970 say, lies far outside).
  const auto readings = observe("steady_clock, steady_seconds(), steady_seconds() again, steady_clock", [] {
    const double before = steady_clock_now_seconds();
    const double first = steady_seconds();
    const double second = steady_seconds();
    const double after = steady_clock_now_seconds();
    return std::tuple<double, double, double, double>{before, first, second, after};
  });
  if (!KILN_EXPECT_OK(readings, "real_clock_wrong")) return;
  KILN_JUDGE {
    const auto& [before, first, second, after] = *readings;
    if (second < first) {
      KILN_FAIL("real_clock_wrong", {}, fmt::format("the second reading {} is earlier than the first, {}", second, first));
      return;
    }
    if (!(first >= before - 1e-6 && second <= after + 1e-6)) {
      KILN_FAIL("real_clock_wrong", {},
                fmt::format("steady_seconds() read {} and {} between steady_clock's {} and {} seconds: another clock, "
                            "or another unit",
                            first, second, before, after));
      return;
    }
  }
  // To the clock's own resolution: each of many readings lies between steady_clock's readings
  // taken just before and just after it, allowing only a few units in the last place of the
  // double (another conversion of the same nanoseconds may round differently). Two readings of
  // steady_clock a few tens of nanoseconds apart rarely straddle a microsecond tick, so a reading
  // rounded down to whole microseconds lies before the one taken just before it in almost every
  // pair, and in some pair of a thousand almost surely (rounded to the nearest, after the one
  // taken just after it). The readings of steady_clock are the test's own.
  constexpr std::size_t kPairs = 1000;
  const auto fine = observe(
      fmt::format("{} times: steady_clock, steady_seconds(), steady_clock", kPairs), [] {
        std::vector<double> before(kPairs), reading(kPairs), after(kPairs);
        for (std::size_t k = 0; k < kPairs; ++k) {
          before[k] = steady_clock_now_seconds();
          reading[k] = steady_seconds();
          after[k] = steady_clock_now_seconds();
        }
        return std::tuple<std::vector<double>, std::vector<double>, std::vector<double>>{before, reading, after};
      });
  if (!KILN_EXPECT_OK(fine, "clock_resolution_lost")) return;
  KILN_JUDGE {
    const auto& [before, reading, after] = *fine;
    // As many readings of each as were taken (a stream that says otherwise is not believed).
    const std::size_t pairs = std::min({before.size(), reading.size(), after.size()});
    std::size_t outside = pairs == kPairs ? 0 : kPairs, worst = 0;
    double worst_gap = 0;
    for (std::size_t k = 0; k < pairs; ++k) {
      // A few units in the last place of the time: a rounding of the conversion, never a tick.
      const double slack = 8 * std::numeric_limits<double>::epsilon() * std::fabs(after[k]);
      const double gap = std::max(before[k] - reading[k], reading[k] - after[k]);
      if (gap > slack) {
        ++outside;
        if (gap > worst_gap) {
          worst_gap = gap;
          worst = k;
        }
      }
    }
    if (outside > 0) {
      KILN_FAIL("clock_resolution_lost",
                {{"outside", std::to_string(outside)},
                 {"pairs", std::to_string(kPairs)},
                 {"gap", fmt::format("{:.3g} µs", worst_gap * 1e6)}},
                worst < pairs ? fmt::format("steady_seconds() read {:.9f} between steady_clock's {:.9f} and {:.9f} seconds",
                                            reading[worst], before[worst], after[worst])
                              : fmt::format("{} of {} readings came back", pairs, kPairs));
      return;
    }
  }
  // A sleep of 5 to 24 ms (the run's own) lasts at least that long, and surely less than 1 s (a
  // sample in milliseconds, 5 or more, is not).
  testing::Generator generator(1905);
  const int ms = 5 + static_cast<int>(generator.below(20));
  const auto got = observe(fmt::format("measure(sleep for {} ms, {{.warmup = 0, .repetitions = 3}})", ms), [&] {
    return measure([ms] { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }, MeasureOptions{0, 3});
  });
  if (!KILN_EXPECT_OK(got, "real_clock_wrong", {})) return;
  KILN_JUDGE {
    if (got->size() != 3) {
      KILN_FAIL("real_clock_wrong", {}, fmt::format("got {}, expected 3", testing::counted(got->size(), "sample")));
      return;
    }
    const double at_least = ms / 1000.0 - 1e-4;
    for (const double sample : *got) {
      if (!(sample >= at_least && sample < 1.0)) {
        KILN_FAIL("real_clock_wrong", {},
                  fmt::format("a sample of {} (expected seconds: at least {:.4f}, and below 1)", sample, at_least));
        return;
      }
    }
  }
}

}  // namespace kiln
