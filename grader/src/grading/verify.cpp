// grader verify: the instructor's proof that the course is sound. For each module: the reference
// solution passes every check; no check passes on the untouched stubs; every planted mutant makes
// its check fail with exactly its catalogued failure; every catalogued failure has such a mutant.
#include <atomic>
#include <cstdio>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "kiln/grader/grading.h"
#include "kiln/grader/mutants.h"
#include "kiln/protocol.h"

namespace kiln::grader {

namespace {

struct Proof {
  bool color;
  int problems = 0;
  void pass(const std::string& text) const {
    std::fputs(fmt::format("  {} {}\n", color ? "\033[32m✓\033[0m" : "✓", text).c_str(), stdout);
  }
  void fail(const std::string& text) {
    ++problems;
    std::fputs(fmt::format("  {} {}\n", color ? "\033[31m✗\033[0m" : "✗", text).c_str(), stdout);
  }
  // Not proven here, and not a problem: what only a CUDA device can show, on a machine without one.
  void not_here(const std::string& text) const {
    std::fputs(fmt::format("  {} {}\n", color ? "\033[36m-\033[0m" : "-", text).c_str(), stdout);
  }
};

// "; 2 device checks skipped: no CUDA device: ..." for a report whose device checks did not run.
std::string skipped_note(const Report& r) {
  int skipped = 0;
  std::string reason;
  for (const auto& c : r.checks) {
    if (c.status != Status::skipped) continue;
    ++skipped;
    reason = c.summary;
  }
  if (skipped == 0) return "";
  return fmt::format(" ({} skipped: {})", skipped, reason);
}

std::string describe(const CheckReport& c) {
  if (c.status == Status::failed) {
    std::string ids;
    for (const auto& id : c.failure_ids) ids += (ids.empty() ? "" : ", ") + id;
    return ids.empty() ? "failed without a catalogued failure: " + c.summary : "failed with " + ids;
  }
  return status_name(c.status) + (c.summary.empty() ? "" : ": " + c.summary);
}

// One run of verify: a variant's checks, observed, then judged.
struct Job {
  const Module* module = nullptr;
  TestTarget target;
  std::vector<std::string> only_checks;
  std::string variant;
  bool sanitize = false;
  Verdicts verdicts;
  Report judged, in_process;
};

// "check x: the judge says passed, the run itself failed with y": both paths must agree, or the
// check reads student code outside observe(), or depends on something it did not observe.
std::vector<std::string> disagreements(const Report& judged, const Report& in_process) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < judged.checks.size() && i < in_process.checks.size(); ++i) {
    const CheckReport& j = judged.checks[i];
    const CheckReport& p = in_process.checks[i];
    if (j.status == p.status && j.failure_ids == p.failure_ids) continue;
    out.push_back(fmt::format("check {}: judged, it {}; in the test program itself, it {}", j.id, describe(j),
                              describe(p)));
  }
  return out;
}

// Stages every mutant and describes every job: the reference, the stubs, then each mutant, per module.
struct Plan {
  std::vector<TestTarget> targets;
  std::map<const Module*, std::vector<Mutant>> mutants;
  std::map<const Module*, std::string> stub_notes;
  std::vector<Job> jobs;
};

Plan plan_jobs(const Workspace& ws, const std::vector<const Module*>& modules, const fs::path& build_dir) {
  Plan plan;
  for (const Module* m : modules) {
    const PristineStubs stubs = pristine_stubs(ws, *m);
    plan.stub_notes[m] = edited_stubs_note(*m, stubs, "verify");
    const TestTarget stub = pristine_target(ws, *m, stubs);
    TestTarget solution = solution_target(ws.course, *m);
    solution.with_sanitized = true;  // the reference must also be clean under the sanitizers
    plan.targets.push_back(solution);
    plan.targets.push_back(stub);
    plan.jobs.push_back({.module = m, .target = solution, .variant = "solution", .sanitize = true});
    plan.jobs.push_back({.module = m, .target = stub, .variant = "stub"});
    for (auto& mu : load_mutants(ws.course, *m)) {
      const fs::path staged = build_dir / "mutants" / m->name() / mu.id;
      for (const auto& f : m->student_files) {
        const std::string reference = read_file(ws.course.solution_dir(*m) / f);
        write_if_changed(staged / f, f == mu.file ? apply_mutant(mu, reference) : reference);
      }
      TestTarget t{.module = m, .own = {"mutant_" + mu.id, staged}, .base_name = "solution",
                   .base_root = ws.course.root / "solutions"};
      t.with_device = m->check(mu.check)->device;
      t.with_sanitized = mu.failure == kMemoryError;
      plan.targets.push_back(t);
      plan.jobs.push_back({.module = m, .target = t, .only_checks = {mu.check}, .variant = "mutant " + mu.id,
                           .sanitize = t.with_sanitized});
      plan.mutants[m].push_back(std::move(mu));
    }
  }
  return plan;
}

// Builds everything in one Ninja run (both cores busy), then runs every job through the pipeline
// (observe, judge, sanitizers) on every core.
void run_jobs(const Workspace& ws, Plan& plan, const fs::path& build_dir, std::uint64_t seed, std::size_t modules) {
  std::vector<BuildResult> built;
  {
    const auto lock = lock_build_dir(build_dir);
    CourseBuild build(ws.course, build_dir, ws.kiln_home);
    std::vector<TestTarget> wanted;
    for (const auto& j : plan.jobs) wanted.push_back(j.target);
    std::fputs(fmt::format("Building {} variant{} of {} module{}...\n", wanted.size(), wanted.size() == 1 ? "" : "s",
                           modules, modules == 1 ? "" : "s").c_str(), stdout);
    std::fflush(stdout);
    built = build.build_many(plan.targets, wanted);
  }
  std::map<const Module*, const BuildResult*> judges;
  for (std::size_t i = 0; i < plan.jobs.size(); ++i)
    if (plan.jobs[i].variant == "stub") judges[plan.jobs[i].module] = &built[i];
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next++) < plan.jobs.size();) {
      Job& j = plan.jobs[i];
      const BuildResult* judge = judges[j.module];
      PipelineOptions options;
      options.run.limits = default_limits();
      options.run.env = {{protocol::kSeed, std::to_string(seed)}};
      options.run.student_files = student_files_of(ws.course, j.target);
      options.only_checks = j.only_checks;
      options.sanitize = j.sanitize && j.only_checks.empty();
      options.sanitized_only = j.sanitize && !j.only_checks.empty();  // a memory mutant: straight to the sanitizers
      // The rules on what student code may do hold for the reference and the stubs; a mutant is the
      // reference with one planted change, which the rules need not read again.
      options.refuse_tampering = j.variant == "solution" || j.variant == "stub";
      if (judge->ok) options.judge = judge;
      options.judge_file = build_dir / "judge" / (j.target.own.name + ".json");
      if (j.variant == "solution" && built[i].ok) note_link(built[i], build_dir, j.target);  // its calls are checked
      PrebuiltBuilder builder(built[i]);
      j.verdicts = run_pipeline(*j.module, builder, options);
      j.judged = report_of(ws.course, j.verdicts, j.variant);
      Verdicts own = j.verdicts;
      if (own.in_process) own.run = own.in_process;
      j.in_process = report_of(ws.course, own, j.variant);
    }
  };
  std::vector<std::thread> pool;
  const unsigned cores = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  for (unsigned c = 0; c < cores; ++c) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
}

// The reference passes every check, judged and in the test program itself; its speed-graded
// checks, timed against itself, are measured, right in every timed run, and near 1×.
void prove_solution(const Workspace& ws, const Module& m, const Job& job, Proof& v) {
  const Report& solution = job.judged;
  if (solution.every_check_passed() && job.in_process.every_check_passed()) {
    v.pass(fmt::format("reference solution passes all {} checks, judged{}", solution.passed_count(),
                       skipped_note(solution)));
  } else if (solution.build_error) {
    v.fail(fmt::format("reference solution does not compile: {}:{}: {}", solution.build_error->file.generic_string(),
                       solution.build_error->line, solution.build_error->message));
  } else {
    for (const auto& c : solution.checks)
      if (c.status != Status::passed && c.status != Status::skipped)
        v.fail(fmt::format("reference solution: check {} {}", c.id, describe(c)));
  }
  for (const auto& d : disagreements(solution, job.in_process)) v.fail("reference solution: " + d);
  if (!solution.every_check_passed()) return;
  if (std::none_of(m.checks.begin(), m.checks.end(), [](const Check& c) { return c.speed.has_value(); })) return;
  Verdicts timed = job.verdicts;  // after every job has run, so that nothing else shares the cores
  LocalSpeedTiming timing(ws, m, solution_target(ws.course, m));
  time_speed_checks(timed, &timing);
  for (const auto& c : report_of(ws.course, timed, job.variant).checks) {
    const Check* check = m.check(c.id);
    if (!check || !check->speed) continue;
    if (c.status != Status::passed) v.fail(fmt::format("speed check {}: the reference against itself {}", c.id, c.summary));
    else if (c.points == c.max_points) v.pass(fmt::format("speed check {}: the reference against itself: {}", c.id, c.speed));
    else v.not_here(fmt::format("speed check {}: the reference against itself scored less than full (a busy machine?): {}",
                                c.id, c.speed));
  }
}

// No check passes on the untouched stubs, judged or in the test program itself.
void prove_stubs(const Job& job, Proof& v) {
  const Report& stubs = job.judged;
  if (stubs.build_error) {
    v.fail(fmt::format("untouched stubs do not compile: {}:{}: {}", stubs.build_error->file.generic_string(),
                       stubs.build_error->line, stubs.build_error->message));
  } else if (stubs.passed_count() == 0 && job.in_process.passed_count() == 0) {
    v.pass(fmt::format("no check passes on the untouched stubs (0 of {}), judged or not", stubs.checks.size()));
  } else {
    for (const auto& c : stubs.checks)
      if (c.status == Status::passed) v.fail(fmt::format("check {} passes on the untouched stubs", c.id));
    for (const auto& c : job.in_process.checks)
      if (c.status == Status::passed)
        v.fail(fmt::format("check {} passes on the untouched stubs in the test program itself", c.id));
  }
}

// One mutant: its check fails with exactly its catalogued failure (or a memory error), judged and
// in the test program itself. Adds what it proved to `proven` or `needs_device`.
void prove_mutant(const Module& m, const Mutant& mu, const Job& job, Proof& v, std::set<std::string>& proven,
                  std::set<std::string>& needs_device) {
  const Report& r = job.judged;
  const Failure* failure = m.check(mu.check)->failure(mu.failure);
  if (r.build_error) {
    v.fail(fmt::format("mutant {} does not compile: {}", mu.id, r.build_error->message));
    return;
  }
  const CheckReport& c = r.checks.front();
  if (mu.failure == kMemoryError) {
    if (c.status == Status::memory_error)
      v.pass(fmt::format("mutant {} → {}: memory error: {}", mu.id, mu.check, c.summary));
    else
      v.fail(fmt::format("mutant {} should end {} as a memory error under the sanitizers, but it {}", mu.id, mu.check,
                         describe(c)));
    return;
  }
  if (c.status == Status::skipped && m.check(mu.check)->device) {
    needs_device.insert(mu.failure);
    v.not_here(fmt::format("mutant {} → {}: needs a CUDA device, not proven here", mu.id, mu.check));
    return;
  }
  const auto agree = disagreements(r, job.in_process);
  if (c.status == Status::failed && c.failure_ids == std::vector<std::string>{mu.failure} && agree.empty()) {
    proven.insert(mu.failure);
    v.pass(fmt::format("mutant {} → {}: \"{}\"", mu.id, mu.check, c.messages.front()));
  } else if (!agree.empty()) {
    v.fail(fmt::format("mutant {}: {}", mu.id, agree.front()));
  } else {
    v.fail(fmt::format("mutant {} should fail {} with \"{}\" ({}), but judged it {}", mu.id, mu.check,
                       failure->message, mu.failure, describe(c)));
  }
}

// Every catalogued failure is proven by a mutant and named by a test.
void prove_catalogue(const Module& m, const std::set<std::string>& proven, const std::set<std::string>& needs_device,
                     Proof& v) {
  std::string tests_text;
  for (const auto& t : m.test_sources()) tests_text += read_file(t);
  for (const auto& t : m.device_test_sources()) tests_text += read_file(t);
  int catalogued = 0;
  for (const auto& c : m.checks) {
    for (const auto& f : c.failures) {
      ++catalogued;
      if (!proven.count(f.id) && !needs_device.count(f.id))
        v.fail(fmt::format("failure {} of check {} is not produced by any mutant", f.id, c.id));
      if (tests_text.find("\"" + f.id + "\"") == std::string::npos)
        v.fail(fmt::format("failure {} of check {} is never named in the module's tests", f.id, c.id));
    }
  }
  if (catalogued > 0 && static_cast<int>(proven.size()) == catalogued) {
    v.pass(fmt::format("all {} catalogued failures are proven by mutants, judged", catalogued));
  } else if (catalogued > 0 && static_cast<int>(proven.size() + needs_device.size()) == catalogued) {
    v.pass(fmt::format("{} of {} catalogued failures are proven by mutants, judged; the other {} can only be proven "
                       "on a CUDA device",
                       proven.size(), catalogued, needs_device.size()));
  }
}

}  // namespace

int verify_course(const Workspace& ws, const VerifyOptions& options) {
  if (options.mutation) return verify_mutation(ws, options);
  require_solutions(ws, "verify");
  std::vector<const Module*> modules;
  if (options.modules.empty()) {
    for (const auto& m : ws.course.modules) modules.push_back(&m);
  } else {
    for (const auto& name : options.modules) modules.push_back(&ws.course.find(name));
  }
  const fs::path build_dir = ws.build_dir("verify");
  Plan plan = plan_jobs(ws, modules, build_dir);
  run_jobs(ws, plan, build_dir, options.seed, modules.size());

  Proof v{use_color()};
  std::size_t at = 0;
  for (const Module* m : modules) {
    std::fputs(fmt::format("Module {} · {}\n", m->number_text(), m->title).c_str(), stdout);
    if (!plan.stub_notes[m].empty()) v.not_here(plan.stub_notes[m]);
    prove_solution(ws, *m, plan.jobs[at++], v);
    prove_stubs(plan.jobs[at++], v);
    std::set<std::string> proven, needs_device;
    for (const auto& mu : plan.mutants[m]) prove_mutant(*m, mu, plan.jobs[at++], v, proven, needs_device);
    prove_catalogue(*m, proven, needs_device, v);
    for (const auto& stray : stray_solution_files(ws.course, *m))
      v.fail(fmt::format("{} is not one of the module's student_files, so no build reads it: list it in "
                         "module.yaml's student_files or remove it", stray));
    std::fputs("\n", stdout);
  }
  if (v.problems == 0) {
    std::fputs(fmt::format("The course is sound: {} module{} verified.\n", modules.size(), modules.size() == 1 ? "" : "s").c_str(), stdout);
    return 0;
  }
  std::fputs(fmt::format("{} problem{} found.\n", v.problems, v.problems == 1 ? "" : "s").c_str(), stdout);
  return v.problems;
}

}  // namespace kiln::grader
