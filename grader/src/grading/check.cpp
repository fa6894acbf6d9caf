// grader check N: the student's files (or the reference solution) through the pipeline, in the
// check build, observed and judged in one process, then again under the sanitizers.
#include <algorithm>

#include <fmt/format.h>

#include "kiln/grader/grading.h"
#include "kiln/protocol.h"

namespace kiln::grader {

namespace {

// `full`: also under the sanitizers, and the speed-graded checks timed (a prerequisite's check
// needs neither).
Verdicts check_verdicts(const Workspace& ws, const TestTarget& target, const std::vector<std::string>& only,
                        bool verbose, bool full) {
  PipelineOptions options;
  options.only_checks = only;
  options.run.limits = default_limits();
  options.run.verbose = verbose;
  // -v: a failing comparison shows its whole tensors (in a file under .grader/tensors when large).
  if (verbose) options.run.env.push_back({protocol::kTensors, (ws.state_dir() / "tensors").string()});
  options.run.student_files = student_files_of(ws.course, target);
  options.sanitize = full;  // so that a memory error is heard of before grading
  const std::vector<const Check*> checks = chosen_checks(*target.module, only);
  TestTarget wanted = target;
  wanted.with_device = std::any_of(checks.begin(), checks.end(), [](const Check* c) { return c->device; });
  wanted.with_sanitized = full;
  LocalBuilder builder(ws, ws.build_dir("check"), standard_targets(ws.course), wanted,
                       /*device_builds_need_a_device=*/true);
  LocalSpeedTiming timing(ws, *target.module, target, /*say_so=*/true);
  if (full) options.speed = &timing;
  return run_pipeline(*target.module, builder, options);
}

// Notes on prerequisites whose checks do not all pass, re-checking those whose files changed.
std::vector<std::string> prerequisite_notes(const Workspace& ws, const Module& m) {
  std::vector<std::string> notes;
  auto progress = load_progress(ws);
  for (const Module* dep : ws.course.prerequisites(m)) {
    auto entry = progress.find(dep->name());
    if (entry == progress.end() || entry->second.fingerprint != fingerprint(*dep, dep->dir)) {
      const Verdicts v = check_verdicts(ws, student_target(ws.course, *dep), {}, false, /*full=*/false);
      record_progress(ws, *dep, report_of(ws.course, v, "student"));
      progress = load_progress(ws);
      entry = progress.find(dep->name());
    }
    const ProgressEntry& e = entry->second;
    if (e.all_passed) continue;
    const int failing = e.passed == 0 ? e.total : e.total - e.passed;
    notes.push_back(fmt::format("{} builds on your {} {}, which {} {} check{}: the checks below that use it fail "
                                "for its reasons until it passes. Run grader check {}",
                                m.number_text(), dep->number_text(), dep->title,
                                e.passed == 0 ? "passes none of its" : "fails", failing, failing == 1 ? "" : "s",
                                dep->number_text()));
  }
  return notes;
}

}  // namespace

Report check_module(const Workspace& ws, const CheckOptions& cmd) {
  const Module& m = ws.course.find(cmd.module);
  if (cmd.solution) require_solutions(ws, "check --solution");
  std::vector<std::string> notes;
  if (!cmd.solution) notes = prerequisite_notes(ws, m);
  const TestTarget target = cmd.solution ? solution_target(ws.course, m) : student_target(ws.course, m);
  Verdicts v = check_verdicts(ws, target, cmd.checks, cmd.verbose, /*full=*/true);
  v.notes = notes;
  Report report = report_of(ws.course, v, cmd.solution ? "solution" : "student");
  if (!cmd.solution && cmd.checks.empty()) record_progress(ws, m, report);
  return report;
}

}  // namespace kiln::grader
