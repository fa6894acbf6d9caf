// Statistics of one list of samples: centre, spread, quartiles, outliers, and the interval for the
// mean. Sort a copy where you need order; never change the input.
//
// Errors: std::invalid_argument for an empty list (mean, median, quartiles, tukey_outliers) and
// for fewer than 2 samples (sample_stddev, mean_confidence_interval). A small helper that takes
// the minimum count keeps the check in one place.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/benchmarking.h"

namespace kiln {

double mean(const std::vector<double>& samples) {
  // Σ x / n, summed in double. (std::accumulate's third argument sets the type of the sum:
  // write 0.0, not 0.)
  throw kiln::NotImplemented();
}

double median(const std::vector<double>& samples) {
  // Sort a copy. Odd n: the element at n / 2, itself (not averaged with itself: x + x overflows
  // above DBL_MAX/2, and median([1e308, 1e308, 1e308]) is 1e308). Even n: the mean of those at n/2 - 1 and n/2, as
  // (x[n/2 - 1] + x[n/2]) / 2 in that form (x[i] + (x[i + 1] - x[i])/2 rounds otherwise).
  throw kiln::NotImplemented();
}

double sample_stddev(const std::vector<double>& samples) {
  // √(Σ (x - mean)² / (n - 1)): n - 1, not n, since the mean was estimated from the same samples.
  throw kiln::NotImplemented();
}

Quartiles quartiles(const std::vector<double>& samples) {
  // Sort a copy x. The p-quantile sits at position h = (n - 1)·p, between x[⌊h⌋] and x[⌊h⌋ + 1]:
  //   q = x[⌊h⌋] + (h - ⌊h⌋)·(x[⌊h⌋ + 1] - x[⌊h⌋])
  // in double, in this form: the weighted mean (1 - f)·x[⌊h⌋] + f·x[⌊h⌋ + 1] rounds differently
  // (when ⌊h⌋ is the last position, q = x[⌊h⌋]). Return {q at 0.25, q at 0.5, q at 0.75}: the
  // middle one in this form too, not median()'s (x[i] + x[i + 1])/2, which can round otherwise.
  throw kiln::NotImplemented();
}

Outliers tukey_outliers(const std::vector<double>& samples) {
  // From quartiles(): lower_fence = q1 - 1.5·IQR, upper_fence = q3 + 1.5·IQR. Then the positions
  // i, in ascending order, of the samples strictly below the lower or strictly above the upper
  // fence: positions in `samples` as given, not in a sorted copy.
  throw kiln::NotImplemented();
}

Interval mean_confidence_interval(const std::vector<double>& samples, double confidence) {
  // mean ± t·s/√n with s = sample_stddev(samples) and
  // t = student_t_quantile((1 + confidence) / 2, n - 1): half of the 1 - confidence that the
  // interval leaves out lies on each side.
  throw kiln::NotImplemented();
}

}  // namespace kiln
