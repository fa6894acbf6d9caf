#include "kiln/grader/speed.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "kiln/grader/bench.h"
#include "kiln/grader/build.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

double speed_fraction(const Speed& speed, double ratio) {
  if (!(ratio > 0)) return 0;
  if (ratio <= speed.full_at) return 1;
  if (ratio >= speed.zero_at) return 0;
  return 1 - std::log(ratio / speed.full_at) / std::log(speed.zero_at / speed.full_at);
}

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct TimedRun {
  ProcessResult process;
  std::string problem;  // why the run did not count
};

TimedRun run_timed(const fs::path& binary, const std::vector<std::string>& launcher, const Check& check,
                   const SpeedPrograms& programs, int round, int calls, const fs::path& verify_file = {}) {
  std::vector<std::string> argv = launcher;  // ends with the sandbox wrapper and its status descriptor, 4
  argv.insert(argv.end(), {binary.string(), "--gtest_filter=" + check.test, "--gtest_color=no"});
  ProcessSpec spec{.argv = argv, .env = programs.env, .output_cap = std::size_t(256) << 20};
  spec.env.emplace_back("KILN_SPEED_ROUND", std::to_string(round));
  spec.env.emplace_back("KILN_SPEED_CALLS", std::to_string(calls));
  if (!verify_file.empty()) spec.env.emplace_back("KILN_SPEED_VERIFY", verify_file.string());
  if (!launcher.empty()) {
    spec.status_fd = 4;
    spec.clean_env = true;
  }
  spec.limits.memory_bytes = std::size_t(4) << 30;
  const double limit = std::max(30.0, check.timeout_s * 3);
  spec.should_stop = [&](double elapsed) { return elapsed > limit; };
  TimedRun run{.process = run_process(spec)};
  const ProcessResult& p = run.process;
  if (!p.started) run.problem = p.start_error;
  else if (p.stopped) run.problem = fmt::format("a timed run was still going after {:g} s", limit);
  else if (p.signal) run.problem = "a timed run crashed: " + describe_signal(p.signal);
  else if (p.exit_code != 0) run.problem = fmt::format("a timed run ended with exit code {}", p.exit_code);
  else if (p.out_bytes > p.out.size()) run.problem = "a timed run wrote more than its results";
  return run;
}

}  // namespace

SpeedResult time_speed_check(const Check& check, const SpeedPrograms& programs) {
  const Speed& speed = *check.speed;
  SpeedResult result;
  std::vector<double> student, reference;
  fs::create_directories(programs.scratch);
  for (int round = 1; round <= speed.rounds; ++round) {
    const TimedRun empty = run_timed(programs.reference, {}, check, programs, round, 0);
    if (!empty.problem.empty()) {
      result.problem = "the reference's empty run failed: " + empty.problem;
      return result;
    }
    // Alternate which program goes first, so that neither always finds the caches warm.
    TimedRun mine, theirs;
    if (round % 2) {
      mine = run_timed(programs.student, programs.student_launcher, check, programs, round, speed.calls);
      theirs = run_timed(programs.reference, {}, check, programs, round, speed.calls);
    } else {
      theirs = run_timed(programs.reference, {}, check, programs, round, speed.calls);
      mine = run_timed(programs.student, programs.student_launcher, check, programs, round, speed.calls);
    }
    if (!theirs.problem.empty()) {
      result.problem = "the reference's timed run failed: " + theirs.problem;
      return result;
    }
    if (!mine.problem.empty()) {
      result.problem = mine.problem;
      result.wrong = true;
      return result;
    }
    // Every result of the student's run, judged by trusted code before its time counts.
    const fs::path results = programs.scratch / fmt::format("round-{}.bin", round);
    std::ofstream(results, std::ios::binary) << mine.process.out;
    const TimedRun verdict = run_timed(programs.verifier, {}, check, programs, round, speed.calls, results);
    fs::remove(results);
    const std::string said = verdict.process.out.substr(0, verdict.process.out.find('\n'));
    if (!verdict.problem.empty() || said != "ok") {
      result.problem = said.rfind("wrong: ", 0) == 0 ? said.substr(7)
                                                     : "its results could not be judged: " + verdict.problem + said;
      result.wrong = true;
      return result;
    }
    const double base = empty.process.cpu_s;
    // In the sandbox, the wrapper around the program reports its CPU time (the sandbox's own
    // processes do not pass a child's time on to the grader).
    double mine_cpu = mine.process.cpu_s;
    if (!programs.student_launcher.empty()) {
      const auto at = mine.process.status_report.find(" cpu ");
      if (at == std::string::npos) {
        result.problem = "the sandbox did not report the timed run's CPU time";
        return result;
      }
      mine_cpu = std::atof(mine.process.status_report.c_str() + at + 5);
    }
    student.push_back(std::max(1e-6, mine_cpu - base) / speed.calls);
    reference.push_back(std::max(1e-6, theirs.process.cpu_s - base) / speed.calls);
  }
  result.measured = true;
  result.rounds = speed.rounds;
  result.student_ms = 1e3 * median(student);
  result.reference_ms = 1e3 * median(reference);
  result.ratio = result.student_ms / result.reference_ms;
  result.fraction = speed_fraction(speed, result.ratio);
  return result;
}

std::optional<SpeedPrograms> local_speed_programs(const Workspace& ws, const Module& module, const TestTarget& target) {
  if (!ws.course.has_solutions() ||
      std::none_of(module.checks.begin(), module.checks.end(), [](const Check& c) { return c.speed.has_value(); }))
    return std::nullopt;
  SpeedPrograms programs;
  const fs::path dir = ws.build_dir("speed");
  programs.hold = lock_build_dir(dir);
  // Built for speed, as a student would build a kernel they time: the same flags for both.
  CourseBuild build(ws.course, dir, ws.kiln_home, "-O2 -march=native -DNDEBUG");
  build.set_device_builds(false);
  const TestTarget reference = solution_target(ws.course, module);
  const BuildResult theirs = build.build(standard_targets(ws.course), reference);
  if (!theirs.ok) throw CourseError("the reference solution of module " + module.number_text() + " does not build for timing:\n" + theirs.log);
  const BuildResult mine = target.own.name == reference.own.name ? theirs : build.build(standard_targets(ws.course), target);
  if (!mine.ok) return std::nullopt;
  programs.student = mine.binary;
  programs.reference = programs.verifier = theirs.binary;
  std::random_device entropy;
  programs.env = {{"KILN_SEED", std::to_string((std::uint64_t(entropy()) << 32) ^ entropy())}};
  programs.scratch = dir / "rounds";
  return programs;
}

void score_speed_checks(Report& report, const Module& module, const SpeedPrograms* programs,
                        const std::string& unavailable) {
  int score = 0;
  for (CheckReport& c : report.checks) {
    const Check* check = module.check(c.id);
    if (check && check->speed && c.status == Status::passed) {
      if (!programs && !unavailable.empty()) {
        c.status = Status::failed;
        c.points = 0;
        c.summary = "it could not be timed: " + unavailable;
      } else if (!programs) {
        c.status = Status::skipped;
        c.points = 0;
        c.summary = "right on every input; its speed is timed beside the reference's by `grader grade`, where the "
                    "reference solution is";
      } else {
        const SpeedResult s = time_speed_check(*check, *programs);
        if (s.measured) {
          c.points = static_cast<int>(std::lround(c.max_points * s.fraction));
          c.speed_ratio = s.ratio;
          c.speed = fmt::format("{:.2f}× the reference's time ({} against {} a call, median of {} rounds): {} of {} "
                                "points (all at {:g}× or less, none at {:g}× or more)",
                                s.ratio, format_duration(s.student_ms), format_duration(s.reference_ms), s.rounds,
                                c.points, c.max_points, check->speed->full_at, check->speed->zero_at);
        } else if (s.wrong) {
          c.status = Status::failed;
          c.points = 0;
          c.summary = "a timed run did not count: " + s.problem;
          if (!check->failures.empty()) {
            c.failure_ids = {check->failures.front().id};
            c.summary = render_message(check->failures.front().message, {{"which", "in a timed run"}, {"problem", ": " + s.problem}});
            c.messages = {c.summary};
            c.hints = {check->failures.front().hint};
          }
        } else {
          c.status = Status::skipped;
          c.points = 0;
          c.summary = "its speed could not be measured: " + s.problem;
        }
      }
    }
    score += c.points;
  }
  report.score = score;
}

}  // namespace kiln::grader
