// grader reset N: put the module's original stubs back, after backing up the student's files.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <ctime>
#include <iostream>

#include <fmt/format.h>

#include "cli.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

namespace {

bool confirm(const std::string& question, const std::string& command) {
  if (!isatty(STDIN_FILENO)) {
    throw CourseError(fmt::format("{} asks before it overwrites your files, and there is no terminal to ask on: run "
                                  "`{} --yes` to go ahead",
                                  command, command));
  }
  std::fputs((question + " [y/N] ").c_str(), stdout);
  std::fflush(stdout);
  std::string answer;
  std::getline(std::cin, answer);
  return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace

int run_reset(const Workspace& ws, const std::string& module, bool yes, const std::optional<std::string>& restore) {
  const Module& m = ws.course.find(module);
  const std::string command = fmt::format("grader reset {}{}", m.number_text(),
                                          restore ? (restore->empty() ? " --restore" : " --restore " + *restore) : "");
  if (restore) {
    // A backup: the newest, or the one whose name starts with WHEN (20261202-1530, say).
    const fs::path dir = ws.state_dir() / "backups" / m.name();
    std::vector<std::string> stamps;
    if (fs::is_directory(dir))
      for (const auto& e : fs::directory_iterator(dir)) stamps.push_back(e.path().filename().string());
    std::sort(stamps.begin(), stamps.end());
    std::vector<std::string> matching;
    for (const auto& st : stamps)
      if (st.rfind(*restore, 0) == 0) matching.push_back(st);
    if (matching.empty()) {
      std::string list;
      for (const auto& st : stamps) list += "\n  " + st;
      throw CourseError(stamps.empty() ? fmt::format("module {} has no backups yet (grader reset {} makes one)",
                                                     m.number_text(), m.number_text())
                                       : fmt::format("no backup of module {} is called {}; the backups are:{}",
                                                     m.number_text(), *restore, list));
    }
    const fs::path chosen = dir / matching.back();
    if (!yes && !confirm(fmt::format("Put the files of module {} back as they were in backup {}? Your current files "
                                     "are backed up first.",
                                     m.number_text(), matching.back()),
                         command)) {
      std::puts("Nothing changed.");
      return 1;
    }
    const fs::path saved = back_up(ws, m);
    for (const auto& f : m.student_files) {
      const fs::path relative = fs::relative(m.dir / f, ws.course.root);
      if (fs::exists(chosen / relative)) write_if_changed(m.dir / f, read_file(chosen / relative));
    }
    forget_progress(ws, m);  // other files: the last check's findings were about the ones replaced
    std::fputs(fmt::format("Module {} is back as it was in {}. The files you had are in {}\n", m.number_text(),
                           matching.back(), fs::relative(saved, ws.course.root).generic_string())
                   .c_str(),
               stdout);
    return 0;
  }
  std::vector<std::pair<fs::path, std::string>> originals;
  for (const auto& f : m.student_files) {
    const fs::path relative = fs::relative(m.dir / f, ws.course.root);
    const std::optional<std::string> stub = committed_stub(ws, relative);
    if (!stub) {
      throw CourseError(fmt::format("cannot find the stub of {} in the course's git history; reset needs the "
                                    "course as a git clone",
                                    relative.generic_string()));
    }
    originals.emplace_back(relative, *stub);
  }
  if (!yes && !confirm(fmt::format("Reset module {} ({} file{}) to its original stubs? Your files are backed up first.",
                                   m.number_text(), originals.size(), originals.size() == 1 ? "" : "s"),
                       command)) {
    std::puts("Nothing changed.");
    return 1;
  }
  const fs::path backup = back_up(ws, m);
  for (const auto& [relative, content] : originals) write_if_changed(ws.course.root / relative, content);
  forget_progress(ws, m);  // the stubs are back: nothing of the last check holds
  std::fputs(fmt::format("Module {} is back to its stubs. Your files are in {} (grader reset {} --restore puts them "
                         "back)\n",
                         m.number_text(), fs::relative(backup, ws.course.root).generic_string(), m.number_text())
                 .c_str(),
             stdout);
  return 0;
}

namespace cli {

void add_reset_command(CLI::App& app, Chosen& chosen) {
  auto* sub = app.add_subcommand("reset", "Put a module's original stubs back (your files are backed up first)");
  auto module = std::make_shared<std::string>(), restore = std::make_shared<std::string>();
  auto yes = std::make_shared<bool>(false);
  sub->add_option("module", *module, "The module")->required();
  sub->add_flag("-y,--yes", *yes, "Do not ask for confirmation");
  auto* restore_opt = sub->add_option("--restore", *restore,
                                      "Put a backup back instead: the newest, or the one named (a prefix is enough)")
                          ->expected(0, 1);
  on_workspace(sub, chosen, [module, restore, yes, restore_opt](const Workspace& ws) {
    return run_reset(ws, *module, *yes, restore_opt->count() ? std::optional<std::string>(*restore) : std::nullopt);
  });
}

}  // namespace cli

}  // namespace kiln::grader
