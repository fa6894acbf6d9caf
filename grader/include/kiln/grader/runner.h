// Running a module's test binary so that every check reports its own result, whatever the
// student's code does: crash, hang, exit early, flood the output.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/grader/build.h"
#include "kiln/grader/course.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

enum class Status {
  passed, failed, not_written, crashed, timed_out, exited_early, skipped, did_not_compile, missing,
  no_result,  // the judge: the observations did not fit the check (missing, extra, out of order, malformed)
  memory_error,  // AddressSanitizer or UndefinedBehaviorSanitizer stopped the check
};

std::string status_name(Status s);

// A figure a check measured with trusted code, for the report and the leaderboard.
struct Figure {
  std::string name;  // "accuracy"
  double value = 0;
  std::string unit;  // "%", "bytes"
  bool higher_is_better = true;
};

// A speed-graded check's time, once measured beside the reference's: the share of its points
// that time earned (speed.h's curve), the ratio, and how it compared, in words.
struct SpeedScore {
  double fraction = 0;
  double ratio = 0;
  std::string text;
};

// One failure the test reported.
struct ReportedFailure {
  std::string id;  // the catalogued failure id; empty when the failure was not catalogued
  std::map<std::string, std::string> params;
  std::string detail;
  std::string raw;  // GoogleTest's text, for uncatalogued failures
  std::string file;
  int line = 0;
};

struct CheckResult {
  const Check* check = nullptr;
  Status status = Status::missing;
  std::vector<ReportedFailure> failures;
  std::string reason;       // crashed / timed out / exited early / skipped / missing: what happened
  // Crashed, timed out or exited early: the call it was running ("" when not known). Where a judge
  // runs, the judge's: the call whose result never came when it replayed the check's results;
  // otherwise (`grader check`, one process) the call the program said it began.
  std::string during;
  std::string stub;         // not written: the function, e.g. Tensor::reshape
  std::string stub_location;  // and where it is, file:line
  double ms = 0;
  std::vector<Figure> figures;  // what the check measured (kiln::testing::report_figure)
  std::string speed_context;    // a speed check's context, as its digest
  std::optional<SpeedScore> speed;  // a speed-graded check that passed, once timed
  std::string waits_for;  // a check it needs (Check::needs) that did not pass: its own result is not shown
  // What the test program said of the check: that it ended (rather than crashed, hung or exited),
  // and the observations it made on the way, one JSON object each (kiln/observe.h).
  bool ended = false;
  bool started = false;  // it began, whether or not it ended
  std::vector<std::string> observations;
  bool observations_overflow = false;
  // Where the errors its calls threw were thrown: the call, and offsets into the program that ran
  // it (innermost first). A claim of the program, for the report only.
  struct Thrown {
    std::string call;
    std::vector<std::string> at;
  };
  std::vector<Thrown> thrown;
};

struct RunOptions {
  Limits limits;
  // Added to the test program's environment (the run's seed, the judge's observations).
  std::vector<std::pair<std::string, std::string>> env;
  // The most bytes of observations kept per check; a check past it did not produce its result.
  std::size_t observation_cap = std::size_t(64) << 20;
  // The most bytes of observations kept over all the checks of a run: the grader's memory for one
  // program stays bounded however many checks forge large ones.
  std::size_t observations_in_run_cap = std::size_t(160) << 20;
  // The binary is the sanitized twin: its reports end a check as a memory error, and the
  // address-space limit is lifted (the sanitizers reserve far more than they use; their own
  // allocator limits hold instead).
  bool sanitized = false;
  // A cgroup the test program joins (MemoryCgroup::procs), when the sandbox has one.
  fs::path cgroup;
  // The student's files, so that a crash or a hang is placed in the student's own code.
  std::vector<fs::path> student_files;
  // How to start the binary; the sandbox (grade) puts its own command in front.
  std::vector<std::string> launcher;
  bool verbose = false;
};

struct RunResult {
  std::vector<CheckResult> checks;  // in the order asked for
  std::vector<std::string> commands;
  std::string output;  // what the checks printed (bounded)
};

Limits default_limits();

RunResult run_checks(const fs::path& binary, const std::vector<const Check*>& checks, const RunOptions& options);

// The checks of a built target: the device checks with its device binary, the others with its
// binary. Without a device binary the device checks are skipped (build.device_skip_reason) or
// did not compile for the device (build.device_error), saying so; they never stop the others.
RunResult run_built_checks(const BuildResult& build, const std::vector<const Check*>& checks,
                           const RunOptions& options);

// Turns one failure text from GoogleTest into a ReportedFailure (kiln markers, or raw text).
ReportedFailure parse_failure(const std::string& message, const std::string& file, int line);

}  // namespace kiln::grader
