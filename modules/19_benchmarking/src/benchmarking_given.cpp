// Given: the quantile of Student's t distribution, the one piece of the statistics that is
// numerical analysis rather than benchmarking. Read it if you like; you only call it.
//
// The distribution function of t with ν degrees of freedom is, for t ≥ 0,
//   F(t) = 1 - ½·I_x(ν/2, ½),   x = ν / (ν + t²),
// I the regularised incomplete beta function, and F(-t) = 1 - F(t). I is evaluated by its
// continued fraction (Lentz's method, as in Numerical Recipes §6.4); the quantile is then found by
// bisection, which is slow but cannot fail: F only grows with t.
#include <cmath>
#include <stdexcept>
#include <string>

#include "kiln/benchmarking.h"

namespace kiln {
namespace {

// The continued fraction of I_x(a, b), good for x < (a + 1)/(a + b + 2).
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300;
  const double sum = a + b, a_plus = a + 1, a_minus = a - 1;
  double c = 1;
  double d = 1 - sum * x / a_plus;
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    // The even step, then the odd step, of the fraction.
    double term = m * (b - m) * x / ((a_minus + m2) * (a + m2));
    d = 1 + term * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + term / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    term = -(a + m) * (sum + m) * x / ((a + m2) * (a_plus + m2));
    d = 1 + term * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + term / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < 1e-16) break;
  }
  return h;
}

// The regularised incomplete beta function I_x(a, b), for 0 ≤ x ≤ 1.
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

// P(T ≤ t) for t ≥ 0.
double student_t_cdf(double t, double dof) { return 1 - 0.5 * incomplete_beta(dof / 2, 0.5, dof / (dof + t * t)); }

}  // namespace

double student_t_quantile(double p, double dof) {
  if (!(p > 0 && p < 1) || !(dof > 0)) {
    throw std::invalid_argument("student_t_quantile needs 0 < p < 1 and dof > 0, got p = " + std::to_string(p) +
                                " and dof = " + std::to_string(dof));
  }
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, dof);
  // Bracket the quantile in [low, high], then halve the bracket until it cannot shrink.
  double low = 0, high = 1;
  while (student_t_cdf(high, dof) < p && high < 1e300) {
    low = high;
    high *= 2;
  }
  for (int step = 0; step < 2000; ++step) {
    const double middle = low + (high - low) / 2;
    if (middle <= low || middle >= high) break;
    if (student_t_cdf(middle, dof) < p) low = middle;
    else high = middle;
  }
  return low + (high - low) / 2;
}

}  // namespace kiln
