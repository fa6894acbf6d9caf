// The grader's commands, one function each; cli/main.cpp wires them to the command line.
// Each returns the process exit code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/grader/site.h"
#include "kiln/grader/workspace.h"

namespace kiln::grader {

struct CheckCommand {
  std::string module;
  bool solution = false;
  std::vector<std::string> checks;
  std::string format = "text";  // text | json | junit
  std::string out;              // also write the report here
  bool verbose = false;
};
int run_check(const Workspace& ws, const CheckCommand& cmd);

// One check's hints; without one, the hints of the checks that did not pass at the last
// `grader check` (their failures first), or every check's with `all`.
int run_hint(const Workspace& ws, const std::string& module, const std::string& check_id, bool all);
int run_list(const Workspace& ws);
int run_status(const Workspace& ws);
int run_start(const Workspace& ws, const std::string& module);
int run_watch(const Workspace& ws, const CheckCommand& cmd, double interval_s);
// Puts the stubs back (backing up first), or with `restore` a backup (the newest, or the one whose
// name starts with *restore).
int run_reset(const Workspace& ws, const std::string& module, bool yes, const std::optional<std::string>& restore);
int run_doctor(const fs::path& start);

struct VerifyCommand {
  std::vector<std::string> modules;  // empty = all
  std::uint64_t seed = 0x6b696c6e;   // the checks' inputs (the same as `grader check`'s by default)
  bool verbose = false;
};
int run_verify(const Workspace& ws, const VerifyCommand& cmd);

struct GradeCommand {
  std::string submission;  // one submission folder
  std::string batch;       // or a folder of submission folders
  std::vector<std::string> modules;  // empty with all = every module
  bool all = false;
  std::string format = "json";  // json | junit | gradescope
  std::string out;              // a file (one submission) or a folder (batch)
  int jobs = 1;
  bool no_sandbox = false;
  double compile_timeout_s = 120;  // per submission, for all its compiles
};
int run_grade(const Workspace& ws, const GradeCommand& cmd);

int run_release(const Workspace& ws, const std::string& out);
int run_bundle(const Workspace& ws, const std::string& kind, const std::string& zip,
               const std::vector<std::string>& modules, bool all);

// grader site build|serve (cli/site.cpp). `commands` is the CLI describing itself, for the site.
struct SiteCommand {
  std::string action = "build";  // build | serve
  std::string out;               // default: site/_site
  int port = 8000;
  std::string bind = "127.0.0.1";
  std::vector<CommandDoc> commands;
};
int run_site(const Workspace& ws, const SiteCommand& cmd);

struct BenchCommand;
int run_bench_command(const Workspace& ws, const BenchCommand& cmd);

// Shared by the commands: whether to colour the terminal output.
bool use_color();

}  // namespace kiln::grader
