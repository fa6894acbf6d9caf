// Checks vectorized_matmul, tiled_matmul and the challenge, blocked_matmul.
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/acceleration.h"
#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::compare;
using testing::format_number;

// Trusted: the textbook triple loop, summed in double.
Tensor plain_matmul(const Tensor& a, const Tensor& b) {
  const std::int64_t n = a.shape()[0];
  const std::int64_t inner = a.shape()[1];
  const std::int64_t m = b.shape()[1];
  std::vector<float> c(static_cast<std::size_t>(n * m));
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = 0; j < m; ++j) {
      double total = 0.0;
      for (std::int64_t k = 0; k < inner; ++k) total += static_cast<double>(a.at({i, k})) * b.at({k, j});
      c[static_cast<std::size_t>(i * m + j)] = static_cast<float>(total);
    }
  }
  return Tensor({n, m}, c);
}

TEST(Acceleration, VectorizedMatmul) {
  WichmannHill generator(17);
  const Tensor a = Tensor::rand({4, 5}, generator);
  const Tensor b = Tensor::rand({5, 3}, generator);
  KILN_EXPECT_CLOSE(vectorized_matmul(a, b), plain_matmul(a, b), 1e-5, "products_differ");

  // Transposed views: (4, 5) and (5, 3) matrices whose rows are not contiguous in memory.
  const Tensor a_view = Tensor::rand({5, 4}, generator).transpose(0, 1);
  const Tensor b_view = Tensor::rand({3, 5}, generator).transpose(0, 1);
  const Tensor expected = plain_matmul(a_view, b_view);
  KILN_EXPECT_CLOSE(vectorized_matmul(a_view, b_view), expected, 1e-5, "products_differ");
  try {
    KILN_EXPECT_CLOSE(tiled_matmul(a_view, b_view), expected, 1e-5, "products_differ");
  } catch (const std::logic_error& error) {
    KILN_FAIL("products_differ", {}, std::string("tiled_matmul of two transposed views threw: ") + error.what());
  }

  // (2, 3) by (4, 2): the inner sizes 3 and 4 differ.
  const Tensor left = Tensor::ones({2, 3});
  const Tensor right = Tensor::ones({4, 2});
  KILN_EXPECT_THROWS(vectorized_matmul(left, right), ShapeError, "shape_error_missing", {"(2, 3)", "(4, 2)"});
  KILN_EXPECT_THROWS(tiled_matmul(left, right), ShapeError, "shape_error_missing", {"(2, 3)", "(4, 2)"});
  KILN_EXPECT_THROWS(tiled_matmul(Tensor::ones({3}), right), ShapeError, "shape_error_missing", {"(3)"});
}

TEST(Acceleration, TiledMatmul) {
  WichmannHill generator(1717);
  // (n, inner, m): square, odd sizes no tile divides, tall and thin, a single row and column.
  const std::vector<Shape> sizes{{6, 6, 6}, {5, 7, 3}, {9, 4, 2}, {1, 8, 1}, {3, 1, 4}};
  for (const Shape& size : sizes) {
    const Tensor a = Tensor::rand({size[0], size[1]}, generator);
    const Tensor b = Tensor::rand({size[1], size[2]}, generator);
    const Tensor expected = vectorized_matmul(a, b);
    for (int tile_size : {1, 2, 3, 4, 64}) {
      const Tensor c = tiled_matmul(a, b, tile_size);
      const testing::Comparison result = compare(c, expected, 1e-5);
      if (!result.close) {
        KILN_FAIL("tiles_not_accumulated",
                  {{"difference", format_number(result.max_abs_diff)}, {"where", to_string(result.where)}},
                  fmt::format("tiled_matmul of {} by {} with tile_size {} gave shape {}: {}", to_string(a.shape()),
                              to_string(b.shape()), tile_size, to_string(c.shape()), result.describe()));
        return;
      }
    }
  }
}

// Challenge. The reference blocks C in 6 × 16 register blocks, 96 rows, 256 inner values and 2048
// columns at a time; a student's blocks may differ, so the sizes below cross many boundaries:
// no multiple of 6 or 16 except the (6, 16, 16) case, and 97 rows, 257 inner values and 2049
// columns, one past a block each.
TEST(Acceleration, BlockedMatmul) {
  WichmannHill generator(4242);
  // (n, inner, m)
  const std::vector<Shape> sizes{{1, 1, 1},   {5, 7, 3},     {6, 16, 16}, {13, 37, 35},
                                 {97, 20, 33}, {7, 257, 17}, {3, 5, 2049}};
  for (const Shape& size : sizes) {
    const Tensor a = Tensor::rand({size[0], size[1]}, generator);
    const Tensor b = Tensor::rand({size[1], size[2]}, generator);
    const Tensor expected = vectorized_matmul(a, b);
    const Tensor c = blocked_matmul(a, b);
    const testing::Comparison result = compare(c, expected, 1e-4, 1e-5);
    if (!result.close) {
      KILN_FAIL("blocked_differs",
                {{"difference", format_number(result.max_abs_diff)}, {"where", to_string(result.where)}},
                fmt::format("blocked_matmul of {} by {} gave shape {}: {}", to_string(a.shape()),
                            to_string(b.shape()), to_string(c.shape()), result.describe()));
      return;
    }
  }

  // Transposed views, (13, 37) by (37, 35): their rows are not contiguous in memory.
  const Tensor a_view = Tensor::rand({37, 13}, generator).transpose(0, 1);
  const Tensor b_view = Tensor::rand({35, 37}, generator).transpose(0, 1);
  try {
    KILN_EXPECT_CLOSE(blocked_matmul(a_view, b_view), plain_matmul(a_view, b_view), 1e-4, "blocked_differs");
  } catch (const std::logic_error& error) {
    KILN_FAIL("blocked_differs", {}, std::string("blocked_matmul of two transposed views threw: ") + error.what());
  }

  // (2, 3) by (4, 2): the inner sizes 3 and 4 differ.
  KILN_EXPECT_THROWS(blocked_matmul(Tensor::ones({2, 3}), Tensor::ones({4, 2})), ShapeError, "blocked_shape_error",
                     {"(2, 3)", "(4, 2)"});
}

}  // namespace
}  // namespace kiln
