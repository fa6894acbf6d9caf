// The grader's working context: the course, where the framework lives, and where the grader keeps
// its state (.grader/ in the course root: build directories, progress, backups).
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/grader/build.h"
#include "kiln/grader/course.h"
#include "kiln/grader/report.h"

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

// A student file's stub as committed, read from git (std::nullopt outside a git checkout or when
// the file was never committed). In the instructors' repository (it has solutions/) that is HEAD's
// version, since stubs change with the course; in a student's repository, where students commit
// their own work, it is the version of the commit that added the file (the release).
std::optional<std::string> committed_stub(const Workspace& ws, const fs::path& relative);

// The module's stubs as committed: instructors' commands (verify, release, the judge of grade)
// must not depend on what a working tree holds.
struct PristineStubs {
  fs::path root;                    // holds the student files at their relative paths
  std::vector<std::string> edited;  // the module's student files whose working copy differs
  bool from_git = false;            // false: not a git checkout, the working tree is used as it is
};
PristineStubs pristine_stubs(const Workspace& ws, const Module& m);
// The stubs as committed, on top of the prerequisites' reference solutions: what the judge and
// verify's "no check passes on the stubs" are built from.
TestTarget pristine_target(const Workspace& ws, const Module& m, const PristineStubs& stubs);
// "modules/01_tensor/src/tensor.cpp differs from the committed stub; ..." for a report, or "".
std::string edited_stubs_note(const Module& m, const PristineStubs& stubs, const std::string& what);

// An exclusive lock on a build directory, held while the returned object lives.
std::shared_ptr<void> lock_build_dir(const fs::path& dir);

// Copies the module's student files into a new folder .grader/backups/<module>/<time stamp>,
// which `grader reset N --restore STAMP` puts back; returns the folder.
fs::path back_up(const Workspace& ws, const Module& m);

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
  std::vector<std::string> not_passing;  // the checks that did not pass, by id
  std::vector<std::string> failure_ids;  // the catalogued failures they reported
  // What each check that did not pass said: its status, its summary, and each catalogued failure
  // as its message read (placeholders filled), for `grader hint`.
  struct Said {
    std::string status, summary;
    std::map<std::string, std::string> messages;
  };
  std::map<std::string, Said> said;
};
std::map<std::string, ProgressEntry> load_progress(const Workspace& ws);
void record_progress(const Workspace& ws, const Module& m, const Report& report);
// Forgets what the last check of `m` found (its files were put back: it is not checked yet).
void forget_progress(const Workspace& ws, const Module& m);

}  // namespace kiln::grader
