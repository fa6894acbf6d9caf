// Statistics of one list of samples: centre, spread, quartiles, outliers, and the interval for the
// mean. Each works on a sorted copy where it needs order; none changes its input.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/benchmarking.h"

namespace kiln {
namespace {

void require_samples(const std::vector<double>& samples, std::size_t at_least, const char* function) {
  if (samples.size() < at_least) {
    throw std::invalid_argument(std::string(function) + " needs at least " + std::to_string(at_least) +
                                " samples, got " + std::to_string(samples.size()));
  }
}

std::vector<double> sorted(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples;
}

// The p-quantile of sorted values by linear interpolation: position h = (n - 1)·p.
double quantile_of_sorted(const std::vector<double>& x, double p) {
  const double h = static_cast<double>(x.size() - 1) * p;
  const auto below = static_cast<std::size_t>(std::floor(h));
  if (below + 1 >= x.size()) return x.back();
  return x[below] + (h - static_cast<double>(below)) * (x[below + 1] - x[below]);
}

}  // namespace

double mean(const std::vector<double>& samples) {
  require_samples(samples, 1, "mean");
  const double total = std::accumulate(samples.begin(), samples.end(), 0.0);
  return total / static_cast<double>(samples.size());
}

double median(const std::vector<double>& samples) {
  require_samples(samples, 1, "median");
  const std::vector<double> x = sorted(samples);
  const std::size_t n = x.size();
  if (n % 2 == 1) return x[n / 2];
  return (x[n / 2 - 1] + x[n / 2]) / 2;
}

double sample_stddev(const std::vector<double>& samples) {
  require_samples(samples, 2, "sample_stddev");
  const double centre = mean(samples);
  double squares = 0;
  for (const double x : samples) squares += (x - centre) * (x - centre);
  return std::sqrt(squares / static_cast<double>(samples.size() - 1));
}

Quartiles quartiles(const std::vector<double>& samples) {
  require_samples(samples, 1, "quartiles");
  const std::vector<double> x = sorted(samples);
  return {quantile_of_sorted(x, 0.25), quantile_of_sorted(x, 0.5), quantile_of_sorted(x, 0.75)};
}

Outliers tukey_outliers(const std::vector<double>& samples) {
  require_samples(samples, 1, "tukey_outliers");
  const Quartiles q = quartiles(samples);
  Outliers result;
  result.lower_fence = q.q1 - 1.5 * q.iqr();
  result.upper_fence = q.q3 + 1.5 * q.iqr();
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (samples[i] < result.lower_fence || samples[i] > result.upper_fence) result.indices.push_back(i);
  }
  return result;
}

Interval mean_confidence_interval(const std::vector<double>& samples, double confidence) {
  require_samples(samples, 2, "mean_confidence_interval");
  const double n = static_cast<double>(samples.size());
  const double centre = mean(samples);
  const double standard_error = sample_stddev(samples) / std::sqrt(n);
  const double t = student_t_quantile((1 + confidence) / 2, n - 1);
  return {centre - t * standard_error, centre + t * standard_error};
}

}  // namespace kiln
