#include "kiln/grader/speed.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <optional>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "kiln/grader/process.h"
#include "kiln/protocol.h"
#include "kiln/grader/sandbox.h"

namespace kiln::grader {

double speed_fraction(const Speed& speed, double ratio) {
  if (!(ratio > 0)) return 0;
  if (ratio <= speed.full_at) return 1;
  if (ratio >= speed.zero_at) return 0;
  return 1 - std::log(ratio / speed.full_at) / std::log(speed.zero_at / speed.full_at);
}

namespace {

double smallest(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

struct TimedRun {
  ProcessResult process;
  double cpu_s = -1;    // the CPU time of the run's processes, all of them
  std::string problem;  // why the run did not count
};

enum class Mode { timed, empty, verify };

// One run of a test program for a speed check: timed (K calls), empty (the same K inputs drawn,
// no call) or verify (the trusted program judges a timed run's results). Every timed and empty
// run goes through the same launcher and is counted the same way: by a CPU cgroup where there is
// one (every process in it counts, waited for or not), otherwise by the sandbox wrapper's report
// or, outside the sandbox, by wait4.
TimedRun run_timed(const fs::path& binary, const Check& check, const SpeedPrograms& programs, int round, int calls,
                   Mode mode, const fs::path& verify_file = {}) {
  static std::atomic<int> counter{0};
  const bool timed = mode != Mode::verify;
  const std::vector<std::string> none;
  const std::vector<std::string>& launcher =
      !timed ? none : binary == programs.student ? programs.launcher : programs.reference_launcher;
  std::vector<std::string> argv = launcher;
  argv.insert(argv.end(), {binary.string(), "--gtest_filter=" + check.test, "--gtest_color=no"});
  ProcessSpec spec{.argv = argv, .env = programs.env, .output_cap = std::size_t(256) << 20};
  spec.clean_env = true;  // the same plain environment for every program
  spec.env.emplace_back(protocol::kSpeedRound, std::to_string(round));
  spec.env.emplace_back(protocol::kSpeedCalls, std::to_string(calls));
  if (mode == Mode::empty) spec.env.emplace_back(protocol::kSpeedSkip, "1");
  if (mode == Mode::verify) spec.env.emplace_back(protocol::kSpeedVerify, verify_file.string());
  const bool sandboxed = !launcher.empty();
  if (sandboxed) spec.status_fd = protocol::kStatusFd;
  spec.limits = Limits{.cpu_s = 120, .memory_bytes = std::size_t(4) << 30, .processes = 64,
                       .file_bytes = std::size_t(64) << 20};
  std::optional<CpuCgroup> cpu;
  if (timed) {
    cpu.emplace(fmt::format("kiln-speed-{}-{}", ::getpid(), counter++));
    if (cpu->available()) spec.also_join.push_back(cpu->procs());
  }
  const double limit = std::max(30.0, check.timeout_s * 3);
  spec.should_stop = [&](double elapsed) { return elapsed > limit; };
  TimedRun run{.process = run_process(spec)};
  const ProcessResult& p = run.process;
  int signal = p.signal, exit_code = p.exit_code;
  double wrapper_cpu = -1;
  if (sandboxed) {  // the wrapper says how the program ended, and its CPU time
    int n = 0;
    if (std::sscanf(p.status_report.c_str(), "signal %d", &n) == 1) signal = n;
    else if (std::sscanf(p.status_report.c_str(), "exit %d", &n) == 1) exit_code = n;
    if (const auto at = p.status_report.find(" cpu "); at != std::string::npos)
      wrapper_cpu = std::atof(p.status_report.c_str() + at + 5);
  }
  run.cpu_s = cpu && cpu->available() ? cpu->seconds() : sandboxed ? wrapper_cpu : p.cpu_s;
  if (!p.started) run.problem = p.start_error;
  else if (p.stopped) run.problem = fmt::format("a timed run was still going after {:g} s", limit);
  else if (signal) run.problem = "a timed run crashed: " + describe_signal(signal);
  else if (exit_code != 0) run.problem = fmt::format("a timed run ended with exit code {}", exit_code);
  else if (p.out_bytes > p.out.size()) run.problem = "a timed run wrote more than its results";
  else if (timed && run.cpu_s < 0) run.problem = "the CPU time of a timed run could not be read";
  return run;
}

// One check is timed at a time, whatever runs beside it: with `grade -j 2` two workers' rounds
// would otherwise share the cores unevenly between the student's program and the reference's.
std::mutex timing;

}  // namespace

std::optional<ReferenceTimes::Timed> ReferenceTimes::take(const std::string& check) {
  const std::lock_guard<std::mutex> hold(lock_);
  const auto it = entries_.find(check);
  if (it == entries_.end() || it->second.uses >= reuse_) return std::nullopt;
  ++it->second.uses;
  return it->second.timed;
}

void ReferenceTimes::put(const std::string& check, const Timed& t) {
  const std::lock_guard<std::mutex> hold(lock_);
  const auto it = entries_.find(check);
  if (it != entries_.end()) {
    ++retimed_;
    if (it->second.timed.reference_ms > 0)
      drift_ = std::max(drift_, std::fabs(t.reference_ms / it->second.timed.reference_ms - 1));
  }
  entries_[check] = Entry{.timed = t, .uses = 1};
}

int ReferenceTimes::retimed() const {
  const std::lock_guard<std::mutex> hold(lock_);
  return retimed_;
}

double ReferenceTimes::largest_drift() const {
  const std::lock_guard<std::mutex> hold(lock_);
  return drift_;
}

namespace {

// Whether the per-call times so far agree well enough to stop: three or more, and the standard
// error of their mean under 2% of it.
bool settled(const std::vector<double>& times) {
  const std::size_t n = times.size();
  if (n < 3) return false;
  double mean = 0;
  for (double t : times) mean += t / static_cast<double>(n);
  if (!(mean > 0)) return false;
  double variance = 0;
  for (double t : times) variance += (t - mean) * (t - mean) / static_cast<double>(n - 1);
  return std::sqrt(variance / static_cast<double>(n)) < 0.02 * mean;
}

}  // namespace

void CoreShare::take() {
  std::unique_lock<std::mutex> hold(lock_);
  freed_.wait(hold, [this] { return free_ > 0; });
  --free_;
}

void CoreShare::give() {
  {
    const std::lock_guard<std::mutex> hold(lock_);
    ++free_;
  }
  freed_.notify_one();
}

SpeedResult time_speed_check(const Check& check, const SpeedPrograms& programs, const std::string& context,
                             ReferenceTimes* batch) {
  // One check is timed at a time. A submission of a batch that has to wait for its turn gives its
  // core to another's compile meanwhile, and takes one again before it is timed.
  std::unique_lock<std::mutex> one_at_a_time(timing, std::defer_lock);
  if (!one_at_a_time.try_lock()) {
    if (programs.cores) programs.cores->give();
    one_at_a_time.lock();
    if (programs.cores) programs.cores->take();
  }
  const Speed& speed = *check.speed;
  SpeedResult result;
  // Each run's CPU time, in seconds. A program's time per call is its fastest timed run less the
  // fastest empty run, over the calls: the machine's other work only ever adds CPU time (cache
  // and memory contention, page faults), so the smallest of a few runs is the one it disturbed
  // least, where a median still moves with what the other worker happens to do.
  std::vector<double> mine_s, theirs_s, empties;
  std::vector<std::string> outputs;  // each round's results, judged once the timing is done
  fs::create_directories(programs.scratch);
  // In a batch, the reference's figure is timed once for several submissions (ReferenceTimes).
  std::optional<ReferenceTimes::Timed> reused = batch ? batch->take(check.id) : std::nullopt;
  if (batch && !reused) {
    for (int round = 1; round <= speed.rounds; ++round) {
      const TimedRun empty = run_timed(programs.reference, check, programs, round, speed.calls, Mode::empty);
      const TimedRun theirs = run_timed(programs.reference, check, programs, round, speed.calls, Mode::timed);
      if (!empty.problem.empty() || !theirs.problem.empty()) {
        result.problem = "the reference's timed run failed: " + empty.problem + theirs.problem;
        return result;
      }
      empties.push_back(empty.cpu_s);
      theirs_s.push_back(theirs.cpu_s);
    }
    reused = ReferenceTimes::Timed{
        .reference_ms = 1e3 * std::max(0.0, smallest(theirs_s) - smallest(empties)) / speed.calls,
        .empty_s = smallest(empties)};
    batch->put(check.id, *reused);
    theirs_s.clear();
  }
  // With a reused figure: each of the student's rounds less the reference's fastest empty run, for
  // the early stop.
  std::vector<double> per_call;
  for (int round = 1; round <= speed.rounds; ++round) {
    TimedRun empty, mine, theirs;
    if (!reused) {
      empty = run_timed(programs.reference, check, programs, round, speed.calls, Mode::empty);
      if (!empty.problem.empty()) {
        result.problem = "the reference's empty run failed: " + empty.problem;
        return result;
      }
      // Alternate which program goes first, so that neither always finds the caches warm.
      if (round % 2) {
        mine = run_timed(programs.student, check, programs, round, speed.calls, Mode::timed);
        theirs = run_timed(programs.reference, check, programs, round, speed.calls, Mode::timed);
      } else {
        theirs = run_timed(programs.reference, check, programs, round, speed.calls, Mode::timed);
        mine = run_timed(programs.student, check, programs, round, speed.calls, Mode::timed);
      }
      if (!theirs.problem.empty()) {
        result.problem = "the reference's timed run failed: " + theirs.problem;
        return result;
      }
    } else {
      mine = run_timed(programs.student, check, programs, round, speed.calls, Mode::timed);
    }
    if (!mine.problem.empty()) {
      result.problem = mine.problem;
      result.wrong = true;
      return result;
    }
    outputs.push_back(std::move(mine.process.out));
    result.rounds = round;
    mine_s.push_back(mine.cpu_s);
    if (reused) {
      per_call.push_back(std::max(0.0, mine.cpu_s - reused->empty_s) / speed.calls);
      if (settled(per_call)) break;
      continue;
    }
    empties.push_back(empty.cpu_s);
    theirs_s.push_back(theirs.cpu_s);
  }
  // Every result of the student's runs, judged by trusted code before its time counts. The
  // judging is not timed: other checks' timing may go on meanwhile.
  one_at_a_time.unlock();
  for (int round = 1; round <= static_cast<int>(outputs.size()); ++round) {
    const fs::path results = programs.scratch / fmt::format("round-{}-{}.bin", ::getpid(), round);
    {
      std::ofstream out(results, std::ios::binary);
      out << outputs[static_cast<std::size_t>(round - 1)];
      if (!out) {
        result.problem = "the grader could not keep a timed run's results (" + results.string() + ")";
        return result;
      }
    }
    const TimedRun verdict = run_timed(programs.verifier, check, programs, round, speed.calls, Mode::verify, results);
    std::error_code ignored;
    fs::remove(results, ignored);
    const std::string said = verdict.process.out.substr(0, verdict.process.out.find('\n'));
    if (said.rfind("wrong: ", 0) == 0) {
      result.problem = said.substr(7);
      result.wrong = true;
      return result;
    }
    if (!verdict.problem.empty() || said.rfind("ok", 0) != 0) {
      result.problem = "the grader could not judge a timed run's results: " + verdict.problem + said;
      return result;
    }
    // A kernel with a context (the capstone's model): the timed run's must be the checked run's.
    const std::string timed_context = said.size() > 3 ? said.substr(3) : std::string();
    if (timed_context != context) {
      result.problem = context.empty() ? "the timed run wrote a context the checked run did not observe"
                                       : "its context (the model's bytes) differs from the one the checked calls used";
      result.wrong = true;
      return result;
    }
  }
  if (reused) empties = {reused->empty_s};
  result.student_ms = 1e3 * std::max(0.0, smallest(mine_s) - smallest(empties)) / speed.calls;
  result.reference_ms =
      reused ? reused->reference_ms : 1e3 * std::max(0.0, smallest(theirs_s) - smallest(empties)) / speed.calls;
  // The reference's calls must stand out from the cost of starting and drawing inputs, or the
  // ratio is noise.
  if (result.reference_ms * speed.calls < 1e3 * 0.05 * smallest(empties) || result.reference_ms <= 0) {
    result.problem = fmt::format("the reference's calls ({} each) are too short to time beside the {} it takes to "
                                 "start and draw their inputs",
                                 format_duration(result.reference_ms), format_duration(1e3 * smallest(empties)));
    return result;
  }
  result.measured = true;
  result.ratio = std::max(result.student_ms, 1e-6) / result.reference_ms;
  result.fraction = speed_fraction(speed, result.ratio);
  return result;
}

}  // namespace kiln::grader
