// Building module test binaries for a source variant (the student's files, the reference
// solutions, a mutant, a submission) in one incremental CMake + Ninja build directory.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/grader/course.h"

namespace kiln::grader {

// Where one module's student files come from in a variant.
struct SourceSet {
  std::string name;   // "student", "solution", "mutant_<id>"; part of the target names
  fs::path root;      // the folder holding the module's student files at their relative paths
};

// A test binary to build: module `module`'s tests linked against `module` from `own` and each
// prerequisite from `base` (its student files under base_root/NN_slug/).
struct TestTarget {
  const Module* module = nullptr;
  SourceSet own;
  std::string base_name;  // source-set name of the prerequisites
  fs::path base_root;     // modules/ or solutions/: the prerequisites' files at NN_slug/<file>
  // Also build the device checks' binary, where the module has device checks and nvcc exists.
  // Off when none of the checks asked for is a device check.
  bool with_device = true;
  // Also build the sanitized twin (AddressSanitizer and UndefinedBehaviorSanitizer).
  bool with_sanitized = false;
  // The observed program (kiln/testing.h): the checks with their judging compiled out, as `grade`
  // runs a submission. Its binaries' names end in __observed.
  bool observer = false;
  // A mutant of the reference (base "solution"): its files that equal the reference's are not
  // compiled again; its library takes the reference library's objects for them.
  bool reuses_reference_objects = false;
  std::string target_name() const;  // t_17_acceleration__student
  std::string sanitized_name() const;  // s_17_acceleration__student
  std::string bench_name() const;   // b_17_acceleration__student (modules with bench/ only)
  std::string device_name() const;  // d_17_acceleration__student (device checks; where nvcc exists)
  std::string gpu_bench_name() const;  // g_17_acceleration__student (device/bench; where nvcc exists)
};

// A compiler or linker error, boiled down to what a student needs.
struct Diagnostic {
  fs::path file;        // empty for a linker error
  int line = 0;
  int column = 0;
  std::string message;       // the compiler's first error
  std::string explanation;   // plain words: what it usually means
  std::string source_line;   // the offending line of code
  bool in_student_file = false;
  // The compiler's notes on this error that explain it ("deduced conflicting types for parameter
  // 'const _Tp' ('long int' and 'int')"), without the candidate lists around them.
  std::vector<std::string> notes;
};

struct BuildResult {
  bool ok = false;
  fs::path binary;
  bool observed = false;              // the observed program: its checks' judging compiled out
  std::string log;                    // the build's full output
  std::optional<Diagnostic> error;    // when !ok
  std::vector<std::string> commands;  // the exact commands run, for -v
  // The device checks' binary, when the module has device checks and nvcc built it. When it is
  // empty, device_error says why: no CUDA Toolkit, or the compile error for the device.
  fs::path device_binary;
  std::optional<Diagnostic> device_error;
  std::string device_skip_reason;  // why the device checks were not built, when they were not
  // The sanitized twin of `binary`, when it was asked for and built.
  fs::path sanitized_binary;
  // The command that linked `binary` and the folder it ran in, and the student's own object files
  // in it: what grading reads to see what the student's code calls (grading.h, forbidden_calls).
  std::string link_command;
  fs::path link_dir;
  std::vector<fs::path> student_objects;
};

class CourseBuild {
 public:
  // dir: the build directory (for example .grader/build/check); kiln_home: the folder holding the
  // framework's CMakeLists.txt (the grader's own checkout).
  CourseBuild(const Course& course, fs::path dir, fs::path kiln_home, std::string cxx_flags = "-O1");

  // Builds the wanted target's binary (configuring first if needed). Only what changed is rebuilt.
  BuildResult build(const std::vector<TestTarget>& all_targets, const TestTarget& wanted);

  // Builds several test binaries (and their device binaries) in one Ninja run that keeps going past
  // failures; one result per wanted target.
  std::vector<BuildResult> build_many(const std::vector<TestTarget>& all_targets,
                                      const std::vector<TestTarget>& wanted);

  // Writes the build description and configures when needed. False (with the log) on failure.
  bool prepare(const std::vector<TestTarget>& all_targets, BuildResult& result);

  // Builds the named Ninja targets (libraries, object libraries). False on failure.
  bool build_named(const std::vector<TestTarget>& all_targets, const std::vector<std::string>& names,
                   BuildResult& result);

  // The name of the library target of module m from a source set: lib_01_tensor__student.
  static std::string library_target(const Module& m, const std::string& source_set);

  const fs::path& dir() const { return dir_; }
  // The build of the test library (grader/testing) that this build links: one per set of flags,
  // under the course's .grader/build/testing-<hash>/, shared by every build directory with them.
  fs::path testing_dir() const;
  // A program of given code linked with module libraries of this build (a milestone's trainer):
  // built by name with build_named().
  struct Program {
    std::string name;
    std::vector<fs::path> sources;
    std::vector<fs::path> include_dirs;
    std::vector<std::string> libraries;  // library_target() names, the highest module first
  };
  void add_program(Program program) { programs_.push_back(std::move(program)); }
  // nvcc, when this build compiles the modules' device parts.
  const fs::path& nvcc() const { return nvcc_; }
  // Whether build() and build_many() also build the device checks' binaries where nvcc exists
  // (true). A student's check turns this off when the machine has no GPU: nvcc costs seconds per
  // edit of a kernel file, for checks that could only be skipped.
  void set_device_builds(bool on) { device_builds_ = on; }

 private:
  std::vector<Program> programs_;
  std::string cmake_description(const std::vector<TestTarget>& targets) const;
  // Configures (once) and brings up to date the shared build of the test library.
  bool build_testing(BuildResult& result);

  const Course& course_;
  fs::path dir_;
  fs::path kiln_home_;
  std::string cxx_flags_;
  fs::path nvcc_;
  bool device_builds_ = true;
};

// Parses compiler output; prefers the first error in one of `student_files`.
std::optional<Diagnostic> first_error(const std::string& log, const std::vector<fs::path>& student_files);

}  // namespace kiln::grader
