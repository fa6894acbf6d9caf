// Module 03 checks for einsum: values for every spec the chapter uses, and its errors.
// Expected values are worked out by hand (fast.ai's 3×3 matrix m and vector c) or computed here
// by trusted loops summed in double.
#include <cstdint>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/layers.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using kiln::testing::random_tensor;
using kiln::testing::reference_matmul;

// Compares einsum's result with the expected one; reports einsum_wrong naming the spec.
// Returns false (after reporting) when it differs or throws, so that the test can stop.
bool expect_einsum(const char* file, int line, const std::string& spec, const std::function<Tensor()>& run,
                   const Tensor& expected, double tolerance, const std::string& what) {
  Tensor got;
  try {
    got = run();
  } catch (const NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    testing::report_failure(file, line, "einsum_wrong", {{"spec", spec}}, what + " threw: " + error.what());
    return false;
  }
  const testing::Comparison c = testing::compare(got, expected, tolerance, 1e-5);
  if (c.close) return true;
  testing::report_failure(
      file, line, "einsum_wrong",
      {{"spec", spec}},
      what + ": " +
          (c.shapes_match ? c.describe()
                          : "got shape " + to_string(got.shape()) + ", expected " + to_string(expected.shape())));
  return false;
}

#define EXPECT_EINSUM(spec, call, expected, tolerance, what) \
  if (!expect_einsum(__FILE__, __LINE__, spec, [&] { return call; }, expected, tolerance, what)) return

}  // namespace

TEST(Layers, Einsum) {
  const Tensor m({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor c({3}, {10, 20, 30});

  // Transposes: nothing multiplied, nothing summed. Also of a view (a transposed matrix).
  EXPECT_EINSUM("ij->ji", einsum("ij->ji", Tensor({2, 3}, {1, 2, 3, 4, 5, 6})), Tensor({3, 2}, {1, 4, 2, 5, 3, 6}),
                0.0, "einsum(\"ij->ji\") of [[1, 2, 3], [4, 5, 6]]");
  EXPECT_EINSUM("ij->ji", einsum("ij->ji", m.transpose(0, 1)), m, 0.0, "einsum(\"ij->ji\") of the view m.transpose(0, 1)");
  // Elementwise: m·m = [[1, 4, 9], [16, 25, 36], [49, 64, 81]].
  EXPECT_EINSUM("ij,ij->ij", einsum("ij,ij->ij", m, m), Tensor({3, 3}, {1, 4, 9, 16, 25, 36, 49, 64, 81}), 0.0,
                "einsum(\"ij,ij->ij\", m, m)");
  // Outer product: c[i]·c[j] = [[100, 200, 300], [200, 400, 600], [300, 600, 900]].
  EXPECT_EINSUM("i,j->ij", einsum("i,j->ij", c, c), Tensor({3, 3}, {100, 200, 300, 200, 400, 600, 300, 600, 900}),
                0.0, "einsum(\"i,j->ij\", c, c) with c = [10, 20, 30]");
  // Sums: a letter left out of the output is summed over. [1, 2, 3]·[2, 3, 4] = 20; m's rows sum
  // to 6, 15, 24 and all of m to 45 (scalars have shape ()).
  EXPECT_EINSUM("i,i->", einsum("i,i->", Tensor({3}, {1, 2, 3}), Tensor({3}, {2, 3, 4})), Tensor::scalar(20), 0.0,
                "einsum(\"i,i->\", [1, 2, 3], [2, 3, 4])");
  EXPECT_EINSUM("ij->i", einsum("ij->i", m), Tensor({3}, {6, 15, 24}), 0.0, "einsum(\"ij->i\", m)");
  EXPECT_EINSUM("ij->", einsum("ij->", m), Tensor::scalar(45), 0.0, "einsum(\"ij->\", m)");

  // The matrix product on the course's sizes, (5, 784)·(784, 10).
  const Tensor images = random_tensor({5, 784}, 457428938475ULL, 0.0f, 1.0f);
  const Tensor weights = random_tensor({784, 10}, 2023, -1.0f, 1.0f);
  const Tensor product = reference_matmul(images, weights);
  EXPECT_EINSUM("ik,kj->ij", einsum("ik,kj->ij", images, weights), product, 1e-3, "einsum(\"ik,kj->ij\") of (5, 784)·(784, 10)");
  // Every product kept, nothing summed: (5, 784, 10), which summed over k is the matrix product.
  EXPECT_EINSUM("ik,kj->ikj", einsum("ik,kj->ikj", images, weights).sum(1), product, 1e-3,
                "einsum(\"ik,kj->ikj\") of (5, 784)·(784, 10), summed over k");
  // Products of views.
  const Tensor a_view = random_tensor({3, 4}, 41, -1.0f, 1.0f).transpose(0, 1);
  const Tensor b_view = random_tensor({2, 3}, 42, -1.0f, 1.0f).transpose(0, 1);
  EXPECT_EINSUM("ik,kj->ij", einsum("ik,kj->ij", a_view, b_view), reference_matmul(a_view, b_view), 1e-5,
                "einsum(\"ik,kj->ij\") of transposed views (4, 3)·(3, 2)");

  // A batch of three (2, 4)·(4, 5) products.
  const Tensor batch_a = random_tensor({3, 2, 4}, 43, -1.0f, 1.0f);
  const Tensor batch_b = random_tensor({3, 4, 5}, 44, -1.0f, 1.0f);
  std::vector<float> batched;
  for (std::int64_t b = 0; b < 3; ++b) {
    const Tensor a_b = make_view(batch_a, {2, 4}, {4, 1}, b * 8);
    const Tensor b_b = make_view(batch_b, {4, 5}, {5, 1}, b * 20);
    const std::vector<float> c_b = reference_matmul(a_b, b_b).to_vector();
    batched.insert(batched.end(), c_b.begin(), c_b.end());
  }
  EXPECT_EINSUM("bik,bkj->bij", einsum("bik,bkj->bij", batch_a, batch_b), Tensor({3, 2, 5}, batched), 1e-5,
                "einsum(\"bik,bkj->bij\") of (3, 2, 4)·(3, 4, 5)");
}

TEST(Layers, EinsumErrors) {
  const Tensor a = Tensor::ones({2, 3});
  const Tensor b = Tensor::ones({3, 2});
  const Tensor square = Tensor::ones({2, 2});

  // Malformed specs: each must be rejected with an error that quotes the spec.
  const auto expect_rejected = [&](const std::string& spec, const std::function<Tensor()>& run) {
    KILN_EXPECT_THROWS(run(), std::invalid_argument, "einsum_bad_spec", {spec});
  };
  expect_rejected("ik,kj", [&] { return einsum("ik,kj", a, b); });                  // no "->"
  expect_rejected("ik,kj->iz", [&] { return einsum("ik,kj->iz", a, b); });          // z is in no operand
  expect_rejected("ik,kj->ii", [&] { return einsum("ik,kj->ii", a, b); });          // i twice in the output
  expect_rejected("ii,ij->ij", [&] { return einsum("ii,ij->ij", square, square); });  // i twice in one operand
  expect_rejected("iK,Kj->ij", [&] { return einsum("iK,Kj->ij", a, b); });          // not lowercase
  expect_rejected("ik,kj,jl->il", [&] { return einsum("ik,kj,jl->il", a, b); });    // three operands, two tensors
  expect_rejected("ij->ji", [&] { return einsum("ij->ji", a, b); });                // one operand, two tensors
  expect_rejected("ik,kj->ij", [&] { return einsum("ik,kj->ij", a); });             // two operands, one tensor

  // Sizes that disagree: ShapeError quoting the spec and naming both shapes.
  KILN_EXPECT_THROWS(einsum("ik,kj->ij", a, Tensor::ones({4, 2})), ShapeError, "einsum_size_mismatch",
                     {"ik,kj->ij", "(2, 3)", "(4, 2)"});
  KILN_EXPECT_THROWS(einsum("ij,ij->ij", a, b), ShapeError, "einsum_size_mismatch", {"ij,ij->ij", "(2, 3)", "(3, 2)"});
  // Three letters for a 2-D operand.
  KILN_EXPECT_THROWS(einsum("ijk,kj->ij", a, b), ShapeError, "einsum_size_mismatch", {"ijk,kj->ij", "(2, 3)"});
}

}  // namespace kiln
