// The command line: each subcommand's options, handed to its function in commands.h.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include <CLI/CLI.hpp>

#include "kiln/grader/bench.h"
#include "kiln/grader/commands.h"
#include "kiln/grader/milestone.h"

using namespace kiln::grader;

int main(int argc, char** argv) {
  CLI::App app{"Kiln's grader: build, check and measure the course's modules.\n"
               "Modules are named by number (1 or 01), folder (01_tensor) or slug (tensor).",
               "grader"};  // usage lines say `grader`, not the path of the binary
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "All commands with all their options");
  std::string root;
  app.add_option("--root", root, "The course folder (default: the one around the current folder)");

  CheckCommand check;
  auto* check_cmd = app.add_subcommand("check", "Build and run a module's checks and report each one");
  check_cmd->add_option("module", check.module, "The module, e.g. 17")->required();
  check_cmd->add_flag("--solution", check.solution, "Check the reference solution (instructors)");
  check_cmd->add_option("--check", check.checks, "Only this check (repeatable)");
  check_cmd->add_option("--format", check.format, "Report format")->check(CLI::IsMember({"text", "json", "junit"}));
  check_cmd->add_option("--out", check.out, "Also write the report to this file");
  check_cmd->add_flag("-v,--verbose", check.verbose, "Print the exact build and run commands, and the full output");

  std::string hint_module, hint_check;
  auto* hint_cmd = app.add_subcommand("hint", "Show what each check looks for, its failure messages and hints");
  hint_cmd->add_option("module", hint_module, "The module")->required();
  hint_cmd->add_option("check", hint_check, "One check's id (default: the checks that failed last time)");
  bool hint_all = false;
  hint_cmd->add_flag("--all", hint_all, "Every check's hints, passing or not");

  auto* list_cmd = app.add_subcommand("list", "List the modules with their prerequisites, checks and points");
  auto* status_cmd = app.add_subcommand("status", "Your progress over all modules");

  std::string start_module;
  auto* start_cmd = app.add_subcommand("start", "What to write in a module: its functions, files and objectives");
  start_cmd->add_option("module", start_module, "The module")->required();

  CheckCommand watch;
  double interval = 0.5;
  auto* watch_cmd = app.add_subcommand("watch", "Check a module again every time you save one of its files");
  watch_cmd->add_option("module", watch.module, "The module")->required();
  watch_cmd->add_option("--check", watch.checks, "Only this check (repeatable)");
  watch_cmd->add_option("--interval", interval, "Seconds between looks at the files")->check(CLI::Range(0.1, 60.0));

  std::string reset_module;
  bool reset_yes = false;
  auto* reset_cmd = app.add_subcommand("reset", "Put a module's original stubs back (your files are backed up first)");
  reset_cmd->add_option("module", reset_module, "The module")->required();
  reset_cmd->add_flag("-y,--yes", reset_yes, "Do not ask for confirmation");
  std::string reset_restore;
  auto* restore_opt = reset_cmd->add_option("--restore", reset_restore,
                                            "Put a backup back instead: the newest, or the one named (a prefix is enough)")
                          ->expected(0, 1);

  auto* doctor_cmd = app.add_subcommand("doctor", "Check the compiler, CMake, Ninja, libraries, CUDA and the course");

  VerifyCommand verify;
  bool verify_all = false;
  auto* verify_cmd = app.add_subcommand(
      "verify", "Instructors: prove modules sound (solution passes, stubs fail, every mutant fires its message)");
  verify_cmd->add_option("modules", verify.modules, "Modules to verify (default: all)");
  verify_cmd->add_flag("--all", verify_all, "Every module");
  verify_cmd->add_option("--seed", verify.seed, "Seed of the checks' inputs (default: the one `grader check` uses)");

  GradeCommand grade;
  auto* grade_cmd = app.add_subcommand(
      "grade", "Instructors and CI: score submissions sandboxed and write result files (Gradescope, JUnit, JSON)");
  grade_cmd->add_option("submission", grade.submission, "A submission folder (a student's course tree or its files)");
  grade_cmd->add_option("--batch", grade.batch, "A folder of submission folders: one result each and a gradebook.csv");
  grade_cmd->add_option("--module", grade.modules, "The module to grade (repeatable)");
  grade_cmd->add_flag("--all", grade.all, "Grade every module");
  grade_cmd->add_option("--format", grade.format, "Result format")->check(CLI::IsMember({"gradescope", "junit", "json"}));
  grade_cmd->add_option("--out", grade.out, "Result file (one submission) or folder (batch; default: results/ beside it)");
  grade_cmd->add_option("-j,--jobs", grade.jobs, "Submissions run at once")->check(CLI::Range(1, 64));
  grade_cmd->add_flag("--no-sandbox", grade.no_sandbox, "Grade without the sandbox (trusted code only)");
  grade_cmd->add_option("--compile-timeout", grade.compile_timeout_s, "Seconds a submission's compiles may take in all")
      ->check(CLI::Range(1.0, 3600.0));

  BenchCommand bench;
  auto* bench_cmd = app.add_subcommand(
      "bench", "Time a module's kernels beside the naive and library baselines, on this machine's roofline");
  bench_cmd->add_option("module", bench.module, "The module, e.g. 17")->required();
  bench_cmd->add_flag("--solution", bench.solution, "Time the reference solution (instructors)");
  bench_cmd->add_flag("--full", bench.full, "The sources' full sizes (slower)");
  bench_cmd->add_flag("--remeasure", bench.remeasure, "Measure the machine's peak and bandwidth again");
  bench_cmd->add_flag("--gpu", bench.gpu,
                      "Time the module's GPU kernels on a CUDA device beside cuBLAS (needs nvcc and a device)");
  bench_cmd->add_flag("--emulator", bench.emulator,
                      "Count what the GPU kernels do on the grid emulator (memory transactions, bank conflicts, "
                      "reuse) instead of timing, and draw one warp's accesses");
  bench_cmd->add_option("--repetitions", bench.repetitions, "Timed repetitions per kernel (median reported)")
      ->check(CLI::Range(1, 100));
  bench_cmd->add_option("--min-time", bench.min_time_s, "Seconds each repetition runs at least")
      ->check(CLI::Range(0.001, 60.0));
  bench_cmd->add_option("--format", bench.format, "Report format")->check(CLI::IsMember({"text", "json"}));
  bench_cmd->add_option("--out", bench.out, "Also write the report to this file");
  bench_cmd->add_flag("-v,--verbose", bench.verbose, "Print the exact build and run commands");

  MilestoneCommand milestone;
  auto* milestone_cmd = app.add_subcommand(
      "milestone", "Train a model built only from your modules on real data, and judge what it learned");
  milestone_cmd->add_option("names", milestone.names, "Milestones by id or number (default: every one whose module exists)");
  milestone_cmd->add_flag("--solution", milestone.solution, "Train with the reference solutions (instructors)");
  milestone_cmd->add_flag("--quick", milestone.quick, "The short run: fewer epochs on part of the data (what CI runs)");
  milestone_cmd->add_option("--format", milestone.format, "Report format")->check(CLI::IsMember({"text", "json"}));
  milestone_cmd->add_option("--out", milestone.out, "Also write the report to this file");
  milestone_cmd->add_flag("-v,--verbose", milestone.verbose, "Print the build and run commands");

  std::string release_out;
  auto* release_cmd = app.add_subcommand("release", "Instructors: write the student repository, proven free of solutions");
  release_cmd->add_option("out", release_out, "A new folder for the release")->required();

  std::string bundle_kind, bundle_zip;
  std::vector<std::string> bundle_modules;
  bool bundle_all = false;
  auto* bundle_cmd = app.add_subcommand("bundle", "Instructors: package an autograder for a CI engine (gradescope)");
  bundle_cmd->add_option("kind", bundle_kind, "gradescope")->required();
  bundle_cmd->add_option("zip", bundle_zip, "The zip file to write")->required();
  bundle_cmd->add_option("--module", bundle_modules, "The module the assignment grades (repeatable)");
  bundle_cmd->add_flag("--all", bundle_all, "Grade every module");

  SiteCommand site;
  auto* site_cmd = app.add_subcommand("site", "Instructors: build the course site from module.yaml, headers and docs/, or preview it");
  site_cmd->require_subcommand(1);
  auto* site_build = site_cmd->add_subcommand("build", "Write the static site (every asset local; open index.html from disk)");
  site_build->add_option("--out", site.out, "The folder to write (default: site/_site)");
  auto* site_serve = site_cmd->add_subcommand("serve", "Build the site, then serve it on localhost until Ctrl-C");
  site_serve->add_option("--port", site.port, "The port (0: any free one)")->check(CLI::Range(0, 65535));
  site_serve->add_option("--bind", site.bind, "The address to listen on (default: loopback only)");
  site_serve->add_option("--out", site.out, "The folder to write and serve (default: site/_site)");

  CLI11_PARSE(app, argc, argv);
  try {
    const fs::path start = root.empty() ? fs::current_path() : fs::path(root);
    if (!root.empty()) setenv("KILN_ROOT", fs::absolute(root).c_str(), 1);
    if (*doctor_cmd) return run_doctor(start);
    const Workspace ws = open_workspace(start);
    if (*check_cmd) return run_check(ws, check);
    if (*hint_cmd) return run_hint(ws, hint_module, hint_check, hint_all);
    if (*list_cmd) return run_list(ws);
    if (*status_cmd) return run_status(ws);
    if (*start_cmd) return run_start(ws, start_module);
    if (*watch_cmd) return run_watch(ws, watch, interval);
    if (*reset_cmd)
      return run_reset(ws, reset_module, reset_yes,
                       restore_opt->count() ? std::optional<std::string>(reset_restore) : std::nullopt);
    if (*grade_cmd) return run_grade(ws, grade);
    if (*bench_cmd) return run_bench_command(ws, bench);
    if (*milestone_cmd) return run_milestone_command(ws, milestone);
    if (*release_cmd) return run_release(ws, release_out);
    if (*bundle_cmd) return run_bundle(ws, bundle_kind, bundle_zip, bundle_modules, bundle_all);
    if (*site_cmd) {
#ifdef KILN_WITH_SITE
      if (*site_serve) site.action = "serve";
      for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        site.commands.push_back({sub->get_name(), sub->get_description(),
                                 sub->get_formatter()->make_help(sub, "grader " + sub->get_name(), CLI::AppFormatMode::All)});
      return run_site(ws, site);
#else
      // The site generator lives in kiln-site, built only when wanted (bin/grader does), so that
      // a first `grader check` does not wait for it to compile. Same command line, handed over.
      const fs::path generator = fs::read_symlink("/proc/self/exe").parent_path() / "kiln-site";
      if (!fs::exists(generator))
        throw CourseError("the site generator is not built yet: run it as `bin/grader site ...`, which builds it");
      execv(generator.c_str(), argv);
      throw CourseError("cannot start " + generator.string());
#endif
    }
    if (*verify_cmd) {
      if (verify_all) verify.modules.clear();
      return run_verify(ws, verify);
    }
  } catch (const CourseError& e) {
    std::fprintf(stderr, "grader: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grader: internal error: %s\nPlease report this with the command you ran.\n", e.what());
    return 3;
  }
  return 0;
}
