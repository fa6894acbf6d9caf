// The grader's commands, one function each; cli/main.cpp wires them to the command line.
// Each returns the process exit code.
#pragma once

#include <string>
#include <vector>

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

int run_hint(const Workspace& ws, const std::string& module, const std::string& check_id);
int run_list(const Workspace& ws);
int run_status(const Workspace& ws);
int run_start(const Workspace& ws, const std::string& module);
int run_watch(const Workspace& ws, const CheckCommand& cmd, double interval_s);
int run_reset(const Workspace& ws, const std::string& module, bool yes);
int run_doctor(const fs::path& start);

struct VerifyCommand {
  std::vector<std::string> modules;  // empty = all
  bool verbose = false;
};
int run_verify(const Workspace& ws, const VerifyCommand& cmd);

// Shared by the commands: whether to colour, and where the instructor-only commands stop.
bool use_color();
void require_solutions(const Workspace& ws, const std::string& command);

}  // namespace kiln::grader
