// Trusted helpers shared by module 19's checks: the statistics written out the plainest way, in
// double (sort a copy, loop, divide), samples drawn from the run's seed, and the pieces of the
// failure reports. None of them calls the module's code; student_t_quantile is given code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/benchmarking.h"
#include "kiln/testing.h"

namespace kiln::benchmarking_testing {

using Samples = std::vector<double>;

// n timings in seconds, uniform in centre ± spread, from the run's generator `stream`.
inline Samples timings(std::size_t n, std::uint64_t stream, double centre = 0.010, double spread = 0.002) {
  testing::Generator generator(stream);
  Samples x(n);
  for (double& value : x) value = centre + spread * (2 * generator.uniform() - 1);
  return x;
}

// "[10, 12, 11]" for a short list, "33 samples of this run" otherwise.
inline std::string describe(const Samples& x, const std::string& run_name = "") {
  if (!run_name.empty()) return run_name;
  std::string out = "[";
  for (std::size_t i = 0; i < x.size(); ++i) out += (i ? ", " : "") + fmt::format("{}", x[i]);
  return out + "]";
}

// Close enough for sums and square roots done in another order: a relative 1e-9, and 1e-12 for
// values near zero.
inline bool close(double got, double want) { return std::fabs(got - want) <= 1e-9 * std::fabs(want) + 1e-12; }

// "got 2.5, expected 2.25" with enough digits to tell them apart.
inline std::string got_expected(const std::string& what, double got, double want) {
  const auto [g, w] = testing::format_pair(got, want);
  return what + ": got " + g + ", expected " + w;
}

inline double trusted_mean(const Samples& x) {
  double total = 0;
  for (const double value : x) total += value;
  return total / static_cast<double>(x.size());
}

inline double trusted_stddev(const Samples& x) {
  const double centre = trusted_mean(x);
  double squares = 0;
  for (const double value : x) squares += (value - centre) * (value - centre);
  return std::sqrt(squares / static_cast<double>(x.size() - 1));
}

// The p-quantile by linear interpolation between the sorted values, at position (n - 1)·p.
// The header's form, x[⌊h⌋] + (h - ⌊h⌋)·(x[⌊h⌋ + 1] - x[⌊h⌋]), term for term: the weighted mean
// (1 - f)·x[⌊h⌋] + f·x[⌊h⌋ + 1] is equal in exact arithmetic but rounds differently.
inline double trusted_quantile(Samples x, double p) {
  std::sort(x.begin(), x.end());
  const double h = static_cast<double>(x.size() - 1) * p;
  const std::size_t below = static_cast<std::size_t>(h);
  const double fraction = h - static_cast<double>(below);
  if (below + 1 == x.size()) return x[below];
  return x[below] + fraction * (x[below + 1] - x[below]);
}

inline double trusted_median(Samples x) {
  std::sort(x.begin(), x.end());
  const std::size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * x[n / 2 - 1] + 0.5 * x[n / 2];
}

struct TrustedInterval {
  double low = 0, high = 0;
};

inline TrustedInterval trusted_mean_interval(const Samples& x, double confidence) {
  const double n = static_cast<double>(x.size());
  const double half = student_t_quantile(0.5 + confidence / 2, n - 1) * trusted_stddev(x) / std::sqrt(n);
  return {trusted_mean(x) - half, trusted_mean(x) + half};
}

struct TrustedWelch {
  double difference = 0, low = 0, high = 0, dof = 0;
  bool real = false;
};

inline TrustedWelch trusted_welch(const Samples& a, const Samples& b, double confidence) {
  TrustedWelch w;
  const double va = std::pow(trusted_stddev(a), 2) / static_cast<double>(a.size());
  const double vb = std::pow(trusted_stddev(b), 2) / static_cast<double>(b.size());
  w.difference = trusted_mean(b) - trusted_mean(a);
  double half = 0;
  if (va + vb > 0) {
    w.dof = std::pow(va + vb, 2) / (va * va / static_cast<double>(a.size() - 1) + vb * vb / static_cast<double>(b.size() - 1));
    half = student_t_quantile(0.5 + confidence / 2, w.dof) * std::sqrt(va + vb);
  }
  w.low = w.difference - half;
  w.high = w.difference + half;
  w.real = w.low > 0 || w.high < 0;
  return w;
}

}  // namespace kiln::benchmarking_testing
