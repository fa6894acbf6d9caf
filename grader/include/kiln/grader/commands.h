// The commands the command line runs (grader/cli/, one file each, wires them to their options):
// each prints what it has to say and returns the process exit code. The work itself is the
// library's (grading.h, bench.h, milestone.h, site.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/grader/grading.h"
#include "kiln/grader/site.h"

namespace kiln::grader {

// Where a command's report goes: the terminal by default; a machine format to --out, or to
// standard output without it.
struct ReportOutput {
  std::string format = "text";
  std::string out;
  bool verbose = false;
};

int run_check(const Workspace& ws, const CheckOptions& options, const ReportOutput& output);
int run_watch(const Workspace& ws, const CheckOptions& options, double interval_s);

// One check's hints; without one, the hints of the checks that did not pass at the last
// `grader check` (their failures first), or every check's with `all`.
int run_hint(const Workspace& ws, const std::string& module, const std::string& check_id, bool all);
int run_list(const Workspace& ws);
int run_status(const Workspace& ws);
int run_start(const Workspace& ws, const std::string& module);
// Puts the stubs back (backing up first), or with `restore` a backup (the newest, or the one whose
// name starts with *restore).
int run_reset(const Workspace& ws, const std::string& module, bool yes, const std::optional<std::string>& restore);
int run_doctor(const fs::path& start);

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

}  // namespace kiln::grader
