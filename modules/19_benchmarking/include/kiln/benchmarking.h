// Module 19, Benchmarking: a harness that times a workload, and the statistics that decide
// whether one version is really faster than another.
//
// Times are plain doubles in seconds. The harness takes its clock as a parameter, so that the
// same code runs against the real steady clock (`grader bench 19`) and against a scripted clock
// whose every reading is known in advance (the checks). The statistics are pure functions of a
// list of samples; none of them changes its input, and none cares about the order of the samples
// except tukey_outliers, which reports positions in the order given.
//
// The methods, stated once:
//   median           the middle of the sorted samples; for an even count the mean of the two middle ones
//   sample_stddev    √(Σ (x - mean)² / (n - 1)), Bessel's n - 1
//   quartiles        linear interpolation between order statistics (numpy's default, "type 7"):
//                    the p-quantile of the sorted x[0..n-1] sits at position h = (n - 1)·p,
//                    q = x[⌊h⌋] + (h - ⌊h⌋)·(x[⌊h⌋ + 1] - x[⌊h⌋]), evaluated in double in
//                    this form (the weighted mean (1 - f)·x[⌊h⌋] + f·x[⌊h⌋ + 1] rounds otherwise,
//                    and a sample on a fence can change sides)
//   outliers         Tukey's fences q1 - 1.5·IQR and q3 + 1.5·IQR, IQR = q3 - q1; a sample strictly
//                    outside a fence is an outlier, one exactly on a fence is not
//   mean interval    mean ± t·s/√n, t the Student-t quantile at (1 + confidence)/2 for n - 1
//                    degrees of freedom (given: student_t_quantile)
//   comparison       Welch's t interval for mean(candidate) - mean(baseline), with the
//                    Welch–Satterthwaite degrees of freedom; "real" when the interval excludes 0
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "kiln/errors.h"

namespace kiln {

// ---------------------------------------------------------------------------------------------
// Given (src/benchmarking_given.cpp)

// The p-quantile of Student's t distribution with `dof` degrees of freedom: the t with
// P(T ≤ t) = p. dof may be fractional (Welch's is). student_t_quantile(0.975, 4) = 2.776445...,
// and as dof grows it approaches the normal distribution's 1.959964. Throws std::invalid_argument
// unless 0 < p < 1 and dof > 0.
double student_t_quantile(double p, double dof);

// ---------------------------------------------------------------------------------------------
// The harness (yours: src/measure.cpp)

// A clock: each call returns the current time in seconds from some fixed origin. It must never go
// backwards; only differences between two readings mean anything.
using Clock = std::function<double()>;

// std::chrono::steady_clock's current time in seconds, as a double, to that clock's own
// resolution (not rounded to whole microseconds or milliseconds). steady_clock is monotonic
// (the wall clock, system_clock, can jump when the time is set); its origin is unspecified (often
// the boot), which does not matter for differences.
double steady_seconds();

struct MeasureOptions {
  int warmup = 3;        // calls made first and thrown away: caches, branch predictors, page faults
  int repetitions = 30;  // calls timed, one sample each
};

// Times `workload`:
//   1. calls it options.warmup times without reading the clock;
//   2. then, options.repetitions times: reads the clock, calls the workload once, reads the clock
//      again, and records the second reading minus the first.
// Returns the repetitions samples in the order they were taken: exactly 2·repetitions readings
// of the clock, none shared between two samples. Throws std::invalid_argument, before calling
// anything, when warmup < 0 or repetitions < 1.
std::vector<double> measure(const std::function<void()>& workload, const MeasureOptions& options = {},
                            const Clock& clock = steady_seconds);

// ---------------------------------------------------------------------------------------------
// Statistics of one list of samples (yours: src/statistics.cpp)
//
// mean, median, quartiles and tukey_outliers throw std::invalid_argument for an empty list;
// sample_stddev and mean_confidence_interval need at least 2 samples and throw
// std::invalid_argument for fewer.

// Σ x / n.
double mean(const std::vector<double>& samples);

// The middle of the sorted samples: median([3, 1, 2]) = 2, median([4, 1, 3, 2]) = (2 + 3)/2 = 2.5.
// For an odd count the middle sample itself, x[n/2], exact however large: median([1e308, 1e308,
// 1e308]) = 1e308 (averaging it with itself, (x + x)/2, overflows to inf above DBL_MAX/2).
// For an even count (x[n/2 - 1] + x[n/2])/2 in that form, bit for bit: median([0.9, 0.1, 0.7,
// 0.05]) = (0.1 + 0.7)/2 = 0.39999999999999997 (the midpoint x[i] + (x[i + 1] - x[i])/2 gives 0.4).
double median(const std::vector<double>& samples);

// √(Σ (x - mean)² / (n - 1)): sample_stddev([2, 4, 4, 4, 5, 5, 7, 9]) = √(32/7) = 2.13809.
double sample_stddev(const std::vector<double>& samples);

struct Quartiles {
  double q1 = 0;      // the 0.25-quantile
  double median = 0;  // the 0.5-quantile, in the stated form like q1 and q3: for an even count
                      // x[i] + 0.5·(x[i + 1] - x[i]), which can differ in the last bit from
                      // median()'s (x[i] + x[i + 1])/2 (0.4 against 0.39999999999999997 for
                      // [0.9, 0.1, 0.7, 0.05])
  double q3 = 0;      // the 0.75-quantile
  double iqr() const { return q3 - q1; }
};

// The three quartiles by linear interpolation (numpy's default). For the sorted
// [1, 1, 2, 3, 4, 5, 6, 9]: q1 at h = 7·0.25 = 1.75 is 1 + 0.75·(2 - 1) = 1.75, the median at
// h = 3.5 is 3.5, q3 at h = 5.25 is 5 + 0.25·(6 - 5) = 5.25.
Quartiles quartiles(const std::vector<double>& samples);

struct Outliers {
  double lower_fence = 0;            // q1 - 1.5·IQR
  double upper_fence = 0;            // q3 + 1.5·IQR
  std::vector<std::size_t> indices;  // positions in `samples` of the outliers, ascending
};

// Tukey's fences, from quartiles(), and the samples strictly outside them.
Outliers tukey_outliers(const std::vector<double>& samples);

// An interval [low, high].
struct Interval {
  double low = 0;
  double high = 0;
  bool contains(double value) const { return low <= value && value <= high; }
};

// The confidence interval for the mean: mean ± t·s/√n, t = student_t_quantile((1 + confidence)/2,
// n - 1), s = sample_stddev. For [10, 12, 11, 13, 9] at 0.95: 11 ± 2.776445·1.581139/√5, that is
// [9.03676, 12.96324].
Interval mean_confidence_interval(const std::vector<double>& samples, double confidence = 0.95);

// ---------------------------------------------------------------------------------------------
// Comparing two versions (yours: src/compare.cpp)

struct Comparison {
  double difference = 0;  // mean(candidate) - mean(baseline): negative when the candidate is faster
  Interval interval;      // the confidence interval for that difference
  double dof = 0;         // Welch–Satterthwaite degrees of freedom (0 when both samples are constant)
  bool real = false;      // whether the interval excludes zero
};

// Welch's t interval for mean(candidate) - mean(baseline), which does not assume the two
// variances are equal. With v_a = s_a²/n_a and v_b = s_b²/n_b (s the sample standard deviations):
//   se  = √(v_a + v_b)
//   dof = (v_a + v_b)² / (v_a²/(n_a - 1) + v_b²/(n_b - 1))
//   interval = difference ± student_t_quantile((1 + confidence)/2, dof)·se
//   real = the interval excludes 0 (low > 0 or high < 0)
// When both samples are constant, se = 0: dof = 0, the interval is [difference, difference] and
// the difference is real exactly when it is not 0. Each sample needs at least 2 values;
// std::invalid_argument otherwise.
Comparison welch_compare(const std::vector<double>& baseline, const std::vector<double>& candidate,
                         double confidence = 0.95);

}  // namespace kiln
