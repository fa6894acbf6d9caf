// Comparing two versions: Welch's t interval for the difference of their means.
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/benchmarking.h"

namespace kiln {

Comparison welch_compare(const std::vector<double>& baseline, const std::vector<double>& candidate,
                         double confidence) {
  // std::invalid_argument unless each sample has at least 2 values. Then, in double:
  //   difference = mean(candidate) - mean(baseline)
  //   v_a = s_a² / n_a for the baseline, v_b = s_b² / n_b for the candidate (s: sample_stddev)
  //   se = √(v_a + v_b);  dof = (v_a + v_b)² / (v_a²/(n_a - 1) + v_b²/(n_b - 1))
  //   interval = difference ± student_t_quantile((1 + confidence) / 2, dof)·se
  //   real = interval.low > 0 || interval.high < 0
  // When se is 0 (both samples constant) dof is 0/0: set dof = 0 and the interval to
  // [difference, difference] instead, and decide real by the same rule.
  throw kiln::NotImplemented();
}

}  // namespace kiln
