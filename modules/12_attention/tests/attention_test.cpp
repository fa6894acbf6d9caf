// Module 12 checks: one TEST per check in module.yaml.
//
// Every expected value is computed in this file by plain loops in double (trusted_attention,
// trusted_multi_head), or worked out by hand; gradients are central finite differences of those
// loops, also in double. Inputs are drawn from the run's seed, with sizes chosen so that no two
// of T_q, T_k, d and d_v agree where a mix-up between them would hide (a transpose that only
// fits a square matrix, a scale taken from the wrong size).
//
// Every value taken from the module's functions passes through observe(): tensors that need
// gradients are built, used and read inside one call.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/attention.h"
#include "kiln/testing.h"
#include "kiln/trusted.h"

namespace kiln {
namespace {

using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;

// Values of a matrix or a batch of them, row-major, in double.
using Values = std::vector<double>;

constexpr double kInfinity = std::numeric_limits<double>::infinity();

Values doubles(const TensorData& t) { return Values(t.values.begin(), t.values.end()); }
Values doubles(const Tensor& t) { return doubles(data_of(t)); }
TensorData floats(const Shape& shape, const Values& values) {
  return data_of(shape, std::vector<float>(values.begin(), values.end()));
}
// A new trusted tensor with the values of t, for a call that marks it as requiring grad.
Tensor fresh(const Tensor& t) { return data_of(t).tensor(); }

// The sizes of one attention problem.
struct Sizes {
  std::int64_t t_q, t_k, d, d_v;
};

// Along which dimension the softmax normalises: the keys (right) or the queries (a mix-up).
enum class Axis { keys, queries };

// Trusted: softmax(q·kᵀ·scale + M)·v of one sequence, q (t_q, d), k (t_k, d), v (t_k, d_v), with
// M = −∞ where key > query when causal. Returns (t_q, d_v).
Values trusted_attention(const Values& q, const Values& k, const Values& v, const Sizes& s, bool causal,
                         double scale, Axis axis = Axis::keys) {
  Values scores(static_cast<std::size_t>(s.t_q * s.t_k));
  for (std::int64_t i = 0; i < s.t_q; ++i) {
    for (std::int64_t j = 0; j < s.t_k; ++j) {
      double dot = 0;
      for (std::int64_t e = 0; e < s.d; ++e) dot += q[i * s.d + e] * k[j * s.d + e];
      scores[i * s.t_k + j] = causal && j > i ? -kInfinity : dot * scale;
    }
  }
  // weights[i, j], normalised along the rows (keys) or the columns (queries), largest taken out.
  Values weights(scores.size(), 0.0);
  const std::int64_t lines = axis == Axis::keys ? s.t_q : s.t_k;
  const std::int64_t length = axis == Axis::keys ? s.t_k : s.t_q;
  for (std::int64_t line = 0; line < lines; ++line) {
    const auto at = [&](std::int64_t n) -> std::size_t {
      return static_cast<std::size_t>(axis == Axis::keys ? line * s.t_k + n : n * s.t_k + line);
    };
    double largest = -kInfinity;
    for (std::int64_t n = 0; n < length; ++n) largest = std::max(largest, scores[at(n)]);
    double total = 0;
    for (std::int64_t n = 0; n < length; ++n) total += std::exp(scores[at(n)] - largest);
    for (std::int64_t n = 0; n < length; ++n) weights[at(n)] = std::exp(scores[at(n)] - largest) / total;
  }
  Values out(static_cast<std::size_t>(s.t_q * s.d_v), 0.0);
  for (std::int64_t i = 0; i < s.t_q; ++i) {
    for (std::int64_t j = 0; j < s.t_k; ++j) {
      for (std::int64_t c = 0; c < s.d_v; ++c) out[i * s.d_v + c] += weights[i * s.t_k + j] * v[j * s.d_v + c];
    }
  }
  return out;
}

double default_scale(const Sizes& s) { return 1.0 / std::sqrt(static_cast<double>(s.d)); }

// Trusted: the same for a batch of `batch` sequences, each attended to on its own.
Values trusted_batched(const Values& q, const Values& k, const Values& v, std::int64_t batch, const Sizes& s,
                       bool causal) {
  Values out;
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto item = [b](const Values& x, std::int64_t size) {
      return Values(x.begin() + b * size, x.begin() + (b + 1) * size);
    };
    const Values o = trusted_attention(item(q, s.t_q * s.d), item(k, s.t_k * s.d), item(v, s.t_k * s.d_v), s,
                                       causal, default_scale(s));
    out.insert(out.end(), o.begin(), o.end());
  }
  return out;
}

// The sizes of q, k, v (2-D or 3-D); the batch size (1 for 2-D) in *batch.
Sizes sizes_of(const Tensor& q, const Tensor& k, const Tensor& v, std::int64_t* batch = nullptr) {
  const std::int64_t r = q.dim() - 2;
  if (batch) *batch = r ? q.shape()[0] : 1;
  return {q.shape()[r], k.shape()[r], q.shape()[r + 1], v.shape()[r + 1]};
}

// "q (3, 4), k (5, 4), v (5, 7)" for the name of a call.
std::string shapes_text(const Tensor& q, const Tensor& k, const Tensor& v) {
  return fmt::format("q {}, k {}, v {}", to_string(q.shape()), to_string(k.shape()), to_string(v.shape()));
}

testing::Observed<TensorData> observe_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool causal,
                                                const std::string& note = "") {
  return observe(fmt::format("scaled_dot_product_attention(q, k, v, {}) with {}{}", causal, shapes_text(q, k, v), note),
                 [&] { return scaled_dot_product_attention(q, k, v, causal); });
}

bool close(const TensorData& actual, const TensorData& expected, double tolerance) {
  return testing::compare(actual, expected, tolerance, tolerance).close;
}

// Judges one sequence's output: right, or which of the usual mistakes it matches.
bool judge_forward(const char* file, int line, const testing::Observed<TensorData>& out, const Tensor& q,
                   const Tensor& k, const Tensor& v, bool causal) {
  const Sizes s = sizes_of(q, k, v);
  // T_q ≠ T_k with the mask: a ShapeError, or an output of another shape, comes from a mask that
  // is not (T_q, T_k) (the cases without the mask run these sizes first).
  if (causal && s.t_q != s.t_k &&
      ((!out.ok() && out.error().is("kiln::ShapeError")) || (out.ok() && out->shape != Shape{s.t_q, s.d_v}))) {
    const testing::Params params{{"queries", testing::counted(s.t_q, "query", "queries")},
                                 {"keys", testing::counted(s.t_k, "key")}};
    testing::report_failure(file, line, "mask_shape_wrong", params,
                            out.ok() ? fmt::format("{} has shape {}, expected ({}, {})", out.call(),
                                                   to_string(out->shape), s.t_q, s.d_v)
                                     : out.describe_error());
    return false;
  }
  if (!testing::expect_ok(file, line, out, "attention_wrong")) return false;
  const Values qv = doubles(q), kv = doubles(k), vv = doubles(v);
  const Shape shape{s.t_q, s.d_v};
  const TensorData expected = floats(shape, trusted_attention(qv, kv, vv, s, causal, default_scale(s)));
  constexpr double kTolerance = 1e-5;
  if (close(*out, expected, kTolerance)) return true;
  const std::pair<double, const char*> other_scales[] = {{1.0, "1 (no scale)"},
                                                         {1.0 / static_cast<double>(s.d), "1/d"}};
  for (const auto& [scale, name] : other_scales) {
    if (close(*out, floats(shape, trusted_attention(qv, kv, vv, s, causal, scale)), kTolerance)) {
      testing::report_failure(file, line, "scale_wrong", {{"found", name}, {"d", std::to_string(s.d)}},
                              out.call() + ": " + testing::compare(*out, expected, kTolerance).describe());
      return false;
    }
  }
  if (close(*out, floats(shape, trusted_attention(qv, kv, vv, s, causal, default_scale(s), Axis::queries)),
            kTolerance)) {
    testing::report_failure(file, line, "softmax_axis_wrong", {},
                            out.call() + ": " + testing::compare(*out, expected, kTolerance).describe());
    return false;
  }
  return testing::expect_close(file, line, out, expected, kTolerance, "attention_wrong", kTolerance);
}

// The transpose of a contiguous matrix as a view (strides (1, rows)), built with the given
// make_view so that the inputs depend on none of module 01's written functions.
Tensor transposed(const Tensor& m) { return make_view(m, {m.shape()[1], m.shape()[0]}, {1, m.shape()[1]}, 0); }

// The one factor r that brings the actual gradients closest to r times the expected ones (least
// squares over all of them together): how much a uniformly scaled gradient is scaled by.
double common_factor(const std::vector<const TensorData*>& actual, const std::vector<const Values*>& expected) {
  double cross = 0, square = 0;
  for (std::size_t t = 0; t < actual.size(); ++t) {
    if (actual[t]->values.size() != expected[t]->size()) return std::nan("");
    for (std::size_t i = 0; i < expected[t]->size(); ++i) {
      cross += actual[t]->values[i] * (*expected[t])[i];
      square += (*expected[t])[i] * (*expected[t])[i];
    }
  }
  return square > 0 ? cross / square : std::nan("");
}

Values scaled(Values values, double factor) {
  for (double& value : values) value *= factor;
  return values;
}

// Whether a gradient (observed) is within 1e-4 + 1e-3·|expected| of the finite differences; the
// comparison's description in *detail otherwise.
bool gradient_close(const TensorData& actual, const Shape& shape, const Values& expected, std::string* detail) {
  const testing::Comparison c = testing::compare(actual, floats(shape, expected), 1e-4, 1e-3);
  if (c.close) return true;
  *detail = c.shapes_match ? c.describe() : "got shape " + to_string(actual.shape) + ", expected " + to_string(shape);
  return false;
}

// Values of a (n0, n1, n2) tensor with dimensions 0 and 1 exchanged: (n1, n0, n2), by a plain loop.
Values swap_first_two(const Values& x, const Shape& shape) {
  const std::int64_t n0 = shape[0], n1 = shape[1], n2 = shape[2];
  Values out(x.size());
  for (std::int64_t i = 0; i < n0; ++i)
    for (std::int64_t j = 0; j < n1; ++j)
      for (std::int64_t e = 0; e < n2; ++e) out[(j * n0 + i) * n2 + e] = x[(i * n1 + j) * n2 + e];
  return out;
}

// Trusted multi-head attention, in double:
//   inputs {query (B, T_q, D_in), key (B, T_k, D_in), value (B, T_k, D_in), W_q, W_k, W_v
//   (D_in, H·d_h), W_o (H·d_h, D_out)}  ->  (B, T_q, D_out)
struct HeadSizes {
  std::int64_t batch, t_q, t_k, d_in, heads, d_h, d_out;
  bool causal;
};

Values trusted_multi_head(const std::vector<Values>& in, const HeadSizes& s) {
  const std::int64_t width = s.heads * s.d_h;
  // rows (n, D_in)·w (D_in, cols) -> (n, cols)
  const auto project = [](const Values& rows, std::int64_t n, std::int64_t inner, const Values& w, std::int64_t cols) {
    Values out(static_cast<std::size_t>(n * cols), 0.0);
    for (std::int64_t r = 0; r < n; ++r) {
      for (std::int64_t p = 0; p < inner; ++p) {
        for (std::int64_t c = 0; c < cols; ++c) out[r * cols + c] += rows[r * inner + p] * w[p * cols + c];
      }
    }
    return out;
  };
  const Values q = project(in[0], s.batch * s.t_q, s.d_in, in[3], width);  // (B, T_q, H·d_h)
  const Values k = project(in[1], s.batch * s.t_k, s.d_in, in[4], width);  // (B, T_k, H·d_h)
  const Values v = project(in[2], s.batch * s.t_k, s.d_in, in[5], width);  // (B, T_k, H·d_h)
  // Head h of item b: columns h·d_h .. h·d_h + d_h - 1 of item b's rows.
  const auto head = [&](const Values& x, std::int64_t b, std::int64_t h, std::int64_t length) {
    Values out;
    for (std::int64_t t = 0; t < length; ++t) {
      for (std::int64_t e = 0; e < s.d_h; ++e) out.push_back(x[(b * length + t) * width + h * s.d_h + e]);
    }
    return out;
  };
  Values merged(static_cast<std::size_t>(s.batch * s.t_q * width));
  const Sizes per_head{s.t_q, s.t_k, s.d_h, s.d_h};
  for (std::int64_t b = 0; b < s.batch; ++b) {
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const Values o = trusted_attention(head(q, b, h, s.t_q), head(k, b, h, s.t_k), head(v, b, h, s.t_k), per_head,
                                         s.causal, default_scale(per_head));
      for (std::int64_t t = 0; t < s.t_q; ++t) {
        for (std::int64_t e = 0; e < s.d_h; ++e) merged[(b * s.t_q + t) * width + h * s.d_h + e] = o[t * s.d_h + e];
      }
    }
  }
  return project(merged, s.batch * s.t_q, width, in[6], s.d_out);
}

// Trusted split_heads: x (B, T, H·d_h) -> (B·H, T, d_h), and merge_heads, its inverse.
TensorData trusted_split(const TensorData& x, std::int64_t heads) {
  const std::int64_t batch = x.shape[0], length = x.shape[1], d_h = x.shape[2] / heads;
  std::vector<float> out(x.values.size());
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t t = 0; t < length; ++t)
        for (std::int64_t e = 0; e < d_h; ++e)
          out[((b * heads + h) * length + t) * d_h + e] = x.values[(b * length + t) * heads * d_h + h * d_h + e];
  return data_of({batch * heads, length, d_h}, out);
}

TensorData trusted_merge(const TensorData& x, std::int64_t heads) {
  const std::int64_t batch = x.shape[0] / heads, length = x.shape[1], d_h = x.shape[2];
  std::vector<float> out(x.values.size());
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t t = 0; t < length; ++t)
        for (std::int64_t e = 0; e < d_h; ++e)
          out[(b * length + t) * heads * d_h + h * d_h + e] = x.values[((b * heads + h) * length + t) * d_h + e];
  return data_of({batch, length, heads * d_h}, out);
}

}  // namespace

TEST(Attention, CausalMask) {
  // Exact values: 0 where key <= query, −∞ where key > query (a NaN or a finite stand-in fails).
  const auto expect_mask = [](std::int64_t t_q, std::int64_t t_k) {
    const testing::Params params{{"t_q", std::to_string(t_q)}, {"t_k", std::to_string(t_k)}};
    const auto mask = observe(fmt::format("causal_mask({}, {})", t_q, t_k), [=] { return causal_mask(t_q, t_k); });
    if (!KILN_EXPECT_OK(mask, "mask_wrong", params)) return false;
    KILN_JUDGE {
      if (mask->shape != Shape{t_q, t_k}) {
        KILN_FAIL("mask_wrong", params,
                  fmt::format("{} has shape {}, expected ({}, {})", mask.call(), to_string(mask->shape), t_q, t_k));
        return false;
      }
      for (std::int64_t query = 0; query < t_q; ++query) {
        for (std::int64_t key = 0; key < t_k; ++key) {
          const float got = mask->values[static_cast<std::size_t>(query * t_k + key)];
          const float expected = key > query ? -std::numeric_limits<float>::infinity() : 0.0f;
          if (got == expected) continue;
          KILN_FAIL("mask_wrong", params,
                    fmt::format("{}: at [{}, {}] (query {}, key {}) got {}, expected {}", mask.call(), query, key,
                                query, key, testing::format_number(got), testing::format_number(expected)));
          return false;
        }
      }
    }
    return true;
  };
  // (3, 3) = [[0, −∞, −∞], [0, 0, −∞], [0, 0, 0]]; then wider, taller, a single position, no
  // queries and no keys (masks with no elements), and sizes of the run.
  testing::Generator draw(1201);
  const std::int64_t t_q = 1 + draw.below(9), t_k = 1 + draw.below(9);
  for (const auto& [rows, columns] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {3, 3}, {2, 4}, {4, 2}, {1, 1}, {0, 4}, {3, 0}, {t_q, t_k}}) {
    if (!expect_mask(rows, columns)) return;
  }
}

TEST(Attention, Forward) {
  // The hand-worked example (d = 4, so the scale is 1/2):
  //   q = [[1, 0, 1, 0], [0, 0, 0, −2]], k = [[2, 0, 0, 0], [0, 0, 0, 2]], v = [[1, 0, 2], [3, 4, −2]]
  //   q·kᵀ = [[2, 0], [0, −4]], /√4 = [[1, 0], [0, −2]]
  //   P = [[e/(e + 1), 1/(e + 1)], [1/(1 + e⁻²), e⁻²/(1 + e⁻²)]] = [[0.7310586, 0.2689414], [0.8807971, 0.1192029]]
  //   P·v = [[1.5378828, 1.0757657, 0.9242343], [1.2384058, 0.4768117, 1.5231883]]
  // Causal: query 0 sees key 0 only, so row 0 is v's row 0, [1, 0, 2]; row 1 is unchanged.
  const Tensor q({2, 4}, {1, 0, 1, 0, 0, 0, 0, -2});
  const Tensor k({2, 4}, {2, 0, 0, 0, 0, 0, 0, 2});
  const Tensor v({2, 3}, {1, 0, 2, 3, 4, -2});
  const auto hand = observe_attention(q, k, v, false, " (the hand-worked example)");
  KILN_JUDGE {
    if (!judge_forward(__FILE__, __LINE__, hand, q, k, v, false)) return;
  }
  if (!KILN_EXPECT_CLOSE(hand,
                         data_of({2, 3}, {1.5378828427f, 1.0757656855f, 0.9242343145f, 1.2384058440f, 0.4768116881f,
                                          1.5231883119f}),
                         1e-6, "attention_wrong"))
    return;
  const auto hand_causal = observe_attention(q, k, v, true, " (the hand-worked example)");
  KILN_JUDGE {
    if (!judge_forward(__FILE__, __LINE__, hand_causal, q, k, v, true)) return;
  }
  if (!KILN_EXPECT_CLOSE(hand_causal, data_of({2, 3}, {1, 0, 2, 1.2384058440f, 0.4768116881f, 1.5231883119f}), 1e-6,
                         "attention_wrong"))
    return;

  // Non-square: T_q = 3 queries, T_k = 5 keys, d = 3, d_v = 7; then more queries than keys
  // (causal: queries 2 .. 4 see both keys), one query and one key, and a key matrix that is the
  // transposed view of a (d, T_k) matrix.
  struct Case {
    Sizes s;
    bool causal;
    std::uint64_t stream;
  };
  testing::Generator draw(1202);
  const Sizes drawn{1 + draw.below(9), 1 + draw.below(9), 1 + draw.below(8), 1 + draw.below(8)};
  const bool drawn_causal = draw.below(2) == 1;
  for (const Case& c : std::vector<Case>{{{3, 5, 3, 7}, false, 1203},
                                         {{3, 5, 3, 7}, true, 1204},
                                         {{5, 2, 4, 1}, true, 1205},
                                         {{1, 1, 2, 3}, false, 1206},
                                         {drawn, drawn_causal, 1207}}) {
    const Tensor cq = random_tensor({c.s.t_q, c.s.d}, c.stream);
    const Tensor ck = random_tensor({c.s.t_k, c.s.d}, c.stream + 100, -2.0f, 2.0f);
    const Tensor cv = random_tensor({c.s.t_k, c.s.d_v}, c.stream + 200);
    const auto out = observe_attention(cq, ck, cv, c.causal);
    KILN_JUDGE {
      if (!judge_forward(__FILE__, __LINE__, out, cq, ck, cv, c.causal)) return;
    }
  }
  const Tensor view_k = transposed(random_tensor({3, 6}, 1208, -2.0f, 2.0f));  // (6, 3), strides (1, 6)
  const Tensor view_q = random_tensor({4, 3}, 1209), view_v = random_tensor({6, 2}, 1210);
  const auto view_out = observe_attention(view_q, view_k, view_v, false, " (k a transposed view)");
  KILN_JUDGE {
    if (!judge_forward(__FILE__, __LINE__, view_out, view_q, view_k, view_v, false)) return;
  }
}

TEST(Attention, Batched) {
  // B = 2, T_q = 5, T_k = 6, d = 3, d_v = 7, without and with the mask; then sizes of the run.
  testing::Generator draw(1211);
  const std::int64_t batch = 1 + draw.below(4);
  const Sizes drawn{1 + draw.below(7), 1 + draw.below(7), 1 + draw.below(6), 1 + draw.below(6)};
  struct Case {
    std::int64_t batch;
    Sizes s;
    bool causal;
    std::uint64_t stream;
  };
  for (const Case& c : std::vector<Case>{{2, {5, 6, 3, 7}, false, 1212},
                                         {2, {5, 6, 3, 7}, true, 1213},
                                         {3, {4, 4, 2, 5}, true, 1214},
                                         {batch, drawn, draw.below(2) == 1, 1215}}) {
    const Tensor q = random_tensor({c.batch, c.s.t_q, c.s.d}, c.stream, -2.0f, 2.0f);
    const Tensor k = random_tensor({c.batch, c.s.t_k, c.s.d}, c.stream + 100, -2.0f, 2.0f);
    const Tensor v = random_tensor({c.batch, c.s.t_k, c.s.d_v}, c.stream + 200);
    if (!KILN_EXPECT_CLOSE_REL(
            observe_attention(q, k, v, c.causal),
            floats({c.batch, c.s.t_q, c.s.d_v}, trusted_batched(doubles(q), doubles(k), doubles(v), c.batch, c.s, c.causal)),
            1e-5, 1e-5, "batch_mixed"))
      return;
  }
}

TEST(Attention, Causal) {
  // For every position p: replace the keys and values of the positions after p by new ones; the
  // outputs at positions 0 .. p must not move (by more than 1e-6). A 6-position sequence with
  // d = 3 and d_v = 4, then one of the run's own length.
  testing::Generator draw(1221);
  const std::int64_t drawn_length = 3 + draw.below(7);
  struct Case {
    std::int64_t length, d, d_v;
    std::uint64_t stream;
  };
  for (const Case& c : std::vector<Case>{{6, 3, 4, 1222}, {drawn_length, 1 + draw.below(5), 1 + draw.below(6), 1223}}) {
    const Tensor q = random_tensor({c.length, c.d}, c.stream, -2.0f, 2.0f);
    const Tensor k = random_tensor({c.length, c.d}, c.stream + 100, -2.0f, 2.0f);
    const Tensor v = random_tensor({c.length, c.d_v}, c.stream + 200);
    const auto base = observe_attention(q, k, v, true);
    const testing::Params row_zero{{"row", "0"}};
    if (!KILN_EXPECT_OK(base, "self_masked", row_zero)) return;
    KILN_JUDGE {
      if (base->shape != Shape{c.length, c.d_v}) {
        KILN_FAIL("self_masked", row_zero,
                  fmt::format("{} has shape {}, expected ({}, {})", base.call(), to_string(base->shape), c.length,
                              c.d_v));
        return;
      }
    }
    for (std::int64_t position = 0; position + 1 < c.length; ++position) {
      // k and v with the rows after `position` replaced by values drawn afresh.
      const auto replaced = [&](const Tensor& x, std::uint64_t stream) {
        std::vector<float> values = data_of(x).values;
        const std::vector<float> fresh_values = data_of(random_tensor(x.shape(), stream, -2.0f, 2.0f)).values;
        const std::int64_t columns = x.shape()[1];
        for (std::size_t n = static_cast<std::size_t>((position + 1) * columns); n < values.size(); ++n) {
          values[n] = fresh_values[n];
        }
        return Tensor(x.shape(), values);
      };
      const Tensor later_k = replaced(k, c.stream + 300 + position);
      const Tensor later_v = replaced(v, c.stream + 400 + position);
      const auto changed =
          observe_attention(q, later_k, later_v, true, fmt::format(" (k and v changed after position {})", position));
      if (!KILN_EXPECT_OK(changed, "future_leaks", {{"position", std::to_string(position)}, {"changed", "?"}}))
        return;
      KILN_JUDGE {
        for (std::int64_t row = 0; row <= position; ++row) {
          for (std::int64_t col = 0; col < c.d_v; ++col) {
            const std::size_t n = static_cast<std::size_t>(row * c.d_v + col);
            const double before = base->values[n];
            const double after = n < changed->values.size() ? changed->values[n] : std::nan("");
            const bool same_nan = std::isnan(before) && std::isnan(after);
            const double difference =
                std::isfinite(before) && std::isfinite(after) ? std::fabs(after - before) : kInfinity;
            if (same_nan || difference <= 1e-6) continue;
            KILN_FAIL("future_leaks",
                      {{"position", std::to_string(position)},
                       {"changed", std::to_string(row)},
                       {"difference", testing::format_number(difference)}},
                      fmt::format("{}: output [{}, {}] was {}, is now {}", changed.call(), row, col,
                                  testing::format_number(before), testing::format_number(after)));
            return;
          }
        }
      }
    }
    // Every position sees itself: row 0 is v's row 0 exactly, and row t matches trusted causal
    // attention over positions 0 .. t.
    KILN_JUDGE {
      const Sizes s{c.length, c.length, c.d, c.d_v};
      const Values expected = trusted_attention(doubles(q), doubles(k), doubles(v), s, true, default_scale(s));
      for (std::int64_t row = 0; row < c.length; ++row) {
        for (std::int64_t col = 0; col < c.d_v; ++col) {
          const std::size_t n = static_cast<std::size_t>(row * c.d_v + col);
          const double got = base->values[n];
          const double tolerance = row == 0 ? 1e-6 : 1e-5;
          if (std::fabs(got - expected[n]) <= tolerance) continue;  // false for NaN
          KILN_FAIL("self_masked", {{"row", std::to_string(row)}},
                    fmt::format("{}: output [{}, {}] is {}, expected {}", base.call(), row, col,
                                testing::format_number(got), testing::format_number(expected[n])));
          return;
        }
      }
    }
  }

  // One query against T_k keys (3 to 7, drawn by the run): the mask is top-left aligned, so the
  // lone query is position 0, causal_mask(1, T_k) = [[0, −∞, ...]] hides every key but key 0, and
  // the output is v's row 0. A single query is no exception to the mask.
  const std::int64_t lone_t_k = 3 + draw.below(5), lone_d = 1 + draw.below(5), lone_d_v = 1 + draw.below(6);
  const Tensor lone_q = random_tensor({1, lone_d}, 1224, -2.0f, 2.0f);
  const Tensor lone_k = random_tensor({lone_t_k, lone_d}, 1324, -2.0f, 2.0f);
  const Tensor lone_v = random_tensor({lone_t_k, lone_d_v}, 1424);
  const auto lone = observe_attention(lone_q, lone_k, lone_v, true, " (one query)");
  const testing::Params lone_params{{"keys", testing::counted(lone_t_k, "key")}};
  if (!KILN_EXPECT_OK(lone, "one_query_unmasked", lone_params)) return;
  KILN_JUDGE {
    const std::vector<float> v_values = data_of(lone_v).values;
    const TensorData first_value = data_of({1, lone_d_v}, std::vector<float>(v_values.begin(), v_values.begin() + lone_d_v));
    const testing::Comparison c = testing::compare(*lone, first_value, 1e-6, 1e-6);
    if (!c.close) {
      KILN_FAIL("one_query_unmasked", lone_params,
                lone.call() + ": " + (c.shapes_match ? c.describe() : "got shape " + to_string(lone->shape)));
      return;
    }
  }
}

TEST(Attention, Stability) {
  // d = 1, so the scores are q·k: query 0 (100) against the keys 100, 100, 99 scores
  // [10000, 10000, 9900], weights [0.5, 0.5, e⁻¹⁰⁰ ≈ 0], output (v0 + v1)/2 = [2, 3]; query 1
  // (−100) scores [−10000, −10000, −9900] and takes v2 = [5, 6]. With the mask, query 0 sees key
  // 0 only ([1, 2]) and query 1 keys 0 and 1 ([2, 3]).
  const Tensor q({2, 1}, {100, -100});
  const Tensor k({3, 1}, {100, 100, 99});
  const Tensor v({3, 2}, {1, 2, 3, 4, 5, 6});
  if (!KILN_EXPECT_CLOSE(observe_attention(q, k, v, false), data_of({2, 2}, {2, 3, 5, 6}), 1e-5, "softmax_overflow"))
    return;
  if (!KILN_EXPECT_CLOSE(observe_attention(q, k, v, true), data_of({2, 2}, {1, 2, 2, 3}), 1e-5, "softmax_overflow"))
    return;
  // Inputs of the run in [−100, 100], so that the scores are in the thousands: one sequence, and
  // a causal batch. Rounding a score near 1e4 in float moves it by about 1e-3, hence 1e-2.
  const Tensor big_q = random_tensor({4, 3}, 1231, -100.0f, 100.0f);
  const Tensor big_k = random_tensor({6, 3}, 1232, -100.0f, 100.0f);
  const Tensor big_v = random_tensor({6, 5}, 1233);
  const Sizes s{4, 6, 3, 5};
  if (!KILN_EXPECT_CLOSE(
          observe_attention(big_q, big_k, big_v, false),
          floats({4, 5}, trusted_attention(doubles(big_q), doubles(big_k), doubles(big_v), s, false, default_scale(s))),
          1e-2, "softmax_overflow"))
    return;
  const Tensor batch_q = random_tensor({2, 5, 3}, 1234, -100.0f, 100.0f);
  const Tensor batch_k = random_tensor({2, 5, 3}, 1235, -100.0f, 100.0f);
  const Tensor batch_v = random_tensor({2, 5, 4}, 1236);
  KILN_EXPECT_CLOSE(observe_attention(batch_q, batch_k, batch_v, true),
                    floats({2, 5, 4}, trusted_batched(doubles(batch_q), doubles(batch_k), doubles(batch_v), 2,
                                                      {5, 5, 3, 4}, true)),
                    1e-2, "softmax_overflow");
}

TEST(Attention, Gradients) {
  // L = Σ G ⊙ attention(q, k, v) for a fixed G: the gradients that backward() leaves in q, k and
  // v against central differences of the trusted loops. The first case is square (T_q = T_k),
  // where a missing transpose still has the right shape; d = 3 makes a missing 1/√d visible.
  testing::Generator draw(1241);
  const std::int64_t t_q = 1 + draw.below(6), t_k = 1 + draw.below(6), d = 1 + draw.below(4), d_v = 1 + draw.below(5);
  const bool drawn_causal = draw.below(2) == 1;
  struct Case {
    Shape q, k, v;
    bool causal;
    std::uint64_t stream;
  };
  for (const Case& c : std::vector<Case>{{{4, 3}, {4, 3}, {4, 5}, false, 1242},
                                         {{3, 2}, {5, 2}, {5, 7}, false, 1243},
                                         {{5, 3}, {5, 3}, {5, 4}, true, 1244},
                                         {{2, 4, 3}, {2, 6, 3}, {2, 6, 7}, true, 1245},
                                         {{t_q, d}, {t_k, d}, {t_k, d_v}, drawn_causal, 1246}}) {
    const Tensor q = random_tensor(c.q, c.stream, -1.5f, 1.5f);
    const Tensor k = random_tensor(c.k, c.stream + 100, -1.5f, 1.5f);
    const Tensor v = random_tensor(c.v, c.stream + 200);
    std::int64_t batch = 1;
    const Sizes s = sizes_of(q, k, v, &batch);
    Shape out_shape{s.t_q, s.d_v};
    if (q.dim() == 3) out_shape.insert(out_shape.begin(), batch);
    const Tensor g = random_tensor(out_shape, c.stream + 300);
    const auto grads = observe(
        fmt::format("scaled_dot_product_attention(q, k, v, {}) with {}, then backward(G): q.grad(), k.grad(), v.grad()",
                    c.causal, shapes_text(q, k, v)),
        [&] {
          Tensor leaf_q = fresh(q), leaf_k = fresh(k), leaf_v = fresh(v);
          leaf_q.set_requires_grad(true);
          leaf_k.set_requires_grad(true);
          leaf_v.set_requires_grad(true);
          Tensor out = scaled_dot_product_attention(leaf_q, leaf_k, leaf_v, c.causal);
          out.backward(g);
          return std::tuple(leaf_q.grad(), leaf_k.grad(), leaf_v.grad());
        });
    if (!KILN_EXPECT_OK(grads, "grad_value_wrong")) return;
    KILN_JUDGE {
      const bool causal = c.causal;
      const auto f = [batch, s, causal](const std::vector<Values>& in) {
        return trusted_batched(in[0], in[1], in[2], batch, s, causal);
      };
      const std::vector<Values> inputs{doubles(q), doubles(k), doubles(v)};
      const Values weights = doubles(g);
      std::string q_detail, k_detail, v_detail;
      const Values q_expected = testing::double_numeric_gradient(f, inputs, 0, weights);
      const Values k_expected = testing::double_numeric_gradient(f, inputs, 1, weights);
      const bool v_right = gradient_close(std::get<2>(*grads), v.shape(),
                                          testing::double_numeric_gradient(f, inputs, 2, weights), &v_detail);
      const bool q_right = gradient_close(std::get<0>(*grads), q.shape(), q_expected, &q_detail);
      const bool k_right = gradient_close(std::get<1>(*grads), k.shape(), k_expected, &k_detail);
      if (causal && !(v_right && q_right && k_right)) {
        // All three are the gradients of attention without the mask: the backward pass used
        // weights of its own, computed without it.
        const auto unmasked = [batch, s](const std::vector<Values>& in) {
          return trusted_batched(in[0], in[1], in[2], batch, s, false);
        };
        std::string unused;
        bool all_unmasked = true;
        const std::vector<std::pair<const testing::TensorData*, Shape>> observed{
            {&std::get<0>(*grads), q.shape()}, {&std::get<1>(*grads), k.shape()}, {&std::get<2>(*grads), v.shape()}};
        for (std::size_t input = 0; all_unmasked && input < observed.size(); ++input) {
          all_unmasked = gradient_close(*observed[input].first, observed[input].second,
                                        testing::double_numeric_gradient(unmasked, inputs, input, weights), &unused);
        }
        if (all_unmasked) {
          const auto& [which, detail] = !v_right ? std::pair{"v", v_detail}
                                        : !q_right ? std::pair{"q", q_detail}
                                                   : std::pair{"k", k_detail};
          KILN_FAIL("grad_mask_dropped", {},
                    fmt::format("{}: q's, k's and v's gradients are those of attention without the mask; the gradient "
                                "of {}: {}",
                                grads.call(), which, detail));
          return;
        }
      }
      if (!v_right) {
        KILN_FAIL("grad_value_wrong", {}, grads.call() + ", the gradient of v: " + v_detail);
        return;
      }
      if (!q_right && !k_right) {
        // Both off by one factor: the scores' gradient was scaled by something other than 1/√d.
        const double factor = common_factor({&std::get<0>(*grads), &std::get<1>(*grads)}, {&q_expected, &k_expected});
        std::string unused;  // the details that follow compare with the unscaled gradients
        if (std::isfinite(factor) && std::fabs(factor - 1.0) > 0.01 &&
            gradient_close(std::get<0>(*grads), q.shape(), scaled(q_expected, factor), &unused) &&
            gradient_close(std::get<1>(*grads), k.shape(), scaled(k_expected, factor), &unused)) {
          KILN_FAIL("grad_scale_wrong", {{"factor", fmt::format("{:.4g}", factor)}, {"d", std::to_string(s.d)}},
                    fmt::format("{}: every element of q's and k's gradients is {:.4g} times the right one",
                                grads.call(), factor));
          return;
        }
        KILN_FAIL("grad_scores_wrong", {},
                  grads.call() + ", the gradient of q: " + q_detail + "; the gradient of k: " + k_detail);
        return;
      }
      if (!q_right) {
        KILN_FAIL("grad_query_wrong", {}, grads.call() + ", the gradient of q: " + q_detail);
        return;
      }
      if (!k_right) {
        KILN_FAIL("grad_key_wrong", {}, grads.call() + ", the gradient of k: " + k_detail);
        return;
      }
    }
  }
}

TEST(Attention, SplitMergeHeads) {
  // x (2, 5, 6) holds 100·b + 10·t + c at [b, t, c]: split into 3 heads of width 2, sequence
  // b·3 + h holds columns 2h and 2h + 1 of item b, e.g. sequence 1 (item 0, head 1) at t = 4 is
  // [42, 43]. Then sizes and values of the run.
  std::vector<float> numbered;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 5; ++t)
      for (int c = 0; c < 6; ++c) numbered.push_back(static_cast<float>(100 * b + 10 * t + c));
  testing::Generator draw(1251);
  const std::int64_t batch = 1 + draw.below(3), length = 1 + draw.below(7), heads = 1 + draw.below(4),
                     head_dim = 1 + draw.below(3);
  struct Case {
    Tensor x;
    std::int64_t heads;
  };
  for (const Case& c : std::vector<Case>{{Tensor({2, 5, 6}, numbered), 3},
                                         {random_tensor({3, 4, 2}, 1252), 2},
                                         {random_tensor({1, 3, 5}, 1253), 1},
                                         {random_tensor({batch, length, heads * head_dim}, 1254), heads}}) {
    const testing::Params params{{"heads", std::to_string(c.heads)}, {"shape", to_string(c.x.shape())}};
    if (!KILN_EXPECT_CLOSE_REL(observe(fmt::format("split_heads(x, {}) with x {}", c.heads, to_string(c.x.shape())),
                                       [&] { return split_heads(c.x, c.heads); }),
                               trusted_split(data_of(c.x), c.heads), 0.0, 0.0, "split_wrong", params))
      return;
  }
  // A last size of 0: every heads >= 1 divides it (0 % heads == 0), so an empty (1, 2, 0) x splits
  // into 2 heads of width 0, the empty (2, 2, 0), and is not refused for having fewer columns
  // than heads.
  {
    const Tensor empty = Tensor::zeros({1, 2, 0});
    const testing::Params params{{"heads", "2"}, {"shape", to_string(empty.shape())}};
    if (!KILN_EXPECT_CLOSE_REL(observe("split_heads(x, 2) with x (1, 2, 0)", [&] { return split_heads(empty, 2); }),
                               data_of({2, 2, 0}, {}), 0.0, 0.0, "zero_width_split_refused", params))
      return;
  }
  // No positions, or no batch items, with a width the heads divide: (2, 0, 6) splits into 3 heads
  // as the empty (6, 0, 2), and (0, 3, 6) as (0, 3, 2). d_h = 6 / 3 is known from the last size
  // alone; a reshape asked to infer it (-1) refuses, since any d_h fits 0 elements.
  for (const Case& c : std::vector<Case>{{Tensor::zeros({2, 0, 6}), 3}, {Tensor::zeros({0, 3, 6}), 3}}) {
    const Shape split{c.x.shape()[0] * c.heads, c.x.shape()[1], c.x.shape()[2] / c.heads};
    const testing::Params params{
        {"heads", std::to_string(c.heads)}, {"shape", to_string(c.x.shape())}, {"split", to_string(split)}};
    if (!KILN_EXPECT_CLOSE_REL(observe(fmt::format("split_heads(x, {}) with x {}", c.heads, to_string(c.x.shape())),
                                       [&] { return split_heads(c.x, c.heads); }),
                               data_of(split, {}), 0.0, 0.0, "empty_split_refused", params))
      return;
  }
  // merge_heads of (B·H, T, d_h) tensors: (6, 5, 2) into 3 heads, the empty (2, 2, 0) back into
  // (1, 2, 0), the empty (6, 0, 2) back into (2, 0, 6), then the run's sizes.
  for (const Case& c : std::vector<Case>{{random_tensor({6, 5, 2}, 1255), 3},
                                         {random_tensor({4, 3, 3}, 1256), 2},
                                         {Tensor::zeros({2, 2, 0}), 2},
                                         {Tensor::zeros({6, 0, 2}), 3},
                                         {random_tensor({batch * heads, length, head_dim}, 1257), heads}}) {
    const testing::Params params{{"heads", std::to_string(c.heads)}, {"shape", to_string(c.x.shape())}};
    if (!KILN_EXPECT_CLOSE_REL(observe(fmt::format("merge_heads(x, {}) with x {}", c.heads, to_string(c.x.shape())),
                                       [&] { return merge_heads(c.x, c.heads); }),
                               trusted_merge(data_of(c.x), c.heads), 0.0, 0.0, "merge_wrong", params))
      return;
  }
}

TEST(Attention, MultiHead) {
  // query, key and value three different (2, 4, 4) tensors; then query (2, 3, 4), key and value
  // (2, 5, 4), without and with the mask; H = 3 heads of width 2, W_q, W_k, W_v (4, 6), W_o (6, 5);
  // then sizes of the run.
  testing::Generator draw(1261);
  const HeadSizes drawn{1 + draw.below(3), 1 + draw.below(5), 1 + draw.below(5), 1 + draw.below(5),
                        1 + draw.below(3), 1 + draw.below(3), 1 + draw.below(5), draw.below(2) == 1};
  std::uint64_t stream = 1262;
  for (const HeadSizes& s : std::vector<HeadSizes>{
           {2, 4, 4, 4, 3, 2, 5, false}, {2, 3, 5, 4, 3, 2, 5, false}, {2, 3, 5, 4, 3, 2, 5, true}, drawn}) {
    const std::int64_t width = s.heads * s.d_h;
    const Tensor query = random_tensor({s.batch, s.t_q, s.d_in}, stream++);
    const Tensor key = random_tensor({s.batch, s.t_k, s.d_in}, stream++);
    const Tensor value = random_tensor({s.batch, s.t_k, s.d_in}, stream++);
    const Tensor w_q = random_tensor({s.d_in, width}, stream++), w_k = random_tensor({s.d_in, width}, stream++);
    const Tensor w_v = random_tensor({s.d_in, width}, stream++), w_o = random_tensor({width, s.d_out}, stream++);
    const auto out = observe(
        fmt::format("multi_head_attention(query, key, value, W_q, W_k, W_v, W_o, {}, {}) with query {}, key and value "
                    "{}, W_o {}",
                    s.heads, s.causal, to_string(query.shape()), to_string(key.shape()), to_string(w_o.shape())),
        [&] { return multi_head_attention(query, key, value, w_q, w_k, w_v, w_o, s.heads, s.causal); });
    if (!KILN_EXPECT_OK(out, "multihead_wrong", {{"difference", testing::kThrewDifference}, {"where", testing::kThrewWhere}}))
      return;
    KILN_JUDGE {
      const std::vector<Values> inputs{doubles(query), doubles(key), doubles(value), doubles(w_q),
                                       doubles(w_k),   doubles(w_v), doubles(w_o)};
      const Shape shape{s.batch, s.t_q, s.d_out};
      const TensorData expected = floats(shape, trusted_multi_head(inputs, s));
      const testing::Comparison right = testing::compare(*out, expected, 1e-4, 1e-4);
      // Whether the result is the heads' attention of other inputs or sizes: a known mistake.
      const auto equals = [&](const std::vector<Values>& in, const HeadSizes& sizes) {
        return testing::compare(*out, floats(shape, trusted_multi_head(in, sizes)), 1e-4, 1e-4).close;
      };
      if (!right.close && s.causal) {
        // The result of the same heads without the mask: causal was not passed on.
        HeadSizes unmasked = s;
        unmasked.causal = false;
        if (equals(inputs, unmasked)) {
          KILN_FAIL("multihead_mask_dropped", {},
                    out.call() + ": " + right.describe() + "; it equals the heads' attention without the mask");
          return;
        }
      }
      if (!right.close) {
        // One projection taken from another input of the same length (the keys from the query):
        // the heads' attention with that input in its place.
        const char* const inputs_named[] = {"query", "key", "value"};
        const char* const projections[] = {"queries Q", "keys K", "values V"};
        const char* const weights[] = {"W_q", "W_k", "W_v"};
        const std::int64_t lengths[] = {s.t_q, s.t_k, s.t_k};
        for (int own = 0; own < 3; ++own)
          for (int taken = 0; taken < 3; ++taken) {
            if (taken == own || lengths[taken] != lengths[own]) continue;
            std::vector<Values> swapped = inputs;
            swapped[static_cast<std::size_t>(own)] = inputs[static_cast<std::size_t>(taken)];
            if (equals(swapped, s)) {
              KILN_FAIL("projection_input_wrong",
                        {{"projection", projections[own]}, {"input", inputs_named[taken]},
                         {"product", std::string(inputs_named[own]) + "·" + weights[own]}},
                        out.call() + ": " + right.describe() + "; it equals the attention with " +
                            inputs_named[taken] + " passed as " + inputs_named[own]);
              return;
            }
          }
      }
      if (!testing::expect_close(__FILE__, __LINE__, out, expected, 1e-4, "multihead_wrong", 1e-4)) return;
    }
  }
  // The layer: MultiHeadAttention(6, 3) with weights of the test, forward(x, true) on (2, 4, 6).
  const Tensor x = random_tensor({2, 4, 6}, 1270);
  std::vector<Tensor> w;
  for (std::uint64_t n = 0; n < 4; ++n) w.push_back(random_tensor({6, 6}, 1271 + n));
  const auto out = observe("MultiHeadAttention(6, 3) with random weights: forward(x, true) with x (2, 4, 6)", [&] {
    MultiHeadAttention layer(6, 3);
    layer.w_query = w[0];
    layer.w_key = w[1];
    layer.w_value = w[2];
    layer.w_out = w[3];
    return layer.forward(x, true);
  });
  KILN_JUDGE {
    const Values xv = doubles(x);
    const Values expected = trusted_multi_head(
        {xv, xv, xv, doubles(w[0]), doubles(w[1]), doubles(w[2]), doubles(w[3])}, {2, 4, 4, 6, 3, 2, 6, true});
    testing::expect_close(__FILE__, __LINE__, out, floats({2, 4, 6}, expected), 1e-4, "multihead_wrong", 1e-4);
  }
}

TEST(Attention, MultiHeadGradients) {
  // L = Σ G ⊙ output. First multi_head_attention with separate query, key and value (B = 2,
  // T_q = 3, T_k = 4, D_in = 4, H = 3, d_h = 2, D_out = 5): the gradients of all seven inputs.
  // Then the layer MultiHeadAttention(6, 3) on x (2, 4, 6) with the mask: x feeds the query, key
  // and value projections, so its gradient sums all three.
  const HeadSizes s{2, 3, 4, 4, 3, 2, 5, false};
  const std::vector<Shape> shapes{{2, 3, 4}, {2, 4, 4}, {2, 4, 4}, {4, 6}, {4, 6}, {4, 6}, {6, 5}};
  const char* names[] = {"query", "key", "value", "W_q", "W_k", "W_v", "W_o"};
  std::vector<Tensor> inputs;
  for (std::size_t n = 0; n < shapes.size(); ++n) inputs.push_back(random_tensor(shapes[n], 1281 + n));
  const Tensor g = random_tensor({2, 3, 5}, 1290);
  const auto grads = observe(
      "multi_head_attention(query, key, value, W_q, W_k, W_v, W_o, 3) with query (2, 3, 4), key and value (2, 4, 4), "
      "W_o (6, 5), then backward(G): the gradients of all seven",
      [&] {
        std::vector<Tensor> leaves;
        for (const Tensor& t : inputs) leaves.push_back(fresh(t).set_requires_grad(true));
        Tensor out = multi_head_attention(leaves[0], leaves[1], leaves[2], leaves[3], leaves[4], leaves[5], leaves[6], 3);
        out.backward(g);
        std::vector<Tensor> result;
        for (const Tensor& t : leaves) result.push_back(t.grad());
        return result;
      });
  if (!KILN_EXPECT_OK(grads, "multihead_grad_wrong")) return;
  KILN_JUDGE {
    if (grads->size() != shapes.size()) {
      KILN_FAIL("multihead_grad_wrong", {}, grads.call() + " returned the wrong number of gradients");
      return;
    }
    std::vector<Values> values;
    for (const Tensor& t : inputs) values.push_back(doubles(t));
    const auto f = [s](const std::vector<Values>& in) { return trusted_multi_head(in, s); };
    for (std::size_t n = 0; n < shapes.size(); ++n) {
      std::string detail;
      if (!gradient_close((*grads)[n], shapes[n], testing::double_numeric_gradient(f, values, n, doubles(g)),
                          &detail)) {
        KILN_FAIL("multihead_grad_wrong", {}, grads.call() + ", the gradient of " + names[n] + ": " + detail);
        return;
      }
    }
  }

  const Tensor x = random_tensor({2, 4, 6}, 1291);
  std::vector<Tensor> w;
  for (std::uint64_t n = 0; n < 4; ++n) w.push_back(random_tensor({6, 6}, 1292 + n));
  const Tensor layer_g = random_tensor({2, 4, 6}, 1296);
  const auto layer_grads = observe(
      "MultiHeadAttention(6, 3) with random weights: forward(x, true) with x (2, 4, 6), backward(G): the gradients of "
      "x, w_query, w_key, w_value and w_out",
      [&] {
        MultiHeadAttention layer(6, 3);
        layer.w_query = fresh(w[0]).set_requires_grad(true);
        layer.w_key = fresh(w[1]).set_requires_grad(true);
        layer.w_value = fresh(w[2]).set_requires_grad(true);
        layer.w_out = fresh(w[3]).set_requires_grad(true);
        Tensor leaf_x = fresh(x);
        leaf_x.set_requires_grad(true);
        Tensor out = layer.forward(leaf_x, true);
        out.backward(layer_g);
        return std::vector<Tensor>{leaf_x.grad(), layer.w_query.grad(), layer.w_key.grad(), layer.w_value.grad(),
                                   layer.w_out.grad()};
      });
  if (!KILN_EXPECT_OK(layer_grads, "multihead_grad_wrong")) return;
  KILN_JUDGE {
    if (layer_grads->size() != 5) {
      KILN_FAIL("multihead_grad_wrong", {}, layer_grads.call() + " returned the wrong number of gradients");
      return;
    }
    const HeadSizes layer_sizes{2, 4, 4, 6, 3, 2, 6, true};
    // inputs {x, W_q, W_k, W_v, W_o}; x is the query, the key and the value.
    const auto layer_f = [layer_sizes](const std::vector<Values>& in) {
      return trusted_multi_head({in[0], in[0], in[0], in[1], in[2], in[3], in[4]}, layer_sizes);
    };
    const std::vector<Values> layer_values{doubles(x), doubles(w[0]), doubles(w[1]), doubles(w[2]), doubles(w[3])};
    const char* layer_names[] = {"x", "w_query", "w_key", "w_value", "w_out"};
    for (std::size_t n = 0; n < 5; ++n) {
      std::string detail;
      const Shape shape = n == 0 ? Shape{2, 4, 6} : Shape{6, 6};
      if (!gradient_close((*layer_grads)[n], shape,
                          testing::double_numeric_gradient(layer_f, layer_values, n, doubles(layer_g)), &detail)) {
        KILN_FAIL("multihead_grad_wrong", {},
                  layer_grads.call() + ", the gradient of " + layer_names[n] + ": " + detail);
        return;
      }
    }
  }

  // Inputs that are non-contiguous views: query, key and value are autograd::transpose(t, 0, 1)
  // of (T, B, D_in) leaves t, with the same values as the first case's. The gradient must flow
  // back through the view to each t: the first case's gradient with dimensions 0 and 1 exchanged.
  std::vector<Shape> swapped_shapes;
  std::vector<Tensor> swapped;
  for (std::size_t n = 0; n < 3; ++n) {
    swapped_shapes.push_back({shapes[n][1], shapes[n][0], shapes[n][2]});
    swapped.push_back(floats(swapped_shapes[n], swap_first_two(doubles(inputs[n]), shapes[n])).tensor());
  }
  const auto view_grads = observe(
      "multi_head_attention(query, key, value, W_q, W_k, W_v, W_o, 3) with query = autograd::transpose(t_q, 0, 1) of "
      "a (3, 2, 4) leaf t_q, key and value likewise of (4, 2, 4) leaves, then backward(G): the gradients of t_q, t_k "
      "and t_v",
      [&] {
        std::vector<Tensor> leaves, views;
        for (std::size_t n = 0; n < 3; ++n) {
          leaves.push_back(fresh(swapped[n]).set_requires_grad(true));
          views.push_back(autograd::transpose(leaves[n], 0, 1));
        }
        std::vector<Tensor> weights;
        for (std::size_t n = 3; n < inputs.size(); ++n) weights.push_back(fresh(inputs[n]).set_requires_grad(true));
        Tensor out = multi_head_attention(views[0], views[1], views[2], weights[0], weights[1], weights[2], weights[3], 3);
        out.backward(g);
        return std::vector<Tensor>{leaves[0].grad(), leaves[1].grad(), leaves[2].grad()};
      });
  if (!KILN_EXPECT_OK(view_grads, "multihead_view_input_cut", {{"input", "query"}})) return;
  KILN_JUDGE {
    std::vector<Values> values;
    for (const Tensor& t : inputs) values.push_back(doubles(t));
    const auto f = [s](const std::vector<Values>& in) { return trusted_multi_head(in, s); };
    const char* view_names[] = {"query", "key", "value"};
    for (std::size_t n = 0; n < 3; ++n) {
      std::string detail;
      const Values expected = swap_first_two(testing::double_numeric_gradient(f, values, n, doubles(g)), shapes[n]);
      if (n >= view_grads->size() || !gradient_close((*view_grads)[n], swapped_shapes[n], expected, &detail)) {
        KILN_FAIL("multihead_view_input_cut", {{"input", view_names[n]}},
                  view_grads.call() + ", the gradient of the " + view_names[n] + "'s leaf: " +
                      (n >= view_grads->size() ? std::string("missing") : detail));
        return;
      }
    }
  }
}

TEST(Attention, ShapeErrors) {
  // Keys of width 3 for queries of width 4; five keys but four values; batch sizes 2 and 3; a
  // 2-D q with a 3-D k; then sizes of the run with too many values.
  const Tensor q34 = random_tensor({3, 4}, 1301), k53 = random_tensor({5, 3}, 1302), v57 = random_tensor({5, 7}, 1303);
  KILN_EXPECT_THROWS(scaled_dot_product_attention(q34, k53, v57), ShapeError, "shape_not_reported", {"(3, 4)", "(5, 3)"});
  const Tensor q23 = random_tensor({2, 3}, 1304), v47 = random_tensor({4, 7}, 1305);
  KILN_EXPECT_THROWS(scaled_dot_product_attention(q23, k53, v47), ShapeError, "shape_not_reported", {"(5, 3)", "(4, 7)"});
  const Tensor q243 = random_tensor({2, 4, 3}, 1306), k343 = random_tensor({3, 4, 3}, 1307);
  const Tensor v347 = random_tensor({3, 4, 7}, 1308);
  KILN_EXPECT_THROWS(scaled_dot_product_attention(q243, k343, v347), ShapeError, "shape_not_reported",
                     {"(2, 4, 3)", "(3, 4, 3)"});
  const Tensor q43 = random_tensor({4, 3}, 1309), v247 = random_tensor({2, 4, 7}, 1310);
  KILN_EXPECT_THROWS(scaled_dot_product_attention(q43, q243, v247), ShapeError, "shape_not_reported",
                     {"(4, 3)", "(2, 4, 3)"});
  // k and v that disagree while q and k agree: batch sizes 2 and 3, then a 2-D k with a 3-D v.
  const Tensor k243 = random_tensor({2, 4, 3}, 1317);
  KILN_EXPECT_THROWS(scaled_dot_product_attention(q243, k243, v347), ShapeError, "shape_not_reported",
                     {"(2, 4, 3)", "(3, 4, 7)"});
  KILN_EXPECT_THROWS(scaled_dot_product_attention(q43, q43, v247), ShapeError, "shape_not_reported",
                     {"(4, 3)", "(2, 4, 7)"});
  // A batch whose k has five keys and v four values: the rows to compare are dimension 1, not 0.
  const Tensor k253 = random_tensor({2, 5, 3}, 1323);
  KILN_EXPECT_THROWS(scaled_dot_product_attention(q243, k253, v247), ShapeError, "shape_not_reported",
                     {"(2, 5, 3)", "(2, 4, 7)"});
  // All three 4-D: attention takes one sequence or a batch of them, nothing else. No two shapes
  // disagree, so the error names the shape of one that is not 2-D or 3-D, any of the three.
  const Tensor q4 = random_tensor({1, 2, 4, 3}, 1318), k4 = random_tensor({1, 2, 5, 3}, 1319);
  const Tensor v4 = random_tensor({1, 2, 5, 7}, 1320);
  {
    const auto got = KILN_OBSERVE(scaled_dot_product_attention(q4, k4, v4));
    KILN_JUDGE {
      testing::expect_throws<ShapeError>(__FILE__, __LINE__, got, "shape_not_reported");
      if (::testing::Test::HasFailure()) return;
      const std::string& message = got.error().message;
      if (message.find("(1, 2, 4, 3)") == std::string::npos && message.find("(1, 2, 5, 3)") == std::string::npos &&
          message.find("(1, 2, 5, 7)") == std::string::npos) {
        KILN_FAIL("shape_not_reported", {},
                  fmt::format("{} raised ShapeError \"{}\", which names none of the three 4-D shapes", got.call(), message));
        return;
      }
    }
  }
  // A batch of 1 against a larger one, either way round: the batch does not broadcast (B must be
  // the same for q, k and v), so q (2, 3, 4) against k (1, 3, 4) and v (1, 3, 5), and q (1, 3, 4)
  // against k and v of batch 2, are ShapeErrors naming q's and k's shapes.
  const Tensor q234 = random_tensor({2, 3, 4}, 1325), k134 = random_tensor({1, 3, 4}, 1326);
  const Tensor v135 = random_tensor({1, 3, 5}, 1327);
  KILN_EXPECT_THROWS(scaled_dot_product_attention(q234, k134, v135), ShapeError, "batch_broadcast",
                     {"(2, 3, 4)", "(1, 3, 4)"});
  const Tensor q134 = random_tensor({1, 3, 4}, 1328), k234 = random_tensor({2, 3, 4}, 1329);
  const Tensor v235 = random_tensor({2, 3, 5}, 1330);
  KILN_EXPECT_THROWS(scaled_dot_product_attention(q134, k234, v235), ShapeError, "batch_broadcast",
                     {"(1, 3, 4)", "(2, 3, 4)"});

  testing::Generator draw(1311);
  const std::int64_t t_q = 2 + draw.below(4), t_k = 6 + draw.below(4), d = 1 + draw.below(4), d_v = 1 + draw.below(5);
  const std::int64_t rows = t_k + 1 + draw.below(3);
  const Tensor q = random_tensor({t_q, d}, 1312), k = random_tensor({t_k, d}, 1313), v = random_tensor({rows, d_v}, 1314);
  const auto too_many_values = observe_attention(q, k, v, false);
  KILN_JUDGE {
    testing::expect_throws<ShapeError>(__FILE__, __LINE__, too_many_values, "shape_not_reported",
                                       {to_string(k.shape()), to_string(v.shape())});
  }

  // Heads that do not divide the width (7 into 3), or the number of sequences (5 into 3).
  const Tensor x257 = random_tensor({2, 5, 7}, 1315), x542 = random_tensor({5, 4, 2}, 1316);
  KILN_EXPECT_THROWS(split_heads(x257, 3), ShapeError, "shape_not_reported", {"(2, 5, 7)", "3"});
  KILN_EXPECT_THROWS(merge_heads(x542, 3), ShapeError, "shape_not_reported", {"(5, 4, 2)", "3"});
  // 5 sequences with no positions in 3 heads: still 5 % 3 != 0. The reshape to (5 / 3, 3, 0, 2)
  // = (1, 3, 0, 2) holds 0 elements like x, so only a test of the first size refuses it.
  const Tensor x502 = Tensor::zeros({5, 0, 2});
  KILN_EXPECT_THROWS(merge_heads(x502, 3), ShapeError, "empty_merge_not_refused", {"(5, 0, 2)", "3"},
                     {{"shape", "(5, 0, 2)"}, {"heads", "3"}});
  // Tensors that are not 3-D, whose sizes the heads do divide.
  const Tensor x2561 = random_tensor({2, 5, 6, 1}, 1321), x6221 = random_tensor({6, 2, 2, 1}, 1322);
  KILN_EXPECT_THROWS(split_heads(x2561, 3), ShapeError, "shape_not_reported", {"(2, 5, 6, 1)", "3"});
  KILN_EXPECT_THROWS(merge_heads(x6221, 3), ShapeError, "shape_not_reported", {"(6, 2, 2, 1)", "3"});
  // No heads, or a negative number of them: 0 divides nothing, and -2 "divides" 4.
  const Tensor x124 = random_tensor({1, 2, 4}, 1324);
  KILN_EXPECT_THROWS(split_heads(x124, 0), ShapeError, "shape_not_reported", {"(1, 2, 4)", "0"});
  KILN_EXPECT_THROWS(split_heads(x124, -2), ShapeError, "shape_not_reported", {"(1, 2, 4)", "-2"});
  KILN_EXPECT_THROWS(merge_heads(x124, 0), ShapeError, "shape_not_reported", {"(1, 2, 4)", "0"});
  if (::testing::Test::HasFailure()) return;
  // heads is an std::int64_t: 2^32 + 1 heads divide neither 3 columns nor 3 sequences (held in an
  // int they would be 1 head, which divides everything, and x would come back as it is).
  const Tensor x123 = random_tensor({1, 2, 3}, 1331), x321 = random_tensor({3, 2, 1}, 1332);
  KILN_EXPECT_THROWS(split_heads(x123, 4294967297), ShapeError, "heads_narrowed", {"(1, 2, 3)", "4294967297"},
                     {{"function", "split_heads"}, {"shape", "(1, 2, 3)"}});
  if (::testing::Test::HasFailure()) return;
  KILN_EXPECT_THROWS(merge_heads(x321, 4294967297), ShapeError, "heads_narrowed", {"(3, 2, 1)", "4294967297"},
                     {{"function", "merge_heads"}, {"shape", "(3, 2, 1)"}});
}

}  // namespace kiln
