// The mutator of `grader verify --mutation` (mutation.h): each rule on a small snippet, the text it
// must leave alone, and the fixed order that makes a sample the same every run.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/grader/mutation.h"

namespace kiln::grader {
namespace {

// "line: mutation" of every mutant of `source`, in order, and every mutated program.
std::vector<std::string> mutations(const std::string& source, const std::string& kind = "") {
  std::vector<std::string> out;
  for (const auto& m : generate_mutants("src/a.cpp", source))
    if (kind.empty() || m.kind == kind) out.push_back(std::to_string(m.line) + ": " + m.mutation);
  return out;
}

std::vector<std::string> programs(const std::string& source, const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& m : generate_mutants("src/a.cpp", source))
    if (m.kind == kind) out.push_back(mutated_source(m, source));
  return out;
}

using Strings = std::vector<std::string>;

TEST(Mutator, FlipsEachRelationalOperatorBothWays) {
  const std::string src = "bool f(int a, int b) {\n  return a < b || a <= b || a > b || a >= b || a == b || a != b;\n}\n";
  EXPECT_EQ(mutations(src, "relational"), (Strings{"2: `<` → `<=`", "2: `<=` → `<`", "2: `>` → `>=`", "2: `>=` → `>`",
                                                   "2: `==` → `!=`", "2: `!=` → `==`"}));
  EXPECT_EQ(programs("int f(int a) { return a < 3; }", "relational"), Strings{"int f(int a) { return a <= 3; }"});
}

TEST(Mutator, SwapsBinaryArithmeticButNotUnarySignsPointersOrTemplates) {
  const std::string src =
      "float f(const float* p, std::vector<int> v, float x) {\n"
      "  return -x + *p - x * x / 2.0f + v[0];\n"
      "}\n";
  EXPECT_EQ(mutations(src, "arithmetic"), (Strings{"2: `+` → `-`", "2: `-` → `+`", "2: `*` → `/`", "2: `/` → `*`",
                                                   "2: `+` → `-`"}));
  EXPECT_TRUE(mutations(src, "relational").empty()) << "the < > of std::vector<int> are not comparisons";
}

TEST(Mutator, LeavesJoinedTextAndThrowMessagesAlone) {
  const std::string src =
      "void f(std::string s, int n) {\n"
      "  s = s + \"a + b\";\n"
      "  if (n < 0) throw Error(\"n was \" + std::to_string(n - 1));\n"
      "}\n";
  EXPECT_TRUE(mutations(src, "arithmetic").empty());
  EXPECT_EQ(mutations(src, "relational"), Strings{"3: `<` → `<=`"});
  EXPECT_EQ(mutations(src, "constant"), Strings{"3: `0` → `1`"});
}

TEST(Mutator, TurnsPlusAssignIntoAssign) {
  EXPECT_EQ(programs("void f(float& t, float x) { t += x; t -= x; }", "assignment"),
            Strings{"void f(float& t, float x) { t = x; t -= x; }"});
}

TEST(Mutator, MovesBoundsAndIndicesByOneBothWaysAndOtherConstantsOnce) {
  const std::string src =
      "int f(const int* a) {\n"
      "  int s = 7;\n"
      "  for (int i = 1; i < 10; ++i) s += a[i - 1] * 0.5f;\n"
      "  return s;\n"
      "}\n";
  EXPECT_EQ(mutations(src, "bound"),
            (Strings{"3: `1` → `2`", "3: `1` → `0`", "3: `10` → `11`", "3: `10` → `9`", "3: `1` → `2`", "3: `1` → `0`"}));
  EXPECT_EQ(mutations(src, "constant"), (Strings{"2: `7` → `8`", "3: `0.5f` → `1.0f`"}));
}

TEST(Mutator, ChangesFloatingConstantsByDoublingAndZeroToOne) {
  EXPECT_EQ(mutations("float f() { return 0.0f + 2.5 + 1e-6f; }", "constant"),
            (Strings{"1: `0.0f` → `1.0f`", "1: `2.5` → `5.0`", "1: `1e-6f` → `2e-06f`"}));
}

TEST(Mutator, DeletesWholeStatementsInFunctionBodiesButNotDeclarationsOrReturns) {
  const std::string src =
      "int g = 1;\n"
      "int f(std::vector<float>& v) {\n"
      "  std::vector<float> w(3);\n"
      "  const int n = 2;\n"
      "  v.push_back(1.0f);\n"
      "  total += n;\n"
      "  call(v,\n"
      "       w);\n"
      "  return n;\n"
      "}\n";
  EXPECT_EQ(mutations(src, "statement"),
            (Strings{"5: statement deleted: `v.push_back(1.0f);`", "6: statement deleted: `total += n;`"}));
  const auto out = programs(src, "statement");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].find("total"), std::string::npos);
  EXPECT_EQ(std::count(out[1].begin(), out[1].end(), '\n'), 10) << "line numbers are kept";
}

TEST(Mutator, DeletesAThrowsGuardingCheckWithItsThrow) {
  const std::string src =
      "void f(int n) {\n"
      "  if (n < 0) throw Error(\"negative\");\n"
      "  if (n > 9) {\n"
      "    throw Error(\"large\");\n"
      "  }\n"
      "  if (n == 3) { n = 4; }\n"
      "}\n";
  EXPECT_EQ(mutations(src, "check"),
            (Strings{"2: check deleted: `if (n < 0)` and its throw", "3: check deleted: `if (n > 9)` and its throw"}));
  const auto out = programs(src, "check");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1], "void f(int n) {\n  if (n < 0) throw Error(\"negative\");\n  \n\n\n  if (n == 3) { n = 4; }\n}\n");
}

TEST(Mutator, SwapsTheFirstTwoArgumentsOfACall) {
  const std::string src = "void f(int a, int b) {\n  g(a + 1, b, 3);\n  h(a, a);\n  k(\"x\", a);\n  if (a) m(b);\n}\n";
  EXPECT_EQ(mutations(src, "arguments"), Strings{"2: arguments swapped: `g(a + 1, b)` → `g(b, a + 1)`"});
  EXPECT_NE(programs(src, "arguments")[0].find("\n  g(b, a + 1, 3);\n"), std::string::npos);
}

TEST(Mutator, MakesAStableSortUnstable) {
  EXPECT_EQ(programs("void f(std::vector<int>& v) { std::stable_sort(v.begin(), v.end()); }", "sort"),
            Strings{"void f(std::vector<int>& v) { std::sort(v.begin(), v.end()); }"});
}

TEST(Mutator, NeverTouchesCommentsLiteralsOrPreprocessorLines) {
  const std::string src =
      "#define LIMIT (1 < 2 + 3)\n"
      "#include <vector>\n"
      "// a < b + 1;\n"
      "/* x == y\n   z * 2 */\n"
      "const char* s = \"a < b + 1\";\n"
      "const char* r = R\"(x == 1)\";\n"
      "char c = '<';\n";
  EXPECT_TRUE(mutations(src).empty()) << ::testing::PrintToString(mutations(src));
}

TEST(Mutator, GivesTheSameMutantsInTheSameOrderEveryTime) {
  const std::string src =
      "int f(int a, int b) {\n  if (a < 0) throw E(\"no\");\n  for (int i = 0; i < b; ++i) a += b * 2;\n"
      "  g(a, b);\n  return a;\n}\n";
  const auto first = generate_mutants("src/a.cpp", src);
  const auto again = generate_mutants("src/a.cpp", src);
  ASSERT_EQ(first.size(), again.size());
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].description(), again[i].description());
    if (i > 0) EXPECT_LE(first[i - 1].offset, first[i].offset) << "ordered by position in the file";
  }
  EXPECT_EQ(first.front().description(), "a.cpp:2: check deleted: `if (a < 0)` and its throw");
}

TEST(Mutator, SamplesByAFixedStride) {
  EXPECT_EQ(sample_by_stride(10, 4), (std::vector<std::size_t>{0, 2, 5, 7}));
  EXPECT_EQ(sample_by_stride(3, 5), (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(sample_by_stride(3, 0), (std::vector<std::size_t>{0, 1, 2}));
}

TEST(Mutator, FindsAnEquivalentMutantListedInModuleYaml) {
  Module m;
  m.equivalent_mutants = {{"src/a.cpp", 1, 0, "`<` -> `<=`", "the two agree on every input"},
                          {"src/a.cpp", 1, 99, "`3` -> `4`", "a column no mutant has"}};
  const auto mutants = generate_mutants("src/a.cpp", "bool f(int a) { return a < 3; }");
  ASSERT_FALSE(mutants.empty());
  const EquivalentMutant* e = declared_equivalent(m, mutants[0]);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->reason, "the two agree on every input");
  EXPECT_EQ(declared_equivalent(m, mutants[1]), nullptr) << "the entry's column must match where it gives one";
}

// An entry that names its line by its text still finds the mutant after lines are added above it,
// and does not take the same mutation on another line.
TEST(Mutator, FindsAnEquivalentMutantByTheTextOfItsLine) {
  Module m;
  m.equivalent_mutants = {
      {.file = "src/a.cpp", .mutation = "`<` -> `<=`", .reason = "the two agree on every input", .code = "return a < 3;"}};
  const auto find = [](const std::vector<GeneratedMutant>& mutants) {
    const auto at = std::find_if(mutants.begin(), mutants.end(),
                                 [](const GeneratedMutant& g) { return g.mutation == "`<` → `<=`"; });
    return at == mutants.end() ? GeneratedMutant{} : *at;
  };
  const GeneratedMutant before = find(generate_mutants("src/a.cpp", "bool f(int a) {\n  return a < 3;\n}\n"));
  const GeneratedMutant after =
      find(generate_mutants("src/a.cpp", "// one\n// two\nbool f(int a) {\n  return a < 3;\n}\n"));
  const GeneratedMutant elsewhere = find(generate_mutants("src/a.cpp", "bool f(int a) {\n  return a < 4;\n}\n"));
  EXPECT_EQ(before.line, 2);
  EXPECT_EQ(after.line, 4);
  EXPECT_EQ(before.code, "return a < 3;");
  EXPECT_NE(declared_equivalent(m, before), nullptr);
  EXPECT_NE(declared_equivalent(m, after), nullptr) << "the line moved down two lines";
  EXPECT_EQ(declared_equivalent(m, elsewhere), nullptr) << "another line with the same mutation";
}

// Two lines of the same text: an entry by its text names both (verify refuses that), and one
// that gives its line as well names that line alone.
TEST(Mutator, AnEquivalentMutantOnARepeatedLineNeedsItsLineNumber) {
  const std::string source = "int f(int a) {\n  if (a < 3) a = 0;\n  if (a < 3) a = 0;\n  return a;\n}\n";
  std::vector<GeneratedMutant> both;
  for (const GeneratedMutant& g : generate_mutants("src/a.cpp", source))
    if (g.mutation == "`<` → `<=`") both.push_back(g);
  ASSERT_EQ(both.size(), 2u);
  const EquivalentMutant by_text{.file = "src/a.cpp", .mutation = "`<` -> `<=`", .reason = "r", .code = "if (a < 3) a = 0;"};
  EXPECT_TRUE(names(by_text, both[0]));
  EXPECT_TRUE(names(by_text, both[1]));
  EquivalentMutant by_line = by_text;
  by_line.line = 3;
  EXPECT_FALSE(names(by_line, both[0])) << "line 2";
  EXPECT_TRUE(names(by_line, both[1])) << "line 3";
}

}  // namespace
}  // namespace kiln::grader

namespace kiln::grader {
namespace {

TEST(Mutator, ReadsEquivalentMutantsFromModuleYaml) {
  const Module m = load_module(fs::path(KILN_TEST_DATA) / ".." / "modules" / "02_activations" / "module.yaml");
  ASSERT_FALSE(m.equivalent_mutants.empty());
  for (const auto& e : m.equivalent_mutants) {
    EXPECT_FALSE(e.code.empty()) << "each entry names its line by its text";
    EXPECT_FALSE(e.mutation.empty());
    EXPECT_FALSE(e.reason.empty());
  }
}

}  // namespace
}  // namespace kiln::grader
