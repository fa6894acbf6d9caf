// grader bench N: measure the module's kernels against their baselines on this machine's roofline.
#include <cstdio>
#include <fstream>

#include "kiln/grader/bench.h"
#include "cli.h"

namespace kiln::grader {

namespace {

int run_bench_command(const Workspace& ws, const BenchCommand& cmd) {
  const BenchReport report = run_bench(ws, cmd);
  const std::string text = render_bench_text(report);
  const std::string rendered = cmd.format == "json" ? render_bench_json(report) : text;
  if (cmd.verbose) {
    std::fputs("Commands:\n", stdout);
    for (const auto& c : report.commands) std::fprintf(stdout, "  %s\n", c.c_str());
  }
  if (!cmd.out.empty()) {
    std::ofstream(cmd.out) << rendered;
    std::fputs(text.c_str(), stdout);
  } else {
    std::fputs(rendered.c_str(), stdout);
  }
  for (const auto& k : report.kernels)
    if (!k.error.empty()) return 1;
  for (const auto& k : report.counted)
    if (!k.error.empty()) return 1;
  return 0;
}

}  // namespace

namespace cli {

void add_bench_command(CLI::App& app, Chosen& chosen) {
  auto* sub = app.add_subcommand(
      "bench", "Time a module's kernels beside the naive and library baselines, on this machine's roofline");
  auto bench = std::make_shared<BenchCommand>();
  sub->add_option("module", bench->module, "The module, e.g. 17")->required();
  sub->add_flag("--solution", bench->solution, "Time the reference solution (instructors)");
  sub->add_flag("--full", bench->full, "The sources' full sizes (slower)");
  sub->add_flag("--remeasure", bench->remeasure, "Measure the machine's peak and bandwidth again");
  sub->add_flag("--gpu", bench->gpu, "Time the module's GPU kernels on a CUDA device beside cuBLAS (needs nvcc and a device)");
  sub->add_flag("--emulator", bench->emulator,
                "Count what the GPU kernels do on the grid emulator (memory transactions, bank conflicts, reuse) "
                "instead of timing, and draw one warp's accesses");
  sub->add_option("--repetitions", bench->repetitions, "Timed repetitions per kernel (median reported)")
      ->check(CLI::Range(1, 100));
  sub->add_option("--min-time", bench->min_time_s, "Seconds each repetition runs at least")->check(CLI::Range(0.001, 60.0));
  sub->add_option("--format", bench->format, "Report format")->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--out", bench->out, "Also write the report to this file");
  sub->add_flag("-v,--verbose", bench->verbose, "Print the exact build and run commands");
  on_workspace(sub, chosen, [bench](const Workspace& ws) { return run_bench_command(ws, *bench); });
}

}  // namespace cli

}  // namespace kiln::grader
