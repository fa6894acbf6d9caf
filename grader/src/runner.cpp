#include "kiln/grader/runner.h"

#include <optional>
#include <random>
#include <set>

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
};

// From "not written yet: Tensor::reshape (/path/tensor.cpp:42)" the function and its location.
std::optional<std::pair<std::string, std::string>> stub_of(const std::string& text) {
  const auto rest = after_marker(text, "not written yet: ");
  if (!rest) return std::nullopt;
  const auto close = rest->rfind(')');
  const auto open = rest->rfind(" (", close);
  if (close == std::string::npos || open == std::string::npos) return std::make_pair(*rest, std::string());
  return std::make_pair(rest->substr(0, open), rest->substr(open + 2, close - open - 2));
}

CheckResult result_from_end(const nlohmann::json& event, const Check* check) {
  CheckResult r;
  r.check = check;
  r.ms = event.value("ms", 0.0);
  if (event.value("skipped", false)) {
    r.status = Status::skipped;
    for (const auto& f : event["failures"]) r.reason = f.value("message", "");
    return r;
  }
  if (event.value("passed", false)) {
    r.status = Status::passed;
    return r;
  }
  r.status = Status::failed;
  for (const auto& f : event["failures"]) {
    const std::string message = f.value("message", "");
    if (auto stub = stub_of(message)) {
      r.status = Status::not_written;
      r.stub = stub->first;
      r.stub_location = stub->second;
      r.failures.clear();
      break;
    }
    r.failures.push_back(parse_failure(message, f.value("file", ""), f.value("line", 0)));
  }
  return r;
}

}  // namespace

RunResult run_checks(const fs::path& binary, const std::vector<const Check*>& checks, const RunOptions& options) {
  RunResult run;
  std::map<std::string, const Check*> by_test;
  for (const Check* c : checks) by_test[c->test] = c;
  std::vector<const Check*> remaining = checks;
  std::map<std::string, CheckResult> results;

  constexpr int kEventFd = 3;
  // A fresh secret per run: only the test main, which reads it first, can sign its events.
  std::random_device entropy;
  const std::string token = fmt::format("{:08x}{:08x}{:08x}{:08x}", entropy(), entropy(), entropy(), entropy());
  int forged = 0;
  while (!remaining.empty()) {
    std::string filter;
    for (const Check* c : remaining) filter += (filter.empty() ? "" : ":") + c->test;
    std::vector<std::string> argv = options.launcher;
    argv.push_back(binary.string());
    argv.push_back("--gtest_filter=" + filter);
    argv.push_back("--gtest_color=no");
    run.commands.push_back(fmt::format("KILN_RESULTS_FD={} {}", kEventFd, shell_quote(argv)));

    Live live;
    ProcessSpec spec;
    spec.argv = argv;
    spec.env = {{"KILN_RESULTS_FD", std::to_string(kEventFd)}, {"GTEST_COLOR", "no"}};
    spec.limits = options.limits;
    spec.output_cap = 64 * 1024;
    spec.event_fd = kEventFd;
    spec.stdin_data = token + "\n";
    double now = 0;
    spec.on_event = [&](std::string_view line) {
      const auto event = nlohmann::json::parse(line, nullptr, false);
      if (!event.is_object() || !event.contains("test")) return;
      if (event.value("token", "") != token) {
        ++forged;
        return;
      }
      const std::string test = event.value("test", "");
      const auto check = by_test.find(test);
      if (check == by_test.end()) return;
      if (event.value("event", "") == "start") {
        live.running = test;
        live.running_since = now;
        live.any_started = true;
      } else if (event.value("event", "") == "end" && test == live.running) {
        live.ended[test] = result_from_end(event, check->second);
        live.running.clear();
      }
    };
    const double startup_limit = 20.0;
    spec.should_stop = [&](double elapsed) {
      now = elapsed;
      if (live.running.empty()) return !live.any_started && elapsed > startup_limit;
      return elapsed - live.running_since > by_test[live.running]->timeout_s;
    };
    const ProcessResult p = run_process(spec);
    if (!p.started) {
      for (const Check* c : remaining)
        results[c->test] = CheckResult{.check = c, .status = Status::crashed, .reason = p.start_error};
      break;
    }
    if (run.output.size() < 64 * 1024) run.output += p.out + p.err;
    // A launcher (the sandbox) reports its child's death by signal N as exit code 128 + N.
    int signal = p.signal;
    if (signal == 0 && !options.launcher.empty() && p.exit_code > 128 && p.exit_code < 128 + 65)
      signal = p.exit_code - 128;

    for (auto& [test, r] : live.ended) results[test] = std::move(r);
    if (!live.running.empty()) {
      CheckResult r{.check = by_test[live.running]};
      if (p.stopped) {
        r.status = Status::timed_out;
        r.reason = fmt::format("still running after {:g} s: an endless loop, or far too much work",
                               r.check->timeout_s);
      } else if (signal != 0) {
        r.status = Status::crashed;
        r.reason = describe_signal(signal);
      } else {
        r.status = Status::exited_early;
        r.reason = fmt::format("the program ended in the middle of this check with exit code {} "
                               "(exit(), quick_exit() or _exit() called from the code under test)",
                               p.exit_code);
      }
      results[live.running] = std::move(r);
    } else if (!live.any_started && live.ended.empty()) {
      // Nothing ran at all: a crash or exit before the first check (static initialisation).
      std::string why = p.stopped ? "the test program hung before its first check"
                        : signal ? "the test program crashed before its first check: " + describe_signal(signal)
                                   : fmt::format("the test program ended (exit code {}) without running this check", p.exit_code);
      for (const Check* c : remaining) {
        results[c->test] = CheckResult{.check = c, .status = signal || p.stopped || p.exit_code != 0
                                                                 ? Status::crashed : Status::missing,
                                       .reason = why};
      }
    }
    std::vector<const Check*> next;
    for (const Check* c : remaining)
      if (!results.count(c->test)) next.push_back(c);
    if (next.size() == remaining.size()) {
      for (const Check* c : next)
        results[c->test] = CheckResult{.check = c, .status = Status::missing,
                                       .reason = fmt::format("the test {} did not run: it is missing from the "
                                                             "module's tests", c->test)};
      break;
    }
    // A check ended the process early when no test was running (after its end event): go on.
    remaining = std::move(next);
  }
  for (const Check* c : checks) {
    CheckResult r = results[c->test];
    if (forged > 0 && r.status != Status::passed) {
      r.reason += fmt::format("{}{} report line{} without the grader's token were ignored: the code under test "
                              "wrote to the grader's channel",
                              r.reason.empty() ? "" : "; ", forged, forged == 1 ? "" : "s");
    }
    run.checks.push_back(std::move(r));
  }
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
