// grader new-module: the template it writes loads as a module whose one mutant applies to its
// reference, and every refusal says why before anything is written. (`grader verify` of the
// written module, which builds it, is tried by following docs/authoring.md's walk-through.)
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kiln/grader/mutants.h"
#include "kiln/grader/new_module.h"

namespace kiln::grader {
namespace {

// The framework, for its templates: the tests' folder is KILN_TEST_DATA, inside it.
const fs::path kHome = fs::path(KILN_TEST_DATA).parent_path();

std::string read(const fs::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A throwaway instructors' course: module 01 (tensor) and module 03 (no prerequisites), solutions/.
class InstructorCourse {
 public:
  InstructorCourse() {
    root_ = fs::temp_directory_path() / ("kiln-new-module-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(root_);
    add(1, "tensor", "[]");
    add(3, "layers", "[]");
    fs::create_directories(root_ / "solutions");
  }
  ~InstructorCourse() { fs::remove_all(root_); }
  const fs::path& root() const { return root_; }
  Course course() const { return load_course(root_); }

 private:
  void add(int number, const std::string& slug, const std::string& requires_) {
    const fs::path dir = root_ / "modules" / fmt::format("{:02d}_{}", number, slug);
    fs::create_directories(dir / "src");
    fs::create_directories(dir / "include" / "kiln");
    std::ofstream(dir / "include" / "kiln" / (slug + ".h")) << "#pragma once\n";
    std::ofstream(dir / "src" / (slug + ".cpp")) << "// stub\n";
    std::ofstream(dir / "module.yaml") << fmt::format(
        "number: {}\nslug: {}\ntitle: T\nrequires: {}\nstudent_files: [src/{}.cpp]\n"
        "checks:\n  - {{id: c, test: S.C, points: 1, description: d}}\n",
        number, slug, requires_, slug);
  }
  fs::path root_;
  static inline int counter_ = 0;
};

std::string refusal(const InstructorCourse& folder, const NewModule& spec) {
  try {
    write_new_module(folder.course(), kHome, spec);
  } catch (const CourseError& e) {
    return e.what();
  }
  return "";
}

TEST(NewModule, WritesATemplateThatLoadsWithItsOneCheckFailureAndMutant) {
  InstructorCourse folder;
  const auto written = write_new_module(folder.course(), kHome, {.number = 21, .slug = "flash_attention"});
  EXPECT_EQ(written.size(), 7u);
  for (const auto& f : written) EXPECT_TRUE(fs::exists(folder.root() / f)) << f;

  const Course course = folder.course();
  const Module& m = course.find("21");
  EXPECT_EQ(m.name(), "21_flash_attention");
  EXPECT_EQ(m.title, "Flash attention");
  EXPECT_EQ(m.tier, "foundation");
  EXPECT_EQ(m.requires_, std::vector<int>{1});
  EXPECT_EQ(m.student_files, std::vector<std::string>{"src/flash_attention.cpp"});
  ASSERT_EQ(m.checks.size(), 1u);
  EXPECT_EQ(m.checks[0].test, "FlashAttention.Scale");
  ASSERT_EQ(m.checks[0].failures.size(), 1u);
  EXPECT_TRUE(stray_solution_files(course, m).empty());

  // The test implements the check and names its failure; the stub throws; the mutant's text is in
  // the reference exactly once, and the reference with it applied differs.
  const std::string test = read(m.dir / "tests" / "flash_attention_test.cpp");
  EXPECT_NE(test.find("TEST(FlashAttention, Scale)"), std::string::npos) << test;
  EXPECT_NE(test.find("\"" + m.checks[0].failures[0].id + "\""), std::string::npos) << test;
  EXPECT_NE(test.find("KILN_OBSERVE(flash_attention_scale("), std::string::npos) << test;
  EXPECT_NE(read(m.dir / "src" / "flash_attention.cpp").find("throw kiln::NotImplemented();"), std::string::npos);
  const auto mutants = load_mutants(course, m);
  ASSERT_EQ(mutants.size(), 1u);
  const std::string reference = read(course.solution_dir(m) / "src" / "flash_attention.cpp");
  EXPECT_NE(apply_mutant(mutants[0], reference), reference);
  for (const auto& f : written) EXPECT_EQ(read(folder.root() / f).find('@'), std::string::npos) << "a placeholder left in " << f;
}

TEST(NewModule, KeepsAChapterThatIsAlreadyWritten) {
  InstructorCourse folder;
  fs::create_directories(folder.root() / "docs");
  std::ofstream(folder.root() / "docs" / "21_demo.md") << "# 21 · Demo, written first\n";
  const auto written = write_new_module(folder.course(), kHome, {.number = 21, .slug = "demo", .tier = "capstone"});
  EXPECT_EQ(written.size(), 6u);
  EXPECT_EQ(read(folder.root() / "docs" / "21_demo.md"), "# 21 · Demo, written first\n");
  EXPECT_EQ(folder.course().find("demo").tier, "capstone");
}

TEST(NewModule, RefusesATakenNumberOrFolderABadSlugOrAMissingPrerequisite) {
  InstructorCourse folder;
  const std::vector<std::pair<NewModule, std::vector<std::string>>> cases = {
      {{.number = 3, .slug = "demo"}, {"module number 03 is taken by 03_layers"}},
      {{.number = 0, .slug = "demo"}, {"not from 1 to 99"}},
      {{.number = 21, .slug = "Demo"}, {"slug 'Demo' is not a lower-case identifier"}},
      {{.number = 21, .slug = "2fast"}, {"slug '2fast'"}},
      {{.number = 21, .slug = "a-b"}, {"slug 'a-b'"}},
      {{.number = 21, .slug = "a__b"}, {"slug 'a__b'"}},
      {{.number = 21, .slug = "layers"}, {"slug 'layers' is taken by 03_layers"}},
      {{.number = 21, .slug = "testing"}, {"kiln/testing.h", "grader/testing/include/kiln/testing.h"}},
      {{.number = 21, .slug = "demo", .tier = "expert"}, {"tier 'expert' is not one of: foundation"}},
      {{.number = 21, .slug = "demo", .requires_ = {1, 5}}, {"prerequisite 05 is not in this course"}},
      {{.number = 2, .slug = "demo", .requires_ = {3}}, {"prerequisite 03_layers comes after module 02"}},
      {{.number = 21, .slug = "demo", .requires_ = {3}}, {"module 01's Tensor", "do not reach 01_tensor"}},
      {{.number = 21, .slug = "demo", .title = "A \"quoted\" title"}, {"holds a quote"}},
  };
  for (const auto& [spec, parts] : cases) {
    const std::string error = refusal(folder, spec);
    for (const auto& part : parts) EXPECT_NE(error.find(part), std::string::npos) << part << " in: " << error;
  }
  // A folder of the number, even without a module.yaml, in modules/ or in solutions/.
  for (const char* folder_name : {"modules/21_draft", "solutions/21_draft"}) {
    fs::create_directories(folder.root() / folder_name);
    EXPECT_NE(refusal(folder, {.number = 21, .slug = "demo"}).find(std::string(folder_name) + " already exists"),
              std::string::npos)
        << refusal(folder, {.number = 21, .slug = "demo"});
    fs::remove_all(folder.root() / folder_name);
  }
  // Nothing was written by any refusal.
  EXPECT_FALSE(fs::exists(folder.root() / "modules" / "21_demo"));
  EXPECT_FALSE(fs::exists(folder.root() / "solutions" / "21_demo"));
  EXPECT_FALSE(fs::exists(folder.root() / "docs"));

  // A student release has no solutions/ to write the reference into.
  fs::remove_all(folder.root() / "solutions");
  EXPECT_NE(refusal(folder, {.number = 21, .slug = "demo"}).find("not in a student release"), std::string::npos);
}

}  // namespace
}  // namespace kiln::grader
