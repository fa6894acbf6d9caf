// grader bench N: measure the module's kernels against their baselines on this machine's roofline.
#include <cstdio>
#include <fstream>

#include "kiln/grader/bench.h"
#include "kiln/grader/commands.h"

namespace kiln::grader {

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

}  // namespace kiln::grader
