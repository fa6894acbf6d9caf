// grader verify: the instructor's proof that the course is sound. For each module: the reference
// solution passes every check; no check passes on the untouched stubs; every planted mutant makes
// its check fail with exactly its catalogued failure; every catalogued failure has such a mutant.
#include <cstdio>
#include <set>

#include <fmt/format.h>

#include "kiln/grader/commands.h"
#include "kiln/grader/mutants.h"

namespace kiln::grader {

namespace {

struct Verdicts {
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

TestTarget stub_target(const Course& course, const Module& m) {
  // The untouched stubs of this module on top of working prerequisites.
  return {.module = &m, .own = {"stub", m.dir}, .base_name = "solution", .base_root = course.root / "solutions"};
}

}  // namespace

int run_verify(const Workspace& ws, const VerifyCommand& cmd) {
  require_solutions(ws, "verify");
  std::vector<const Module*> modules;
  if (cmd.modules.empty()) {
    for (const auto& m : ws.course.modules) modules.push_back(&m);
  } else {
    for (const auto& name : cmd.modules) modules.push_back(&ws.course.find(name));
  }

  // Stage every mutant, then describe every target at once so the build is configured only once.
  const fs::path build_dir = ws.build_dir("verify");
  std::vector<TestTarget> targets;
  std::map<const Module*, std::vector<std::pair<Mutant, TestTarget>>> mutants;
  for (const Module* m : modules) {
    targets.push_back(solution_target(ws.course, *m));
    targets.push_back(stub_target(ws.course, *m));
    for (auto& mu : load_mutants(ws.course, *m)) {
      const fs::path staged = build_dir / "mutants" / m->name() / mu.id;
      for (const auto& f : m->student_files) {
        const std::string reference = read_file(ws.course.solution_dir(*m) / f);
        write_if_changed(staged / f, f == mu.file ? apply_mutant(mu, reference) : reference);
      }
      TestTarget t{.module = m, .own = {"mutant_" + mu.id, staged}, .base_name = "solution",
                   .base_root = ws.course.root / "solutions"};
      targets.push_back(t);
      mutants[m].emplace_back(std::move(mu), t);
    }
  }

  Verdicts v{use_color()};
  GradeOptions options;
  options.run.limits = default_limits();
  for (const Module* m : modules) {
    std::fputs(fmt::format("Module {} · {}\n", m->number_text(), m->title).c_str(), stdout);

    const Report solution = grade_target(ws, build_dir, targets, solution_target(ws.course, *m), options, "solution");
    if (solution.all_passed()) {
      v.pass(fmt::format("reference solution passes all {} checks{}", solution.passed_count(), skipped_note(solution)));
    } else if (solution.build_error) {
      v.fail(fmt::format("reference solution does not compile: {}:{}: {}", solution.build_error->file.generic_string(),
                         solution.build_error->line, solution.build_error->message));
    } else {
      for (const auto& c : solution.checks)
        if (c.status != Status::passed && c.status != Status::skipped)
          v.fail(fmt::format("reference solution: check {} {}", c.id, describe(c)));
    }

    const Report stubs = grade_target(ws, build_dir, targets, stub_target(ws.course, *m), options, "stub");
    if (stubs.build_error) {
      v.fail(fmt::format("untouched stubs do not compile: {}:{}: {}", stubs.build_error->file.generic_string(),
                         stubs.build_error->line, stubs.build_error->message));
    } else if (stubs.passed_count() == 0) {
      v.pass(fmt::format("no check passes on the untouched stubs (0 of {})", stubs.checks.size()));
    } else {
      for (const auto& c : stubs.checks)
        if (c.status == Status::passed) v.fail(fmt::format("check {} passes on the untouched stubs", c.id));
    }

    std::set<std::string> proven, needs_device;
    for (const auto& [mu, target] : mutants[m]) {
      GradeOptions one = options;
      one.only_checks = {mu.check};
      const Report r = grade_target(ws, build_dir, targets, target, one, "mutant " + mu.id);
      const Failure* failure = m->check(mu.check)->failure(mu.failure);
      if (r.build_error) {
        v.fail(fmt::format("mutant {} does not compile: {}", mu.id, r.build_error->message));
        continue;
      }
      const CheckReport& c = r.checks.front();
      if (c.status == Status::skipped && m->check(mu.check)->device) {
        needs_device.insert(mu.failure);
        v.not_here(fmt::format("mutant {} → {}: needs a CUDA device, not proven here", mu.id, mu.check));
        continue;
      }
      if (c.status == Status::failed && c.failure_ids == std::vector<std::string>{mu.failure}) {
        proven.insert(mu.failure);
        v.pass(fmt::format("mutant {} → {}: \"{}\"", mu.id, mu.check, c.messages.front()));
      } else {
        v.fail(fmt::format("mutant {} should fail {} with \"{}\" ({}), but it {}", mu.id, mu.check, failure->message,
                           mu.failure, describe(c)));
      }
    }

    // Every catalogued failure is proven by a mutant and named by a test.
    std::string tests_text;
    for (const auto& t : m->test_sources()) tests_text += read_file(t);
    for (const auto& t : m->device_test_sources()) tests_text += read_file(t);
    int catalogued = 0;
    for (const auto& c : m->checks) {
      for (const auto& f : c.failures) {
        ++catalogued;
        if (!proven.count(f.id) && !needs_device.count(f.id))
          v.fail(fmt::format("failure {} of check {} is not produced by any mutant", f.id, c.id));
        if (tests_text.find("\"" + f.id + "\"") == std::string::npos)
          v.fail(fmt::format("failure {} of check {} is never named in the module's tests", f.id, c.id));
      }
    }
    if (catalogued > 0 && static_cast<int>(proven.size()) == catalogued) {
      v.pass(fmt::format("all {} catalogued failures are proven by mutants", catalogued));
    } else if (catalogued > 0 && static_cast<int>(proven.size() + needs_device.size()) == catalogued) {
      v.pass(fmt::format("{} of {} catalogued failures are proven by mutants; the other {} can only be proven on a "
                         "CUDA device",
                         proven.size(), catalogued, needs_device.size()));
    }
    std::fputs("\n", stdout);
  }
  if (v.problems == 0) {
    std::fputs(fmt::format("The course is sound: {} module{} verified.\n", modules.size(), modules.size() == 1 ? "" : "s").c_str(), stdout);
    return 0;
  }
  std::fputs(fmt::format("{} problem{} found.\n", v.problems, v.problems == 1 ? "" : "s").c_str(), stdout);
  return 1;
}

}  // namespace kiln::grader
