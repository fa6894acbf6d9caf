// grader check N: the student's files (or the reference solution) through the grading pipeline;
// the report on the terminal, or in a machine format.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>

#include "cli.h"

namespace kiln::grader {


int run_check(const Workspace& ws, const CheckOptions& options, const ReportOutput& output) {
  if (output.format != "text" && output.format != "json" && output.format != "junit")
    throw CourseError(fmt::format("unknown format '{}': use text, json or junit", output.format));
  const Report report = check_module(ws, options);
  // The terminal gets the text report; a machine format goes to --out, or to stdout without it.
  const std::string machine = output.format == "json"    ? render_json(report)
                              : output.format == "junit" ? render_junit({report})
                                                         : render_text(report, {.color = false, .verbose = options.verbose});
  const std::string text =
      render_text(report, {.color = use_color(), .verbose = options.verbose, .width = terminal_width()});
  if (!output.out.empty()) {
    std::ofstream out(output.out);
    out << machine;
    if (!out) throw CourseError(fmt::format("cannot write the report to {}", output.out));
  }
  std::fputs(output.out.empty() && output.format != "text" ? machine.c_str() : text.c_str(), stdout);
  return report.all_passed() ? 0 : 1;
}

namespace cli {

void add_check_command(CLI::App& app, Chosen& chosen) {
  auto* sub = app.add_subcommand("check", "Build and run a module's checks and report each one");
  auto options = std::make_shared<CheckOptions>();
  auto output = std::make_shared<ReportOutput>();
  sub->add_option("module", options->module, "The module, e.g. 17")->required();
  sub->add_flag("--solution", options->solution, "Check the reference solution (instructors)");
  sub->add_option("--check", options->checks, "Only this check (repeatable)");
  sub->add_option("--format", output->format, "Report format")->check(CLI::IsMember({"text", "json", "junit"}));
  sub->add_option("--out", output->out, "Also write the report to this file");
  sub->add_flag("-v,--verbose", options->verbose, "Print the exact build and run commands, and the full output");
  on_workspace(sub, chosen, [options, output](const Workspace& ws) { return run_check(ws, *options, *output); });
}

}  // namespace cli

}  // namespace kiln::grader
