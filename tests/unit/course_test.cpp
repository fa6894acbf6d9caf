#include <fstream>

#include <gtest/gtest.h>

#include "kiln/grader/course.h"
#include "kiln/grader/report.h"
#include "kiln/grader/runner.h"

namespace kiln::grader {
namespace {

// A throwaway course folder with one module whose module.yaml is `yaml`.
class CourseFolder {
 public:
  explicit CourseFolder(const std::string& yaml, const std::string& folder = "01_probe") {
    root_ = fs::temp_directory_path() / fs::path("kiln-course-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(root_);
    fs::create_directories(root_ / "modules" / folder / "src");
    std::ofstream(root_ / "modules" / folder / "src" / "probe.cpp") << "// stub\n";
    std::ofstream(root_ / "modules" / folder / "module.yaml") << yaml;
  }
  ~CourseFolder() { fs::remove_all(root_); }
  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
  static inline int counter_ = 0;
};

const char* kValid = R"(number: 1
slug: probe
title: Probe
requires: []
student_files: [src/probe.cpp]
checks:
  - id: adds
    test: Probe.Adds
    points: 2
    description: adds
    failures:
      - {id: wrong_sum, message: "add should be {want}", hint: "add"}
)";

std::string error_of(const std::string& yaml) {
  CourseFolder folder(yaml);
  try {
    load_course(folder.root());
  } catch (const CourseError& e) {
    return e.what();
  }
  return "";
}

TEST(CourseLoading, ReadsEveryFieldOfAValidModule) {
  CourseFolder folder(kValid);
  const Course course = load_course(folder.root());
  ASSERT_EQ(course.modules.size(), 1u);
  const Module& m = course.modules[0];
  EXPECT_EQ(m.name(), "01_probe");
  EXPECT_EQ(m.max_points(), 2);
  ASSERT_NE(m.check("adds"), nullptr);
  EXPECT_EQ(m.check("adds")->failure("wrong_sum")->message, "add should be {want}");
}

TEST(CourseLoading, FindsModulesByNumberFolderAndSlug) {
  CourseFolder folder(kValid);
  const Course course = load_course(folder.root());
  for (const char* name : {"1", "01", "001", "01_probe", "probe"}) EXPECT_EQ(course.find(name).number, 1) << name;
  try {
    course.find("tensor");
    FAIL() << "an unknown module must be an error";
  } catch (const CourseError& e) {
    EXPECT_NE(std::string(e.what()).find("01_probe"), std::string::npos) << "the error lists the modules";
  }
}

// A test that names a failure the catalogue does not have: the slip is the author's, and the
// report says so, with the nearest catalogued id.
TEST(ReportUnknownFailure, SaysTheIdIsNotCataloguedAndSuggestsTheNearest) {
  CourseFolder folder(kValid);
  const Course course = load_course(folder.root());
  const Module& m = course.modules[0];
  CheckResult result{.check = m.check("adds"), .status = Status::failed};
  result.failures.push_back(ReportedFailure{.id = "wrong_sun"});
  const RunResult run{.checks = {result}};
  const Report report = make_report(course, m, {m.check("adds")}, BuildResult{.ok = true}, &run, "student");
  ASSERT_EQ(report.checks.size(), 1u);
  ASSERT_FALSE(report.checks[0].messages.empty());
  EXPECT_NE(report.checks[0].messages[0].find("the test reported the failure 'wrong_sun', which is not in 01_probe's "
                                              "module.yaml (did you mean 'wrong_sum'?)"),
            std::string::npos)
      << report.checks[0].messages[0];
}

TEST(CourseLoading, ReportsInvalidYamlWithFileAndLine) {
  const std::string error = error_of("number: 1\nslug: probe\ntitle: [unclosed\n");
  EXPECT_NE(error.find("module.yaml:"), std::string::npos) << error;
  EXPECT_NE(error.find("not valid YAML"), std::string::npos) << error;
}

TEST(CourseLoading, ReportsAMissingFieldWithItsName) {
  std::string yaml = kValid;
  yaml.replace(yaml.find("title: Probe\n"), 13, "");
  const std::string error = error_of(yaml);
  EXPECT_NE(error.find("missing required field 'title'"), std::string::npos) << error;
  EXPECT_NE(error.find("module.yaml:1:"), std::string::npos) << error;
}

TEST(CourseLoading, ReportsAWrongTypeAtItsLine) {
  std::string yaml = kValid;
  yaml.replace(yaml.find("points: 2"), 9, "points: many");
  const std::string error = error_of(yaml);
  EXPECT_NE(error.find("module.yaml:9:"), std::string::npos) << error;
  EXPECT_NE(error.find("'points' should be a whole number"), std::string::npos) << error;
}

TEST(CourseLoading, RejectsDuplicateFailureIdsAndMissingStudentFiles) {
  std::string dup = kValid;
  dup += "  - id: again\n    test: Probe.Again\n    points: 1\n    description: d\n    failures:\n"
         "      - {id: wrong_sum, message: m, hint: h}\n";
  EXPECT_NE(error_of(dup).find("failure id 'wrong_sum' is used twice"), std::string::npos);
  std::string missing = kValid;
  missing.replace(missing.find("src/probe.cpp"), 13, "src/absent.cpp");
  EXPECT_NE(error_of(missing).find("'src/absent.cpp' does not exist"), std::string::npos);
}

TEST(CourseLoading, ReadsPromisesAndRejectsOneHeldByNoCheckOfTheModule) {
  std::string yaml = std::string(kValid) +
                     "promises:\n"
                     "  - function: add\n"
                     "    promise: returns the sum of its two arguments\n"
                     "    checks: [adds]\n";
  CourseFolder folder(yaml);
  const Course course = load_course(folder.root());
  ASSERT_EQ(course.modules[0].promises.size(), 1u);
  const Promise& p = course.modules[0].promises[0];
  EXPECT_EQ(p.function, "add");
  EXPECT_EQ(p.checks, std::vector<std::string>{"adds"});
  EXPECT_EQ(p.line, 14);
  std::string unknown = yaml;
  unknown.replace(unknown.find("checks: [adds]"), 14, "checks: [subtracts]");
  const std::string error = error_of(unknown);
  EXPECT_NE(error.find("promise of add names the check 'subtracts', which this module does not have"),
            std::string::npos) << error;
  EXPECT_NE(error.find("module.yaml:16"), std::string::npos) << error;
  std::string none = yaml;
  none.replace(none.find("checks: [adds]"), 14, "checks: []");
  EXPECT_NE(error_of(none).find("at least one check"), std::string::npos);
}

TEST(CourseLoading, RejectsAFolderThatDoesNotMatchNumberAndSlug) {
  CourseFolder folder(kValid, "02_probe");
  EXPECT_THROW(load_course(folder.root()), CourseError);
}

TEST(CourseLoading, RejectsPrerequisitesThatAreMissingOrLater) {
  std::string yaml = kValid;
  yaml.replace(yaml.find("requires: []"), 12, "requires: [7]");
  EXPECT_NE(error_of(yaml).find("requires module 07"), std::string::npos);
}

TEST(CourseLoading, ReadsDeviceChecksAndRequiresTheirCudaPart) {
  std::string yaml = kValid;
  yaml.replace(yaml.find("student_files: [src/probe.cpp]"), 30,
               "student_files: [src/probe.cpp]\ndevice_files: [src/probe.cpp]");
  yaml += "  - id: on_gpu\n    test: ProbeDevice.Adds\n    points: 0\n    device: true\n    description: d\n";
  // Without device/*.cu and device/tests/ the module cannot build its device checks: it says what is missing.
  EXPECT_NE(error_of(yaml).find("device/tests/*.cpp"), std::string::npos) << error_of(yaml);

  CourseFolder folder(yaml);
  const fs::path module = folder.root() / "modules" / "01_probe";
  fs::create_directories(module / "device" / "tests");
  std::ofstream(module / "device" / "launch.cu") << "// launchers\n";
  std::ofstream(module / "device" / "tests" / "probe_device_test.cpp") << "// checks\n";
  const Course course = load_course(folder.root());
  const Module& m = course.modules.front();
  EXPECT_TRUE(m.has_device_checks());
  EXPECT_FALSE(m.check("adds")->device);
  EXPECT_TRUE(m.check("on_gpu")->device);
  EXPECT_EQ(m.device_files, std::vector<std::string>{"src/probe.cpp"});
  ASSERT_EQ(m.device_sources().size(), 1u);
  EXPECT_EQ(m.device_sources().front().filename(), "launch.cu");
  ASSERT_EQ(m.device_test_sources().size(), 1u);
  // The device part is not compiled into the host build: src/ and tests/ do not list it.
  EXPECT_TRUE(m.test_sources().empty());
}

TEST(CourseLoading, RejectsADeviceFileThatIsNotAStudentFile) {
  std::string yaml = kValid;
  yaml.replace(yaml.find("student_files: [src/probe.cpp]"), 30,
               "student_files: [src/probe.cpp]\ndevice_files: [src/other.cpp]");
  EXPECT_NE(error_of(yaml).find("device file 'src/other.cpp' is not one of the student_files"), std::string::npos);
  std::string flag = kValid;
  flag += "  - id: on_gpu\n    test: P.G\n    points: 0\n    device: maybe\n    description: d\n";
  EXPECT_NE(error_of(flag).find("'device' should be true or false"), std::string::npos) << error_of(flag);
}

// tier and difficulty take only the values the site draws: a slip names the file, its line, the
// field, the value and what it may be.
TEST(CourseLoading, RejectsATierOrDifficultyOutsideTheirValues) {
  std::string tier = kValid;
  tier.replace(tier.find("requires: []"), 12, "requires: []\ntier: optimisation\ndifficulty: 2");
  const std::string tier_error = error_of(tier);
  for (const char* part : {"module.yaml:5:", "'tier'", "'optimisation'", "foundation, architecture, optimization, capstone"})
    EXPECT_NE(tier_error.find(part), std::string::npos) << part << " in: " << tier_error;

  for (const char* value : {"0", "5"}) {
    std::string difficulty = kValid;
    difficulty.replace(difficulty.find("requires: []"), 12, std::string("requires: []\ntier: capstone\ndifficulty: ") + value);
    const std::string error = error_of(difficulty);
    for (const std::string part : {std::string("module.yaml:6:"), std::string("'difficulty' is ") + value, std::string("1, 2, 3, 4")})
      EXPECT_NE(error.find(part), std::string::npos) << part << " in: " << error;
  }

  std::string valid = kValid;
  valid.replace(valid.find("requires: []"), 12, "requires: []\ntier: architecture\ndifficulty: 4");
  EXPECT_EQ(error_of(valid), "");
}

// A file in solutions/NN_slug/src that no student file names is never built: verify names it.
TEST(StraySolutionFiles, NamesEveryFileInTheReferenceSourcesThatIsNotAStudentFile) {
  CourseFolder folder(kValid);
  const Course without = load_course(folder.root());
  EXPECT_TRUE(stray_solution_files(without, without.modules.front()).empty()) << "no solutions/: nothing to name";

  const fs::path src = folder.root() / "solutions" / "01_probe" / "src";
  fs::create_directories(src / "detail");
  std::ofstream(src / "probe.cpp") << "// the reference\n";
  EXPECT_TRUE(stray_solution_files(without, without.modules.front()).empty());
  std::ofstream(src / "helpers.cpp") << "// forgotten in student_files\n";
  std::ofstream(src / "detail" / "table.h") << "// also\n";
  fs::create_directories(folder.root() / "solutions" / "01_probe" / "mutants");
  std::ofstream(folder.root() / "solutions" / "01_probe" / "mutants" / "m.yaml") << "description: d\n";
  const Course course = load_course(folder.root());
  EXPECT_EQ(stray_solution_files(course, course.modules.front()),
            (std::vector<std::string>{"solutions/01_probe/src/detail/table.h", "solutions/01_probe/src/helpers.cpp"}));
}

}  // namespace
}  // namespace kiln::grader
