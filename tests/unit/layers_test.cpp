// The grader is a house of floors (docs/authoring.md, "How the grader is built"): a file includes
// only from its own floor or the floors below. This reads every include of the grader's sources.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

enum Floor { kCourse, kRun, kReport, kWorkspace, kGrading, kCli };

const char* floor_name(int f) {
  static const char* names[] = {"course", "build and run", "report", "workspace", "grading", "cli"};
  return names[f];
}

// A header's floor, by its name in kiln/grader/.
int header_floor(const std::string& header) {
  static const std::map<std::string, int> floors = {
      {"course.h", kCourse},      {"mutants.h", kCourse},     {"leaks.h", kCourse},       {"new_module.h", kCourse},
      {"process.h", kRun},        {"sandbox.h", kRun},        {"cuda.h", kRun},           {"diagnose.h", kRun},
      {"build.h", kRun},          {"recipe.h", kRun},         {"runner.h", kRun},         {"judge.h", kRun},
      {"speed.h", kRun},          {"report.h", kReport},      {"workspace.h", kWorkspace}, {"grading.h", kGrading},
      {"mutation.h", kGrading},
      {"bench.h", kGrading},      {"milestone.h", kGrading},  {"site.h", kGrading},       {"commands.h", kCli}};
  const auto it = floors.find(header);
  return it == floors.end() ? -1 : it->second;
}

// A source file's floor, by its folder under grader/src (or grader/cli).
int source_floor(const fs::path& file) {
  static const std::map<std::string, int> floors = {
      {"course", kCourse},   {"build", kRun},         {"run", kRun},         {"report", kReport},
      {"workspace", kWorkspace}, {"grading", kGrading}, {"bench", kGrading}, {"milestone", kGrading},
      {"site", kGrading},    {"cli", kCli}};
  const auto it = floors.find(file.parent_path().filename().string());
  return it == floors.end() ? -1 : it->second;
}

TEST(GraderLayers, NoFileIncludesFromAFloorAboveItsOwn) {
  const fs::path grader = fs::path(KILN_TEST_DATA) / ".." / "grader";
  const std::regex include(R"(#include\s+"kiln/grader/([a-z_]+\.h)\")");
  int files = 0;
  std::vector<std::string> upward;
  for (const auto& entry : fs::recursive_directory_iterator(grader)) {
    const fs::path path = entry.path();
    if (path.extension() != ".cpp" && path.extension() != ".h") continue;
    const std::string rel = fs::relative(path, grader).generic_string();
    if (rel.rfind("testing/", 0) == 0 || rel.rfind("bench/", 0) == 0 || rel.rfind("templates/", 0) == 0) continue;
    const int own = rel.rfind("include/", 0) == 0 ? header_floor(path.filename().string()) : source_floor(path);
    ASSERT_GE(own, 0) << rel << " is on no floor: give it one here and in docs/authoring.md";
    ++files;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const std::string source = text.str();
    for (std::sregex_iterator m(source.begin(), source.end(), include), end; m != end; ++m) {
      const int theirs = header_floor((*m)[1]);
      ASSERT_GE(theirs, 0) << rel << " includes kiln/grader/" << (*m)[1] << ", which is on no floor";
      if (theirs > own)
        upward.push_back(rel + " (" + floor_name(own) + ") includes " + std::string((*m)[1]) + " (" +
                         floor_name(theirs) + ")");
    }
  }
  EXPECT_GT(files, 40) << "the grader's sources were not found under " << grader;
  for (const auto& u : upward) ADD_FAILURE() << u;
}

}  // namespace
