#include "kiln/grader/workspace.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/cuda.h"

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

// An exclusive lock on a build directory, so that `watch` and `check` never build at once.
class DirectoryLock {
 public:
  explicit DirectoryLock(const fs::path& dir) {
    fs::create_directories(dir);
    fd_ = ::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
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

Report grade_target(const Workspace& ws, const fs::path& build_dir, const std::vector<TestTarget>& all_targets,
                    const TestTarget& target, const GradeOptions& options, const std::string& variant) {
  const Module& m = *target.module;
  std::vector<const Check*> checks;
  for (const auto& c : m.checks) {
    if (options.only_checks.empty() ||
        std::find(options.only_checks.begin(), options.only_checks.end(), c.id) != options.only_checks.end())
      checks.push_back(&c);
  }
  for (const auto& id : options.only_checks) {
    if (!m.check(id)) {
      std::string known;
      for (const auto& c : m.checks) known += " " + c.id;
      throw CourseError(fmt::format("module {} has no check '{}'. Its checks are:{}", m.number_text(), id, known));
    }
  }
  DirectoryLock lock(build_dir);
  CourseBuild build(ws.course, build_dir, ws.kiln_home);
  if (options.device_builds_need_a_device && cuda_device_nodes().empty()) build.set_device_builds(false);
  TestTarget wanted = target;
  wanted.with_device = std::any_of(checks.begin(), checks.end(), [](const Check* c) { return c->device; });
  const BuildResult built = build.build(all_targets, wanted);
  if (!built.ok) return make_report(ws.course, m, checks, built, nullptr, variant);
  const RunResult run = run_built_checks(built, checks, options.run);
  return make_report(ws.course, m, checks, built, &run, variant);
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
    out[name] = ProgressEntry{e.value("score", 0),          e.value("max_score", 0),
                              e.value("passed", 0),         e.value("total", 0),
                              e.value("all_passed", false), e.value("fingerprint", ""),
                              e.value("checked_at", "")};
  }
  return out;
}

void record_progress(const Workspace& ws, const Module& m, const Report& report) {
  auto progress = load_progress(ws);
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  progress[m.name()] = ProgressEntry{report.score,      report.max_score,      report.passed_count(),
                                     static_cast<int>(report.checks.size()), report.all_passed(),
                                     fingerprint(m, m.dir), stamp};
  nlohmann::json j = {{"modules", nlohmann::json::object()}};
  for (const auto& [name, e] : progress) {
    j["modules"][name] = {{"score", e.score},           {"max_score", e.max_score},   {"passed", e.passed},
                          {"total", e.total},           {"all_passed", e.all_passed}, {"fingerprint", e.fingerprint},
                          {"checked_at", e.checked_at}};
  }
  write_if_changed(ws.state_dir() / "progress.json", j.dump(2) + "\n");
}

}  // namespace kiln::grader
