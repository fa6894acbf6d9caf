// grader check N: build the module's tests against the student's files (or the reference
// solution), run them in isolation, report.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "kiln/grader/commands.h"
#include "kiln/grader/speed.h"

namespace kiln::grader {

bool use_color() {
  const char* no_color = std::getenv("NO_COLOR");
  return isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

namespace {

// Notes on prerequisites whose checks do not all pass, re-checking those whose files changed.
std::vector<std::string> prerequisite_notes(const Workspace& ws, const Module& m) {
  std::vector<std::string> notes;
  auto progress = load_progress(ws);
  for (const Module* dep : ws.course.prerequisites(m)) {
    auto entry = progress.find(dep->name());
    if (entry == progress.end() || entry->second.fingerprint != fingerprint(*dep, dep->dir)) {
      GradeOptions options;
      options.run.limits = default_limits();
      const Report r = grade_target(ws, ws.build_dir("check"), standard_targets(ws.course),
                                    student_target(ws.course, *dep), options, "student");
      record_progress(ws, *dep, r);
      progress = load_progress(ws);
      entry = progress.find(dep->name());
    }
    const ProgressEntry& e = entry->second;
    if (!e.all_passed) {
      const int failing = e.total - e.passed;
      notes.push_back(fmt::format("{} builds on your {} {}, which {} {} check{}: the checks below that use it fail "
                                  "for its reasons until it passes. Run grader check {}",
                                  m.number_text(), dep->number_text(), dep->title,
                                  e.passed == 0 ? "passes none of its" : "fails", e.passed == 0 ? e.total : failing,
                                  (e.passed == 0 ? e.total : failing) == 1 ? "" : "s", dep->number_text()));
    }
  }
  return notes;
}

}  // namespace

int run_check(const Workspace& ws, const CheckCommand& cmd) {
  const Module& m = ws.course.find(cmd.module);
  if (cmd.format != "text" && cmd.format != "json" && cmd.format != "junit")
    throw CourseError(fmt::format("unknown format '{}': use text, json or junit", cmd.format));
  if (cmd.solution) require_solutions(ws, "check --solution");

  GradeOptions options;
  options.only_checks = cmd.checks;
  options.run.limits = default_limits();
  options.device_builds_need_a_device = true;
  options.run.verbose = cmd.verbose;
  options.sanitize = true;  // so that a memory error is heard of before grading
  std::vector<std::string> notes;
  if (!cmd.solution) notes = prerequisite_notes(ws, m);
  const TestTarget target = cmd.solution ? solution_target(ws.course, m) : student_target(ws.course, m);
  Report report = grade_target(ws, ws.build_dir("check"), standard_targets(ws.course), target, options,
                               cmd.solution ? "solution" : "student");
  // Speed-graded checks that passed: timed beside the reference, where there is one.
  if (std::any_of(report.checks.begin(), report.checks.end(), [&](const CheckReport& c) {
        const Check* check = m.check(c.id);
        return check && check->speed && c.status == Status::passed;
      })) {
    if (ws.course.has_solutions()) std::fprintf(stderr, "Timing the speed-graded checks beside the reference...\n");
    std::string why_not;
    const std::optional<SpeedPrograms> programs = local_speed_programs(ws, m, target, &why_not);
    score_speed_checks(report, m, programs ? &*programs : nullptr, why_not);
  }
  report.notes = notes;
  if (!cmd.solution && cmd.checks.empty()) record_progress(ws, m, report);

  // The terminal gets the text report; a machine format goes to --out, or to stdout without it.
  const std::string machine = cmd.format == "json" ? render_json(report)
                              : cmd.format == "junit" ? render_junit({report})
                                                      : render_text(report, {.color = false, .verbose = cmd.verbose});
  const std::string text =
      render_text(report, {.color = use_color(), .verbose = cmd.verbose, .width = terminal_width()});
  if (!cmd.out.empty()) {
    std::ofstream out(cmd.out);
    out << machine;
    if (!out) throw CourseError(fmt::format("cannot write the report to {}", cmd.out));
  }
  std::fputs(cmd.out.empty() && cmd.format != "text" ? machine.c_str() : text.c_str(), stdout);
  return report.all_passed() ? 0 : 1;
}

}  // namespace kiln::grader
