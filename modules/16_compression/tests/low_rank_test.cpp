// Module 16 checks for the low-rank factorisation.
//
// The singular values and vectors come from the given svd() (Eigen, in double), which is not
// yours; everything else is computed here in double: the error ‖W − u·v‖²_F of the factors you
// return, the sum of the discarded σ², and the factors U[:, :r]·diag(S[:r]) and Vᵀ[:r, :].
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/compression.h"
#include "compression_testing.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using compress::low_rank;
using compress::svd;
using testing::data_of;
using testing::observe;
using testing::random_ints;
using testing::random_tensor;
using testing::TensorData;

using compression_testing::transposed;

// Observes low_rank(w, rank) and judges the factors' shapes, the Eckart–Young error, then the
// factors themselves.
bool check_low_rank(const char* file, int line, const std::string& name, const Tensor& w, std::int64_t rank) {
  const std::int64_t m = w.shape()[0], n = w.shape()[1], k = std::min(m, n);
  const std::string shape = to_string(w.shape());
  const auto got = observe(fmt::format("low_rank({}, {})", name, rank), [&] {
    const compress::LowRank f = low_rank(w, rank);
    return std::pair(f.u, f.v);
  });
  KILN_JUDGE {
    const testing::Params params = {{"shape", shape}, {"rank", std::to_string(rank)}};
    if (!testing::expect_ok(file, line, got, "low_rank_factors_wrong", params)) return false;
    const TensorData& u = got->first;
    const TensorData& v = got->second;
    if (u.shape != Shape{m, rank} || v.shape != Shape{rank, n}) {
      testing::report_failure(file, line, "low_rank_factors_wrong", params,
                              fmt::format("{}: u has shape {} and v {}, expected ({}, {}) and ({}, {})", got.call(),
                                          to_string(u.shape), to_string(v.shape), m, rank, rank, n));
      return false;
    }
    // ‖W − u·v‖²_F in double, and Σ_{c ≥ r} σ_c² from the given SVD.
    const std::vector<float> wv = data_of(w).values;
    double error = 0.0, norm = 0.0;
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        double product = 0.0;
        for (std::int64_t c = 0; c < rank; ++c)
          product += static_cast<double>(u.values[i * rank + c]) * v.values[c * n + j];
        const double difference = wv[i * n + j] - product;
        error += difference * difference;
        norm += static_cast<double>(wv[i * n + j]) * wv[i * n + j];
      }
    }
    const compress::Svd d = svd(w);
    const std::vector<float> s = data_of(d.s).values;
    double discarded = 0.0;
    for (std::int64_t c = rank; c < k; ++c) discarded += static_cast<double>(s[c]) * s[c];
    if (std::fabs(error - discarded) > 1e-4 * norm + 1e-6) {
      testing::Params with_values = params;
      with_values.emplace_back("got", fmt::format("{:.6g}", error));
      with_values.emplace_back("expected", fmt::format("{:.6g}", discarded));
      testing::report_failure(file, line, "eckart_young_wrong", with_values,
                              fmt::format("{}: ‖W‖² is {:.6g}; the singular values are {}", got.call(), norm,
                                          testing::list(s)));
      return false;
    }
    // The factors: u[i, c] = U[i, c]·σ_c, v[c, j] = Vᵀ[c, j] for c < r.
    const std::vector<float> uv = data_of(d.u).values, vtv = data_of(d.vt).values;
    std::vector<float> expected_u(static_cast<std::size_t>(m * rank)), expected_v(static_cast<std::size_t>(rank * n));
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t c = 0; c < rank; ++c)
        expected_u[i * rank + c] = static_cast<float>(static_cast<double>(uv[i * k + c]) * s[c]);
    for (std::int64_t c = 0; c < rank; ++c)
      for (std::int64_t j = 0; j < n; ++j) expected_v[c * n + j] = vtv[c * n + j];
    for (const auto& [which, observed, expected] :
         {std::tuple("u", &u, data_of({m, rank}, expected_u)), std::tuple("v", &v, data_of({rank, n}, expected_v))}) {
      const testing::Comparison c = testing::compare(*observed, expected, 1e-5, 1e-5);
      if (!c.close) {
        testing::report_failure(file, line, "low_rank_factors_wrong", params,
                                fmt::format("{}: {} {}", got.call(), which, c.describe()));
        return false;
      }
    }
    return true;
  }
  return got.ok();
}

#define CHECK_LOW_RANK(name, w, rank) \
  if (!check_low_rank(__FILE__, __LINE__, name, w, rank)) return

}  // namespace

TEST(Compression, LowRank) {
  // Hand-worked: the singular values of [[3, 0], [0, 4], [0, 0]] are 4 and 3. Rank 1 keeps the 4
  // (u·v = [[0, 0], [0, 4], [0, 0]]) and misses by 3² = 9; rank 2 is exact.
  const Tensor hand({3, 2}, {3, 0, 0, 4, 0, 0});
  CHECK_LOW_RANK("[[3, 0], [0, 4], [0, 0]]", hand, 1);
  CHECK_LOW_RANK("[[3, 0], [0, 4], [0, 0]]", hand, 2);
  // Matrices of the run at every rank of a small one, and at some ranks of larger ones.
  const Tensor tall = random_tensor({7, 3}, 1670);
  for (std::int64_t r = 1; r <= 3; ++r) CHECK_LOW_RANK("a (7, 3) matrix", tall, r);
  CHECK_LOW_RANK("a (1, 7) matrix", random_tensor({1, 7}, 1671), 1);
  const Tensor wide = random_tensor({31, 33}, 1672);
  CHECK_LOW_RANK("a (31, 33) matrix", wide, 5);
  CHECK_LOW_RANK("a (31, 33) matrix", wide, random_ints(1, 1, 32, 1673)[0]);
  CHECK_LOW_RANK("a (33, 31) matrix", random_tensor({33, 31}, 1674), 31);
  CHECK_LOW_RANK("a transposed (7, 3) view", transposed(random_tensor({3, 7}, 1675)), 2);
}

}  // namespace kiln
