// Comparing two versions: Welch's t interval for the difference of their means.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/benchmarking.h"

namespace kiln {

Comparison welch_compare(const std::vector<double>& baseline, const std::vector<double>& candidate,
                         double confidence) {
  if (baseline.size() < 2 || candidate.size() < 2) {
    throw std::invalid_argument("welch_compare needs at least 2 samples of each version, got " +
                                std::to_string(baseline.size()) + " and " + std::to_string(candidate.size()));
  }
  const double n_a = static_cast<double>(baseline.size());
  const double n_b = static_cast<double>(candidate.size());
  const double s_a = sample_stddev(baseline), s_b = sample_stddev(candidate);
  // The squared standard error of each mean.
  const double v_a = s_a * s_a / n_a, v_b = s_b * s_b / n_b;
  Comparison result;
  result.difference = mean(candidate) - mean(baseline);
  const double se = std::sqrt(v_a + v_b);
  if (se == 0) {
    // Both versions took the same time on every run: nothing varies, so nothing is uncertain.
    result.dof = 0;
    result.interval = {result.difference, result.difference};
    result.real = result.difference != 0;
    return result;
  }
  result.dof = (v_a + v_b) * (v_a + v_b) / (v_a * v_a / (n_a - 1) + v_b * v_b / (n_b - 1));
  const double t = student_t_quantile((1 + confidence) / 2, result.dof);
  result.interval = {result.difference - t * se, result.difference + t * se};
  result.real = result.interval.low > 0 || result.interval.high < 0;
  return result;
}

}  // namespace kiln
