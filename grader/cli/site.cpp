// grader site build|serve: write the course site, or write it and preview it on localhost.
#include <cstdio>

#include <fmt/format.h>

#include "kiln/grader/commands.h"

namespace kiln::grader {

int run_site(const Workspace& ws, const SiteCommand& cmd) {
  SiteOptions options;
  if (!cmd.out.empty()) options.out = fs::absolute(cmd.out);
  options.commands = cmd.commands;
  const SiteSummary s = build_site(ws, options);
  const fs::path shown = fs::proximate(s.out);
  std::printf("%s", fmt::format("Wrote {} pages to {} in {:.2f} s.\n", s.pages, shown.string(), s.seconds).c_str());
  if (cmd.action != "serve") {
    std::printf("%s", fmt::format("Open {}, or preview it with: grader site serve\n", (shown / "index.html").string()).c_str());
    return 0;
  }
  serve_site(s.out, cmd.bind, cmd.port, [&](int port) {
    std::printf("%s", fmt::format("Serving the site on http://{}:{}/ (Ctrl-C to stop)\n", cmd.bind, port).c_str());
    std::fflush(stdout);
  });
  return 0;
}

}  // namespace kiln::grader
