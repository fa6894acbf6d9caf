#include "kiln/grader/runner.h"

#include "kiln/grader/diagnose.h"
#include "kiln/protocol.h"

#include <stdlib.h>

#include <cstdio>
#include <deque>
#include <filesystem>
#include <optional>
#include <set>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kiln::grader {

std::string status_name(Status s) {
  switch (s) {
    case Status::passed: return "passed";
    case Status::failed: return "failed";
    case Status::not_written: return "not_written";
    case Status::crashed: return "crashed";
    case Status::timed_out: return "timed_out";
    case Status::exited_early: return "exited_early";
    case Status::skipped: return "skipped";
    case Status::did_not_compile: return "did_not_compile";
    case Status::missing: return "missing";
    case Status::no_result: return "no_result";
    case Status::memory_error: return "memory_error";
  }
  return "missing";
}

Limits default_limits() {
  Limits l;
  l.cpu_s = 60;
  l.memory_bytes = std::size_t(4) << 30;
  l.processes = 1024;
  l.file_bytes = std::size_t(64) << 20;
  return l;
}

namespace {

// The rest of the line after `marker`, or nothing when the marker is absent.
std::optional<std::string> after_marker(const std::string& text, std::string_view marker) {
  const auto at = text.find(marker);
  if (at == std::string::npos) return std::nullopt;
  const auto begin = at + marker.size();
  return text.substr(begin, text.find('\n', begin) - begin);
}

}  // namespace

ReportedFailure parse_failure(const std::string& message, const std::string& file, int line) {
  ReportedFailure f;
  f.file = file;
  f.line = line;
  const auto id = after_marker(message, "[kiln-failure] ");
  if (!id) {
    f.raw = message;
    return f;
  }
  f.id = id->substr(0, id->find(' '));
  if (const auto params = after_marker(message, "[kiln-params] ")) {
    const auto values = nlohmann::json::parse(*params, nullptr, false);
    if (values.is_object())
      for (const auto& [k, v] : values.items()) f.params[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  if (const auto detail = after_marker(message, "[kiln-detail] ")) f.detail = *detail;
  return f;
}

namespace {

struct Live {
  std::map<std::string, CheckResult> ended;  // by test name
  std::string running;                        // started, not ended
  double running_since = 0;
  bool any_started = false;
  // The running check's observations so far, and where its calls' errors were thrown.
  std::vector<std::string> observations;
  std::vector<CheckResult::Thrown> thrown;
  std::string calling;  // the call the program said it began, until its result came
  std::size_t observation_bytes = 0;
  bool overflow = false;
  // Every check's observations kept in this run so far: what the grader holds for one program.
  std::size_t* kept_in_run = nullptr;
};

// From "not written yet: Tensor::reshape (/path/tensor.cpp:42)" the function and its location.
std::optional<std::pair<std::string, std::string>> stub_of(const std::string& text) {
  const auto rest = after_marker(text, protocol::kNotWrittenYet);
  if (!rest) return std::nullopt;
  const auto close = rest->rfind(')');
  const auto open = rest->rfind(" (", close);
  if (close == std::string::npos || open == std::string::npos) return std::make_pair(*rest, std::string());
  return std::make_pair(rest->substr(0, open), rest->substr(open + 2, close - open - 2));
}

// A field of a JSON object the test program wrote, when it has the type asked for; `fallback`
// otherwise. Whatever the program writes, reading it never throws.
template <typename T>
T field(const nlohmann::json& object, const char* key, T fallback) {
  if (!object.is_object()) return fallback;
  const auto it = object.find(key);
  if (it == object.end()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) return it->is_string() ? it->template get<std::string>() : fallback;
  else if constexpr (std::is_same_v<T, bool>) return it->is_boolean() ? it->template get<bool>() : fallback;
  else return it->is_number() ? it->template get<T>() : fallback;
}

// How deep a JSON text nests its arrays and objects (strings skipped): a hostile observation may
// nest a million deep, which no reader of it should have to recurse through.
std::size_t nesting_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

CheckResult result_from_end(const nlohmann::json& event, const Check* check) {
  CheckResult r;
  r.check = check;
  r.ended = true;
  const auto ms = event.find("ms");
  r.ms = ms != event.end() && ms->is_number() ? ms->get<double>() : 0.0;
  if (const auto figures = event.find("figures"); figures != event.end() && figures->is_array()) {
    for (const auto& f : *figures) {
      if (!f.is_object() || !f.contains("value") || !f["value"].is_number()) continue;
      r.figures.push_back({.name = field<std::string>(f, "name", ""),
                           .value = f["value"].get<double>(),
                           .unit = field<std::string>(f, "unit", ""),
                           .higher_is_better = field<bool>(f, "higher_is_better", true)});
    }
  }
  if (const auto context = event.find("speed_context"); context != event.end() && context->is_string())
    r.speed_context = context->get<std::string>();
  auto text = [&](const char* key) {
    const auto it = event.find(key);
    return it != event.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto flag = [&](const char* key) {
    const auto it = event.find(key);
    return it != event.end() && it->is_boolean() && it->get<bool>();
  };
  if (const std::string why = text("judge_error"); !why.empty()) {
    r.status = Status::no_result;
    r.reason = "the judge could not judge this check: " + why;
    return r;
  }
  if (const std::string why = text("unobserved"); !why.empty()) {
    r.during = text("stopped_during");
    r.status = Status::no_result;
    r.reason = "did not produce its result: " + why;
    return r;
  }
  if (auto stub = stub_of(text("not_written"))) {
    r.status = Status::not_written;
    r.stub = stub->first;
    r.stub_location = stub->second;
    return r;
  }
  const auto failures = event.find("failures");
  const bool listed = failures != event.end() && failures->is_array();
  if (flag("skipped")) {
    r.status = Status::skipped;
    if (listed)
      for (const auto& f : *failures)
        if (f.is_object()) r.reason = field<std::string>(f, "message", "");
    return r;
  }
  if (flag("passed")) {
    r.status = Status::passed;
    return r;
  }
  r.status = Status::failed;
  if (!listed) return r;
  for (const auto& f : *failures) {
    if (!f.is_object()) continue;
    const std::string message = field<std::string>(f, "message", "");
    if (auto stub = stub_of(message)) {
      r.status = Status::not_written;
      r.stub = stub->first;
      r.stub_location = stub->second;
      r.failures.clear();
      break;
    }
    r.failures.push_back(parse_failure(message, field<std::string>(f, "file", ""), field<int>(f, "line", 0)));
  }
  return r;
}

}  // namespace

namespace {

using protocol::kEventFd;
using protocol::kStatusFd;  // the sandbox wrapper's report (RunOptions::launcher)

// The process that runs `remaining`'s tests: its arguments, environment and limits. Adds the
// command, as a shell would run it, to `commands`.
ProcessSpec checks_process(const fs::path& binary, const std::vector<const Check*>& remaining,
                           const RunOptions& options, std::vector<std::string>& commands) {
  std::string filter;
  for (const Check* c : remaining) filter += (filter.empty() ? "" : ":") + c->test;
  std::vector<std::string> argv = options.launcher;
  argv.insert(argv.end(), {binary.string(), "--gtest_filter=" + filter, "--gtest_color=no"});
  std::string env_text = fmt::format("{}={}", protocol::kResultsFd, kEventFd);
  for (const auto& [k, v] : options.env) env_text += fmt::format(" {}={}", k, shell_quote({v}));
  commands.push_back(env_text + " " + shell_quote(argv));

  ProcessSpec spec;
  spec.argv = argv;
  std::string timeouts;
  for (const Check* c : remaining) timeouts += fmt::format("{}{}={:g}", timeouts.empty() ? "" : ";", c->test, c->timeout_s);
  spec.env = {{protocol::kResultsFd, std::to_string(kEventFd)}, {"GTEST_COLOR", "no"}, {protocol::kCheckTimeouts, timeouts}};
  spec.env.insert(spec.env.end(), options.env.begin(), options.env.end());
  spec.limits = options.limits;
  spec.join_cgroup = options.cgroup;
  if (options.sanitized) {
    spec.limits.memory_bytes = 0;
    spec.env.insert(spec.env.end(), {{protocol::kSanitized, "1"},
                                     {"ASAN_OPTIONS", "detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=" + std::to_string(protocol::kSanitizerExit) + ":"
                                                      "allocator_may_return_null=1:max_allocation_size_mb=2048:"
                                                      "hard_rss_limit_mb=3072:detect_odr_violation=0:symbolize=1"},
                                     {"UBSAN_OPTIONS", "halt_on_error=1:exitcode=" + std::to_string(protocol::kSanitizerExit) + ":print_stacktrace=1:symbolize=1"}});
  }
  spec.output_cap = 64 * 1024;
  spec.event_fd = kEventFd;
  spec.event_line_cap = options.observation_cap + (1 << 20);
  if (!options.launcher.empty()) {
    spec.status_fd = kStatusFd;
    spec.clean_env = true;  // sandboxed: only what the checks need, none of the grader's environment
  }
  return spec;
}

// One line of the event channel. Whatever the program writes there is a claim: lines that are not
// events are ignored; a check's record is what lies between its start and its end, the last one
// if it repeats. An observation is kept as it came, checked only for being JSON: the judge reads it.
void take_event(Live& live, std::string_view line, const std::map<std::string, const Check*>& by_test, double now,
                const RunOptions& options) {
  constexpr std::string_view kObservation = "{\"event\":\"observe\",";
  if (line.substr(0, kObservation.size()) == kObservation) {
    if (live.running.empty()) return;
    live.calling.clear();
    live.observation_bytes += line.size();
    *live.kept_in_run += line.size();
    if (live.observation_bytes > options.observation_cap || *live.kept_in_run > options.observations_in_run_cap) {
      live.overflow = true;
      live.observations.clear();
      return;
    }
    std::string record = "{" + std::string(line.substr(kObservation.size()));
    constexpr std::size_t kDeepest = 64;  // no observation of a tensor, a tuple or an error nests deeper
    if (!live.overflow && nesting_depth(record) <= kDeepest && nlohmann::json::accept(record))
      live.observations.push_back(std::move(record));
    else if (!live.overflow) live.observations.push_back("{\"malformed\":true}");  // the judge refuses it
    return;
  }
  if (nesting_depth(line) > 64) return;  // no event nests that deep
  auto event = nlohmann::json::parse(line, nullptr, false);
  if (!event.is_object()) return;
  const auto kind = event.find("event");
  if (kind == event.end() || !kind->is_string()) return;
  const auto test_field = event.find("test");
  if (test_field == event.end() || !test_field->is_string()) return;
  const std::string test = *test_field;
  const auto check = by_test.find(test);
  if (check == by_test.end()) return;
  if (*kind == "start") {
    live.running = test;
    live.running_since = now;
    live.any_started = true;
    live.observations.clear();
    live.thrown.clear();
    live.calling.clear();
    live.observation_bytes = 0;
    live.overflow = false;
  } else if (*kind == "calling" && test == live.running) {
    const auto call = event.find("call");
    if (call != event.end() && call->is_string()) live.calling = call->get<std::string>().substr(0, 2000);
  } else if (*kind == "thrown" && test == live.running) {
    // At most a few per check, each a call's name and a few offsets, cut to size: a report's line.
    const auto call = event.find("call");
    const auto at = event.find("at");
    if (live.thrown.size() >= 16 || call == event.end() || !call->is_string() || at == event.end() || !at->is_array())
      return;
    CheckResult::Thrown t{.call = call->get<std::string>().substr(0, 2000)};
    for (const auto& a : *at) {
      if (!a.is_string() || t.at.size() >= 8) break;
      const std::string offset = a.get<std::string>();
      if (offset.size() > 2 && offset.size() <= 18 && offset.rfind("0x", 0) == 0 &&
          offset.find_first_not_of("0123456789abcdef", 2) == std::string::npos)
        t.at.push_back(offset);
    }
    if (!t.at.empty()) live.thrown.push_back(std::move(t));
  } else if (*kind == "end" && test == live.running) {
    CheckResult r = result_from_end(event, check->second);
    r.thrown = std::move(live.thrown);
    live.thrown.clear();
    r.observations = std::move(live.observations);
    r.observations_overflow = live.overflow;
    live.observations.clear();
    live.ended[test] = std::move(r);
    live.running.clear();
  }
}

// A check that overran its time in a function of the student's.
struct Stuck {
  std::string check;  // its id
  double seconds = 0;  // its time limit
  Frame at;            // the innermost frame in the student's files
};

// After a check was stuck in a student's function, the checks after it in the run get this long,
// or their own limit when it is shorter. One still running then in the same function is stuck
// there too and says so, without waiting its whole limit; one running anywhere else is run again
// with its own limit, so a slow check is never blamed on another's loop.
constexpr double kAfterStuck_s = 2.0;

struct Interrupted {
  CheckResult result;
  std::optional<Frame> stuck_at;  // it overran its time there
  bool run_again = false;         // stopped at the shorter limit outside the function stuck before
};

// The check that was running when the process ended: timed out, a memory error, a crash, or an
// early exit, placed in the student's code where the program said where it was. `limit_s` is the
// time it was given: its own, or kAfterStuck_s after `earlier`.
Interrupted interrupted(const Check* check, double limit_s, const std::optional<Stuck>& earlier, const ProcessResult& p,
                        int signal, int exit_code, const fs::path& binary, const RunOptions& options) {
  Interrupted out;
  CheckResult& r = out.result;
  r.check = check;
  const std::string err = p.err_tail.empty() ? p.err : p.err_tail;
  if (p.stopped ||
      (signal == 0 && exit_code == protocol::kStuckExit && err.find(protocol::kStuckMarker) != std::string::npos)) {
    const auto frames = frames_after(err, protocol::kStuckMarker, binary);
    const std::string where = student_frames(frames, options.student_files);
    out.stuck_at = innermost_student_frame(frames, options.student_files);
    r.status = Status::timed_out;
    if (limit_s < check->timeout_s) {
      const bool same = earlier && out.stuck_at && out.stuck_at->function == earlier->at.function &&
                        out.stuck_at->file == earlier->at.file;
      if (!same) {
        out.run_again = true;
        out.stuck_at.reset();
        return out;
      }
      r.reason = fmt::format("stopped after {:g} s in {}, where {} was stuck for {:g} s: fix {} first; it was {}",
                             limit_s, out.stuck_at->function, earlier->check, earlier->seconds, earlier->check, where);
      return out;
    }
    r.reason = fmt::format("still running after {:g} s: an endless loop, or far too much work", check->timeout_s);
    if (!where.empty()) r.reason += "; it was " + where;
  } else if (const auto report = options.sanitized ? sanitizer_report(err, options.student_files) : std::nullopt) {
    r.status = report->crash ? Status::crashed : Status::memory_error;
    r.reason = report->text;
  } else if (signal != 0) {
    r.status = Status::crashed;
    r.reason = describe_signal(signal);
    const std::string where = student_frames(frames_after(err, protocol::kFramesMarker, binary), options.student_files);
    if (!where.empty()) r.reason += ", " + where;
  } else {
    r.status = Status::exited_early;
    r.reason = fmt::format("the program ended in the middle of this check with exit code {} "
                           "(exit(), quick_exit() or _exit() called from the code under test)",
                           exit_code);
  }
  return out;
}

// A folder of the run's own for the test program's temporary files, removed when the run ends.
// In the sandbox /tmp is a fresh tmpfs already; outside it, a check that was killed or crashed
// would otherwise leave its scratch files in the machine's /tmp.
class RunTempDir {
 public:
  // Without a temporary folder to make it in (TMPDIR names none), the run goes on without one.
  RunTempDir() {
    std::error_code error;
    const fs::path base = fs::temp_directory_path(error);
    if (error) return;
    std::string pattern = (base / "kiln-run-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~RunTempDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  RunTempDir(const RunTempDir&) = delete;
  RunTempDir& operator=(const RunTempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

}  // namespace

RunResult run_checks(const fs::path& binary, const std::vector<const Check*>& checks, const RunOptions& options) {
  std::optional<RunTempDir> temp;
  if (options.launcher.empty()) temp.emplace();
  RunResult run;
  std::map<std::string, const Check*> by_test;
  for (const Check* c : checks) by_test[c->test] = c;
  std::vector<const Check*> remaining = checks;
  std::map<std::string, CheckResult> results;
  std::size_t kept_in_run = 0;
  std::optional<Stuck> stuck;          // the first check of the run stuck in the student's code
  std::set<std::string> own_limit;     // run again with their own limit (kAfterStuck_s)
  auto limit_of = [&](const Check* c) {
    return stuck && !own_limit.count(c->test) ? std::min(c->timeout_s, kAfterStuck_s) : c->timeout_s;
  };
  while (!remaining.empty()) {
    std::deque<Check> limited;  // the remaining checks with the limit they get in this process
    std::vector<const Check*> to_run;
    for (const Check* c : remaining) {
      if (limit_of(c) == c->timeout_s) {
        to_run.push_back(c);
        continue;
      }
      limited.push_back(*c);
      limited.back().timeout_s = limit_of(c);
      to_run.push_back(&limited.back());
    }
    ProcessSpec spec = checks_process(binary, to_run, options, run.commands);
    if (temp && !temp->path().empty()) spec.env.emplace_back("TMPDIR", temp->path().string());
    Live live;
    live.kept_in_run = &kept_in_run;
    double now = 0;
    spec.on_event = [&](std::string_view line) {
      try {
        take_event(live, line, by_test, now, options);
      } catch (const std::exception&) {
        // A line no event could be read from is ignored, as any other line that is not an event.
      }
    };
    const double startup_limit = 20.0;
    spec.should_stop = [&](double elapsed) {
      now = elapsed;
      if (live.running.empty()) return !live.any_started && elapsed > startup_limit;
      // The test program reports where a check is stuck at its timeout; the grader's own deadline
      // comes a little later, and holds whatever the program does.
      return elapsed - live.running_since > limit_of(by_test[live.running]) + 2.0;
    };
    const ProcessResult p = run_process(spec);
    if (!p.started) {
      for (const Check* c : remaining)
        results[c->test] = CheckResult{.check = c, .status = Status::crashed, .reason = p.start_error};
      break;
    }
    if (run.output.size() < 64 * 1024) run.output += p.out + p.err;
    int signal = p.signal;
    int exit_code = p.exit_code;
    // Inside the sandbox, the wrapper around the test program reports how it ended: its exit
    // code, or the signal that ended it (a launcher's own exit code cannot tell 139 from SIGSEGV).
    if (!options.launcher.empty() && signal == 0) {
      int n = 0;
      if (std::sscanf(p.status_report.c_str(), "signal %d", &n) == 1) signal = n;
      else if (std::sscanf(p.status_report.c_str(), "exit %d", &n) == 1) exit_code = n;
    }
    for (auto& [test, r] : live.ended) results[test] = std::move(r);
    bool run_again = false;
    if (!live.running.empty()) {
      const Check* c = by_test[live.running];
      Interrupted i = interrupted(c, limit_of(c), stuck, p, signal, exit_code, binary, options);
      run_again = i.run_again;
      if (run_again) {
        own_limit.insert(c->test);
      } else {
        // What it observed before it stopped: the judge decides whether a failure came first.
        i.result.observations = std::move(live.observations);
        i.result.thrown = std::move(live.thrown);
        i.result.during = std::move(live.calling);  // the program's word: `grader check` only
        i.result.started = true;
        i.result.observations_overflow = live.overflow;
        results[live.running] = std::move(i.result);
      }
      if (!stuck && i.stuck_at) stuck = Stuck{.check = c->id, .seconds = c->timeout_s, .at = *i.stuck_at};
    } else if (!live.any_started && live.ended.empty()) {
      // Nothing ran at all: a crash or exit before the first check (static initialisation).
      std::string why = p.stopped ? "the test program hung before its first check"
                        : signal ? "the test program crashed before its first check: " + describe_signal(signal)
                                   : fmt::format("the test program ended (exit code {}) without running this check", exit_code);
      for (const Check* c : remaining)
        results[c->test] = CheckResult{
            .check = c, .status = signal || p.stopped || exit_code != 0 ? Status::crashed : Status::missing, .reason = why};
    }
    std::vector<const Check*> next;
    for (const Check* c : remaining)
      if (!results.count(c->test)) next.push_back(c);
    if (next.size() == remaining.size() && !run_again) {
      for (const Check* c : next)
        results[c->test] = CheckResult{.check = c, .status = Status::missing,
                                       .reason = fmt::format("the test {} did not run: it is missing from the "
                                                             "module's tests", c->test)};
      break;
    }
    // A check ended the process early when no test was running (after its end event): go on.
    remaining = std::move(next);
  }
  for (const Check* c : checks) run.checks.push_back(results[c->test]);
  return run;
}

}  // namespace kiln::grader

namespace kiln::grader {

RunResult run_built_checks(const BuildResult& build, const std::vector<const Check*>& checks,
                           const RunOptions& options) {
  std::vector<const Check*> host, device;
  for (const Check* c : checks) (c->device ? device : host).push_back(c);
  RunResult host_run, device_run;
  if (!host.empty()) host_run = run_checks(build.binary, host, options);
  if (!device.empty() && !build.device_binary.empty()) {
    // The CUDA runtime reserves address space far beyond any memory it uses (unified addressing):
    // an address-space limit stops it from starting. The other limits still hold.
    RunOptions device_options = options;
    device_options.limits.memory_bytes = 0;
    // One process per device check: an illegal address leaves the process's CUDA context unusable,
    // and must cost only the check it happened in.
    for (const Check* c : device) {
      RunResult one = run_checks(build.device_binary, {c}, device_options);
      device_run.checks.push_back(std::move(one.checks.front()));
      device_run.commands.insert(device_run.commands.end(), one.commands.begin(), one.commands.end());
      device_run.output += one.output;
    }
  } else {
    for (const Check* c : device) {
      CheckResult r;
      r.check = c;
      if (build.device_error) {
        r.status = Status::did_not_compile;
        const Diagnostic& d = *build.device_error;
        r.reason = d.file.empty() ? "did not compile for the device: " + d.message
                                  : fmt::format("did not compile for the device: {}:{}: {}", d.file.string(),
                                                d.line, d.message);
      } else {
        r.status = Status::skipped;
        r.reason = build.device_skip_reason.empty() ? "the device checks were not built" : build.device_skip_reason;
      }
      device_run.checks.push_back(std::move(r));
    }
  }
  // Back in the order asked for.
  RunResult run;
  std::size_t next_host = 0, next_device = 0;
  for (const Check* c : checks)
    run.checks.push_back(c->device ? device_run.checks[next_device++] : host_run.checks[next_host++]);
  run.commands = host_run.commands;
  run.commands.insert(run.commands.end(), device_run.commands.begin(), device_run.commands.end());
  run.output = host_run.output + device_run.output;
  return run;
}

}  // namespace kiln::grader
