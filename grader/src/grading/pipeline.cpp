// The grading pipeline: build → observe → judge → sanitizer rerun → speed timing → verdicts → Report.
#include "kiln/grader/grading.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <cmath>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/cuda.h"
#include "kiln/grader/diagnose.h"
#include "kiln/grader/process.h"
#include "kiln/grader/judge.h"

namespace kiln::grader {

std::vector<const Check*> chosen_checks(const Module& m, const std::vector<std::string>& only) {
  for (const auto& id : only) {
    if (!m.check(id)) {
      std::string known;
      for (const auto& c : m.checks) known += " " + c.id;
      throw CourseError(fmt::format("module {} has no check '{}'. Its checks are:{}", m.number_text(), id, known));
    }
  }
  std::vector<const Check*> checks;
  for (const auto& c : m.checks)
    if (only.empty() || std::find(only.begin(), only.end(), c.id) != only.end()) checks.push_back(&c);
  return checks;
}

std::vector<fs::path> student_files_of(const Course& course, const TestTarget& target) {
  std::vector<fs::path> files;
  for (const auto& f : target.module->student_files) files.push_back(target.own.root / f);
  if (target.base_name == target.own.name)
    for (const Module* dep : course.prerequisites(*target.module))
      for (const auto& f : dep->student_files) files.push_back(target.base_root / dep->name() / f);
  return files;
}

LocalBuilder::LocalBuilder(const Workspace& ws, fs::path build_dir, std::vector<TestTarget> all_targets,
                           TestTarget wanted, bool device_builds_need_a_device)
    : ws_(ws), dir_(std::move(build_dir)), all_(std::move(all_targets)), wanted_(std::move(wanted)),
      need_device_(device_builds_need_a_device) {}

BuildResult LocalBuilder::build() {
  lock_ = lock_build_dir(dir_);
  CourseBuild build(ws_.course, dir_, ws_.kiln_home);
  if (need_device_ && cuda_device_nodes().empty()) build.set_device_builds(false);
  // A build that takes more than a second says what it is doing, on standard error.
  std::mutex m;
  std::condition_variable done_cv;
  bool done = false;
  std::thread notice([&] {
    std::unique_lock lock(m);
    if (done_cv.wait_for(lock, std::chrono::seconds(1), [&] { return done; })) return;
    const std::string text = fmt::format("Building module {}'s checks ({})... the first build of a module takes a "
                                         "minute or two; after that only what you changed is compiled.",
                                         wanted_.module->number_text(), wanted_.own.name);
    std::fputs((wrap(text, terminal_width(), "") + "\n").c_str(), stderr);
  });
  BuildResult built = build.build(all_, wanted_);
  {
    std::lock_guard lock(m);
    done = true;
  }
  done_cv.notify_all();
  notice.join();
  note_link(built, dir_, wanted_);  // also when the link failed: its objects explain why
  return built;
}

void note_link(BuildResult& built, const fs::path& dir, const TestTarget& target) {
  const ProcessResult commands =
      run_process({.argv = {"ninja", "-C", dir.string(), "-t", "commands", target.target_name()}, .output_cap = 16 << 20});
  if (!commands.ok()) return;
  std::string last;
  std::istringstream lines(commands.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) last = line;
  built.link_command = last;
  built.link_dir = dir;
  built.student_objects.clear();
  const fs::path objects = dir / "CMakeFiles" / (CourseBuild::library_target(*target.module, target.own.name) + ".dir");
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(objects, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
    if (it->path().extension() == ".o") built.student_objects.push_back(it->path());
  std::sort(built.student_objects.begin(), built.student_objects.end());
}

namespace {

// The call of a run's k-th observation, "" past its last.
std::string call_of(const std::vector<std::string>& observations, std::size_t k) {
  if (k >= observations.size()) return "";
  const auto record = nlohmann::json::parse(observations[k], nullptr, false);
  return record.is_object() && record.contains("call") && record["call"].is_string() ? record["call"].get<std::string>()
                                                                                      : "";
}

// The checks that passed or crashed, again on the sanitized twin; what the sanitizers report
// replaces their result.
void confirm_sanitized(const BuildResult& built, const std::vector<const Check*>& checks, RunResult& run,
                       const RunOptions& options) {
  std::vector<const Check*> again;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (checks[i]->device) continue;
    const Status s = run.checks[i].status;
    if (s == Status::passed || s == Status::crashed) {
      again.push_back(checks[i]);
      at.push_back(i);
    }
  }
  if (again.empty() || built.sanitized_binary.empty()) return;
  RunOptions sanitized = options;
  sanitized.sanitized = true;
  const RunResult second = run_checks(built.sanitized_binary, again, sanitized);
  run.commands.insert(run.commands.end(), second.commands.begin(), second.commands.end());
  for (std::size_t k = 0; k < again.size(); ++k) {
    const CheckResult& s = second.checks[k];
    if (s.status != Status::memory_error && s.status != Status::crashed) continue;
    CheckResult& r = run.checks[at[k]];
    // Where the sanitized run stopped: the call of the first result it did not give, named by the
    // first run's results (a passed check's, or a crashed one's up to its crash, both already
    // matched call by call against the check where a judge ran).
    if (s.observations.size() != r.observations.size() || r.status != Status::crashed)
      r.during = call_of(r.observations, s.observations.size());
    if (r.status == Status::crashed) {
      r.reason = s.reason;  // the same crash, described by the sanitizers
    } else {
      r.status = s.status;
      r.reason = "the values are right, but the program " + s.reason;
      r.failures.clear();
    }
  }
}

}  // namespace

void mark_waiting(RunResult& run, const std::vector<const Check*>& checks) {
  for (std::size_t i = 0; i < checks.size(); ++i) {
    CheckResult& r = run.checks[i];
    if (r.status != Status::failed) continue;  // a crash, a hang, a memory error: its own news
    for (const auto& id : checks[i]->needs) {
      // Only a check of this run tells: a check run alone is judged on its own.
      for (std::size_t k = 0; k < i; ++k) {
        const Status s = run.checks[k].status;
        if (checks[k]->id == id && s != Status::passed && s != Status::skipped && r.waits_for.empty()) r.waits_for = id;
      }
    }
  }
}

// "x.reshape({4}) threw kiln::ShapeError: ..." in a failure's detail gets where it was thrown in
// the student's code: "; thrown in reshape (tensor.cpp:57)". The places come from the program that
// ran (its "thrown" events), read against that program's own line tables.
void place_thrown(RunResult& run, const fs::path& binary, const std::vector<fs::path>& student_files) {
  for (CheckResult& c : run.checks) {
    if (c.thrown.empty()) continue;
    for (ReportedFailure& f : c.failures) {
      for (const CheckResult::Thrown& t : c.thrown) {
        if (f.detail.find(t.call + " threw ") == std::string::npos) continue;
        const std::string place = student_frames(frames_at(t.at, binary), student_files);
        if (!place.empty()) f.detail += "; thrown " + place;
        break;
      }
    }
  }
}

Verdicts observe_and_judge(const Module& module, BuildResult built, const PipelineOptions& options) {
  Verdicts v;
  v.module = &module;
  v.checks = chosen_checks(module, options.only_checks);
  v.build = std::move(built);
  if (!v.build.ok) {
    // A link that failed: which function, declared where, defined how.
    if (auto refused = calls_the_checks_in_link(v.build.log)) {
      v.build.error = std::move(refused);
    } else if (!v.build.error || v.build.error->file.empty()) {
      std::vector<fs::path> headers;
      std::error_code ec;
      for (auto it = fs::recursive_directory_iterator(module.dir / "include", ec);
           !ec && it != fs::recursive_directory_iterator(); ++it)
        if (it->path().extension() == ".h") headers.push_back(it->path());
      std::sort(headers.begin(), headers.end());
      if (auto explained = link_error(v.build.log, options.run.student_files, headers, v.build.student_objects))
        v.build.error = std::move(explained);
    }
    return v;
  }
  if (options.refuse_tampering) {
    auto refused = sanitizer_tampering(v.build.binary, options.run.student_files, v.build.student_objects);
    if (!refused) refused = forbidden_calls(module, v.build, v.build.student_objects);
    if (refused) {
      v.build.ok = false;
      v.build.error = std::move(refused);
      return v;
    }
  }
  BuildResult as_run = v.build;
  RunOptions run_options = options.run;
  if (options.sanitized_only) {
    if (v.build.sanitized_binary.empty()) {
      v.build.ok = false;
      v.build.error = Diagnostic{.message = "the sanitized test program was not built"};
      return v;
    }
    as_run.binary = v.build.sanitized_binary;
    run_options.sanitized = true;
  }
  RunResult run = run_built_checks(as_run, v.checks, run_options);  // observe
  if (options.judge) {
    v.in_process = run;
    RunOptions trusted;  // the judge is trusted code: ordinary limits, outside any sandbox or cgroup
    trusted.limits = default_limits();
    trusted.env = run_options.env;
    trusted.verbose = run_options.verbose;
    run = judge_built_checks(*options.judge, run, v.checks, trusted, options.judge_file);  // judge
  }
  place_thrown(run, as_run.binary, run_options.student_files);
  if (options.sanitize && !options.sanitized_only) confirm_sanitized(v.build, v.checks, run, run_options);
  mark_waiting(run, v.checks);
  v.run = std::move(run);
  return v;
}

Verdicts run_pipeline(const Module& module, Builder& builder, const PipelineOptions& options) {
  Verdicts v = observe_and_judge(module, builder.build(), options);
  if (options.speed) time_speed_checks(v, options.speed);
  return v;
}

void apply_speed(RunResult& run, const std::vector<const Check*>& checks,
                 const std::function<SpeedResult(const Check&, const std::string&)>* timer,
                 const std::string& unavailable) {
  // The checks that judged a context (kiln::testing::note_context) must all have judged the same
  // one: a program that shows one model to one check and another to the speed check earns no
  // speed points.
  std::string first_context, first_check, other_check;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const std::string& context = run.checks[i].speed_context;
    if (context.empty()) continue;
    if (first_context.empty()) first_context = context, first_check = checks[i]->id;
    else if (context != first_context && other_check.empty()) other_check = checks[i]->id;
  }
  // A failed speed check, with its first catalogued failure where it has one.
  auto fail = [](CheckResult& r, const Check& check, const std::string& which, const std::string& problem,
                 const std::string& plain) {
    r.status = Status::failed;
    r.failures.clear();
    if (check.failures.empty()) r.failures.push_back(ReportedFailure{.raw = plain});
    else r.failures.push_back(ReportedFailure{.id = check.failures.front().id, .params = {{"which", which}, {"problem", problem}}});
  };
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const Check& check = *checks[i];
    CheckResult& r = run.checks[i];
    if (!check.speed || r.status != Status::passed) continue;
    if (!other_check.empty() && !r.speed_context.empty()) {
      const std::string problem = fmt::format("the checks {} and {} were given different contexts (the model's "
                                              "bytes): what is timed must be what the other checks judged",
                                              first_check, other_check);
      fail(r, check, "across checks", problem, problem);
    } else if (!timer && !unavailable.empty()) {
      r.status = Status::failed;
      r.failures = {ReportedFailure{.raw = "it could not be timed: " + unavailable}};
    } else if (!timer) {
      r.status = Status::skipped;
      r.reason = "right on every input; its speed is timed beside the reference's by `grader grade`, where the "
                 "reference solution is";
    } else {
      const SpeedResult s = (*timer)(check, r.speed_context);
      if (s.measured) {
        const int points = static_cast<int>(std::lround(check.points * s.fraction));
        r.speed = SpeedScore{
            .fraction = s.fraction,
            .ratio = s.ratio,
            .text = fmt::format("{:.2f}× the reference's time ({} against {} a call, the fastest of {} rounds): {} of {} "
                                "points (all at {:g}× or less, none at {:g}× or more)",
                                s.ratio, format_duration(s.student_ms), format_duration(s.reference_ms), s.rounds,
                                points, check.points, check.speed->full_at, check.speed->zero_at)};
      } else if (s.wrong) {
        fail(r, check, "in a timed run", s.problem, "a timed run did not count: " + s.problem);
      } else {
        r.status = Status::skipped;
        r.reason = "its speed could not be measured: " + s.problem;
      }
    }
  }
}

bool any_speed_check_passed(const Verdicts& v) {
  for (std::size_t i = 0; v.run && i < v.checks.size(); ++i)
    if (v.checks[i]->speed && v.run->checks[i].status == Status::passed) return true;
  return false;
}

void time_speed_checks(Verdicts& v, SpeedTiming* timing) {
  if (!any_speed_check_passed(v)) return;
  std::string why_not;
  if (!timing || !timing->prepare(why_not)) {
    apply_speed(*v.run, v.checks, nullptr, why_not);
    return;
  }
  const std::function<SpeedResult(const Check&, const std::string&)> timer =
      [timing](const Check& check, const std::string& context) { return timing->time(check, context); };
  apply_speed(*v.run, v.checks, &timer, "");
}

Report report_of(const Course& course, const Verdicts& v, const std::string& variant) {
  Report report = make_report(course, *v.module, v.checks, v.build, v.run ? &*v.run : nullptr, variant, v.work);
  report.notes = v.notes;
  if (v.bound) bound_report(report, v.bound);
  return report;
}

}  // namespace kiln::grader
