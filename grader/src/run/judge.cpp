// The judge's side of `grader grade` and `grader verify`: the observations a test program made are
// handed to the judge binary (the checks linked with the untouched stubs and trusted code only),
// which decides every check from them.
#include "kiln/grader/judge.h"

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kiln/protocol.h"

namespace kiln::grader {

RunResult judge_checks(const fs::path& judge, const RunResult& observed, const std::vector<const Check*>& checks,
                       const RunOptions& options, const fs::path& file) {
  std::vector<const Check*> to_judge;
  std::string text = "{\"tests\":{";
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const CheckResult& r = observed.checks[i];
    // A check that crashed, hung or stopped at a memory error is judged on what it observed before
    // (perhaps nothing): the observed program does not stop at a wrong result (it cannot tell), so
    // a failure the judge finds there is the check's first, and where its results stop names the
    // call that was running.
    if (r.observations_overflow || (!r.ended && !r.started)) continue;
    to_judge.push_back(checks[i]);
    text += (to_judge.size() > 1 ? "," : "") + nlohmann::json(checks[i]->test).dump() + ":[";
    for (std::size_t k = 0; k < r.observations.size(); ++k) text += (k ? "," : "") + r.observations[k];
    text += "]";
  }
  text += "}}\n";
  RunResult judged;
  if (!to_judge.empty()) {
    fs::create_directories(file.parent_path());
    write_if_changed(file, text);
    RunOptions trusted = options;
    trusted.launcher.clear();
    trusted.env.push_back({protocol::kJudge, file.string()});
    judged = run_checks(judge, to_judge, trusted);
    fs::remove(file);
  }
  RunResult out;
  out.commands = observed.commands;
  out.commands.insert(out.commands.end(), judged.commands.begin(), judged.commands.end());
  out.output = observed.output;
  std::size_t next = 0;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const CheckResult& seen = observed.checks[i];
    if (seen.observations_overflow && seen.ended) {
      out.checks.push_back(CheckResult{
          .check = checks[i], .status = Status::no_result,
          .reason = fmt::format("did not produce its result: more than {} MiB of results for one check, or {} MiB "
                                "for all of them", options.observation_cap >> 20, options.observations_in_run_cap >> 20)});
      continue;
    }
    if (!seen.ended && !seen.started) {
      out.checks.push_back(seen);
      out.checks.back().during.clear();  // the program's own word, not judged
      continue;
    }
    CheckResult verdict = judged.checks[next++];
    verdict.thrown = seen.thrown;  // where the observed program's errors were thrown, for the report
    if (!seen.ended) {
      // What stopped the program counts unless the judge found a catalogued failure before it.
      if (verdict.status == Status::failed && !verdict.failures.empty()) {
        verdict.ms = seen.ms;
        out.checks.push_back(std::move(verdict));
      } else {
        out.checks.push_back(seen);
        // The judge, replaying the results, names the call whose result never came; the
        // program's own word on where it was is not taken.
        out.checks.back().during = verdict.status == Status::no_result ? verdict.during : "";
      }
      continue;
    }
    verdict.ms = seen.ms;
    if (verdict.status == Status::crashed || verdict.status == Status::timed_out ||
        verdict.status == Status::exited_early || verdict.status == Status::missing) {
      verdict.status = Status::no_result;
      verdict.reason = "the judge could not judge this check's results: " + verdict.reason;
    }
    out.checks.push_back(std::move(verdict));
  }
  return out;
}

RunResult judge_built_checks(const BuildResult& judge, const RunResult& observed,
                             const std::vector<const Check*>& checks, const RunOptions& options, const fs::path& file) {
  // The judge is the checks whole. An observed program has its judging compiled out: replaying
  // observations through it would pass every check.
  if (judge.observed)
    throw std::logic_error(fmt::format("{} is an observed program, which cannot judge: judge with the checks built "
                                       "whole (a TestTarget without observer)",
                                       judge.binary.filename().string()));
  std::vector<const Check*> host, device;
  RunResult host_seen, device_seen;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    (checks[i]->device ? device : host).push_back(checks[i]);
    (checks[i]->device ? device_seen : host_seen).checks.push_back(observed.checks[i]);
  }
  host_seen.commands = observed.commands;
  host_seen.output = observed.output;
  RunResult host_run = host.empty() ? host_seen : judge_checks(judge.binary, host_seen, host, options, file);
  if (host.empty()) host_run.commands = observed.commands;
  RunResult device_run = device_seen;
  if (!device.empty() && !judge.device_binary.empty()) {
    RunOptions device_options = options;
    device_options.limits.memory_bytes = 0;  // the CUDA runtime reserves far more address space than it uses
    fs::path device_file = file;
    device_file.replace_extension(".device.json");
    device_run = judge_checks(judge.device_binary, device_seen, device, device_options, device_file);
  }
  RunResult run;
  run.commands = host_run.commands;  // the run's commands, then the judge's
  run.commands.insert(run.commands.end(), device_run.commands.begin(), device_run.commands.end());
  run.output = observed.output;
  std::size_t next_host = 0, next_device = 0;
  for (const Check* c : checks)
    run.checks.push_back(c->device ? device_run.checks[next_device++] : host_run.checks[next_host++]);
  return run;
}

}  // namespace kiln::grader
