// The command line: each subcommand's options, handed to its function in commands.h.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <CLI/CLI.hpp>

#include "kiln/grader/commands.h"

using namespace kiln::grader;

int main(int argc, char** argv) {
  CLI::App app{"Kiln's grader: build, check and measure the course's modules.\n"
               "Modules are named by number (1 or 01), folder (01_tensor) or slug (tensor)."};
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
  hint_cmd->add_option("check", hint_check, "One check's id (default: all)");

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

  auto* doctor_cmd = app.add_subcommand("doctor", "Check the compiler, CMake, Ninja, libraries, CUDA and the course");

  VerifyCommand verify;
  bool verify_all = false;
  auto* verify_cmd = app.add_subcommand(
      "verify", "Instructors: prove modules sound (solution passes, stubs fail, every mutant fires its message)");
  verify_cmd->add_option("modules", verify.modules, "Modules to verify (default: all)");
  verify_cmd->add_flag("--all", verify_all, "Every module");

  CLI11_PARSE(app, argc, argv);
  try {
    const fs::path start = root.empty() ? fs::current_path() : fs::path(root);
    if (!root.empty()) setenv("KILN_ROOT", fs::absolute(root).c_str(), 1);
    if (*doctor_cmd) return run_doctor(start);
    const Workspace ws = open_workspace(start);
    if (*check_cmd) return run_check(ws, check);
    if (*hint_cmd) return run_hint(ws, hint_module, hint_check);
    if (*list_cmd) return run_list(ws);
    if (*status_cmd) return run_status(ws);
    if (*start_cmd) return run_start(ws, start_module);
    if (*watch_cmd) return run_watch(ws, watch, interval);
    if (*reset_cmd) return run_reset(ws, reset_module, reset_yes);
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
