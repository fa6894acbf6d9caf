// The course's sources word module 17's five catalogued failures; its checks must carry each
// sentence verbatim, and a planted mutant must fire each one. The sentences come from a copy in
// tests/fixtures/sources (a fresh clone has nothing outside the repository), which is held to the
// sources themselves, ../shared/sources beside the repository, wherever they are reachable.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "kiln/grader/course.h"
#include "kiln/grader/mutants.h"

namespace kiln::grader {
namespace {

const fs::path kTests = KILN_TEST_DATA;
const fs::path kFixture = kTests / "fixtures" / "sources" / "module-17-failures.md";
const fs::path kSources = kTests.parent_path().parent_path() / "shared" / "sources" / "tinytorch-module-17-acceleration.md";

// The text between backticks of every line that is one `quoted sentence` and nothing else; in the
// sources' page, only those of its "When it fails" section.
std::vector<std::string> quoted_sentences(const fs::path& file, bool only_when_it_fails) {
  std::ifstream in(file);
  std::vector<std::string> sentences;
  bool inside = !only_when_it_fails;
  for (std::string line; std::getline(in, line);) {
    if (only_when_it_fails && line.rfind("## ", 0) == 0) inside = line == "## When it fails";
    if (!inside || line.size() < 3 || line.front() != '`' || line.back() != '`' || line.rfind("```", 0) == 0) continue;
    sentences.push_back(line.substr(1, line.size() - 2));
  }
  return sentences;
}

// The sentence as a catalogued message writes it: "..." is the {difference} the check fills in.
std::string as_message(std::string sentence) {
  if (const auto dots = sentence.find("..."); dots != std::string::npos) sentence.replace(dots, 3, "{difference}");
  return sentence;
}

TEST(CourseSources, TheFixtureHoldsTheSourcesFiveSentences) {
  const auto fixture = quoted_sentences(kFixture, false);
  ASSERT_EQ(fixture.size(), 5u) << kFixture;
  if (!fs::exists(kSources)) GTEST_SKIP() << "the sources are not beside this repository: " << kSources;
  EXPECT_EQ(fixture, quoted_sentences(kSources, true)) << kFixture << " no longer matches " << kSources;
}

TEST(CourseSources, Module17CataloguesEverySentenceVerbatimAndAMutantFiresIt) {
  const Course course = load_course(kTests.parent_path());
  const Module& m = course.find("17");
  const auto mutants = load_mutants(course, m);
  for (const auto& sentence : quoted_sentences(kFixture, false)) {
    const std::string wanted = as_message(sentence);
    std::vector<std::pair<std::string, std::string>> found;  // check, failure
    for (const auto& c : m.checks)
      for (const auto& f : c.failures)
        if (f.message.find(wanted) != std::string::npos) found.emplace_back(c.id, f.id);
    ASSERT_FALSE(found.empty()) << "no catalogued message of module 17 carries \"" << wanted << "\"";
    for (const auto& [check, failure] : found) {
      const bool planted = std::any_of(mutants.begin(), mutants.end(), [&](const Mutant& mutant) {
        return mutant.check == check && mutant.failure == failure;
      });
      EXPECT_TRUE(planted) << check << "/" << failure << " (\"" << wanted << "\") has no mutant in "
                           << course.mutants_dir(m);
    }
  }
}

}  // namespace
}  // namespace kiln::grader
