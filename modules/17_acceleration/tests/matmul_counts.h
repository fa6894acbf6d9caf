// Judging a matrix product that is wrong in one way: how many times each inner value's products
// went into it (module 17's CPU and GPU matmul checks). Judging code: called only inside
// KILN_JUDGE.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/testing.h"

namespace kiln::matmul_counts {

using testing::TensorData;

// How many times each inner value k's products a[i, k]·b[k, j] went into the product c, when c is
// A·diag(count)·B for whole counts, the same for every output: none where c is right, one count a
// value for each k otherwise. Fitted by least squares, G·count = r with G = (AᵀA) ⊙ (BBᵀ) and
// r_k = (Aᵀ·C·Bᵀ)[k, k], in double; empty where c is no such product or the fit is not determined
// (fewer outputs than inner values). Judging: called only inside KILN_JUDGE.
inline std::vector<std::int64_t> inner_counts(const TensorData& a, const TensorData& b, const TensorData& c) {
  const std::int64_t n = a.shape[0], inner = a.shape[1], m = b.shape[1];
  if (c.shape != Shape{n, m} || n * m < inner || inner == 0) return {};
  const auto at = [](const TensorData& t, std::int64_t row, std::int64_t col) {
    return static_cast<double>(t.values[static_cast<std::size_t>(row * t.shape[1] + col)]);
  };
  const auto size = static_cast<std::size_t>(inner);
  std::vector<std::vector<double>> g(size, std::vector<double>(size + 1, 0.0));  // [G | r]
  for (std::int64_t k = 0; k < inner; ++k) {
    for (std::int64_t l = 0; l < inner; ++l) {
      double ata = 0, bbt = 0;
      for (std::int64_t i = 0; i < n; ++i) ata += at(a, i, k) * at(a, i, l);
      for (std::int64_t j = 0; j < m; ++j) bbt += at(b, k, j) * at(b, l, j);
      g[k][l] = ata * bbt;
    }
    double r = 0;
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < m; ++j) r += at(a, i, k) * at(c, i, j) * at(b, k, j);
    g[k][size] = r;
  }
  // Gauss-Jordan with partial pivoting; a pivot near zero leaves the counts undetermined.
  for (std::size_t col = 0; col < size; ++col) {
    std::size_t pivot = col;
    for (std::size_t row = col + 1; row < size; ++row)
      if (std::fabs(g[row][col]) > std::fabs(g[pivot][col])) pivot = row;
    if (std::fabs(g[pivot][col]) < 1e-9) return {};
    std::swap(g[col], g[pivot]);
    for (std::size_t row = 0; row < size; ++row) {
      if (row == col) continue;
      const double factor = g[row][col] / g[col][col];
      for (std::size_t k = col; k <= size; ++k) g[row][k] -= factor * g[col][k];
    }
  }
  std::vector<std::int64_t> counts(size);
  for (std::size_t k = 0; k < size; ++k) {
    const double count = g[k][size] / g[k][k];
    if (!std::isfinite(count) || std::fabs(count - std::round(count)) > 0.05) return {};
    counts[k] = static_cast<std::int64_t>(std::round(count));
  }
  // The whole counts must give c itself, within the product's tolerance.
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < m; ++j) {
      double sum = 0;
      for (std::int64_t k = 0; k < inner; ++k)
        sum += static_cast<double>(counts[static_cast<std::size_t>(k)]) * at(a, i, k) * at(b, k, j);
      if (std::fabs(at(c, i, j) - sum) > 1e-4 + 1e-5 * std::fabs(sum)) return {};
    }
  }
  return counts;
}

// The inner values k whose count is `which` (or above 1, for which = 2), as "0, 4–6".
inline std::string values_counted(const std::vector<std::int64_t>& counts, std::int64_t which) {
  std::vector<std::string> runs;
  const auto size = static_cast<std::int64_t>(counts.size());
  const auto chosen = [&](std::int64_t k) {
    return which >= 2 ? counts[static_cast<std::size_t>(k)] >= 2 : counts[static_cast<std::size_t>(k)] == which;
  };
  for (std::int64_t k = 0; k < size; ++k) {
    if (!chosen(k)) continue;
    std::int64_t last = k;
    while (last + 1 < size && chosen(last + 1)) ++last;
    runs.push_back(last == k ? std::to_string(k) : fmt::format("{}–{}", k, last));
    k = last;
  }
  return fmt::format("{}", fmt::join(runs, ", "));
}

}  // namespace kiln::matmul_counts
