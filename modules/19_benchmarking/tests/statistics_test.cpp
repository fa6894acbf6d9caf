// Module 19 checks for the statistics: median, mean, sample standard deviation, quartiles,
// Tukey's outliers, the interval for the mean, and Welch's comparison of two versions. Each is
// judged against the hand-worked numbers of the chapter and against the same statistic written
// out plainly in double in benchmarking_testing.h, on samples of awkward sizes (1, 2, 3, 7, 31,
// 33) and on timings drawn from the run's seed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "benchmarking_testing.h"
#include "kiln/benchmarking.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using namespace benchmarking_testing;
using testing::observe;

// A list of samples and how the report names it.
struct Case {
  std::string what;
  Samples x;
};

Case hand(Samples x) { return {describe(x), std::move(x)}; }
Case of_run(std::size_t n, std::uint64_t stream) {
  return {fmt::format("{} timings of this run", n), timings(n, stream)};
}

// Reports `id` for `c` (its name in {case}) with what differs, unless got is close to want.
// Judging only: called inside KILN_JUDGE.
bool expect_number(const char* file, int line, const testing::Observed<double>& got, double want, const Case& c,
                   const char* id) {
  const testing::Params params = {{"case", c.what}};
  if (!testing::expect_ok(file, line, got, id, params)) return false;
  if (close(*got, want)) return true;
  testing::report_failure(file, line, id, params, got_expected(got.call(), *got, want));
  return false;
}

}  // namespace

TEST(Benchmarking, Median) {
  struct Expected {
    Case c;
    double median;
  };
  // Odd and even counts, unsorted, one sample, zeros and negatives, then sizes 7, 31 and 33.
  std::vector<Expected> cases = {
      {hand({3, 1, 2}), 2},        {hand({4, 1, 3, 2}), 2.5}, {hand({7}), 7},
      {hand({-1, 0, 0, -3}), -0.5}, {hand({0.5, 0.25}), 0.375},
  };
  for (const auto& [n, stream] : {std::pair<std::size_t, std::uint64_t>{7, 1911}, {31, 1912}, {33, 1913}}) {
    Case c = of_run(n, stream);
    cases.push_back({c, KILN_JUDGE_ONLY(trusted_median(c.x))});
  }
  for (const Expected& e : cases) {
    const auto got = observe("median(" + e.c.what + ")", [&] { return median(e.c.x); });
    KILN_JUDGE {
      if (!expect_number(__FILE__, __LINE__, got, e.median, e.c, "median_wrong")) return;
    }
    if (!got.ok()) return;
  }
  // Bit for bit in the stated form (x[i] + x[i + 1])/2, decimal timings whose midpoint written
  // x[i] + (x[i + 1] - x[i])/2 (the quartiles' form) rounds the other way: [0.9, 0.1, 0.7, 0.05]
  // gives (0.1 + 0.7)/2 = 0.39999999999999997 (0.4 that way), and [1.2, 0.1, 0.05, 1.5]
  // (0.1 + 1.2)/2 = 0.65 (0.6499999999999999 that way).
  for (const auto& [c, want] : {std::pair{hand({0.9, 0.1, 0.7, 0.05}), 0.39999999999999997},
                                std::pair{hand({1.2, 0.1, 0.05, 1.5}), 0.65}}) {
    const auto got = observe("median(" + c.what + ")", [&] { return median(c.x); });
    KILN_JUDGE {
      if (!expect_number(__FILE__, __LINE__, got, want, c, "median_wrong")) return;
      if (*got != want) {
        // Every digit (the shortest form that reads back as the same double): they differ in the last.
        const std::string g = fmt::format("{}", *got), w = fmt::format("{}", want);
        KILN_FAIL("median_not_stated_form", {{"case", c.what}, {"got", g}, {"expected", w}},
                  fmt::format("{}: got {}, expected {}", got.call(), g, w));
        return;
      }
    }
    if (!got.ok()) return;
  }
  // An odd count gives its middle sample itself, x[n/2]: exact for any sample, also one above
  // DBL_MAX/2 (8.99e307), where averaging the middle sample with itself, (x + x)/2, overflows to
  // inf. [1e308, 1e308, 1e308] gives 1e308, [1.7e308] 1.7e308, [1.7e308, -1.7e308, 1.6e308] 1.6e308.
  for (const auto& [c, want] : {std::pair{hand({1e308, 1e308, 1e308}), 1e308}, std::pair{hand({1.7e308}), 1.7e308},
                                std::pair{hand({1.7e308, -1.7e308, 1.6e308}), 1.6e308}}) {
    const auto got = observe("median(" + c.what + ")", [&] { return median(c.x); });
    KILN_JUDGE {
      if (!testing::expect_ok(__FILE__, __LINE__, got, "median_wrong", {{"case", c.what}})) return;
      if (*got != want) {
        const std::string g = fmt::format("{}", *got), w = fmt::format("{}", want);
        KILN_FAIL("median_odd_not_middle", {{"case", c.what}, {"got", g}, {"expected", w}},
                  fmt::format("{}: got {}, expected {}", got.call(), g, w));
        return;
      }
    }
    if (!got.ok()) return;
  }
}

TEST(Benchmarking, MeanStddev) {
  // Mean: the classic [2, 4, 4, 4, 5, 5, 7, 9] has mean 5; fractions, one sample, the run's.
  std::vector<Case> means = {hand({2, 4, 4, 4, 5, 5, 7, 9}), hand({-1.5, 0, 0.25}), hand({7}), of_run(33, 1921),
                             of_run(3, 1922)};
  for (const Case& c : means) {
    const auto got = observe("mean(" + c.what + ")", [&] { return mean(c.x); });
    KILN_JUDGE {
      if (!expect_number(__FILE__, __LINE__, got, trusted_mean(c.x), c, "mean_wrong")) return;
    }
    if (!got.ok()) return;
  }
  // Standard deviation: √(32/7) = 2.13809 for the classic list, √2 for [1, 3], 0 for a constant,
  // and √(5/3) for four values 1e15 from zero (nanoseconds on a clock started twelve days ago):
  // their squares, about 1e30, hold no digit of the spread. Σx² − n·mean² loses it, and so does
  // Σ(x + mean)(x − mean), whose products are rounded at 3e15; Σ(x − mean)² keeps it exactly.
  const std::vector<std::pair<Case, double>> hand_spreads = {
      {hand({2, 4, 4, 4, 5, 5, 7, 9}), 2.1380899352993950}, {hand({1, 3}), 1.4142135623730951},
      {hand({0.5, 0.5, 0.5}), 0.0}, {hand({1e15 + 1, 1e15 + 2, 1e15 + 3, 1e15 + 4}), 1.2909944487358056}};
  for (const auto& [c, want] : hand_spreads) {
    const auto got = observe("sample_stddev(" + c.what + ")", [&] { return sample_stddev(c.x); });
    KILN_JUDGE {
      if (!expect_number(__FILE__, __LINE__, got, want, c, "stddev_wrong")) return;
    }
    if (!got.ok()) return;
  }
  for (const Case& c : {hand({-1.5, 0, 0.25}), of_run(31, 1923), of_run(7, 1924)}) {
    const auto got = observe("sample_stddev(" + c.what + ")", [&] { return sample_stddev(c.x); });
    KILN_JUDGE {
      if (!expect_number(__FILE__, __LINE__, got, trusted_stddev(c.x), c, "stddev_wrong")) return;
    }
    if (!got.ok()) return;
  }
}

TEST(Benchmarking, Quartiles) {
  struct Expected {
    Case c;
    double q1, median, q3;
  };
  std::vector<Expected> cases = {
      // Sorted [1, 1, 2, 3, 4, 5, 6, 9]: positions 1.75, 3.5 and 5.25.
      {hand({3, 1, 4, 1, 5, 9, 2, 6}), 1.75, 3.5, 5.25},
      {hand({7}), 7, 7, 7},
      {hand({3, 1, 2}), 1.5, 2, 2.5},
      {hand({40, 10, 70, 30, 20, 60, 50}), 25, 40, 55},
      {hand({-2, 0, -8, 4}), -3.5, -1, 1},
  };
  for (const auto& [n, stream] : {std::pair<std::size_t, std::uint64_t>{31, 1931}, {33, 1932}, {2, 1933}}) {
    Case c = of_run(n, stream);
    cases.push_back({c, KILN_JUDGE_ONLY(trusted_quantile(c.x, 0.25)), KILN_JUDGE_ONLY(trusted_quantile(c.x, 0.5)),
                     KILN_JUDGE_ONLY(trusted_quantile(c.x, 0.75))});
  }
  for (const Expected& e : cases) {
    const auto got = observe("quartiles(" + e.c.what + ")", [&] {
      const Quartiles q = quartiles(e.c.x);
      return std::make_tuple(q.q1, q.median, q.q3);
    });
    const testing::Params params = {{"case", e.c.what}};
    if (!KILN_EXPECT_OK(got, "quartiles_wrong", params)) return;
    KILN_JUDGE {
      const auto [q1, q2, q3] = *got;
      for (const auto& [name, value, want] : {std::tuple<const char*, double, double>{"q1", q1, e.q1},
                                              {"median", q2, e.median},
                                              {"q3", q3, e.q3}}) {
        if (!close(value, want)) {
          KILN_FAIL("quartiles_wrong", params, got_expected(name, value, want));
          return;
        }
      }
    }
  }
  // The stated form, bit for bit: x[⌊h⌋] + f·(x[⌊h⌋ + 1] - x[⌊h⌋]) rounds otherwise than the
  // weighted mean (1 - f)·x[⌊h⌋] + f·x[⌊h⌋ + 1] for about one quartile in ten of decimal timings.
  // Sorted [0.7, 1.9, 2.7, 3, 3.1, 3.7, 3.7, 3.8]: q1 at h = 1.75 is 1.9 + 0.75·(2.7 - 1.9) = 2.5
  // exactly, where the weighted mean gives 2.5000000000000004 (and 0.7 then falls outside the
  // lower fence, which the outliers check shows).
  // The median is the 0.5-quantile in the same form, x[i] + 0.5·(x[i + 1] - x[i]) for an even
  // count, which rounds otherwise than median()'s (x[i] + x[i + 1])/2 for about one decimal pair in
  // eight: sorted [0.05, 0.1, 0.7, 0.9] has 0.1 + 0.5·0.6 = 0.4, where (0.1 + 0.7)/2 is
  // 0.39999999999999997.
  for (const Case& bitwise : {hand({3.7, 3.1, 0.7, 3.8, 3.0, 1.9, 3.7, 2.7}), hand({0.9, 0.1, 0.7, 0.05})}) {
    const auto exact = observe("quartiles(" + bitwise.what + ")", [&] {
      const Quartiles q = quartiles(bitwise.x);
      return std::make_tuple(q.q1, q.median, q.q3);
    });
    const testing::Params params = {{"case", bitwise.what}};
    if (!KILN_EXPECT_OK(exact, "quartiles_wrong", params)) return;
    KILN_JUDGE {
      const auto [q1, q2, q3] = *exact;
      Samples sorted_x = bitwise.x;
      std::sort(sorted_x.begin(), sorted_x.end());
      const std::size_t n = sorted_x.size();
      // median()'s mean of the two middle samples, for an even count.
      const double middle_mean = n % 2 == 0 ? (sorted_x[n / 2 - 1] + sorted_x[n / 2]) / 2 : sorted_x[n / 2];
      for (const auto& [name, value, p] : {std::tuple<const char*, double, double>{"q1", q1, 0.25},
                                           {"median", q2, 0.5},
                                           {"q3", q3, 0.75}}) {
        const double want = trusted_quantile(bitwise.x, p);
        if (!close(value, want)) {
          KILN_FAIL("quartiles_wrong", params, got_expected(name, value, want));
          return;
        }
        if (value != want) {
          // The shortest form that reads back as the same double: a rounding apart shows.
          const std::string g = fmt::format("{}", value), w = fmt::format("{}", want);
          const std::string detail = fmt::format("{}: got {}, expected {} (the stated form, term for term)", name, g, w);
          if (p == 0.5 && value == middle_mean) {
            KILN_FAIL("quartile_median_from_median", {{"case", bitwise.what}, {"got", g}, {"expected", w}},
                      detail + fmt::format("; (x[i] + x[i + 1])/2 is {}", g));
          } else {
            KILN_FAIL("quantile_rounding_differs",
                      {{"case", bitwise.what}, {"which", name}, {"got", g}, {"expected", w}}, detail);
          }
          return;
        }
      }
    }
  }
}

TEST(Benchmarking, Outliers) {
  std::vector<Case> cases = {
      // Sorted [2, 7, 10, 11, 11, 11, 12, 15, 30]: q1 = 10, q3 = 12, IQR 2, fences 7 and 15. The 7
      // and the 15 lie exactly on the fences and are kept; 30 (position 1) and 2 (position 5) are
      // outliers.
      hand({11, 30, 7, 10, 12, 2, 11, 15, 11}),
      hand({0.01}),
      // q1 = 1.5, q3 = 51, IQR 49.5: fences -72.75 and 125.25, nothing outside.
      hand({1, 2, 100}),
      // The first list reordered: the outliers are now the first and the last sample.
      hand({30, 11, 7, 10, 12, 11, 15, 11, 2}),
      // q1 = 1.9 + 0.75·(2.7 - 1.9) = 2.5 and q3 = 3.7 in the stated form: the lower fence,
      // 2.5 - 1.5·1.2, is 0.6999999999999997, so 0.7 (position 2) lies inside it and nothing is
      // an outlier. (The weighted mean's q1 of 2.5000000000000004 puts the fence above 0.7.)
      hand({3.7, 3.1, 0.7, 3.8, 3.0, 1.9, 3.7, 2.7}),
  };
  // 33 timings of the run with three slow runs (an interrupt, a page fault, another process)
  // planted at positions of the run.
  Case spiky = of_run(33, 1941);
  spiky.what = "33 timings of this run with 3 slow ones";
  for (const std::int64_t at : testing::random_ints(3, 33, 1942)) spiky.x[static_cast<std::size_t>(at)] *= 3;
  cases.push_back(spiky);

  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const auto got = observe("tukey_outliers(" + c.what + ")", [&] {
      const Outliers o = tukey_outliers(c.x);
      return std::make_tuple(o.lower_fence, o.upper_fence, o.indices);
    });
    const testing::Params params = {{"case", c.what}};
    if (!KILN_EXPECT_OK(got, "fences_wrong", params)) return;
    KILN_JUDGE {
      // The fences and positions of each case: the hand-worked ones above, then the run's, from
      // the trusted quartiles.
      struct Expected {
        double lower, upper;
        std::vector<std::int64_t> indices;
      };
      std::vector<Expected> expected = {
          {7, 15, {1, 5}}, {0.01, 0.01, {}}, {-72.75, 125.25, {}}, {7, 15, {0, 8}}, {2.5 - 1.5 * (3.7 - 2.5), 5.5, {}}};
      Expected run{0, 0, {}};
      const double q1 = trusted_quantile(spiky.x, 0.25), q3 = trusted_quantile(spiky.x, 0.75);
      run.lower = q1 - 1.5 * (q3 - q1);
      run.upper = q3 + 1.5 * (q3 - q1);
      for (std::size_t i = 0; i < spiky.x.size(); ++i) {
        if (spiky.x[i] < run.lower || spiky.x[i] > run.upper) run.indices.push_back(static_cast<std::int64_t>(i));
      }
      expected.push_back(run);
      const Expected& e = expected[k];

      const auto& [lower, upper, indices] = *got;
      if (!close(lower, e.lower) || !close(upper, e.upper)) {
        KILN_FAIL("fences_wrong", params,
                  got_expected("lower fence", lower, e.lower) + "; " + got_expected("upper fence", upper, e.upper));
        return;
      }
      if (indices != e.indices) {
        const auto show = [](const std::vector<std::int64_t>& v) {
          std::string out = "[";
          for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
          return out + "]";
        };
        KILN_FAIL("outliers_wrong", params, "positions: got " + show(indices) + ", expected " + show(e.indices));
        return;
      }
    }
  }
}

TEST(Benchmarking, MeanInterval) {
  struct Expected {
    Case c;
    double confidence, low, high;
  };
  std::vector<Expected> cases = {
      // 11 ± 2.776445·√2.5/√5 = 11 ± 1.963243.
      {hand({10, 12, 11, 13, 9}), 0.95, 9.0367568, 12.9632432},
      // Two samples: one degree of freedom, t = 12.706205, s/√2 = 1: 2 ± 12.706205.
      {hand({1, 3}), 0.95, -10.7062047, 14.7062047},
  };
  for (const auto& [n, stream, confidence] :
       {std::tuple<std::size_t, std::uint64_t, double>{7, 1951, 0.9}, {33, 1952, 0.95}, {31, 1953, 0.99}}) {
    Case c = of_run(n, stream);
    Expected e{c, confidence, 0, 0};
    KILN_JUDGE {
      const TrustedInterval t = trusted_mean_interval(c.x, confidence);
      e.low = t.low;
      e.high = t.high;
    }
    cases.push_back(e);
  }
  for (const Expected& e : cases) {
    const auto got = observe(fmt::format("mean_confidence_interval({}, {})", e.c.what, e.confidence), [&] {
      const Interval i = mean_confidence_interval(e.c.x, e.confidence);
      return std::make_pair(i.low, i.high);
    });
    const testing::Params params = {{"case", e.c.what}, {"confidence", fmt::format("{}", e.confidence)}};
    if (!KILN_EXPECT_OK(got, "interval_wrong", params)) return;
    KILN_JUDGE {
      // The hand-worked ends are given to 8 digits.
      const auto near = [](double value, double want) { return std::fabs(value - want) <= 1e-9 * std::fabs(want) + 1e-7; };
      if (!near(got->first, e.low) || !near(got->second, e.high)) {
        KILN_FAIL("interval_wrong", params,
                  got_expected("low", got->first, e.low) + "; " + got_expected("high", got->second, e.high));
        return;
      }
    }
  }
}

TEST(Benchmarking, Welch) {
  struct Pair {
    std::string what;
    Samples baseline, candidate;
    double confidence = 0.95;
  };
  const Samples a = {10, 12, 11, 13, 9};
  std::vector<Pair> pairs = {
      // The same samples twice: difference 0, se 1, dof 8, interval ±2.306004. Not real.
      {"identical samples [10, 12, 11, 13, 9] twice", a, a},
      // Every candidate run 10 slower: interval [7.693996, 12.306004]. Real.
      {"[10, 12, 11, 13, 9] then [20, 22, 21, 23, 19]", a, {20, 22, 21, 23, 19}},
      // Means 11 and 12, but so noisy that the interval is 1 ± 4.786: not real.
      {"[10, 14, 9, 15, 7] then [12, 8, 16, 10, 14]", {10, 14, 9, 15, 7}, {12, 8, 16, 10, 14}},
      // Constant samples: se = 0, dof = 0, the interval is the difference itself.
      {"[5, 5, 5] twice", {5, 5, 5}, {5, 5, 5}},
      {"[5, 5, 5] then [6, 6, 6, 6]", {5, 5, 5}, {6, 6, 6, 6}},
      // One constant sample, in either order: its v is 0 but the other's is not, so se > 0 and
      // Welch's interval applies, with the varying sample's n - 1 = 2 degrees of freedom:
      // 1 ± 4.302653·0.577350 = [-1.484, 3.484], not real (and -1 ± the same).
      {"[1, 1, 1] then [1, 2, 3]", {1, 1, 1}, {1, 2, 3}},
      {"[1, 2, 3] then [1, 1, 1]", {1, 2, 3}, {1, 1, 1}},
      // A nanosecond's work timed in seconds: se is 8.2e-13, tiny but not 0, so Welch's interval
      // applies (dof 4), not the shortcut of two constant samples.
      {"[1.000e-9, 1.001e-9, 1.002e-9] then [1.003e-9, 1.004e-9, 1.005e-9] (seconds)", {1.000e-9, 1.001e-9, 1.002e-9},
       {1.003e-9, 1.004e-9, 1.005e-9}},
      // Two samples on each side, the fewest Welch allows: means 11 and 13, v = 1 and 4, dof 25/17.
      {"[10, 12] then [11, 15]", {10, 12}, {11, 15}},
      // The run's: a candidate 20% faster (real), one 3 against 33 of unequal spread, and one whose
      // shift is drawn too, so that the verdict may go either way.
      {"31 then 33 timings of this run, the second 20% faster", timings(31, 1961, 0.010), timings(33, 1962, 0.008)},
      {"3 then 33 timings of this run", timings(3, 1963, 0.010, 0.004), timings(33, 1964, 0.0105, 0.001)},
      // A candidate 20% slower: real, with the whole interval above zero (and below a millisecond).
      {"31 then 33 timings of this run, the second 20% slower", timings(31, 1968, 0.010), timings(33, 1969, 0.012)},
  };
  // Other confidences: the quantile moves with them. At 0.99, [1, 2, 3] then [4, 5, 6] (difference
  // 3, se 0.816497, dof 4) is 3 ± 4.604094·se = [-0.759, 6.759], not real, where t at 0.95 would
  // say real; at 0.8 the noisy pair is 1 ± 1.415·se, still not real, and narrower.
  pairs.push_back({"[1, 2, 3] then [4, 5, 6], at confidence 0.99", {1, 2, 3}, {4, 5, 6}, 0.99});
  pairs.push_back({"[10, 14, 9, 15, 7] then [12, 8, 16, 10, 14], at confidence 0.8", {10, 14, 9, 15, 7},
                   {12, 8, 16, 10, 14}, 0.8});
  testing::Generator shift(1965);
  pairs.push_back({"7 then 9 timings of this run", timings(7, 1966),
                   timings(9, 1967, 0.010 + 0.002 * (2 * shift.uniform() - 1))});

  for (const Pair& p : pairs) {
    const auto got = observe("welch_compare(" + p.what + ")", [&] {
      const Comparison c = welch_compare(p.baseline, p.candidate, p.confidence);
      return std::make_tuple(c.difference, c.interval.low, c.interval.high, c.dof, c.real);
    });
    const testing::Params params = {{"case", p.what}};
    if (!KILN_EXPECT_OK(got, "welch_interval_wrong", params)) return;
    KILN_JUDGE {
      const auto& [difference, low, high, dof, real] = *got;
      const TrustedWelch want = trusted_welch(p.baseline, p.candidate, p.confidence);
      std::string wrong;
      for (const auto& [name, value, expected] :
           {std::tuple<const char*, double, double>{"difference", difference, want.difference},
            {"interval low", low, want.low},
            {"interval high", high, want.high},
            {"dof", dof, want.dof}}) {
        if (!close(value, expected)) wrong += (wrong.empty() ? "" : "; ") + got_expected(name, value, expected);
      }
      if (!wrong.empty()) {
        // A zero-width interval where only one sample is constant: the shortcut of two constant
        // samples (se = 0) taken when either one is.
        const bool one_constant = (trusted_stddev(p.baseline) == 0) != (trusted_stddev(p.candidate) == 0);
        KILN_FAIL(one_constant && low == high ? "welch_one_constant" : "welch_interval_wrong", params, wrong);
        return;
      }
      // The verdict is judged where the interval's ends are clear of zero (always, but for a run
      // whose interval ends within rounding of it).
      const bool clear = std::fabs(want.low) > 1e-9 && std::fabs(want.high) > 1e-9;
      if ((clear || want.low == want.high) && real != want.real) {
        KILN_FAIL("verdict_wrong", params,
                  fmt::format("interval [{}, {}]: got real = {}, expected {}", low, high, real, want.real));
        return;
      }
    }
  }
}

TEST(Benchmarking, TooFewSamples) {
  const Samples none;
  const Samples one = timings(1, 1971);
  const Samples two = timings(2, 1972);
  KILN_EXPECT_THROWS(mean(none), std::invalid_argument, "too_few_not_rejected", {}, {{"function", "mean"}, {"samples", "no samples"}});
  KILN_EXPECT_THROWS(median(none), std::invalid_argument, "too_few_not_rejected", {},
                     {{"function", "median"}, {"samples", "no samples"}});
  KILN_EXPECT_THROWS(quartiles(none), std::invalid_argument, "too_few_not_rejected", {},
                     {{"function", "quartiles"}, {"samples", "no samples"}});
  KILN_EXPECT_THROWS(tukey_outliers(none), std::invalid_argument, "too_few_not_rejected", {},
                     {{"function", "tukey_outliers"}, {"samples", "no samples"}});
  KILN_EXPECT_THROWS(sample_stddev(one), std::invalid_argument, "too_few_not_rejected", {},
                     {{"function", "sample_stddev"}, {"samples", "a single sample"}});
  KILN_EXPECT_THROWS(mean_confidence_interval(one), std::invalid_argument, "too_few_not_rejected", {},
                     {{"function", "mean_confidence_interval"}, {"samples", "a single sample"}});
  KILN_EXPECT_THROWS(sample_stddev(none), std::invalid_argument, "too_few_not_rejected", {},
                     {{"function", "sample_stddev"}, {"samples", "no samples"}});
  KILN_EXPECT_THROWS(mean_confidence_interval(none), std::invalid_argument, "too_few_not_rejected", {},
                     {{"function", "mean_confidence_interval"}, {"samples", "no samples"}});
  KILN_EXPECT_THROWS(welch_compare(two, one), std::invalid_argument, "too_few_not_rejected", {},
                     {{"function", "welch_compare"}, {"samples", "2 baseline samples and 1 candidate sample"}});
  KILN_EXPECT_THROWS(welch_compare(one, two), std::invalid_argument, "too_few_not_rejected", {},
                     {{"function", "welch_compare"}, {"samples", "1 baseline sample and 2 candidate samples"}});
}

}  // namespace kiln
