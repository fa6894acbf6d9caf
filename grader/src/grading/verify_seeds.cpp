// grader verify --seeds N: whether the references pass at every seed, not only at the one `grader
// check` uses. `grade` draws a fresh seed for every submission, so a tolerance that a right answer
// misses one time in ten would cost an honest student points now and then; this finds it first.
// Each module's reference and its pristine stubs (the judge) are built once, in verify's build
// folder, then every (module, seed) pair runs through the observed program and the judge on every
// core.
#include <algorithm>
#include <cstdio>
#include <map>
#include <random>

#include <fmt/format.h>

#include "kiln/grader/grading.h"

namespace kiln::grader {

namespace {

struct SeedJob {
  std::size_t module = 0;  // index into the chosen modules
  std::uint64_t seed = 0;
  Report report;
};

// Seeds drawn afresh, as grade draws them, each different and none the checks' default.
std::vector<std::uint64_t> fresh_seeds(int count, std::uint64_t default_seed) {
  std::random_device entropy;
  std::vector<std::uint64_t> seeds;
  while (static_cast<int>(seeds.size()) < count) {
    const std::uint64_t s = (std::uint64_t(entropy()) << 32) ^ entropy();
    if (s != default_seed && std::find(seeds.begin(), seeds.end(), s) == seeds.end()) seeds.push_back(s);
  }
  return seeds;
}

}  // namespace

int verify_seeds(const Workspace& ws, const VerifyOptions& options) {
  require_solutions(ws, "verify --seeds");
  const std::vector<const Module*> modules = modules_named(ws.course, options.modules);
  const std::vector<std::uint64_t> seeds = fresh_seeds(options.seeds, VerifyOptions{}.seed);

  // The targets: per module, its reference's observed program and its stubs' (the judge).
  std::vector<TestTarget> targets;
  for (const Module* m : modules) {
    TestTarget solution = solution_target(ws.course, *m);
    TestTarget stub = pristine_target(ws, *m, pristine_stubs(ws, *m));
    solution.with_device = stub.with_device = false;  // a CUDA device's checks are not drawn here
    solution.observer = true;  // as grade runs a submission; the judge is the stubs' checks whole
    targets.push_back(solution);
    targets.push_back(stub);
  }
  const fs::path build_dir = ws.build_dir("verify");
  std::vector<BuildResult> built;
  const auto lock = lock_build_dir(build_dir);  // held while the programs it builds run, too
  {
    CourseBuild build(ws.course, build_dir, ws.kiln_home);
    build.set_device_builds(false);
    std::fputs(fmt::format("Building the references and the judges of {} module{}...\n", modules.size(),
                           modules.size() == 1 ? "" : "s").c_str(), stdout);
    std::fflush(stdout);
    built = build.build_many(targets, targets);
  }

  std::vector<SeedJob> jobs;
  for (std::size_t k = 0; k < modules.size(); ++k)
    for (const std::uint64_t s : seeds) jobs.push_back({.module = k, .seed = s});
  std::fputs(fmt::format("Running {} reference{} at {} seed{} each: {} runs...\n", modules.size(),
                         modules.size() == 1 ? "" : "s", seeds.size(), seeds.size() == 1 ? "" : "s", jobs.size())
                 .c_str(), stdout);
  std::fflush(stdout);
  on_cores(jobs.size(), [&](std::size_t i) {
    SeedJob& j = jobs[i];
    const Module& m = *modules[j.module];
    const BuildResult& solution = built[2 * j.module];
    const BuildResult& judge = built[2 * j.module + 1];
    PrebuiltBuilder builder(solution);
    const PipelineOptions run_options =
        judged_run_options(ws, targets[2 * j.module], &judge,
                           build_dir / "judge" / m.name() / fmt::format("seed_{}.json", j.seed), j.seed);
    j.report = report_of(ws.course, run_pipeline(m, builder, run_options), "solution");
  });

  int problems = 0;
  for (std::size_t k = 0; k < modules.size(); ++k) {
    const Module& m = *modules[k];
    std::fputs(fmt::format("Module {} · {}\n", m.number_text(), m.title).c_str(), stdout);
    if (!built[2 * k].ok || !built[2 * k + 1].ok) {
      ++problems;
      const BuildResult& failed = built[2 * k].ok ? built[2 * k + 1] : built[2 * k];
      std::fputs(fmt::format("  ✗ the {} does not build: {}\n", built[2 * k].ok ? "judge (the untouched stubs)" : "reference",
                             failed.error ? failed.error->message : "the build failed")
                     .c_str(), stdout);
      continue;
    }
    // Per check, the seeds at which it failed, in the order drawn, with the first message of each.
    std::map<std::string, std::vector<std::pair<std::uint64_t, std::string>>> failed;
    std::vector<std::string> order;
    std::size_t checks = 0;
    int empty_runs = 0;  // runs that reported no check at all: nothing was proven by them
    for (const SeedJob& j : jobs) {
      if (j.module != k) continue;
      checks = j.report.checks.size();
      empty_runs += j.report.checks.empty();
      for (const CheckReport& c : j.report.checks) {
        if (c.status == Status::passed || c.status == Status::skipped) continue;
        if (!failed.count(c.id)) order.push_back(c.id);
        failed[c.id].emplace_back(j.seed, fmt::format("{}: {}", status_name(c.status),
                                                      c.messages.empty() ? c.summary : c.messages.front()));
      }
    }
    int failed_here = 0;
    for (const auto& id : order) {
      const auto& seen = failed[id];
      failed_here += static_cast<int>(seen.size());
      if (seen.size() == seeds.size() && seeds.size() > 1) {
        // Not chance: the reference fails it whatever the inputs.
        std::fputs(fmt::format("  ✗ check {} fails at all {} seeds, not by chance ({}): `grader verify {}` shows why\n",
                               id, seeds.size(), seen.front().second, m.number_text()).c_str(), stdout);
        continue;
      }
      for (const auto& [seed, what] : seen)
        std::fputs(fmt::format("  ✗ check {} at seed {}, {}\n      again: KILN_SEED={} grader check {} --solution\n", id,
                               seed, what, seed, m.number_text()).c_str(), stdout);
    }
    if (empty_runs > 0) {
      failed_here += empty_runs;
      std::fputs(fmt::format("  ✗ {} of {} runs reported no check at all\n", empty_runs, seeds.size()).c_str(), stdout);
    }
    if (failed_here == 0)
      std::fputs(fmt::format("  ✓ the reference passes all {} checks at each of {} seed{}\n", checks, seeds.size(),
                             seeds.size() == 1 ? "" : "s").c_str(), stdout);
    problems += failed_here;
  }
  if (problems == 0) {
    std::fputs(fmt::format("\nEvery reference passed at {} fresh seed{}: {} module{}.\n", seeds.size(),
                           seeds.size() == 1 ? "" : "s", modules.size(), modules.size() == 1 ? "" : "s").c_str(),
               stdout);
    return 0;
  }
  std::fputs(fmt::format("\n{} failed run{} of a check: a right submission can fail them too. Widen the check's "
                         "margin or draw its inputs so that the reference passes at every seed.\n",
                         problems, problems == 1 ? "" : "s").c_str(), stdout);
  return problems;
}

}  // namespace kiln::grader
