// Module 03 checks for the ladder: dot, matmul_loops, matmul_dot, matmul_broadcast and their
// shape errors. Every rung is compared with a trusted triple loop written here and summed in
// double, so a rung is judged on its own, never against another rung you wrote. The cases include
// the course's sizes: a batch of 5 MNIST-sized inputs (5, 784) times a (784, 10) weight matrix,
// as in fast.ai's "matrix multiplication from foundations".
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "kiln/layers.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using kiln::testing::random_tensor;
using kiln::testing::reference_matmul;

using Product = std::function<Tensor(const Tensor&, const Tensor&)>;

// One product to check: its inputs, the expected values and how close they must be.
struct Case {
  std::string what;
  Tensor a, b, expected;
  double tolerance;
};

// The cases every rung must pass, in order of difficulty.
std::vector<Case> ladder_cases() {
  std::vector<Case> cases;
  // [[1, 2, 3], [4, 5, 6]]·[[7, 8], [9, 10], [11, 12]]: 1·7 + 2·9 + 3·11 = 58, and so on.
  cases.push_back({"(2, 3)·(3, 2) worked by hand", Tensor({2, 3}, {1, 2, 3, 4, 5, 6}),
                   Tensor({3, 2}, {7, 8, 9, 10, 11, 12}), Tensor({2, 2}, {58, 64, 139, 154}), 0.0});
  // Five "images" of 784 pixels in [0, 1) times a (784, 10) weight matrix in [-1, 1).
  const Tensor images = random_tensor({5, 784}, 457428938475ULL, 0.0f, 1.0f);
  const Tensor weights = random_tensor({784, 10}, 2023, -1.0f, 1.0f);
  cases.push_back({"(5, 784)·(784, 10)", images, weights, reference_matmul(images, weights), 1e-3});
  // Transposed views: (4, 3) and (3, 5) matrices whose elements are not where a fresh tensor's
  // would be (strides (1, 4) and (1, 3)).
  const Tensor a_view = random_tensor({3, 4}, 31, -1.0f, 1.0f).transpose(0, 1);
  const Tensor b_view = random_tensor({5, 3}, 32, -1.0f, 1.0f).transpose(0, 1);
  cases.push_back({"transposed views (4, 3)·(3, 5)", a_view, b_view, reference_matmul(a_view, b_view), 1e-5});
  // One row times one column, and one column times one row.
  const Tensor r = random_tensor({1, 6}, 33, -1.0f, 1.0f);
  const Tensor c = random_tensor({6, 1}, 34, -1.0f, 1.0f);
  cases.push_back({"(1, 6)·(6, 1)", r, c, reference_matmul(r, c), 1e-5});
  cases.push_back({"(6, 1)·(1, 6)", c, r, reference_matmul(c, r), 1e-5});
  return cases;
}

// Runs every case through `product`; reports `failure_id` for the first case that is wrong or
// throws (an unwritten stub's NotImplemented passes through), and stops there.
void check_ladder(const char* file, int line, const std::string& name, const Product& product,
                  const std::string& failure_id) {
  for (const Case& c : ladder_cases()) {
    const std::string what = name + " of " + c.what;
    Tensor got;
    try {
      got = product(c.a, c.b);
    } catch (const NotImplemented&) {
      throw;
    } catch (const std::exception& error) {
      testing::report_failure(file, line, failure_id, {}, what + " threw: " + error.what());
      return;
    }
    const testing::Comparison result = testing::compare(got, c.expected, c.tolerance, 1e-5);
    if (!result.close) {
      testing::report_failure(
          file, line, failure_id, {},
          what + ": " +
              (result.shapes_match ? result.describe()
                                   : "got shape " + to_string(got.shape()) + ", expected " +
                                         to_string(c.expected.shape())));
      return;
    }
  }
}

}  // namespace

TEST(Layers, Dot) {
  // fast.ai's example: [1, 2, 3]·[2, 3, 4] = 2 + 6 + 12 = 20.
  const float plain = dot(Tensor({3}, {1, 2, 3}), Tensor({3}, {2, 3, 4}));
  KILN_EXPECT(plain == 20.0f, "dot_wrong", {}, "dot([1, 2, 3], [2, 3, 4]) gave " + std::to_string(plain) + ", expected 20");

  // Views: with m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]], row 2 is [7, 8, 9] (stride 1) and column 2
  // is [3, 6, 9] (stride 3): 21 + 48 + 81 = 150. Columns 0 and 1: 1·2 + 4·5 + 7·8 = 78.
  const Tensor m({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const float row_column = dot(row(m, 2), column(m, 2));
  KILN_EXPECT(row_column == 150.0f, "dot_wrong", {},
              "dot(row(m, 2), column(m, 2)) gave " + std::to_string(row_column) + ", expected 150");
  const float columns = dot(column(m, 0), column(m, 1));
  KILN_EXPECT(columns == 78.0f, "dot_wrong", {},
              "dot(column(m, 0), column(m, 1)) gave " + std::to_string(columns) + ", expected 78");

  // 784 products, against a sum in double.
  const Tensor u = random_tensor({784}, 7, -1.0f, 1.0f);
  const Tensor v = random_tensor({784}, 8, -1.0f, 1.0f);
  double expected = 0.0;
  for (std::int64_t p = 0; p < 784; ++p) expected += static_cast<double>(u.at({p})) * v.at({p});
  const float long_dot = dot(u, v);
  KILN_EXPECT(std::abs(long_dot - expected) < 1e-3, "dot_wrong", {},
              "dot of two length-784 vectors gave " + std::to_string(long_dot) + ", expected " + std::to_string(expected));
}

TEST(Layers, MatmulLoops) {
  check_ladder(__FILE__, __LINE__, "matmul_loops", [](const Tensor& a, const Tensor& b) { return matmul_loops(a, b); },
               "loops_wrong");
}

TEST(Layers, MatmulDot) {
  check_ladder(__FILE__, __LINE__, "matmul_dot", [](const Tensor& a, const Tensor& b) { return matmul_dot(a, b); },
               "matmul_dot_wrong");
}

TEST(Layers, MatmulBroadcast) {
  check_ladder(__FILE__, __LINE__, "matmul_broadcast",
               [](const Tensor& a, const Tensor& b) { return matmul_broadcast(a, b); }, "broadcast_wrong");
}

TEST(Layers, MatmulShapeErrors) {
  // (2, 3)·(4, 2): the inner sizes 3 and 4 differ. A 1-D (3) is not a matrix.
  const Tensor left = Tensor::ones({2, 3});
  const Tensor right = Tensor::ones({4, 2});
  const Tensor vector = Tensor::ones({3});
  const Tensor fits = Tensor::ones({3, 2});
  KILN_EXPECT_THROWS(matmul_loops(left, right), ShapeError, "shape_not_reported", {"(2, 3)", "(4, 2)"});
  KILN_EXPECT_THROWS(matmul_dot(left, right), ShapeError, "shape_not_reported", {"(2, 3)", "(4, 2)"});
  KILN_EXPECT_THROWS(matmul_broadcast(left, right), ShapeError, "shape_not_reported", {"(2, 3)", "(4, 2)"});
  KILN_EXPECT_THROWS(matmul_loops(vector, fits), ShapeError, "shape_not_reported", {"(3)", "(3, 2)"});
  KILN_EXPECT_THROWS(matmul_dot(vector, fits), ShapeError, "shape_not_reported", {"(3)", "(3, 2)"});
  KILN_EXPECT_THROWS(matmul_broadcast(vector, fits), ShapeError, "shape_not_reported", {"(3)", "(3, 2)"});
  KILN_EXPECT_THROWS(dot(vector, Tensor::ones({4})), ShapeError, "shape_not_reported", {"(3)", "(4)"});
  KILN_EXPECT_THROWS(dot(vector, fits), ShapeError, "shape_not_reported", {"(3)", "(3, 2)"});
}

}  // namespace kiln
