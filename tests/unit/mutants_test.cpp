#include <gtest/gtest.h>

#include "kiln/grader/mutants.h"

namespace kiln::grader {
namespace {

TEST(ApplyMutant, ReplacesTheOneOccurrence) {
  Mutant m{.replace = "+=", .with = "="};
  EXPECT_EQ(apply_mutant(m, "c += a * b;"), "c = a * b;");
}

TEST(ApplyMutant, RefusesTextThatIsMissingOrAmbiguous) {
  Mutant m{.file = "src/x.cpp", .replace = "+=", .with = "="};
  EXPECT_THROW(apply_mutant(m, "c = a;"), CourseError);
  EXPECT_THROW(apply_mutant(m, "c += a; d += b;"), CourseError);
}

TEST(LoadMutants, ChecksEveryMutantAgainstTheCatalogue) {
  const Course course = load_course(fs::path(KILN_TEST_DATA) / "fixtures" / "probe");
  const auto mutants = load_mutants(course, course.find("probe"));
  EXPECT_EQ(mutants.size(), 5u);
  for (const auto& m : mutants) EXPECT_NE(course.find("probe").check(m.check)->failure(m.failure), nullptr);
}

}  // namespace
}  // namespace kiln::grader
