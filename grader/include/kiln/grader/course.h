// The course as data: every module.yaml, loaded and checked.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::grader {

namespace fs = std::filesystem;

// A mistake in the course's own files (a malformed module.yaml, an unknown module name): what was
// wrong, where, and what to do. Reported as a message, never as a crash.
class CourseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Writes `content` to `path` only when it differs, so build tools see no change otherwise.
// Returns whether it wrote.
bool write_if_changed(const fs::path& path, const std::string& content);

std::string read_file(const fs::path& path);

struct Failure {
  std::string id;
  std::string message;  // may hold {placeholders}
  std::string hint;
};

enum class Visibility { visible, after_due_date, hidden };

// A check whose points also depend on speed (`speed:` in module.yaml). Once its results are
// right, the student's kernel is timed beside the reference's, in the same run and out of
// process: rounds alternate the two programs, each calling the kernel on fresh inputs, and the
// grader takes their CPU time from the kernel's accounting, never from the programs themselves.
// Every result of a timed run is checked by trusted code before its time counts. A program's time
// is its fastest round less the fastest empty run (the machine's other work only adds time). The
// points go by the ratio of the two: all at full_at times the reference's time or less, none at
// zero_at or more, and between, 1 - ln(ratio/full_at)/ln(zero_at/full_at) of them, rounded to whole points.
struct Speed {
  double full_at = 1.2;
  double zero_at = 10.0;
  int rounds = 5;   // timed rounds, each running both programs
  int calls = 3;    // kernel calls per timed run, each on fresh inputs
};

struct Check {
  std::string id;
  std::string test;  // GoogleTest Suite.Name
  int points = 1;
  std::string description;
  Visibility visibility = Visibility::visible;
  double timeout_s = 10.0;
  // A device check runs on a CUDA device, from the module's device/tests. Without a device (or
  // without nvcc) it is skipped, saying why, and counts as neither passed nor failed.
  bool device = false;
  std::vector<Failure> failures;
  std::optional<Speed> speed;
  // Checks of the same module that this one builds on (`needs:`, declared before it): when one of
  // them does not pass, this one's own failure would only repeat it, and it reads "skipped: fix
  // X first" instead.
  std::vector<std::string> needs;

  const Failure* failure(const std::string& failure_id) const;
};

// A generated mutant (`grader verify --mutation`, mutation.h) that behaves as the reference does, so
// no check could kill it: listed in module.yaml's `equivalent_mutants:` with why, and not counted.
struct EquivalentMutant {
  std::string file;      // a student file ("src/tensor.cpp")
  int line = 0;          // 0: any line whose text is `code`; else this line only (the text of two
                         // lines can be the same)
  int column = 0;        // 0: any; else picks one of several mutants with the same line and mutation
  std::string mutation;  // as verify prints it: "`<` → `<=`"
  std::string reason;    // one line: why no program can tell the two apart
  std::string code;      // the text of the mutant's line (blanks around it ignored): found wherever
                         // the line moves when the lines above it change
};

// One promise a student's function makes (`promises:` in module.yaml): what its header, stub
// comment or chapter says it does, and the checks that hold a submission to it.
struct Promise {
  std::string function;             // "matmul"
  std::string promise;              // "raises ShapeError naming both shapes when the inner sizes differ"
  std::vector<std::string> checks;  // check ids of the same module
  int line = 0;                     // in module.yaml
};

struct Module {
  int number = 0;
  std::string slug;
  std::string title;
  std::string subtitle;
  std::string tier;
  int difficulty = 1;
  std::string hours;
  std::vector<int> requires_;  // direct prerequisites, by number
  std::vector<std::string> objectives;
  std::vector<std::string> student_files;  // relative to the module folder
  // The student files that hold kernels: compiled by nvcc too, for the device checks.
  std::vector<std::string> device_files;
  // What the module's student files may not use (`forbids:`): calls whose demangled name starts
  // with `symbol` ("kiln::matmul("), headers whose path holds it ("eigen3/"), and why.
  struct Forbidden {
    std::string symbol;
    std::string reason;  // "this module asks you to write yourself"
  };
  std::vector<Forbidden> forbidden_calls, forbidden_includes;
  // Trusted functions the observed program may hold because they only make inputs (`observed_inputs:`):
  // demangled names that hold `symbol`, and why. `grader verify` reads every other trusted name
  // in that program as a leak.
  std::vector<Forbidden> observed_inputs;
  // System libraries the module's code links, by the names the course knows (`links: [zlib]`).
  std::vector<std::string> links;
  std::vector<Check> checks;
  std::vector<EquivalentMutant> equivalent_mutants;
  std::vector<Promise> promises;
  fs::path dir;       // modules/NN_slug
  fs::path yaml;      // modules/NN_slug/module.yaml

  std::string name() const;  // "01_tensor"
  std::string number_text() const;  // "01"
  int max_points() const;
  const Check* check(const std::string& check_id) const;
  // Files in src/ that are not student files: complete code students receive.
  std::vector<fs::path> given_sources() const;
  std::vector<fs::path> test_sources() const;
  // bench/*.cpp: the given code that registers the module's kernels for `grader bench`.
  std::vector<fs::path> bench_sources() const;

  // device/: the module's CUDA part, built only where nvcc exists.
  //   device/*.cu        given CUDA code, compiled by nvcc in one translation unit with the
  //                      module's student files (so it launches the student's kernels)
  //   device/tests/*.cpp the device checks (GoogleTest, compiled by the C++ compiler)
  //   device/bench/*.cpp and *.cu: `grader bench --gpu` (registrations; cuBLAS baselines)
  std::vector<fs::path> device_sources() const;
  std::vector<fs::path> device_test_sources() const;
  std::vector<fs::path> device_bench_sources() const;       // .cpp
  std::vector<fs::path> device_bench_cuda_sources() const;  // .cu
  bool has_device_checks() const;
};

struct Course {
  fs::path root;                  // the folder holding modules/ (and solutions/ for instructors)
  std::vector<Module> modules;    // ordered by number

  bool has_solutions() const;
  fs::path solution_dir(const Module& m) const;   // solutions/NN_slug
  fs::path mutants_dir(const Module& m) const;    // solutions/NN_slug/mutants

  // "1", "01", "01_tensor" or "tensor"; throws CourseError listing the modules otherwise.
  const Module& find(const std::string& name) const;
  const Module* by_number(int number) const;
  // The module's prerequisites, transitively, in dependency order (prerequisites first), without
  // the module itself.
  std::vector<const Module*> prerequisites(const Module& m) const;
};

// The values module.yaml's `tier` may take (the site colours a module by it), and the range of its
// `difficulty` (the dots on the site). load_module refuses any other.
const std::vector<std::string>& module_tiers();  // foundation, architecture, optimization, capstone
inline constexpr int kMinDifficulty = 1;
inline constexpr int kMaxDifficulty = 4;

// Files in solutions/NN_slug/src that are not among the module's student_files, relative to the
// course root ("solutions/21_demo/src/helpers.cpp"), sorted. No build reads them (a reference is
// its student files and nothing else), so each is a leftover or a file the module.yaml forgot.
std::vector<std::string> stray_solution_files(const Course& course, const Module& m);

// Loads every modules/*/module.yaml under root. A malformed file raises CourseError naming the
// file, the line and what is wrong.
Course load_course(const fs::path& root);
Module load_module(const fs::path& yaml_path);

// Finds the course root: KILN_ROOT if set, else the nearest folder at or above `start` that holds
// modules/.
fs::path find_course_root(const fs::path& start);

std::string visibility_name(Visibility v);

}  // namespace kiln::grader
