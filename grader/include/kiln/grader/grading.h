// One grading pipeline, which `check`, `grade` and `verify` all drive, each with its own options:
//
//   stage the sources → build → observe → judge → sanitizer rerun → speed timing → verdicts
//
// and then the Report, made once from the verdicts (report.h renders it; nothing rewrites it).
// Staging belongs to whoever drives the pipeline (check and verify name folders of the course,
// grade copies a submission's files, submission.h); building is a Builder; the speed timing a
// SpeedTiming. Everything else is the same for every caller.
#pragma once

#include <filesystem>
#include <functional>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/grader/build.h"
#include "kiln/grader/course.h"
#include "kiln/grader/report.h"
#include "kiln/grader/runner.h"
#include "kiln/grader/speed.h"
#include "kiln/grader/workspace.h"

namespace kiln::grader {

// How a variant's sources become its test programs: the local CMake/Ninja build, a build done
// already (verify builds every variant in one Ninja run), or grade's sandboxed recipe.
class Builder {
 public:
  virtual ~Builder() = default;
  virtual BuildResult build() = 0;
};

// The local build: `wanted` within `build_dir`, which knows `all_targets`. Holds the lock on the
// build directory from build() until the builder is gone, so that the programs it built are not
// rebuilt under a run.
class LocalBuilder : public Builder {
 public:
  LocalBuilder(const Workspace& ws, fs::path build_dir, std::vector<TestTarget> all_targets, TestTarget wanted,
               bool device_builds_need_a_device);
  BuildResult build() override;

 private:
  const Workspace& ws_;
  fs::path dir_;
  std::vector<TestTarget> all_;
  TestTarget wanted_;
  bool need_device_;
  std::shared_ptr<void> lock_;
};

class PrebuiltBuilder : public Builder {
 public:
  explicit PrebuiltBuilder(const BuildResult& built) : built_(built) {}
  BuildResult build() override { return built_; }

 private:
  const BuildResult& built_;
};

// The speed timing of the speed-graded checks that passed: the student's program beside the
// reference's, in the same run (speed.h).
class SpeedTiming {
 public:
  virtual ~SpeedTiming() = default;
  // Gets the programs ready. False when there are none: `why_not` says why (a failed optimised
  // build fails the checks), or is empty when there is no reference to time against here (a
  // student's release), which skips them.
  virtual bool prepare(std::string& why_not) = 0;
  virtual SpeedResult time(const Check& check, const std::string& context) = 0;
};

// check and verify: `target`'s program and the reference's, built optimised in .grader/build/speed.
class LocalSpeedTiming : public SpeedTiming {
 public:
  LocalSpeedTiming(const Workspace& ws, const Module& module, TestTarget target, bool say_so = false);
  bool prepare(std::string& why_not) override;
  SpeedResult time(const Check& check, const std::string& context) override;

 private:
  const Workspace& ws_;
  const Module& module_;
  TestTarget target_;
  bool say_so_;
  std::optional<SpeedPrograms> programs_;
};

struct PipelineOptions {
  std::vector<std::string> only_checks;  // check ids; empty = all
  RunOptions run;
  // When set, the observations are judged by this build (the untouched stubs and trusted code,
  // kiln/observe.h), and the judge's verdicts are the verdicts. `judge_file` is where the
  // observations wait for it.
  const BuildResult* judge = nullptr;
  fs::path judge_file;
  // The checks that passed or crashed run again on the sanitized twin: a memory error fails a
  // check whose values were right, and a crash is described by the sanitizers' first report.
  bool sanitize = false;
  // The checks run on the sanitized twin only (grade, and verify's memory mutants).
  bool sanitized_only = false;
  // Times the speed-graded checks that passed; none: they keep the verdict of their checked run.
  SpeedTiming* speed = nullptr;
  // Refuses a program whose student code switches the sanitizers off (sanitizer_tampering).
  bool refuse_tampering = true;
};

// The plain verdicts of one run of the pipeline: everything the Report is made from.
struct Verdicts {
  const Module* module = nullptr;
  std::vector<const Check*> checks;
  BuildResult build;
  std::optional<RunResult> run;         // the final verdicts; none when the build failed
  std::optional<RunResult> in_process;  // the observed program's own verdicts, when judged
  std::vector<std::string> notes;       // shown first: prerequisites that fail, staging notes
  fs::path work;                        // a folder whose paths read as the course's (grade's work folder)
  std::size_t bound = 0;                // when set, every text a submission influences is cut to this
};

// Why a built program is refused before any check runs: a student file that asks the compiler not to
// instrument code (no_sanitize attributes, optimize pragmas: any mention of the sanitizers outside a
// comment), or a program that defines a sanitizer's hook (__asan_default_options, ...) or calls
// one of their switches (__sanitizer_set_death_callback, ...) or dlsym. std::nullopt when none.
std::optional<Diagnostic> sanitizer_tampering(const fs::path& binary, const std::vector<fs::path>& student_files,
                                              const std::vector<fs::path>& student_objects = {});

// "refused: your code calls F, which belongs to the checks that judge it ...".
Diagnostic calls_the_checks(const std::string& function);
// The same for a link that failed because student code calls the test library (which the observed
// program, linked without its judging half, does not hold); std::nullopt for any other link error.
std::optional<Diagnostic> calls_the_checks_in_link(const std::string& log);

// Why a built program is refused for what its student code calls or includes: a function the test
// program's trusted side defines (the tests, the test library), or what module.yaml's `forbids:`
// names. Reads built.link_command and the student's objects with nm, and their depfiles.
std::optional<Diagnostic> forbidden_calls(const Module& module, const BuildResult& built,
                                          const std::vector<fs::path>& student_objects);

// A failed link in plain words, from the linker's output (GNU ld's or gold's): an undefined
// reference names the header's declaration and, where the student defined the function with other
// parameters, which parameter differs; a multiple definition names both files and the fix.
std::optional<Diagnostic> link_error(const std::string& log, const std::vector<fs::path>& student_files,
                                     const std::vector<fs::path>& headers, const std::vector<fs::path>& student_objects);

// A symbol's name as the compiler writes it (std::__cxx11::basic_string<char, ...>): quick, for
// the tens of thousands of names of a whole program.
std::string demangled(const std::string& mangled);
// A demangled name as a person writes it: std::vector<long> without its allocator, std::string
// for the long form.
std::string readable_symbol(std::string name);
// Both: readable_symbol(demangled(mangled)).
std::string demangled_symbol(const std::string& mangled);
// Every symbol of `files` (objects, archives or programs), as nm -P lists them: the mangled name
// and nm's type letter (T defined code, U undefined, W weak, ...). Empty when nm cannot read them.
std::vector<std::pair<std::string, char>> symbols_of(const std::vector<fs::path>& files);

// Fills built's link_command, link_dir and student_objects for `target`'s program in the local
// build `dir` (what forbidden_calls reads).
void note_link(BuildResult& built, const fs::path& dir, const TestTarget& target);

// The same for a student file's text after the preprocessor (its macros expanded): "file:line" of
// its first line that mentions the sanitizers, or "". And the diagnostic that refuses it.
std::string unsanitized_preprocessed(const std::string& preprocessed, const fs::path& student_file);
// Whether a student file could make a token its text does not hold: it defines a macro, pastes
// tokens or uses _Pragma (outside its comments). Only such a file needs the preprocessed scan.
bool makes_tokens(const fs::path& file);
Diagnostic refusal(const std::string& where);

// The module's checks to run (all, or the ones named), in module.yaml's order. Throws CourseError
// for an unknown id, naming the module's checks.
std::vector<const Check*> chosen_checks(const Module& m, const std::vector<std::string>& only);

// The student files of a target and of its prerequisites in the same variant: where a crash is the
// student's own.
std::vector<fs::path> student_files_of(const Course& course, const TestTarget& target);

// Build → observe → judge → sanitizer rerun → speed timing.
Verdicts run_pipeline(const Module& module, Builder& builder, const PipelineOptions& options);

// The steps after the build, for a caller that builds many variants at once (verify).
Verdicts observe_and_judge(const Module& module, BuildResult built, const PipelineOptions& options);
void time_speed_checks(Verdicts& verdicts, SpeedTiming* timing);
// Whether any speed-graded check passed its checks, and so is to be timed.
bool any_speed_check_passed(const Verdicts& verdicts);

// A check that failed while a check it needs (Check::needs) also did not pass waits for it: its own
// failure is not shown. A memory error or a crash is shown all the same.
void mark_waiting(RunResult& run, const std::vector<const Check*>& checks);

// The speed verdicts of the speed-graded checks that passed, given how each is timed: `timer` is
// called for each such check; without a timer they are skipped (no reference here) or fail for
// `unavailable`. Checks that judged different contexts (kiln::testing::note_context) earn no speed
// points. Exposed for the tests.
void apply_speed(RunResult& run, const std::vector<const Check*>& checks,
                 const std::function<SpeedResult(const Check&, const std::string&)>* timer,
                 const std::string& unavailable);

// The Report, made once from the verdicts.
Report report_of(const Course& course, const Verdicts& verdicts, const std::string& variant);

// ---- The three drivers ----

// grader check: the student's files (or the reference solution), observed and judged in one
// process, then under the sanitizers; the speed-graded checks timed beside the reference where
// the course has it. Prerequisites whose checks fail are named first. Records progress.
struct CheckOptions {
  std::string module;
  bool solution = false;
  std::vector<std::string> checks;  // only these; empty = all
  bool verbose = false;
};
Report check_module(const Workspace& ws, const CheckOptions& options);

// grader verify: prints the proof module by module; returns the number of problems found.
struct VerifyOptions {
  std::vector<std::string> modules;  // empty = all
  std::uint64_t seed = 0x6b696c6e;   // the checks' inputs (the same as `grader check`'s by default)
  // --mutation: instead of the proof, the mutation score (verify_mutation).
  bool mutation = false;
  int sample = 0;          // mutants per module, picked by a fixed stride; 0 = all
  double min_score = 0;    // percent: a module scoring less is a problem
  // Also build and run the mutants module.yaml lists as equivalent: one that a check kills is not
  // equivalent, and is a problem to fix in module.yaml.
  bool recheck_equivalents = false;
  // Only the mutants at these places, "src/acceleration.cpp:207" or "acceleration.cpp:207" (a
  // survivor run again after a check changed); empty = all.
  std::vector<std::string> at;
  // --seeds N: instead of the proof, the references' checks at N fresh seeds (verify_seeds).
  int seeds = 0;
};
int verify_course(const Workspace& ws, const VerifyOptions& options);
// Calls job(0), ..., job(count - 1), each once, on `threads` threads at a time (0: one a core).
// A job's own bookkeeping needs its own lock.
void on_cores(std::size_t count, const std::function<void(std::size_t)>& job, unsigned threads = 0);

// The modules named ("05", "05_data"), in the order given; none named: every module of the course.
// Throws CourseError for a name that is no module's.
std::vector<const Module*> modules_named(const Course& course, const std::vector<std::string>& names);

// grader verify --mutation: every reference file's generated mutants (mutation.h), each run
// through all of the module's checks, observed and judged as verify's are. A mutant that does not
// compile, or that module.yaml lists as equivalent, is not counted; one is killed when any check
// does not pass. Prints per module the counts, the score (killed / counted) and every survivor;
// returns the number of problems (a reference that fails a check, a score under min_score).
int verify_mutation(const Workspace& ws, const VerifyOptions& options);

// grader verify --seeds N: instead of the proof, every module's reference through all of its checks
// at N seeds drawn afresh (grade draws one for every submission), observed and judged as grade
// runs them, on every core. A check that fails at any seed is a problem, printed with the seed that
// replays it. Returns the number of problems.
int verify_seeds(const Workspace& ws, const VerifyOptions& options);

// The options of one observed and judged run of a variant built beforehand (verify --mutation and
// --seeds): the default limits, the seed, the variant's student files, and the judge where it
// built. The rules on what student code may do are not read again: the code is the reference's.
PipelineOptions judged_run_options(const Workspace& ws, const TestTarget& target, const BuildResult* judge,
                                   const fs::path& judge_file, std::uint64_t seed);

// grader grade: submissions, sandboxed (submission.h stages them), each module's trusted builds
// made once, submissions graded -j at a time.
struct GradeOptions {
  std::string submission;            // one submission folder
  std::string batch;                 // or a folder of submission folders
  std::vector<std::string> modules;  // empty with all = every module
  bool all = false;
  int jobs = 1;
  bool no_sandbox = false;
  double compile_timeout_s = 120;  // per submission, for all its compiles
};
struct Submission {
  std::string name;  // folder name, made safe for paths and target names
  fs::path path;
  std::string refused;  // why nothing of it is read (a folder that is a symbolic link)
};
// Where the time went, summed over all submissions.
struct GradePhases {
  double stage = 0, compile = 0, checks = 0, speed = 0, end = 0;  // checks: observed and judged
  GradePhases& operator+=(const GradePhases& o);
};
struct GradeResults {
  std::vector<const Module*> modules;
  std::vector<Submission> submissions;
  std::vector<std::vector<Report>> reports;  // per submission, per module
  double seconds = 0;
  GradePhases phases;
  // The speed-graded checks' reference, timed once per kReferenceReuse submissions: how often it
  // was timed again, and the most its figure moved from one timing to the next.
  int reference_retimed = 0;
  double reference_drift = 0;
};
// How many submissions of a batch one timing of the reference serves (speed.h: ReferenceTimes).
inline constexpr int kReferenceReuse = 8;
GradeResults grade_submissions(const Workspace& ws, const GradeOptions& options);
// The batch's gradebook: a row per submission, a column per check.
std::string render_gradebook(const GradeResults& results);

}  // namespace kiln::grader
