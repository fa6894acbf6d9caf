// Module 11 checks: one TEST per check in module.yaml.
//
// The sizes follow the notebook "is indexing slower than the one-hot matmul?": a 703×27 table
// (a trigram model: 703 two-letter contexts, 27 letters), indexed here by 1,000 ids rather than
// its 1,000,000 so that the checks stay fast (`grader bench 11` runs the full size). Expected
// values are worked out by hand or computed by trusted loops written in this file.
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/embeddings.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using kiln::testing::random_tensor;

constexpr std::int64_t kRows = 703;  // the notebook's table: 703 contexts...
constexpr std::int64_t kDim = 27;    // ...by 27 letters

// `count` ids uniform in [0, rows), from WichmannHill(seed).
Indices random_ids(std::size_t count, std::int64_t rows, std::uint64_t seed) {
  WichmannHill generator(seed);
  Indices ids(count);
  for (auto& id : ids) id = static_cast<std::int64_t>(generator.next() * static_cast<double>(rows));
  return ids;
}

// Trusted: the one-hot product written out, one_hot(ids)·W with every one of the rows·dim
// multiply-adds done in float. Each sum is w·1 plus zeros, so it is exact.
Tensor trusted_one_hot_product(const Tensor& weight, const Indices& ids) {
  const std::int64_t rows = weight.shape()[0], dim = weight.shape()[1];
  const std::vector<float> w = weight.to_vector();
  std::vector<float> out(ids.size() * static_cast<std::size_t>(dim), 0.0f);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    float* out_row = out.data() + k * static_cast<std::size_t>(dim);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float entry = r == ids[k] ? 1.0f : 0.0f;  // one_hot(ids)[k, r]
      const float* w_row = w.data() + r * dim;
      for (std::int64_t d = 0; d < dim; ++d) out_row[d] += entry * w_row[d];
    }
  }
  return Tensor({static_cast<std::int64_t>(ids.size()), dim}, out);
}

// Trusted: the scatter-add, summed in double.
Tensor trusted_scatter(const Tensor& grad_output, const Indices& ids, std::int64_t rows) {
  const std::int64_t dim = grad_output.shape()[1];
  const std::vector<float> g = grad_output.to_vector();
  std::vector<double> sums(static_cast<std::size_t>(rows * dim), 0.0);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    for (std::int64_t d = 0; d < dim; ++d) {
      sums[static_cast<std::size_t>(ids[k] * dim + d)] += g[k * static_cast<std::size_t>(dim) + static_cast<std::size_t>(d)];
    }
  }
  return Tensor({rows, dim}, std::vector<float>(sums.begin(), sums.end()));
}

// Runs `run`, reporting failure_id for any error but a stub's; returns whether it succeeded.
bool attempt(const char* file, int line, const std::string& failure_id, const std::string& what,
             const std::function<void()>& run) {
  try {
    run();
    return true;
  } catch (const NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    testing::report_failure(file, line, failure_id, {}, what + " threw: " + error.what());
    return false;
  }
}

#define ATTEMPT(id, what, ...) attempt(__FILE__, __LINE__, id, what, [&] { __VA_ARGS__; })

}  // namespace

TEST(Embeddings, OneHot) {
  // Three ids, four classes: one 1 per row, in the id's column.
  KILN_EXPECT_CLOSE(one_hot({3, 0, 2}, 4), Tensor({3, 4}, {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 1, 0}), 0.0, "one_hot_wrong");
  KILN_EXPECT_CLOSE(one_hot({}, 4), Tensor(Shape{0, 4}, {}), 0.0, "one_hot_wrong");

  // On the notebook's table: one_hot(ids)·W picks W's rows exactly (here through the given
  // one_hot_matmul, which multiplies your one-hot matrix with Eigen), and one_hot(ids)ᵀ·G
  // scatters G's rows back.
  const Tensor weight = random_tensor({kRows, kDim}, 703);
  const Indices ids = random_ids(1000, kRows, 27);
  const Tensor grad_output = random_tensor({1000, kDim}, 1000);
  Tensor product, scattered;
  if (!ATTEMPT("one_hot_wrong", "one_hot_matmul on the 703×27 table",
               product = one_hot_matmul(weight, ids);
               scattered = one_hot_matmul_backward(grad_output, ids, kRows)))
    return;
  KILN_EXPECT_CLOSE(product, trusted_one_hot_product(weight, ids), 0.0, "one_hot_wrong");
  KILN_EXPECT_CLOSE(scattered, trusted_scatter(grad_output, ids, kRows), 1e-4, "one_hot_wrong");
}

TEST(Embeddings, Lookup) {
  // W = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]; ids {3, 0, 2, 3} take rows 3, 0, 2, 3.
  const Tensor small({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  Tensor picked;
  if (!ATTEMPT("lookup_wrong", "embedding_lookup of a (4, 3) table", picked = embedding_lookup(small, {3, 0, 2, 3})))
    return;
  KILN_EXPECT_CLOSE(picked, Tensor({4, 3}, {9, 10, 11, 0, 1, 2, 6, 7, 8, 9, 10, 11}), 0.0, "lookup_wrong");

  // The notebook's table and 1,000 ids: exactly one_hot(ids)·W, not just close to it.
  const Tensor weight = random_tensor({kRows, kDim}, 703);
  const Indices ids = random_ids(1000, kRows, 27);
  if (!ATTEMPT("lookup_wrong", "embedding_lookup of the 703×27 table", picked = embedding_lookup(weight, ids))) return;
  KILN_EXPECT_CLOSE(picked, trusted_one_hot_product(weight, ids), 0.0, "lookup_wrong");

  // A table that is a view (the transpose of a (27, 703) matrix): its rows are not contiguous.
  const Tensor view = random_tensor({kDim, kRows}, 704).transpose(0, 1);
  if (!ATTEMPT("lookup_wrong", "embedding_lookup of a transposed (703, 27) view", picked = embedding_lookup(view, ids)))
    return;
  KILN_EXPECT_CLOSE(picked, trusted_one_hot_product(view, ids), 0.0, "lookup_wrong");

  // No ids: no rows.
  if (!ATTEMPT("lookup_wrong", "embedding_lookup of no ids", picked = embedding_lookup(weight, {}))) return;
  KILN_EXPECT(picked.shape() == Shape({0, kDim}), "lookup_wrong", {},
              "embedding_lookup(W, {}) has shape " + to_string(picked.shape()) + ", expected (0, 27)");
}

TEST(Embeddings, IndexOutOfRange) {
  // The table is the first 703 rows of a 704-row buffer, so that reading "row 703" by mistake
  // reads memory that exists instead of crashing: the check must still refuse it.
  const Tensor buffer = random_tensor({kRows + 1, kDim}, 705);
  const Tensor table = make_view(buffer, {kRows, kDim}, {kDim, 1}, 0);
  KILN_EXPECT_THROWS(embedding_lookup(table, {5, 703}), IndexError, "index_not_checked", {"703"});
  KILN_EXPECT_THROWS(embedding_lookup(table, {705}), IndexError, "index_not_checked", {"705", "703"});
  KILN_EXPECT_THROWS(embedding_lookup(table, {0, -1}), IndexError, "index_not_checked", {"-1", "703"});
  KILN_EXPECT_THROWS(one_hot({1, 7}, 4), IndexError, "index_not_checked", {"7", "4"});
  KILN_EXPECT_THROWS(embedding_backward(Tensor::ones({1, kDim}), {800}, kRows), IndexError, "index_not_checked",
                     {"800", "703"});
}

TEST(Embeddings, BackwardScatterAdd) {
  // Distinct ids first: G = [[1, 2], [3, 4], [5, 6]] with ids {2, 0, 3} into 5 rows puts G's
  // rows at 2, 0 and 3, and leaves rows 1 and 4 at zero.
  const Tensor g({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor grad;
  if (!ATTEMPT("scatter_wrong", "embedding_backward with ids {2, 0, 3}", grad = embedding_backward(g, {2, 0, 3}, 5)))
    return;
  if (!KILN_EXPECT_CLOSE(grad, Tensor({5, 2}, {3, 4, 0, 0, 1, 2, 5, 6, 0, 0}), 0.0, "scatter_wrong")) return;

  // Repeated ids: {1, 3, 1, 1} with G = [[1, 2], [3, 4], [5, 6], [7, 8]]: row 1 was used three
  // times and gets 1 + 5 + 7 = 13 and 2 + 6 + 8 = 16; row 3 gets [3, 4].
  const Tensor repeated_g({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  if (!ATTEMPT("repeated_indices_not_added", "embedding_backward with ids {1, 3, 1, 1}",
               grad = embedding_backward(repeated_g, {1, 3, 1, 1}, 4)))
    return;
  KILN_EXPECT_CLOSE(grad, Tensor({4, 2}, {0, 0, 13, 16, 0, 0, 3, 4}), 0.0, "repeated_indices_not_added");

  // 1,000 ids into 703 rows must repeat: every row receives the sum of its rows of G.
  const Indices ids = random_ids(1000, kRows, 27);
  const Tensor grad_output = random_tensor({1000, kDim}, 1000);
  if (!ATTEMPT("repeated_indices_not_added", "embedding_backward of 1,000 ids into 703 rows",
               grad = embedding_backward(grad_output, ids, kRows)))
    return;
  KILN_EXPECT_CLOSE(grad, trusted_scatter(grad_output, ids, kRows), 1e-5, "repeated_indices_not_added");
}

TEST(Embeddings, EmbeddingLayer) {
  // Embedding(10, 4): y = forward({1, 3, 1, 9}), L = Σ w ⊙ y. y is linear in the table, so the
  // central difference of L is exact up to rounding.
  const Embedding layer(10, 4, 7);
  const Indices ids{1, 3, 1, 9};
  const Tensor w = random_tensor({4, 4}, 11, 0.5f, 1.5f);
  Tensor y;
  if (!ATTEMPT("embedding_grad_wrong", "Embedding(10, 4).forward({1, 3, 1, 9}) and backward",
               y = layer.forward(ids);
               y.backward(w)))
    return;
  KILN_EXPECT_CLOSE(y, trusted_one_hot_product(layer.weight, ids), 0.0, "embedding_grad_wrong");

  const auto loss = [&](const std::vector<float>& table) {
    const Tensor rows = trusted_one_hot_product(Tensor({10, 4}, table), ids);
    const std::vector<float> r = rows.to_vector();
    const std::vector<float> ws = w.to_vector();
    double total = 0.0;
    for (std::size_t i = 0; i < r.size(); ++i) total += static_cast<double>(r[i]) * ws[i];
    return total;
  };
  constexpr float kEps = 1e-2f;
  const std::vector<float> table = layer.weight.to_vector();
  std::vector<float> numeric(table.size());
  for (std::size_t j = 0; j < table.size(); ++j) {
    std::vector<float> up = table, down = table;
    up[j] += kEps;
    down[j] -= kEps;
    numeric[j] = static_cast<float>((loss(up) - loss(down)) / (2.0 * kEps));
  }
  const Tensor expected({10, 4}, numeric);
  const Tensor actual = layer.weight.grad();
  const testing::Comparison c = testing::compare(actual, expected, 1e-3, 1e-3);
  KILN_EXPECT(c.close, "embedding_grad_wrong", {},
              c.shapes_match ? c.describe()
                             : "the weight's gradient has shape " + to_string(actual.shape()) + ", expected (10, 4)");
}

TEST(Embeddings, LearnedPositional) {
  // A table for 8 positions of 3 values: forward(5) is its first 5 rows, and the gradient of
  // Σ forward(5) is 1 on those rows and 0 on rows 5, 6 and 7.
  const LearnedPositionalEmbedding positions(8, 3, 5);
  Tensor y, full, none;
  if (!ATTEMPT("positions_wrong", "LearnedPositionalEmbedding(8, 3): forward(5), forward(8), forward(0)",
               y = positions.forward(5);
               full = positions.forward(8);
               none = positions.forward(0);
               y.backward(Tensor::ones({5, 3}))))
    return;
  KILN_EXPECT_CLOSE(y, trusted_one_hot_product(positions.weight, {0, 1, 2, 3, 4}), 0.0, "positions_wrong");
  KILN_EXPECT_CLOSE(full, trusted_one_hot_product(positions.weight, {0, 1, 2, 3, 4, 5, 6, 7}), 0.0, "positions_wrong");
  KILN_EXPECT(none.shape() == Shape({0, 3}), "positions_wrong", {},
              "forward(0) has shape " + to_string(none.shape()) + ", expected (0, 3)");
  std::vector<float> expected_grad(24, 0.0f);
  for (std::size_t i = 0; i < 15; ++i) expected_grad[i] = 1.0f;
  KILN_EXPECT_CLOSE(positions.weight.grad(), Tensor({8, 3}, expected_grad), 0.0, "positions_wrong");

  // Longer than the table: an IndexError naming the length and max_length.
  KILN_EXPECT_THROWS(positions.forward(9), IndexError, "positions_too_long", {"9", "8"});
  KILN_EXPECT_THROWS(positions.forward(-1), IndexError, "positions_too_long", {"-1", "8"});
}

TEST(Embeddings, Sinusoidal) {
  // dim 4: columns 0 and 1 have frequency 1, columns 2 and 3 have 1/10000^(2/4) = 1/100.
  //   row 0: [sin 0, cos 0, sin 0, cos 0] = [0, 1, 0, 1]
  //   row 1: [sin 1, cos 1, sin 0.01, cos 0.01], row 2: [sin 2, cos 2, sin 0.02, cos 0.02]
  KILN_EXPECT_CLOSE(sinusoidal_positional_embedding(3, 4),
                    Tensor({3, 4}, {0, 1, 0, 1, 0.8414709848f, 0.5403023059f, 0.0099998333f, 0.9999500004f,
                                    0.9092974268f, -0.4161468365f, 0.0199986667f, 0.9998000067f}),
                    1e-6, "sinusoid_wrong");
  // dim 5 (odd): the pairs (0, 1), (2, 3) and a lone sine in column 4, at 1/10000^(4/5).
  KILN_EXPECT_CLOSE(sinusoidal_positional_embedding(2, 5),
                    Tensor({2, 5}, {0, 1, 0, 1, 0, 0.8414709848f, 0.5403023059f, 0.0251162229f, 0.9996845379f,
                                    0.0006309573f}),
                    1e-6, "sinusoid_wrong");
  // A larger table against the formula, computed here in double.
  std::vector<float> expected;
  for (int p = 0; p < 50; ++p) {
    for (int d = 0; d < 16; ++d) {
      const double angle = p / std::pow(10000.0, (d - d % 2) / 16.0);
      expected.push_back(static_cast<float>(d % 2 == 0 ? std::sin(angle) : std::cos(angle)));
    }
  }
  KILN_EXPECT_CLOSE(sinusoidal_positional_embedding(50, 16), Tensor({50, 16}, expected), 1e-5, "sinusoid_wrong");
}

}  // namespace kiln
