// The command line: each command file adds its subcommand and its options (cli.h); this file
// parses, opens the course and runs the chosen one.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "cli.h"

using namespace kiln::grader;

int main(int argc, char** argv) {
  CLI::App app{"Kiln's grader: build, check and measure the course's modules.\n"
               "Modules are named by number (1 or 01), folder (01_tensor) or slug (tensor).",
               "grader"};  // usage lines say `grader`, not the path of the binary
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "All commands with all their options");
  std::string root;
  app.add_option("--root", root, "The course folder (default: the one around the current folder)");

  cli::Chosen chosen;
  cli::add_check_command(app, chosen);
  cli::add_hint_command(app, chosen);
  cli::add_info_commands(app, chosen);
  cli::add_watch_command(app, chosen);
  cli::add_reset_command(app, chosen);
  cli::add_doctor_command(app, chosen);
  cli::add_verify_command(app, chosen);
  cli::add_grade_command(app, chosen);
  cli::add_bench_command(app, chosen);
  cli::add_milestone_command(app, chosen);
  cli::add_release_commands(app, chosen);
  cli::add_site_command(app, chosen);
  cli::add_new_module_command(app, chosen);

  CLI11_PARSE(app, argc, argv);
  try {
    const fs::path start = root.empty() ? fs::current_path() : fs::path(root);
    if (!root.empty()) setenv("KILN_ROOT", fs::absolute(root).c_str(), 1);
    return chosen.run ? chosen.run(start, argv) : 0;
  } catch (const CourseError& e) {
    std::fprintf(stderr, "grader: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grader: internal error: %s\nPlease report this with the command you ran.\n", e.what());
    return 3;
  }
}

namespace kiln::grader::cli {

// In main.cpp, which kiln-grader and kiln-site each compile: the site generator lives in
// kiln-site, built only when wanted (bin/grader does), so that a first `grader check` does not
// wait for it to compile. kiln-grader hands the same command line over to it.
void add_site_command(CLI::App& app, Chosen& chosen) {
  auto* site_cmd = app.add_subcommand("site", "Instructors: build the course site from module.yaml, headers and docs/, or preview it");
  site_cmd->require_subcommand(1);
  auto site = std::make_shared<SiteCommand>();
  auto* build = site_cmd->add_subcommand("build", "Write the static site (every asset local; open index.html from disk)");
  build->add_option("--out", site->out, "The folder to write (default: site/_site)");
  auto* serve = site_cmd->add_subcommand("serve", "Build the site, then serve it on localhost until Ctrl-C");
  serve->add_option("--port", site->port, "The port (0: any free one)")->check(CLI::Range(0, 65535));
  serve->add_option("--bind", site->bind, "The address to listen on (default: loopback only)");
  serve->add_option("--out", site->out, "The folder to write and serve (default: site/_site)");
  site_cmd->callback([&app, &chosen, site, serve] {
#ifdef KILN_WITH_SITE
    if (*serve) site->action = "serve";
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
      site->commands.push_back({sub->get_name(), sub->get_description(),
                                sub->get_formatter()->make_help(sub, "grader " + sub->get_name(), CLI::AppFormatMode::All)});
    chosen.run = [site](const fs::path& start, char**) { return run_site(open_workspace(start), *site); };
#else
    (void)app, (void)serve;
    chosen.run = [](const fs::path&, char** argv) -> int {
      const fs::path generator = fs::read_symlink("/proc/self/exe").parent_path() / "kiln-site";
      if (!fs::exists(generator))
        throw CourseError("the site generator is not built yet: run it as `bin/grader site ...`, which builds it");
      execv(generator.c_str(), argv);
      throw CourseError("cannot start " + generator.string());
    };
#endif
  });
}

}  // namespace kiln::grader::cli
