// Speed-graded checks (course.h: Speed): the student's kernel timed beside the reference's, in the
// same run, out of process, and scored on the ratio.
//
// A round runs three programs, one after the other: the reference's test program drawing the K
// inputs of the round without calling anything (what starting and drawing cost), and the
// student's and the reference's with K calls each on those inputs, in an order that alternates
// from round to round. Each program's time is the CPU time of all its processes as the kernel
// accounted it (a CPU cgroup; without one, the sandbox wrapper's report or wait4), less the
// round's empty run. The student's results of every round are judged by the trusted verifier
// before its time counts (after the timing, so that judging one submission's results overlaps
// timing another's). One check is timed at a time. In a batch the reference's rounds are timed
// once for several submissions (ReferenceTimes), and a round then runs the student's program only.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/grader/course.h"

namespace kiln::grader {

// A batch's cores (grade --batch -j N): a submission holds one of N while it compiles, runs its
// checks or is timed, and gives it back while it waits for its turn to be timed, so that one more
// submission's compile fills the core instead of leaving it idle. Thread-safe.
class CoreShare {
 public:
  explicit CoreShare(int cores) : free_(cores) {}
  void take();
  void give();

 private:
  std::mutex lock_;
  std::condition_variable freed_;
  int free_;
};

struct SpeedPrograms {
  fs::path student;                              // the student's test program, built optimised
  // The sandbox's commands in front of the timed runs (grade): the same sandbox for both, so
  // that both are started and counted the same way, but each sees only its own program.
  std::vector<std::string> launcher;            // for the student's program
  std::vector<std::string> reference_launcher;  // for the reference's
  fs::path reference;                            // the reference solution's, built the same way
  fs::path verifier;                             // trusted: judges a timed run's results
  std::vector<std::pair<std::string, std::string>> env;  // the run's seed
  fs::path scratch;                              // where a round's results wait for the verifier
  std::shared_ptr<void> hold;                    // the lock on the build the programs lie in
  CoreShare* cores = nullptr;                    // a batch's: given back while waiting to be timed
};

struct SpeedResult {
  bool measured = false;
  std::string problem;   // a timed run's wrong result, or why nothing could be measured
  bool wrong = false;    // problem is a wrong result (the check fails), not a failure to measure
  double student_ms = 0, reference_ms = 0;  // per call: the fastest run less the fastest empty run
  double ratio = 0, fraction = 0;
  int rounds = 0;
};

// A batch's timings of the reference (grade --batch): each speed check's reference is timed once
// (its rounds of empty and timed runs) and the figure serves the next `reuse` submissions; then
// it is timed again, so that a machine whose speed drifts over a batch favours no one. Thread-safe.
class ReferenceTimes {
 public:
  explicit ReferenceTimes(int reuse) : reuse_(reuse) {}
  struct Timed {
    double reference_ms = 0;  // per call: the fastest timed run less the fastest empty run
    double empty_s = 0;       // the fastest empty run: starting and drawing the inputs
  };
  // The figure for `check`, when one is there to reuse; counts the use.
  std::optional<Timed> take(const std::string& check);
  void put(const std::string& check, const Timed& t);
  // Of every time a check's reference was timed again: how far its figure moved from the last.
  int retimed() const;
  double largest_drift() const;  // |new / old - 1|, largest

 private:
  struct Entry {
    Timed timed;
    int uses = 0;
  };
  int reuse_;
  mutable std::mutex lock_;
  std::map<std::string, Entry> entries_;
  int retimed_ = 0;
  double drift_ = 0;
};

// The share of the points a ratio earns under `speed`'s curve.
double speed_fraction(const Speed& speed, double ratio);

// `context`: the digest of the kernel's context in the checked run ("" when it has none); every
// timed run's must be the same.
// With `batch`, the reference's figure comes from there (timed when it has none to reuse), and each
// round times only the student's program; a check's rounds stop early once three or more agree
// (the standard error of their mean under 2% of it).
SpeedResult time_speed_check(const Check& check, const SpeedPrograms& programs, const std::string& context = "",
                             ReferenceTimes* batch = nullptr);

}  // namespace kiln::grader
