// grader verify: the instructor's proof that the course is sound. For each module: the reference
// solution passes every check; no check passes on the untouched stubs; every planted mutant makes
// its check fail with exactly its catalogued failure; every catalogued failure has such a mutant.
#include <atomic>
#include <cctype>
#include <cstdio>
#include <limits>
#include <functional>
#include <cstring>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/grading.h"
#include "kiln/grader/judge.h"
#include "kiln/grader/mutants.h"
#include "kiln/grader/site.h"
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

// The module's promise list (`promises:`): every function the student writes has at least one
// promise, and every promise is of one of those functions (the checks it names exist: the
// course's loader made sure).
void prove_promises(const Course& course, const Module& m, Proof& v) {
  if (m.promises.empty()) {
    v.fail(fmt::format("{} has no promise list: add promises: (what each function promises and the checks that "
                       "hold it; see docs/authoring.md)", m.yaml.string()));
    return;
  }
  const std::vector<StudentFunction> functions = student_functions(course, m);
  std::set<std::string> names, promised;
  for (const auto& f : functions) names.insert(f.name);
  int problems = 0;
  for (const auto& p : m.promises) {
    promised.insert(p.function);
    if (!names.count(p.function)) {
      ++problems;
      v.fail(fmt::format("{}:{}: the promise of {} is not of a function the student writes (they are: {})",
                         m.yaml.string(), p.line, p.function, fmt::join(names, ", ")));
    }
  }
  std::vector<std::string> unpromised;
  for (const auto& name : names)
    if (!promised.count(name)) unpromised.push_back(name);
  if (!unpromised.empty()) {
    ++problems;
    v.fail(fmt::format("{} lists no promise of {}: say what each promises and which checks hold it",
                       m.yaml.string(), fmt::join(unpromised, ", ")));
  }
  if (problems == 0)
    v.pass(fmt::format("{} promise{} of the {} function{} the student writes, each held by a named check",
                       m.promises.size(), m.promises.size() == 1 ? "" : "s", names.size(),
                       names.size() == 1 ? "" : "s"));
}

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
  TestTarget target;    // the checks whole: run in one process, as `grader check` runs them
  TestTarget observed;  // the observed program (kiln/testing.h), as `grader grade` runs it, then judged
  std::vector<std::string> only_checks;
  std::string variant;
  bool sanitize = false;
  Verdicts verdicts;
  Report judged, in_process;
  fs::path observed_binary;         // the observed program, as built
  fs::path observed_device_binary;  // and its device checks' (where nvcc built them)
  std::string judge_error;   // when the module's judge (the untouched stubs, whole) did not build
  std::vector<std::string> judge_fuzz;  // the reference's: what the judge did wrong on hostile observations
  int judge_fuzz_runs = 0;
};

// ---------------------------------------------------------------------------------------------
// The judge on hostile observations: the reference's own streams, damaged in every way a
// submission could damage them, must never make the judge crash or hang, and a stream that lost
// or spoiled a result the check needed must never pass.

using nlohmann::json;

std::string f32_of(std::size_t count, float value) {
  static constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(count * sizeof(float));
  for (std::size_t i = 0; i < count; ++i) std::memcpy(&bytes[i * sizeof(float)], &value, sizeof(float));
  std::string out;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const unsigned v = bytes[i] << 16 | (i + 1 < bytes.size() ? bytes[i + 1] << 8 : 0) |
                       (i + 2 < bytes.size() ? bytes[i + 2] : 0);
    out += kBase64[v >> 18 & 63];
    out += kBase64[v >> 12 & 63];
    out += i + 1 < bytes.size() ? kBase64[v >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? kBase64[v & 63] : '=';
  }
  return out;
}

bool is_tensor(const json& v) { return v.is_object() && v.contains("shape") && v.contains("f32"); }

// Applies `change` to every value inside v (tensors and numbers in lists and tuples too).
void each_value(json& v, const std::function<void(json&)>& change) {
  if (v.is_array() && !v.empty()) {
    for (auto& item : v) each_value(item, change);
  } else {
    change(v);
  }
}

struct Damage {
  const char* name;
  bool spoils;  // a check whose stream it changed must not pass
  std::function<std::vector<json>(const std::vector<json>&)> apply;
};

std::vector<Damage> damages() {
  auto per_value = [](std::function<void(json&)> change) {
    return [change](const std::vector<json>& records) {
      std::vector<json> out = records;
      for (auto& r : out)
        if (r.is_object() && r.contains("value")) each_value(r["value"], change);
      return out;
    };
  };
  // Every element of every tensor, and every number, replaced by `value` (written `as` outside a tensor).
  auto every_number = [&](float value, json as) {
    return per_value([value, as](json& v) {
      if (is_tensor(v)) {
        std::size_t count = 1;
        for (const auto& d : v["shape"]) count *= d.get<std::size_t>();
        v["f32"] = f32_of(count, value);
      } else if (v.is_number()) {
        v = as;
      }
    });
  };
  return {
      {"a number for every call's name", true,
       [](const std::vector<json>& records) {
         std::vector<json> out = records;
         for (auto& r : out) r["call"] = 7;
         return out;
       }},
      {"every value of another type", true, per_value([](json& v) {
         if (is_tensor(v)) v = 3;
         else if (v.is_number() || v.is_boolean()) v = json{{"shape", {2}}, {"strides", {1}}, {"offset", 0}, {"f32", f32_of(2, 1.0f)}};
         else if (v.is_string()) v = json::array({1, 2});
         else if (v.is_null()) v = true;
         else v = "text";
       })},
      {"tensors of an impossible size", true, per_value([](json& v) {
         if (is_tensor(v)) v["shape"] = json::array({std::int64_t(1) << 40, std::int64_t(1) << 40});
         if (is_tensor(v)) v["strides"] = json::array({1, 1});
       })},
      {"NaN for every number", false, every_number(std::numeric_limits<float>::quiet_NaN(), {{"real", "nan"}})},
      {"infinity for every number", false, every_number(-std::numeric_limits<float>::infinity(), {{"real", "-inf"}})},
      {"every tensor's shape reversed", false, per_value([](json& v) {
         if (!is_tensor(v)) return;
         json shape = json::array(), strides = json::array();
         for (auto it = v["shape"].rbegin(); it != v["shape"].rend(); ++it) shape.push_back(*it);
         for (auto it = v["strides"].rbegin(); it != v["strides"].rend(); ++it) strides.push_back(*it);
         v["shape"] = shape;
         v["strides"] = strides;
         v["offset"] = -5;
       })},
      {"the last result of every check missing", true,
       [](const std::vector<json>& records) {
         std::vector<json> out = records;
         if (!out.empty()) out.pop_back();
         return out;
       }},
      {"every result twice", false,
       [](const std::vector<json>& records) {
         std::vector<json> out;
         for (const auto& r : records) out.insert(out.end(), {r, r});
         return out;
       }},
      {"values nested sixty deep", true, per_value([](json& v) {
         // Moved in, never copied: a value of millions of numbers is wrapped in sixty steps, not sixty copies.
         for (int k = 0; k < 60; ++k) {
           json outer = json::array();
           outer.push_back(std::move(v));
           v = std::move(outer);
         }
       })},
      {"an error of no known form for every result", true,
       [](const std::vector<json>& records) {
         std::vector<json> out = records;
         for (auto& r : out) {
           r.erase("value");
           r["error"] = json{{"kinds", {1, json::object()}}, {"message", json::array()}};
         }
         return out;
       }},
  };
}

// Runs the judge on each damage of the reference's observed run; returns what went wrong.
std::vector<std::string> fuzz_judge(const BuildResult& judge, const RunResult& observed,
                                    const std::vector<const Check*>& checks, const RunOptions& options,
                                    const fs::path& file, int& runs) {
  std::vector<std::string> problems;
  std::vector<std::vector<json>> parsed;  // each check's records, read once for every damage
  for (const auto& check : observed.checks) {
    std::vector<json>& records = parsed.emplace_back();
    for (const auto& text : check.observations) records.push_back(json::parse(text, nullptr, false));
  }
  for (const Damage& d : damages()) {
    RunResult damaged = observed;
    std::vector<bool> changed(checks.size(), false);
    for (std::size_t i = 0; i < damaged.checks.size(); ++i) {
      const std::vector<json>& records = parsed[i];
      if (records.empty() || checks[i]->device) continue;
      const std::vector<json> after = d.apply(records);
      changed[i] = after != records;
      damaged.checks[i].observations.clear();
      for (const auto& r : after) damaged.checks[i].observations.push_back(r.dump());
    }
    ++runs;
    const RunResult judged = judge_built_checks(judge, damaged, checks, options, file);
    for (std::size_t i = 0; i < checks.size() && i < judged.checks.size(); ++i) {
      const CheckResult& c = judged.checks[i];
      if (c.reason.rfind("the judge could not judge", 0) == 0)
        problems.push_back(fmt::format("{}: check {}: {}", d.name, checks[i]->id, c.reason));
      else if (d.spoils && changed[i] && c.status == Status::passed)
        problems.push_back(fmt::format("{}: check {} passed", d.name, checks[i]->id));
    }
  }
  return problems;
}

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
  auto observed = [](TestTarget t) {
    t.observer = true;
    return t;
  };
  for (const Module* m : modules) {
    const PristineStubs stubs = pristine_stubs(ws, *m);
    plan.stub_notes[m] = edited_stubs_note(*m, stubs, "verify");
    const TestTarget stub = pristine_target(ws, *m, stubs);
    TestTarget solution = solution_target(ws.course, *m);
    solution.with_sanitized = true;  // the reference must also be clean under the sanitizers
    plan.targets.push_back(solution);
    plan.targets.push_back(stub);
    plan.targets.push_back(observed(solution));
    plan.targets.push_back(observed(stub));
    plan.jobs.push_back({.module = m, .target = solution, .observed = observed(solution), .variant = "solution",
                         .sanitize = true});
    plan.jobs.push_back({.module = m, .target = stub, .observed = observed(stub), .variant = "stub"});
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
      t.reuses_reference_objects = true;
      plan.targets.push_back(t);
      plan.targets.push_back(observed(t));
      plan.jobs.push_back({.module = m, .target = t, .observed = observed(t), .only_checks = {mu.check},
                           .variant = "mutant " + mu.id, .sanitize = t.with_sanitized});
      plan.mutants[m].push_back(std::move(mu));
    }
  }
  return plan;
}

// Builds everything in one Ninja run (both cores busy), then runs every job through the pipeline
// (observe, judge, sanitizers) on every core. The caller holds the lock on build_dir.
void run_jobs(const Workspace& ws, Plan& plan, const fs::path& build_dir, std::uint64_t seed, std::size_t modules) {
  std::vector<BuildResult> built;  // each job's whole build, then each job's observed program
  {
    CourseBuild build(ws.course, build_dir, ws.kiln_home);
    std::vector<TestTarget> wanted;
    for (const auto& j : plan.jobs) wanted.push_back(j.target);
    for (const auto& j : plan.jobs) wanted.push_back(j.observed);
    std::fputs(fmt::format("Building {} variant{} of {} module{}...\n", wanted.size(), wanted.size() == 1 ? "" : "s",
                           modules, modules == 1 ? "" : "s").c_str(), stdout);
    std::fflush(stdout);
    built = build.build_many(plan.targets, wanted);
  }
  std::map<const Module*, const BuildResult*> judges;
  for (std::size_t i = 0; i < plan.jobs.size(); ++i)
    if (plan.jobs[i].variant == "stub") judges[plan.jobs[i].module] = &built[i];
  on_cores(
      plan.jobs.size(),
      [&](std::size_t i) {
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
        // Per module: every module's reference is named "solution".
        options.judge_file = build_dir / "judge" / j.module->name() / (j.target.own.name + ".json");
        const BuildResult& whole = built[i];
        if (!judge->ok) {
          // Without a judge nothing observed can be judged: the module's proof stops here.
          j.judge_error = judge->error ? judge->error->message : "the build failed";
          return;
        }
        BuildResult& observed = built[plan.jobs.size() + i];
        j.observed_binary = observed.binary;
        j.observed_device_binary = observed.device_binary;
        if (j.variant == "solution" && observed.ok) note_link(observed, build_dir, j.observed);  // its calls are checked
        PrebuiltBuilder observed_builder(observed);
        j.verdicts = run_pipeline(*j.module, observed_builder, options);
        j.judged = report_of(ws.course, j.verdicts, j.variant);
        if (j.variant == "solution" && j.verdicts.in_process && j.judged.every_check_passed()) {
          RunOptions trusted;
          trusted.limits = default_limits();
          trusted.env = options.run.env;
          j.judge_fuzz = fuzz_judge(*judge, *j.verdicts.in_process, j.verdicts.checks, trusted,
                                    build_dir / "judge" / j.module->name() / (j.target.own.name + ".fuzz.json"), j.judge_fuzz_runs);
        }
        // The same checks whole, in one process, as `grader check` runs them: both must agree. A
        // memory mutant's proof is its sanitizers' report, judged.
        if (options.sanitized_only) {
          j.in_process = j.judged;
          return;
        }
        PipelineOptions own = options;
        own.judge = nullptr;
        own.sanitize = false;
        PrebuiltBuilder whole_builder(whole);
        j.in_process = report_of(ws.course, run_pipeline(*j.module, whole_builder, own), j.variant);
      },
      std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
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

// Every message a run of the module printed, the reference's, the stubs' and each mutant's, has
// each of its placeholders filled: "differs by up to {difference}" read literally means a test
// path that reports a failure without the value its message quotes.
void prove_messages_filled(const std::vector<Job>& jobs, std::size_t first, std::size_t last, Proof& v) {
  std::set<std::string> seen;
  for (std::size_t i = first; i < last; ++i)
    for (const Report* r : {&jobs[i].judged, &jobs[i].in_process})
      for (const auto& c : r->checks)
        for (const auto& u : c.unfilled)
          if (seen.insert(c.id + " " + u).second)
            v.fail(fmt::format("check {}, failure {} left unfilled in the message of the {}: the test reports that "
                               "failure without a value for it",
                               c.id, u, jobs[i].variant));
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

// The judge held on every damaged stream of the reference's observations.
void prove_judge_holds(const Job& solution, Proof& v) {
  if (solution.judge_fuzz_runs == 0) return;  // the reference did not pass: said above
  if (solution.judge_fuzz.empty()) {
    v.pass(fmt::format("the judge holds on {} damaged streams of the reference's results (types swapped, numbers "
                       "for names, impossible sizes, NaN, wrong shapes, results missing or twice, deep nesting)",
                       solution.judge_fuzz_runs));
    return;
  }
  for (std::size_t k = 0; k < solution.judge_fuzz.size() && k < 5; ++k)
    v.fail("the judge on a damaged stream: " + solution.judge_fuzz[k]);
}

// The demangled names of the functions and objects `file` (a program or an archive) defines, as the
// compiler writes them (std::__cxx11::basic_string...); strong: only those it defines outright
// (nm's T, t, D, d, B, b, R, r), not the inline and template code every object that uses it holds
// a copy of.
std::vector<std::string> defined_symbols(const fs::path& file, bool strong = false) {
  std::vector<std::string> out;
  for (const auto& [name, type] : symbols_of({file})) {
    if (std::string_view(strong ? "TtDdBbRr" : "TtDdBbRrWwVvGgSsi").find(type) == std::string_view::npos) continue;
    out.push_back(demangled(name));
  }
  return out;
}

// The observed program of the untouched stubs (what every submission's program is built from)
// holds no trusted code: no function of the judging library, and nothing of the checks' own
// references (whose names say trusted, reference or expected). Its link proves the first half by
// itself: the judging library is not on it.
void prove_observer(const Module& m, const Job& stub, const fs::path& testing_archive, Proof& v) {
  if (stub.observed_binary.empty() || !fs::exists(stub.observed_binary)) {
    v.fail("the observed program of the untouched stubs did not build");
    return;
  }
  std::set<std::string> judging;
  for (const auto& name : defined_symbols(testing_archive, /*strong=*/true))
    if (name.rfind("kiln::", 0) == 0) judging.insert(name);
  std::vector<std::string> symbols = defined_symbols(stub.observed_binary);
  if (!stub.observed_device_binary.empty() && fs::exists(stub.observed_device_binary)) {
    const auto device = defined_symbols(stub.observed_device_binary);
    symbols.insert(symbols.end(), device.begin(), device.end());
  }
  std::vector<std::string> found;
  for (const auto& name : symbols) {
    if (name.rfind("std::", 0) == 0 || name.rfind("void std::", 0) == 0) continue;
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool trusted_name = lower.find("trusted") != std::string::npos ||
                              lower.find("reference") != std::string::npos ||
                              lower.find("expected") != std::string::npos;
    if (judging.count(name)) {
      found.push_back(readable_symbol(name));
      continue;
    }
    if (!trusted_name || lower.find("kiln") == std::string::npos) continue;
    // module.yaml names an input's function as a person writes it (std::string, std::vector<long>).
    const std::string written = readable_symbol(name);
    const bool an_input = std::any_of(m.observed_inputs.begin(), m.observed_inputs.end(), [&](const Module::Forbidden& f) {
      return written.find(f.symbol) != std::string::npos || name.find(f.symbol) != std::string::npos;
    });
    if (!an_input) found.push_back(written);
  }
  if (symbols.empty()) {
    v.fail("the observed program's symbols could not be read (nm)");
  } else if (found.empty()) {
    v.pass(fmt::format("{} no trusted code ({} symbols read{})",
                       stub.observed_device_binary.empty() ? "the observed program holds"
                                                           : "the observed programs, host and device, hold",
                       symbols.size(),
                       m.observed_inputs.empty() ? "" : fmt::format("; {} listed in module.yaml as only making inputs",
                                                                    m.observed_inputs.size() == 1 ? "one function"
                                                                    : fmt::format("{} functions", m.observed_inputs.size()))));
  } else {
    std::string shown;
    for (std::size_t k = 0; k < found.size() && k < 5; ++k) shown += "\n      " + found[k];
    v.fail(fmt::format("the observed program holds {} trusted symbol{}: move what computes them into KILN_JUDGE "
                       "(kiln/testing.h){}", found.size(), found.size() == 1 ? "" : "s", shown));
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

void on_cores(std::size_t count, const std::function<void(std::size_t)>& job, unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned c = 0; c < threads; ++c)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < count;) job(i);
    });
  for (auto& t : pool) t.join();
}

std::vector<const Module*> modules_named(const Course& course, const std::vector<std::string>& names) {
  std::vector<const Module*> modules;
  if (names.empty()) {
    for (const auto& m : course.modules) modules.push_back(&m);
  } else {
    for (const auto& name : names) modules.push_back(&course.find(name));
  }
  return modules;
}

int verify_course(const Workspace& ws, const VerifyOptions& options) {
  if (options.mutation) return verify_mutation(ws, options);
  if (options.seeds > 0) return verify_seeds(ws, options);
  require_solutions(ws, "verify");
  const std::vector<const Module*> modules = modules_named(ws.course, options.modules);
  const fs::path build_dir = ws.build_dir("verify");
  const auto lock = lock_build_dir(build_dir);  // held while the programs it builds run, too
  Plan plan = plan_jobs(ws, modules, build_dir);
  run_jobs(ws, plan, build_dir, options.seed, modules.size());

  Proof v{use_color()};
  std::size_t at = 0;
  for (const Module* m : modules) {
    std::fputs(fmt::format("Module {} · {}\n", m->number_text(), m->title).c_str(), stdout);
    if (!plan.stub_notes[m].empty()) v.not_here(plan.stub_notes[m]);
    if (!plan.jobs[at].judge_error.empty()) {
      v.fail("the judge (the module's tests with its untouched stubs, whole) does not build, so nothing can be "
             "judged: " + plan.jobs[at].judge_error);
      at += 2 + plan.mutants[m].size();
      std::fputs("\n", stdout);
      continue;
    }
    prove_solution(ws, *m, plan.jobs[at++], v);
    prove_judge_holds(plan.jobs[at - 1], v);
    prove_observer(*m, plan.jobs[at], build_dir / "grader" / "testing" / "libkiln_testing.a", v);
    prove_stubs(plan.jobs[at++], v);
    std::set<std::string> proven, needs_device;
    for (const auto& mu : plan.mutants[m]) prove_mutant(*m, mu, plan.jobs[at++], v, proven, needs_device);
    prove_catalogue(*m, proven, needs_device, v);
    prove_messages_filled(plan.jobs, at - 2 - plan.mutants[m].size(), at, v);
    prove_promises(ws.course, *m, v);
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
