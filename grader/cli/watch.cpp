// grader watch N: check again whenever a student file of the module (or a prerequisite) is saved.
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "cli.h"

namespace kiln::grader {

int run_watch(const Workspace& ws, const CheckOptions& cmd, double interval_s) {
  const Module& m = ws.course.find(cmd.module);
  std::vector<fs::path> files;
  for (const Module* dep : ws.course.prerequisites(m))
    for (const auto& f : dep->student_files) files.push_back(dep->dir / f);
  for (const auto& f : m.student_files) files.push_back(m.dir / f);

  auto stamps = [&] {
    std::map<fs::path, fs::file_time_type> out;
    std::error_code ec;
    for (const auto& f : files) out[f] = fs::last_write_time(f, ec);
    return out;
  };
  auto last = stamps();
  std::string changed;  // what the last save touched
  for (;;) {
    // Each run is marked, so that one report is never mistaken for the one before: the screen is
    // cleared on a terminal, and a rule names the time and the file that changed.
    if (use_color()) std::fputs("\033[2J\033[H", stdout);
    const std::time_t now_t = std::time(nullptr);
    char clock[16];
    std::strftime(clock, sizeof clock, "%H:%M:%S", std::localtime(&now_t));
    std::string title = fmt::format(" {} · {} ", clock, changed.empty() ? "first check" : changed + " changed");
    const std::size_t width = terminal_width();
    std::string rule = "──" + title;
    for (std::size_t n = title.size() + 2; n < width; ++n) rule += "─";
    std::fputs((rule + "\n").c_str(), stdout);
    try {
      run_check(ws, cmd, ReportOutput{});
    } catch (const CourseError& e) {
      std::fprintf(stdout, "grader: %s\n", e.what());
    }
    std::fputs(fmt::format("\nWatching {} file{} of module {}; save to check again, Ctrl-C to stop.\n",
                           files.size(), files.size() == 1 ? "" : "s", m.number_text())
                   .c_str(),
               stdout);
    std::fflush(stdout);
    for (;;) {
      std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
      auto now = stamps();
      if (now != last) {
        changed.clear();
        for (const auto& [file, stamp] : now)
          if (last[file] != stamp) changed = fs::relative(file, ws.course.root).generic_string();
        last = now;
        // An editor may write in several steps: let the file settle.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        last = stamps();
        break;
      }
    }
  }
}

namespace cli {

void add_watch_command(CLI::App& app, Chosen& chosen) {
  auto* sub = app.add_subcommand("watch", "Check a module again every time you save one of its files");
  auto options = std::make_shared<CheckOptions>();
  auto interval = std::make_shared<double>(0.5);
  sub->add_option("module", options->module, "The module")->required();
  sub->add_option("--check", options->checks, "Only this check (repeatable)");
  sub->add_option("--interval", *interval, "Seconds between looks at the files")->check(CLI::Range(0.1, 60.0));
  on_workspace(sub, chosen, [options, interval](const Workspace& ws) { return run_watch(ws, *options, *interval); });
}

}  // namespace cli

}  // namespace kiln::grader
