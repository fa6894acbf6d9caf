// Speed-graded checks (course.h: Speed): the student's kernel timed beside the reference's, in the
// same run, out of process, and scored on the ratio.
//
// A round runs three programs, one after the other: the reference's test program with no calls
// (what drawing the inputs and starting costs), and the student's and the reference's with K
// calls each on fresh inputs of the round, in an order that alternates from round to round. Each
// program's time is its CPU time as the kernel accounted it (wait4), less the round's empty run.
// The student's results of every round are judged by the trusted verifier before its time counts.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/grader/report.h"
#include "kiln/grader/workspace.h"

namespace kiln::grader {

struct SpeedPrograms {
  fs::path student;                              // the student's test program, built optimised
  std::vector<std::string> student_launcher;     // the sandbox's command in front of it (grade)
  fs::path reference;                            // the reference solution's, built the same way
  fs::path verifier;                             // trusted: judges a timed run's results
  std::vector<std::pair<std::string, std::string>> env;  // the run's seed
  fs::path scratch;                              // where a round's results wait for the verifier
  std::shared_ptr<void> hold;                    // the lock on the build the programs lie in
};

// For check and verify: `target`'s test program and the reference's, built optimised in
// .grader/build/speed, the reference's also the verifier. None when the course has no reference
// solutions (a student's release) or the module has no speed check.
std::optional<SpeedPrograms> local_speed_programs(const Workspace& ws, const Module& module, const TestTarget& target);

struct SpeedResult {
  bool measured = false;
  std::string problem;   // a timed run's wrong result, or why nothing could be measured
  bool wrong = false;    // problem is a wrong result (the check fails), not a failure to measure
  double student_ms = 0, reference_ms = 0;  // medians, per call
  double ratio = 0, fraction = 0;
  int rounds = 0;
};

// The share of the points a ratio earns under `speed`'s curve.
double speed_fraction(const Speed& speed, double ratio);

SpeedResult time_speed_check(const Check& check, const SpeedPrograms& programs);

// Times every speed check of `report` that passed, and scores it. Without programs such a check
// scores nothing: it is skipped, saying that `grader grade` times it (no reference to time against
// here), or fails for the reason `unavailable` gives.
void score_speed_checks(Report& report, const Module& module, const SpeedPrograms* programs,
                        const std::string& unavailable = "");

}  // namespace kiln::grader
