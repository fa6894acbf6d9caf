// The command line: each command file adds its own subcommand (add_<name>_command), parses its
// options into the library's option struct and, when chosen, runs the library's function.
#pragma once

#include <filesystem>
#include <functional>

#include <CLI/CLI.hpp>

#include "kiln/grader/commands.h"

namespace kiln::grader::cli {

// What the chosen subcommand does once the command line is parsed. `start` is the folder the
// course is looked for from (--root, or the current folder); argv is the whole command line, for
// a command that hands over to another program.
struct Chosen {
  std::function<int(const std::filesystem::path& start, char** argv)> run;
};

// Sets `chosen` to `action` when `sub` is the subcommand given: the course is opened first.
void on_workspace(CLI::App* sub, Chosen& chosen, std::function<int(const Workspace&)> action);

void add_check_command(CLI::App& app, Chosen& chosen);
void add_hint_command(CLI::App& app, Chosen& chosen);
void add_info_commands(CLI::App& app, Chosen& chosen);  // list, status, start
void add_watch_command(CLI::App& app, Chosen& chosen);
void add_reset_command(CLI::App& app, Chosen& chosen);
void add_doctor_command(CLI::App& app, Chosen& chosen);
void add_verify_command(CLI::App& app, Chosen& chosen);
void add_grade_command(CLI::App& app, Chosen& chosen);
void add_bench_command(CLI::App& app, Chosen& chosen);
void add_milestone_command(CLI::App& app, Chosen& chosen);
void add_release_commands(CLI::App& app, Chosen& chosen);  // release, bundle
void add_site_command(CLI::App& app, Chosen& chosen);
void add_new_module_command(CLI::App& app, Chosen& chosen);

}  // namespace kiln::grader::cli
