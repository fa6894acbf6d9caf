// grader release on the real course: the release holds no solution code and grader check works
// inside it; a solution body planted in the course is caught and no release is written.
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/build.h"
#include "kiln/grader/leaks.h"
#include "kiln/grader/process.h"

namespace kiln::grader {
namespace {

const fs::path kHome = KILN_HOME_DIR;

ProcessResult grader(const fs::path& home, const fs::path& root, std::vector<std::string> args) {
  args.insert(args.begin(), {KILN_GRADER, "--root", root.string()});
  return run_process({.argv = args, .env = {{"KILN_HOME", home.string()}, {"NO_COLOR", "1"}}, .output_cap = 4 << 20});
}

fs::path temp(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("kiln-release-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(p);
  return p;
}

// The body of `function` in a reference solution file, as it stands there.
std::string body_of(const fs::path& file, const std::string& function) {
  const std::string text = read_file(file);
  const auto start = text.find('{', text.find(function + "("));
  int depth = 0;
  for (std::size_t i = start; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return text.substr(start, i - start + 1);
  }
  return "";
}

TEST(Release, HoldsNoSolutionAndGraderCheckWorksInsideIt) {
  const fs::path out = temp("out");
  const ProcessResult r = grader(kHome, kHome, {"release", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("No solution code in it"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out / "solutions"));
  EXPECT_FALSE(fs::exists(out / "tests"));
  EXPECT_TRUE(fs::exists(out / ".github" / "workflows" / "kiln.yml"));
  EXPECT_TRUE(fs::exists(out / "modules" / "17_acceleration" / "module.yaml"));
  // Its README is for students: the commands they run, nothing of the instructors' tools.
  const std::string readme = read_file(out / "README.md");
  EXPECT_NE(readme.find("grader check"), std::string::npos);
  for (const char* instructor_only : {"bin/test", "grader verify", "--solution", "solutions/"})
    EXPECT_EQ(readme.find(instructor_only), std::string::npos) << instructor_only << " in the student README";

  // Instructor commands say what they need.
  const ProcessResult verify = grader(out, out, {"verify", "17"});
  EXPECT_EQ(verify.exit_code, 2);
  EXPECT_NE(verify.err.find("instructor repository"), std::string::npos) << verify.err;

  // The release builds and grades module 17 on its own: every check reads "not written yet".
  const ProcessResult check = grader(out, out, {"check", "17", "--format", "json"});
  EXPECT_EQ(check.exit_code, 1) << check.err;
  const auto report = nlohmann::json::parse(check.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << check.out << check.err;
  EXPECT_GE(report["checks"].size(), 7u);
  for (const auto& c : report["checks"]) {
    // A device check is skipped where there is no GPU (or no nvcc), and reads "not written yet" where there is.
    if (c.value("device", false) && c["status"] == "skipped") continue;
    EXPECT_EQ(c["status"], "not_written") << c;
  }
  ASSERT_FALSE(report["notes"].empty()) << "module 17 says that its prerequisites fail";
  EXPECT_NE(report["notes"][0].get<std::string>().find("grader check 01"), std::string::npos) << report["notes"];
  fs::remove_all(out);
}

TEST(Release, APlantedSolutionBodyIsCaughtAndNothingIsWritten) {
  const fs::path course = temp("course");
  fs::create_directories(course);
  for (const char* dir : {"modules", "solutions", "docs"})
    fs::copy(kHome / dir, course / dir, fs::copy_options::recursive);
  const fs::path reference = kHome / "solutions" / "17_acceleration" / "src" / "acceleration.cpp";
  const std::string body = body_of(reference, "Tensor fused_gelu");
  ASSERT_GT(tokenize(body).size(), 12u);
  // Reformatted and commented, as it might be pasted into a chapter: still the same tokens.
  std::string pasted = "\n```cpp\n// an example\n";
  for (char c : body) pasted += c == '\n' ? std::string("\n    ") : std::string(1, c);
  std::ofstream(course / "docs" / "17_acceleration.md", std::ios::app) << pasted << "\n```\n";

  const fs::path out = temp("leaky");
  const ProcessResult r = grader(kHome, course, {"release", out.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("fused_gelu"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("docs/17_acceleration.md"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out)) << "no release is left behind";
  fs::remove_all(course);
}

// A module written and committed in the instructors' repository: the committed stub is the
// solution, and the refusal says that this is the cause.
TEST(Release, ACommittedWrittenStubIsNamedAsTheCause) {
  const fs::path course = temp("committed");
  fs::create_directories(course);
  for (const char* dir : {"modules", "solutions", "docs"})
    fs::copy(kHome / dir, course / dir, fs::copy_options::recursive);
  fs::copy_file(kHome / "solutions" / "01_tensor" / "src" / "tensor.cpp",
                course / "modules" / "01_tensor" / "src" / "tensor.cpp", fs::copy_options::overwrite_existing);
  const std::string git = "git -C " + course.string();
  ASSERT_EQ(std::system((git + " init -q && " + git + " add -A && " + git +
                         " -c user.name=k -c user.email=k@k commit -qm course").c_str()),
            0);
  const fs::path out = temp("committed-out");
  const ProcessResult r = grader(kHome, course, {"release", out.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("modules/01_tensor/src/tensor.cpp, a student file as committed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a stub committed to the course holds the reference solution's code"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(course);
}

}  // namespace
}  // namespace kiln::grader
