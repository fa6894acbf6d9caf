#include "kiln/grader/workspace.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/process.h"

namespace kiln::grader {

Workspace open_workspace(const fs::path& start) {
  Workspace ws;
  ws.course = load_course(find_course_root(start));
  const char* home = std::getenv("KILN_HOME");
  ws.kiln_home = home && *home ? fs::absolute(home) : ws.course.root;
  if (!fs::exists(ws.kiln_home / "cmake" / "KilnCourse.cmake")) {
    throw CourseError(fmt::format("{} does not hold the Kiln framework (cmake/KilnCourse.cmake): set KILN_HOME to "
                                  "the folder that holds it",
                                  ws.kiln_home.string()));
  }
  return ws;
}

void require_solutions(const Workspace& ws, const std::string& command) {
  if (!ws.course.has_solutions()) {
    throw CourseError(fmt::format("`grader {}` is for instructors: it needs the instructor repository, which holds "
                                  "solutions/. This is a student release.",
                                  command));
  }
}

TestTarget student_target(const Course& course, const Module& m) {
  return {.module = &m, .own = {"student", m.dir}, .base_name = "student", .base_root = course.root / "modules"};
}

TestTarget solution_target(const Course& course, const Module& m) {
  return {.module = &m,
          .own = {"solution", course.solution_dir(m)},
          .base_name = "solution",
          .base_root = course.root / "solutions"};
}

std::vector<TestTarget> standard_targets(const Course& course) {
  std::vector<TestTarget> out;
  for (const auto& m : course.modules) {
    out.push_back(student_target(course, m));
    if (course.has_solutions() && fs::is_directory(course.solution_dir(m))) out.push_back(solution_target(course, m));
  }
  return out;
}

namespace {

// An exclusive lock on a build directory, so that two grader runs (`watch` and `check`, two
// `verify`s) never build in it, or run what it holds, at once. One that has to wait says so.
class DirectoryLock {
 public:
  explicit DirectoryLock(const fs::path& dir) {
    fs::create_directories(dir);
    fd_ = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    std::fputs(fmt::format("kiln: another grader run is using {}; waiting for it to finish...\n", dir.string()).c_str(),
               stderr);
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~DirectoryLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

std::shared_ptr<void> lock_build_dir(const fs::path& dir) { return std::make_shared<DirectoryLock>(dir); }

std::optional<std::string> committed_stub(const Workspace& ws, const fs::path& relative) {
  const std::string root = ws.course.root.string(), path = relative.generic_string();
  std::string commit = "HEAD";
  if (!fs::is_directory(ws.course.root / "solutions")) {
    const ProcessResult added = run_process(
        {.argv = {"git", "-C", root, "log", "--diff-filter=A", "--reverse", "--format=%H", "--", path}});
    commit = added.ok() ? added.out.substr(0, added.out.find('\n')) : "";
    if (commit.empty()) return std::nullopt;
  }
  const ProcessResult show =
      run_process({.argv = {"git", "-C", root, "show", commit + ":./" + path}, .output_cap = 16 << 20});
  if (!show.ok()) return std::nullopt;
  return show.out;
}

PristineStubs pristine_stubs(const Workspace& ws, const Module& m) {
  PristineStubs out;
  out.root = ws.state_dir() / "pristine" / m.name();
  const ProcessResult inside = run_process({.argv = {"git", "-C", ws.course.root.string(), "rev-parse", "--is-inside-work-tree"}});
  out.from_git = inside.ok() && inside.out.rfind("true", 0) == 0;
  for (const auto& f : m.student_files) {
    const fs::path working = m.dir / f;
    std::optional<std::string> committed;
    if (out.from_git) committed = committed_stub(ws, fs::relative(working, ws.course.root));
    const std::string content = committed ? *committed : read_file(working);
    if (committed && (!fs::exists(working) || read_file(working) != content)) out.edited.push_back(f);
    write_if_changed(out.root / f, content);
  }
  return out;
}

TestTarget pristine_target(const Workspace& ws, const Module& m, const PristineStubs& stubs) {
  return {.module = &m, .own = {"stub", stubs.root}, .base_name = "solution", .base_root = ws.course.root / "solutions"};
}

std::string edited_stubs_note(const Module& m, const PristineStubs& stubs, const std::string& what) {
  if (!stubs.from_git) return what + " uses the stubs as they are in the working tree (not a git checkout)";
  if (stubs.edited.empty()) return "";
  std::string files;
  for (const auto& f : stubs.edited) files += (files.empty() ? "" : ", ") + (fs::path("modules") / m.name() / f).generic_string();
  return fmt::format("{} differ{} from the committed stub{}: {} uses the committed version (`grader reset {}` puts "
                     "the stubs back in the working tree, keeping a backup)",
                     files, stubs.edited.size() == 1 ? "s" : "", stubs.edited.size() == 1 ? "" : "s", what,
                     m.number_text());
}

fs::path back_up(const Workspace& ws, const Module& m) {
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  fs::path backup = ws.state_dir() / "backups" / m.name() / stamp;
  for (int n = 2; fs::exists(backup); ++n) backup = ws.state_dir() / "backups" / m.name() / fmt::format("{}-{}", stamp, n);
  for (const auto& f : m.student_files) {
    const fs::path current = m.dir / f;
    const fs::path relative = fs::relative(current, ws.course.root);
    fs::create_directories((backup / relative).parent_path());
    if (fs::exists(current)) fs::copy_file(current, backup / relative, fs::copy_options::overwrite_existing);
  }
  return backup;
}

std::string fingerprint(const Module& m, const fs::path& root) {
  std::size_t h = 0;
  for (const auto& f : m.student_files) {
    h ^= std::hash<std::string>{}(f + "\n" + read_file(root / f)) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return fmt::format("{:016x}", h);
}

std::map<std::string, ProgressEntry> load_progress(const Workspace& ws) {
  std::map<std::string, ProgressEntry> out;
  const fs::path file = ws.state_dir() / "progress.json";
  if (!fs::exists(file)) return out;
  const auto j = nlohmann::json::parse(read_file(file), nullptr, false);
  if (!j.is_object() || !j.contains("modules") || !j["modules"].is_object()) return out;
  for (const auto& [name, e] : j["modules"].items()) {
    if (!e.is_object()) continue;
    ProgressEntry entry{e.value("score", 0),          e.value("max_score", 0),
                        e.value("passed", 0),         e.value("total", 0),
                        e.value("all_passed", false), e.value("fingerprint", ""),
                        e.value("checked_at", "")};
    auto strings = [&](const char* key) {
      std::vector<std::string> out;
      if (e.contains(key) && e[key].is_array())
        for (const auto& v : e[key])
          if (v.is_string()) out.push_back(v.get<std::string>());
      return out;
    };
    entry.not_passing = strings("not_passing");
    entry.failure_ids = strings("failure_ids");
    if (e.contains("said") && e["said"].is_object())
      for (const auto& [id, s] : e["said"].items()) {
        if (!s.is_object()) continue;
        ProgressEntry::Said said{s.value("status", ""), s.value("summary", ""), {}};
        if (s.contains("messages") && s["messages"].is_object())
          for (const auto& [f, text] : s["messages"].items())
            if (text.is_string()) said.messages[f] = text.get<std::string>();
        entry.said[id] = std::move(said);
      }
    out[name] = std::move(entry);
  }
  return out;
}

namespace {

void write_progress(const Workspace& ws, const std::map<std::string, ProgressEntry>& progress);

}  // namespace

void forget_progress(const Workspace& ws, const Module& m) {
  auto progress = load_progress(ws);
  if (progress.erase(m.name())) write_progress(ws, progress);
}

void record_progress(const Workspace& ws, const Module& m, const Report& report) {
  auto progress = load_progress(ws);
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  ProgressEntry entry{report.score,      report.max_score,      report.passed_count(),
                      static_cast<int>(report.checks.size()), report.all_passed(),
                      fingerprint(m, m.dir), stamp};
  for (const auto& c : report.checks) {
    if (c.status == Status::passed || c.status == Status::skipped) continue;
    entry.not_passing.push_back(c.id);
    entry.failure_ids.insert(entry.failure_ids.end(), c.failure_ids.begin(), c.failure_ids.end());
    entry.said[c.id] = {status_name(c.status), c.summary, c.rendered};
  }
  progress[m.name()] = std::move(entry);
  write_progress(ws, progress);
}

namespace {

void write_progress(const Workspace& ws, const std::map<std::string, ProgressEntry>& progress) {
  nlohmann::json j = {{"modules", nlohmann::json::object()}};
  for (const auto& [name, e] : progress) {
    j["modules"][name] = {{"score", e.score},           {"max_score", e.max_score},   {"passed", e.passed},
                          {"total", e.total},           {"all_passed", e.all_passed}, {"fingerprint", e.fingerprint},
                          {"checked_at", e.checked_at}, {"not_passing", e.not_passing},
                          {"failure_ids", e.failure_ids}};
    for (const auto& [id, said] : e.said)
      j["modules"][name]["said"][id] = {{"status", said.status}, {"summary", said.summary}, {"messages", said.messages}};
  }
  write_if_changed(ws.state_dir() / "progress.json", j.dump(2) + "\n");
}

}  // namespace

}  // namespace kiln::grader
