// grader reset N: put the module's original stubs back, after backing up the student's files.
#include <cstdio>
#include <ctime>
#include <iostream>

#include <fmt/format.h>

#include "kiln/grader/commands.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

namespace {

// The file as the course first shipped it: its content in the commit that added it.
std::string original_content(const fs::path& root, const fs::path& relative) {
  const std::string path = relative.generic_string();
  const ProcessResult added = run_process({.argv = {"git", "-C", root.string(), "log", "--diff-filter=A", "--reverse",
                                                     "--format=%H", "--", path}});
  const std::string commit = added.out.substr(0, added.out.find('\n'));
  if (!added.ok() || commit.empty()) {
    throw CourseError(fmt::format("cannot find the original {} in the course's git history; reset needs the "
                                  "course as a git clone",
                                  path));
  }
  const ProcessResult shown =
      run_process({.argv = {"git", "-C", root.string(), "show", commit + ":" + path}, .output_cap = 64 << 20});
  if (!shown.ok()) throw CourseError(fmt::format("cannot read {} from commit {}", path, commit));
  return shown.out;
}

}  // namespace

int run_reset(const Workspace& ws, const std::string& module, bool yes) {
  const Module& m = ws.course.find(module);
  std::vector<std::pair<fs::path, std::string>> originals;
  for (const auto& f : m.student_files) {
    const fs::path relative = fs::relative(m.dir / f, ws.course.root);
    originals.emplace_back(relative, original_content(ws.course.root, relative));
  }
  if (!yes) {
    std::fputs(fmt::format("Reset module {} ({} file{}) to its original stubs? Your files are backed up first. [y/N] ",
                           m.number_text(), originals.size(), originals.size() == 1 ? "" : "s")
                   .c_str(),
               stdout);
    std::fflush(stdout);
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes") {
      std::puts("Nothing changed.");
      return 1;
    }
  }
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  const fs::path backup = ws.state_dir() / "backups" / m.name() / stamp;
  for (const auto& [relative, content] : originals) {
    const fs::path current = ws.course.root / relative;
    fs::create_directories((backup / relative).parent_path());
    if (fs::exists(current)) fs::copy_file(current, backup / relative, fs::copy_options::overwrite_existing);
  }
  for (const auto& [relative, content] : originals) write_if_changed(ws.course.root / relative, content);
  std::fputs(fmt::format("Module {} is back to its stubs. Your files are in {}\n", m.number_text(),
                         fs::relative(backup, ws.course.root).generic_string())
                 .c_str(),
             stdout);
  return 0;
}

}  // namespace kiln::grader
