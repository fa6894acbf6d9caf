// Checks of module 01: kiln::Tensor. One TEST per check in module.yaml; every failure names a
// catalogued failure id. Values come from fast.ai's "matrix multiplication from foundations"
// (m = 1..9, c = 10, 20, 30, a and b) or are worked out by hand in the comments.
//
// Views in these tests are built with make_view (given) wherever the check is not about the
// function that would normally make them, so that each check depends on as little as possible.
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/testing.h"

namespace kiln {
namespace {

using testing::report_failure;

std::string list(const std::vector<float>& values) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << ']';
  return out.str();
}

// Reports `failure` unless t's elements, in row-major order, are within tol (relative to the
// expected value, at least 1e-6 absolute) of `expected`. The shape is not compared: checks that
// care about the shape test it under their own failure.
bool expect_values(const char* file, int line, const Tensor& t, const std::vector<float>& expected,
                   std::string_view failure) {
  const std::vector<float> got = t.to_vector();
  bool close = got.size() == expected.size();
  for (std::size_t i = 0; close && i < got.size(); ++i) {
    close = std::fabs(got[i] - expected[i]) <= 1e-6 + 1e-5 * std::fabs(expected[i]);
  }
  if (!close) {
    report_failure(file, line, failure, {}, "got " + list(got) + ", expected " + list(expected));
  }
  return close;
}
// EXPECT_VALUES(tensor, {values...}, failure): variadic so that the braces may hold commas.
#define EXPECT_VALUES(tensor, ...) expect_values(__FILE__, __LINE__, (tensor), __VA_ARGS__)

// Reports `failure` unless t has the expected shape.
bool expect_shape(const char* file, int line, const Tensor& t, const Shape& expected,
                  std::string_view failure) {
  if (t.shape() == expected) return true;
  report_failure(file, line, failure, {{"shape", to_string(t.shape())}},
                 "got shape " + to_string(t.shape()) + ", expected " + to_string(expected));
  return false;
}
#define EXPECT_SHAPE(tensor, expected, failure) expect_shape(__FILE__, __LINE__, (tensor), expected, failure)

// Runs f, which should not throw. A kiln or standard error becomes `failure` (and nullopt); an
// unwritten stub's NotImplemented passes through so the check reads "not written yet".
template <class F>
std::optional<Tensor> attempt(const char* file, int line, F&& f, std::string_view failure) {
  try {
    return f();
  } catch (const NotImplemented&) {
    throw;
  } catch (const std::exception& error) {
    report_failure(file, line, failure, {}, std::string("unexpected error: ") + error.what());
    return std::nullopt;
  }
}
#define ATTEMPT(expression, failure) attempt(__FILE__, __LINE__, [&] { return (expression); }, failure)

// m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]] and c = [10, 20, 30], as in the source notebook.
Tensor m_matrix() { return Tensor({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}); }
Tensor c_vector() { return Tensor({3}, {10, 20, 30}); }
// x = [[0, 1, 2], [3, 4, 5]]: storage position equals value, so a wrong position shows at once.
Tensor x_matrix() { return Tensor({2, 3}, {0, 1, 2, 3, 4, 5}); }

TEST(Tensor, Strides) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 3, 4}, {12, 4, 1}}, {{2, 3}, {3, 1}}, {{5}, {1}}, {{}, {}},
      {{4, 1, 3}, {3, 3, 1}},  {{2, 2, 2, 2}, {8, 4, 2, 1}},
  };
  for (const auto& [shape, expected] : cases) {
    const Shape got = contiguous_strides(shape);
    KILN_EXPECT(got == expected, "strides_not_row_major", {{"shape", to_string(shape)}},
                "contiguous_strides" + to_string(shape) + " gave " + to_string(got) + ", expected " +
                    to_string(expected));
  }
  // The constructor stores them.
  const Tensor t({2, 3, 4}, std::vector<float>(24, 0.0f));
  KILN_EXPECT(t.strides() == Shape({12, 4, 1}), "strides_not_row_major", {{"shape", "(2, 3, 4)"}},
              "Tensor((2, 3, 4), ...) has strides " + to_string(t.strides()) + ", expected (12, 4, 1)");
}

TEST(Tensor, ElementAccess) {
  Tensor x = x_matrix();
  KILN_EXPECT(x.at({1, 2}) == 5.0f && x.at({0, 1}) == 1.0f && x.at({1, 0}) == 3.0f, "wrong_element", {},
              "x = [[0, 1, 2], [3, 4, 5]]: x.at({1, 2}) gave " + std::to_string(x.at({1, 2})));
  // Views with an offset: the second row (offset 3), and the middle column (offset 1, stride 3).
  const Tensor row = make_view(x, {3}, {1}, 3);
  Tensor column = make_view(x, {2}, {3}, 1);
  KILN_EXPECT(row.at({2}) == 5.0f && row.at({0}) == 3.0f, "wrong_element", {},
              "the row view (shape (3), stride 1, offset 3) gave row.at({2}) = " + std::to_string(row.at({2})) +
                  ", expected 5");
  KILN_EXPECT(column.at({1}) == 4.0f, "wrong_element", {},
              "the column view (shape (2), stride 3, offset 1) gave column.at({1}) = " +
                  std::to_string(column.at({1})) + ", expected 4");
  // set writes the shared storage: a write through the view shows in x and the other way round.
  x.set({1, 0}, 42.0f);
  KILN_EXPECT(x.at({1, 0}) == 42.0f && row.at({0}) == 42.0f, "wrong_element", {},
              "after x.set({1, 0}, 42): x.at({1, 0}) = " + std::to_string(x.at({1, 0})) + ", row.at({0}) = " +
                  std::to_string(row.at({0})));
  column.set({0}, 7.0f);
  KILN_EXPECT(x.at({0, 1}) == 7.0f, "wrong_element", {},
              "after column.set({0}, 7): x.at({0, 1}) = " + std::to_string(x.at({0, 1})) + ", expected 7");

  for (const Shape& bad : {Shape{2, 0}, Shape{0, 3}, Shape{-1, 0}, Shape{0}, Shape{0, 0, 0}}) {
    KILN_EXPECT_THROWS(x.at(bad), IndexError, "index_not_checked");
  }
  KILN_EXPECT_THROWS(x.set({0, 3}, 1.0f), IndexError, "index_not_checked");
  KILN_EXPECT_THROWS(row.at({3}), IndexError, "index_not_checked");
}

TEST(Tensor, ToVectorOfView) {
  const Tensor x = x_matrix();
  const std::vector<std::pair<std::string, std::pair<Tensor, std::vector<float>>>> cases = {
      {"x itself", {x, {0, 1, 2, 3, 4, 5}}},
      {"the transpose of x: shape (3, 2), strides (1, 3)", {make_view(x, {3, 2}, {1, 3}, 0), {0, 3, 1, 4, 2, 5}}},
      {"the last two columns: shape (2, 2), strides (3, 1), offset 1",
       {make_view(x, {2, 2}, {3, 1}, 1), {1, 2, 4, 5}}},
      {"the second row repeated: shape (2, 3), strides (0, 1), offset 3",
       {make_view(x, {2, 3}, {0, 1}, 3), {3, 4, 5, 3, 4, 5}}},
      {"the single element 4: shape (), offset 4", {make_view(x, {}, {}, 4), {4}}},
  };
  for (const auto& [what, view_and_values] : cases) {
    const auto& [view, expected] = view_and_values;
    const std::vector<float> got = view.to_vector();
    KILN_EXPECT(got == expected, "view_order_wrong", {},
                what + ": got " + list(got) + ", expected " + list(expected));
  }
}

TEST(Tensor, Reshape) {
  const Tensor x = x_matrix();
  if (auto y = ATTEMPT(x.reshape({3, 2}), "reshape_wrong_values")) {
    EXPECT_SHAPE(*y, Shape({3, 2}), "reshape_wrong_values");
    EXPECT_VALUES(*y, {0, 1, 2, 3, 4, 5}, "reshape_wrong_values");
  }
  // One -1 is inferred from the element count: 6 / 3 = 2, 6 / 1 = 6.
  const std::vector<std::pair<Shape, Shape>> inferred = {
      {{3, -1}, {3, 2}}, {{-1}, {6}}, {{1, -1}, {1, 6}}, {{-1, 3}, {2, 3}}};
  for (const auto& [request, expected] : inferred) {
    if (auto y = ATTEMPT(x.reshape(request), "reshape_not_inferred")) {
      EXPECT_SHAPE(*y, expected, "reshape_not_inferred");
    }
  }
  // A non-contiguous view: the transpose [[0, 3], [1, 4], [2, 5]] flattens to its own row-major
  // order, not to the storage order.
  const Tensor xt = make_view(x, {3, 2}, {1, 3}, 0);
  if (auto flat = ATTEMPT(xt.reshape({6}), "reshape_wrong_values")) {
    EXPECT_VALUES(*flat, {0, 3, 1, 4, 2, 5}, "reshape_wrong_values");
  }
  if (auto y = ATTEMPT(xt.reshape({2, 3}), "reshape_wrong_values")) {
    EXPECT_VALUES(*y, {0, 3, 1, 4, 2, 5}, "reshape_wrong_values");
  }
  KILN_EXPECT_THROWS(x.reshape({4}), ShapeError, "reshape_count_not_checked", {"(2, 3)", "(4)"});
  KILN_EXPECT_THROWS(x.reshape({4, -1}), ShapeError, "reshape_count_not_checked", {"(2, 3)"});
  KILN_EXPECT_THROWS(x.reshape({2, 2, 2}), ShapeError, "reshape_count_not_checked", {"(2, 3)", "(2, 2, 2)"});
}

TEST(Tensor, Transpose) {
  Tensor x = x_matrix();
  for (const auto& [dim0, dim1] : {std::pair<int, int>{0, 1}, {1, 0}, {-1, -2}, {0, -1}}) {
    const Tensor t = x.transpose(dim0, dim1);
    const std::string call = "x.transpose(" + std::to_string(dim0) + ", " + std::to_string(dim1) + ")";
    const bool layout_ok = t.shape() == Shape({3, 2}) && t.strides() == Shape({1, 3});
    KILN_EXPECT(layout_ok, "transpose_wrong", {},
                call + " has shape " + to_string(t.shape()) + " and strides " + to_string(t.strides()) +
                    ", expected (3, 2) and (1, 3)");
    if (!layout_ok) continue;
    bool values_ok = true;
    for (std::int64_t i = 0; i < 2; ++i) {
      for (std::int64_t j = 0; j < 3; ++j) values_ok = values_ok && t.at({j, i}) == x.at({i, j});
    }
    KILN_EXPECT(values_ok, "transpose_wrong", {}, call + ".at({j, i}) should equal x.at({i, j})");
  }
  const Tensor same = x.transpose(1, 1);
  KILN_EXPECT(same.shape() == x.shape() && same.strides() == x.strides(), "transpose_wrong", {},
              "x.transpose(1, 1) should change nothing, got strides " + to_string(same.strides()));
  // A view: a write through the transpose shows in x.
  Tensor t = x.transpose(0, 1);
  if (t.shape() == Shape({3, 2}) && t.strides() == Shape({1, 3})) {
    t.set({2, 0}, 9.0f);
    KILN_EXPECT(x.at({0, 2}) == 9.0f, "transpose_wrong", {},
                "after t.set({2, 0}, 9) on t = x.transpose(0, 1), x.at({0, 2}) = " + std::to_string(x.at({0, 2})) +
                    ": the transpose should share x's storage");
  }

  for (const auto& [dim0, dim1] : {std::pair<int, int>{0, 2}, {2, 0}, {-3, 0}, {0, -3}}) {
    KILN_EXPECT_THROWS(x.transpose(dim0, dim1), IndexError, "transpose_dim_not_checked");
  }
}

TEST(Tensor, Unsqueeze) {
  const Tensor c = c_vector();
  const Tensor row = c.unsqueeze(0);  // c[None, :]
  const Tensor column = c.unsqueeze(1);  // c[:, None]
  EXPECT_SHAPE(row, Shape({1, 3}), "unsqueeze_wrong_shape");
  EXPECT_SHAPE(column, Shape({3, 1}), "unsqueeze_wrong_shape");
  if (row.shape() == Shape({1, 3}) && column.shape() == Shape({3, 1})) {
    for (std::int64_t i = 0; i < 3; ++i) {
      KILN_EXPECT(row.at({0, i}) == c.at({i}) && column.at({i, 0}) == c.at({i}), "unsqueeze_wrong_shape", {},
                  "c.unsqueeze(0).at({0, i}) and c.unsqueeze(1).at({i, 0}) should both be c.at({i})");
    }
  }
  // In the middle of a matrix: (2, 3) -> (2, 1, 3); and a scalar becomes shape (1).
  const Tensor x = x_matrix();
  const Tensor middle = x.unsqueeze(1);
  if (EXPECT_SHAPE(middle, Shape({2, 1, 3}), "unsqueeze_wrong_shape")) {
    KILN_EXPECT(middle.at({1, 0, 2}) == 5.0f && middle.at({0, 0, 1}) == 1.0f, "unsqueeze_wrong_shape", {},
                "x.unsqueeze(1).at({1, 0, 2}) should be x.at({1, 2}) = 5, got " +
                    std::to_string(middle.at({1, 0, 2})));
  }
  EXPECT_SHAPE(x.unsqueeze(2), Shape({2, 3, 1}), "unsqueeze_wrong_shape");
  EXPECT_SHAPE(Tensor::scalar(4.0f).unsqueeze(0), Shape({1}), "unsqueeze_wrong_shape");

  KILN_EXPECT_THROWS(c.unsqueeze(2), IndexError, "unsqueeze_dim_not_checked");
  KILN_EXPECT_THROWS(x.unsqueeze(5), IndexError, "unsqueeze_dim_not_checked");
}

TEST(Tensor, ExpandIsAView) {
  Tensor c = c_vector();
  // c.expand_as(m): a new leading dimension with stride 0, so every row reads the same 3 floats.
  const Tensor rows = c.expand({3, 3});
  KILN_EXPECT(rows.shape() == Shape({3, 3}) && rows.strides() == Shape({0, 1}), "expand_not_a_view", {},
              "c.expand({3, 3}) has shape " + to_string(rows.shape()) + " and strides " +
                  to_string(rows.strides()) + ", expected (3, 3) and (0, 1)");
  // c[:, None] (shape (3, 1), strides (1, 1)) grows its size-1 dimension: stride 0 there.
  const Tensor column = make_view(c, {3, 1}, {1, 1}, 0);
  const Tensor columns = column.expand({3, 3});
  KILN_EXPECT(columns.shape() == Shape({3, 3}) && columns.strides() == Shape({1, 0}), "expand_not_a_view", {},
              "c[:, None].expand({3, 3}) has shape " + to_string(columns.shape()) + " and strides " +
                  to_string(columns.strides()) + ", expected (3, 3) and (1, 0)");
  const Tensor everywhere = Tensor::scalar(2.0f).expand({2, 2});
  KILN_EXPECT(everywhere.strides() == Shape({0, 0}), "expand_not_a_view", {},
              "a scalar expanded to (2, 2) has strides " + to_string(everywhere.strides()) + ", expected (0, 0)");
  // Nothing is copied: a write to c shows in both expansions.
  c.set({1}, 99.0f);
  if (rows.shape() == Shape({3, 3}) && columns.shape() == Shape({3, 3})) {
    KILN_EXPECT(rows.at({2, 1}) == 99.0f && columns.at({1, 2}) == 99.0f && columns.at({2, 0}) == 30.0f,
                "expand_not_a_view", {},
                "after c.set({1}, 99): rows.at({2, 1}) = " + std::to_string(rows.at({2, 1})) +
                    ", columns.at({1, 2}) = " + std::to_string(columns.at({1, 2})) + "; both should read 99");
  }

  KILN_EXPECT_THROWS(c.expand({3, 2}), ShapeError, "expand_shape_error", {"(3)", "(3, 2)"});
  KILN_EXPECT_THROWS(x_matrix().expand({4, 3}), ShapeError, "expand_shape_error", {"(2, 3)", "(4, 3)"});
  KILN_EXPECT_THROWS(x_matrix().expand({3}), ShapeError, "expand_shape_error", {"(2, 3)", "(3)"});
}

TEST(Tensor, BroadcastShapes) {
  struct Case {
    Shape a, b, expected;
  };
  const std::vector<Case> cases = {
      {{256, 256, 3}, {3}, {256, 256, 3}},  // an image times one scale per colour channel
      {{3}, {256, 256, 3}, {256, 256, 3}},
      {{3, 1}, {1, 3}, {3, 3}},             // c[:, None] with c[None, :]
      {{3, 3}, {3}, {3, 3}},
      {{5}, {}, {5}},                       // a scalar broadcasts to anything
      {{}, {}, {}},
      {{8, 1, 6, 1}, {7, 1, 5}, {8, 7, 6, 5}},
      {{0, 3}, {1, 3}, {0, 3}},             // a 1 stretches to any size, 0 included
  };
  for (const Case& c : cases) {
    const Shape got = broadcast_shapes(c.a, c.b);
    KILN_EXPECT(got == c.expected, "broadcast_rule_wrong", {{"a", to_string(c.a)}, {"b", to_string(c.b)}},
                "broadcast_shapes(" + to_string(c.a) + ", " + to_string(c.b) + ") gave " + to_string(got) +
                    ", expected " + to_string(c.expected));
  }
  KILN_EXPECT_THROWS(broadcast_shapes({2, 3}, {4}), ShapeError, "broadcast_error_missing", {"(2, 3)", "(4)"});
  KILN_EXPECT_THROWS(broadcast_shapes({3}, {4}), ShapeError, "broadcast_error_missing", {"(3)", "(4)"});
  KILN_EXPECT_THROWS(broadcast_shapes({2, 1}, {8, 4, 3}), ShapeError, "broadcast_error_missing",
                     {"(2, 1)", "(8, 4, 3)"});
}

TEST(Tensor, ElementwiseBroadcasting) {
  // Same shapes, every operation: a = [10, 6, -4], b = [2, 8, 7]; d shares two values with a.
  const Tensor a({3}, {10, 6, -4});
  const Tensor b({3}, {2, 8, 7});
  const Tensor d({3}, {10, 0, -4});
  EXPECT_VALUES(a + b, {12, 14, 3}, "elementwise_wrong_op");
  EXPECT_VALUES(a - b, {8, -2, -11}, "elementwise_wrong_op");
  EXPECT_VALUES(a * b, {20, 48, -28}, "elementwise_wrong_op");
  EXPECT_VALUES(a / b, {5, 0.75f, -4.0f / 7.0f}, "elementwise_wrong_op");
  EXPECT_VALUES(less(a, b), {0, 1, 1}, "elementwise_wrong_op");
  EXPECT_VALUES(less(d, a), {0, 1, 0}, "elementwise_wrong_op");
  EXPECT_VALUES(greater(a, b), {1, 0, 0}, "elementwise_wrong_op");
  EXPECT_VALUES(greater(a, d), {0, 1, 0}, "elementwise_wrong_op");
  EXPECT_VALUES(equal(a, d), {1, 0, 1}, "elementwise_wrong_op");

  // Broadcasting, with the notebook's m and c. Views are made by hand: c[:, None] has shape (3, 1)
  // and strides (1, 1); c[None, :] has shape (1, 3) and strides (3, 1).
  const Tensor m = m_matrix();
  const Tensor c = c_vector();
  const Tensor c_column = make_view(c, {3, 1}, {1, 1}, 0);
  const Tensor c_row = make_view(c, {1, 3}, {3, 1}, 0);
  const std::string id = "elementwise_wrong_values";
  const Tensor sum_rows = m + c;
  EXPECT_SHAPE(sum_rows, Shape({3, 3}), id);
  EXPECT_VALUES(sum_rows, {11, 22, 33, 14, 25, 36, 17, 28, 39}, id);
  KILN_EXPECT(sum_rows.is_contiguous(), id, {}, "the result should be a fresh contiguous tensor");
  EXPECT_VALUES(c + m, {11, 22, 33, 14, 25, 36, 17, 28, 39}, id);
  EXPECT_VALUES(m + c_column, {11, 12, 13, 24, 25, 26, 37, 38, 39}, id);
  const Tensor outer = c_row * c_column;
  EXPECT_SHAPE(outer, Shape({3, 3}), id);
  EXPECT_VALUES(outer, {100, 200, 300, 200, 400, 600, 300, 600, 900}, id);
  EXPECT_VALUES(greater(c_row, c_column), {0, 1, 1, 0, 0, 1, 0, 0, 0}, id);
  // With float scalars (the given operators wrap them as shape-() tensors).
  EXPECT_VALUES(2.0f * m, {2, 4, 6, 8, 10, 12, 14, 16, 18}, id);
  EXPECT_VALUES(a + 1.0f, {11, 7, -3}, id);
  EXPECT_VALUES(greater(a, Tensor::scalar(0.0f)), {1, 1, 0}, id);
  const Tensor five = Tensor::scalar(2.0f) + Tensor::scalar(3.0f);
  EXPECT_SHAPE(five, Shape({}), id);
  EXPECT_VALUES(five, {5}, id);
  // Inputs that are views: the transpose of m, and the last row of m (offset 6).
  const Tensor m_transposed = make_view(m, {3, 3}, {1, 3}, 0);
  EXPECT_VALUES(m_transposed + c, {11, 24, 37, 12, 25, 38, 13, 26, 39}, id);
  const Tensor last_row = make_view(m, {3}, {1}, 6);
  EXPECT_VALUES(last_row + c, {17, 28, 39}, id);
  EXPECT_VALUES(last_row - c_column, {-3, -2, -1, -13, -12, -11, -23, -22, -21}, id);
}

TEST(Tensor, SumAndMean) {
  const Tensor m = m_matrix();
  const Tensor x = x_matrix();  // [[0, 1, 2], [3, 4, 5]]
  const std::string values = "reduce_wrong_values";
  const std::string shape = "reduce_wrong_shape";
  EXPECT_VALUES(m.sum(0), {12, 15, 18}, values);
  EXPECT_SHAPE(m.sum(0), Shape({3}), shape);
  EXPECT_VALUES(m.sum(1), {6, 15, 24}, values);
  EXPECT_VALUES(m.sum(-1), {6, 15, 24}, values);
  EXPECT_VALUES(x.sum(0), {3, 5, 7}, values);
  EXPECT_VALUES(x.sum(1), {3, 12}, values);
  EXPECT_SHAPE(x.sum(1), Shape({2}), shape);
  EXPECT_VALUES(x.sum(0, true), {3, 5, 7}, values);
  EXPECT_SHAPE(x.sum(0, true), Shape({1, 3}), shape);
  EXPECT_SHAPE(x.sum(1, true), Shape({2, 1}), shape);
  EXPECT_VALUES(m.mean(1), {2, 5, 8}, values);
  EXPECT_VALUES(x.mean(-1), {1, 4}, values);
  EXPECT_VALUES(x.mean(0, true), {1.5f, 2.5f, 3.5f}, values);
  EXPECT_SHAPE(x.mean(0, true), Shape({1, 3}), shape);
  // The notebook's (a < b).float().mean(): two of three are true.
  const Tensor hits({3}, {0, 1, 1});
  EXPECT_VALUES(hits.mean(0), {2.0f / 3.0f}, values);
  EXPECT_SHAPE(hits.mean(0), Shape({}), shape);
  // A non-contiguous input: the transpose of x is [[0, 3], [1, 4], [2, 5]].
  const Tensor xt = make_view(x, {3, 2}, {1, 3}, 0);
  EXPECT_VALUES(xt.sum(0), {3, 12}, values);
  EXPECT_VALUES(xt.sum(1), {3, 5, 7}, values);
  // All elements.
  EXPECT_VALUES(m.sum(), {45}, values);
  EXPECT_SHAPE(m.sum(), Shape({}), shape);
  EXPECT_VALUES(xt.sum(), {15}, values);

  KILN_EXPECT_THROWS(m.sum(2), IndexError, "reduce_dim_not_checked");
  KILN_EXPECT_THROWS(m.sum(-3), IndexError, "reduce_dim_not_checked");
  KILN_EXPECT_THROWS(m.mean(2), IndexError, "reduce_dim_not_checked");
}

TEST(Tensor, FrobeniusNorm) {
  struct Case {
    std::string what;
    Tensor t;
    float expected;
  };
  const Tensor m = m_matrix();
  const Tensor ones_and_twos({3}, {1, 2, 2});
  const std::vector<Case> cases = {
      {"m = [[1, 2, 3], [4, 5, 6], [7, 8, 9]] (sum of squares 285)", m, std::sqrt(285.0f)},
      {"[3, 4]", Tensor({2}, {3, 4}), 5.0f},
      {"the transpose of m", make_view(m, {3, 3}, {1, 3}, 0), std::sqrt(285.0f)},
      {"[1, 2, 2] repeated in 2 rows by stride 0", make_view(ones_and_twos, {2, 3}, {0, 1}, 0), std::sqrt(18.0f)},
      {"the scalar -2", Tensor::scalar(-2.0f), 2.0f},
  };
  for (const Case& c : cases) {
    const float got = c.t.norm();
    KILN_EXPECT(std::fabs(got - c.expected) <= 1e-5f * c.expected, "norm_wrong", {},
                "norm of " + c.what + ": got " + std::to_string(got) + ", expected " + std::to_string(c.expected));
  }
}

}  // namespace
}  // namespace kiln
