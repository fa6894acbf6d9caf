// grader doctor: is everything the course needs on this machine?
#include <cstdio>

#include <fmt/format.h>

#include "cli.h"
#include "kiln/grader/cuda.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

bool report_tool(const std::string& label, const std::vector<std::string>& argv, const std::string& missing_hint) {
  const ProcessResult r = run_process({.argv = argv});
  const bool ok = r.ok();
  std::fputs(fmt::format("  {} {:<16} {}\n", ok ? "✓" : "✗", label,
                         ok ? first_line(r.out.empty() ? r.err : r.out) : missing_hint)
                 .c_str(),
             stdout);
  return ok;
}

}  // namespace

int run_doctor(const fs::path& start) {
  bool ok = true;
  std::puts("Tools");
  ok &= report_tool("C++ compiler", {"c++", "--version"}, "not found: install g++");
  ok &= report_tool("CMake", {"cmake", "--version"}, "not found: install cmake");
  ok &= report_tool("Ninja", {"ninja", "--version"}, "not found: install ninja-build");
  std::puts("Libraries (Debian packages)");
  for (const auto& [label, package] : std::vector<std::pair<std::string, std::string>>{
           {"GoogleTest", "libgtest-dev"}, {"yaml-cpp", "libyaml-cpp-dev"}, {"fmt", "libfmt-dev"},
           {"CLI11", "libcli11-dev"}, {"nlohmann-json", "nlohmann-json3-dev"}, {"Eigen 3", "libeigen3-dev"}}) {
    ok &= report_tool(label, {"dpkg-query", "-W", "-f=${Package} ${Version}", package},
                      fmt::format("not installed: apt-get install {}", package));
  }
  std::puts("GPU (optional)");
  const fs::path nvcc = find_nvcc();
  if (nvcc.empty()) {
    std::fputs(fmt::format("  - {:<16} {}\n", "nvcc",
                           "not found: the device checks are skipped and the kernels run on the emulator only "
                           "(install the CUDA Toolkit, or set KILN_NVCC to its nvcc)")
                   .c_str(),
               stdout);
  } else {
    const ProcessResult version = run_process({.argv = {nvcc.string(), "--version"}});
    std::string release = version.out;
    const auto at = release.find("release ");
    release = at == std::string::npos ? first_line(release) : first_line(release.substr(at));
    std::fputs(fmt::format("  ✓ {:<16} {} ({})\n", "nvcc", nvcc.string(), release).c_str(), stdout);
  }
  const ProcessResult gpu = run_process({.argv = {"nvidia-smi", "-L"}});
  std::fputs(fmt::format("  {} {:<16} {}\n", gpu.ok() ? "✓" : "-", "CUDA device",
                         gpu.ok() ? first_line(gpu.out) : "none: device checks are skipped, saying why")
                 .c_str(),
             stdout);
  std::puts("Course");
  try {
    const Workspace ws = open_workspace(start);
    std::fputs(fmt::format("  ✓ {:<16} {} modules in {}\n", "module.yaml", ws.course.modules.size(),
                           ws.course.root.string())
                   .c_str(),
               stdout);
    std::fputs(fmt::format("  {} {:<16} {}\n", "✓", "repository",
                           ws.course.has_solutions() ? "instructor (solutions present)" : "student release")
                   .c_str(),
               stdout);
  } catch (const CourseError& e) {
    ok = false;
    std::fputs(fmt::format("  ✗ {:<16} {}\n", "module.yaml", e.what()).c_str(), stdout);
  }
  return ok ? 0 : 1;
}

namespace cli {

void add_doctor_command(CLI::App& app, Chosen& chosen) {
  auto* sub = app.add_subcommand("doctor", "Check the compiler, CMake, Ninja, libraries, CUDA and the course");
  sub->callback([&chosen] { chosen.run = [](const fs::path& start, char**) { return run_doctor(start); }; });
}

}  // namespace cli

}  // namespace kiln::grader
