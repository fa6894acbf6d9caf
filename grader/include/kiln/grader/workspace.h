// The grader's working context: the course, where the framework lives, and where the grader keeps
// its state (.grader/ in the course root: build directories, progress, backups).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kiln/grader/build.h"
#include "kiln/grader/course.h"
#include "kiln/grader/report.h"
#include "kiln/grader/runner.h"

namespace kiln::grader {

struct Workspace {
  Course course;
  fs::path kiln_home;  // the framework: CMakeLists.txt, cmake/, grader/

  fs::path state_dir() const { return course.root / ".grader"; }
  fs::path build_dir(const std::string& purpose) const { return state_dir() / "build" / purpose; }
};

// Loads the course around `start` (or KILN_ROOT); kiln_home from KILN_HOME or the course root.
Workspace open_workspace(const fs::path& start);

// Instructor-only commands stop here, saying so plainly, in a student release (no solutions/).
void require_solutions(const Workspace& ws, const std::string& command);

// The student's own files (modules/), and the reference solutions (solutions/).
TestTarget student_target(const Course& course, const Module& m);
TestTarget solution_target(const Course& course, const Module& m);
// Both for every module (solutions only where the course has them): the set a check build knows.
std::vector<TestTarget> standard_targets(const Course& course);

struct GradeOptions {
  std::vector<std::string> only_checks;  // check ids; empty = all
  RunOptions run;
  // Build the device checks only where a GPU is visible (a student's check), instead of wherever
  // nvcc exists (verify, which proves the CUDA source compiles).
  bool device_builds_need_a_device = false;
};

// Builds `target` within `build_dir` (which knows `all_targets`), runs the checks, makes the
// report. Holds a lock on the build directory while it builds and runs.
Report grade_target(const Workspace& ws, const fs::path& build_dir, const std::vector<TestTarget>& all_targets,
                    const TestTarget& target, const GradeOptions& options, const std::string& variant);

// A fingerprint of the module's student files in a source set: it changes when any of them does.
std::string fingerprint(const Module& m, const fs::path& root);

// .grader/progress.json
struct ProgressEntry {
  int score = 0;
  int max_score = 0;
  int passed = 0;
  int total = 0;
  bool all_passed = false;
  std::string fingerprint;
  std::string checked_at;
};
std::map<std::string, ProgressEntry> load_progress(const Workspace& ws);
void record_progress(const Workspace& ws, const Module& m, const Report& report);

}  // namespace kiln::grader
