#include "kiln/grader/sandbox.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "kiln/grader/process.h"

namespace kiln::grader {

bool sandbox_available(std::string& why) {
  const ProcessResult version = run_process({.argv = {"bwrap", "--version"}});
  if (!version.ok()) {
    why = "bubblewrap is not installed: apt-get install bubblewrap";
    return false;
  }
  // "bubblewrap 0.6.1": the sandbox bounds its /tmp with --size, which came with 0.7.
  int major = 0, minor = 0;
  if (std::sscanf(version.out.c_str(), "bubblewrap %d.%d", &major, &minor) == 2 && major == 0 && minor < 7) {
    why = fmt::format("{} is too old: the sandbox needs bubblewrap 0.7 or later (--size)",
                      version.out.substr(0, version.out.find('\n')));
    return false;
  }
  if (geteuid() == 0 && !run_process({.argv = {"setpriv", "--version"}}).ok()) {
    why = "setpriv (util-linux) is missing: apt-get install util-linux";
    return false;
  }
  // The probe is the sandbox itself, as the checks get it (as the sandbox user when root, with a
  // /proc of its own): a container can allow a bare namespace yet refuse the user or the /proc.
  std::vector<std::string> probe = sandbox_prefix({.uid = geteuid() == 0 ? kSandboxUid : 0});
  probe.push_back("true");
  if (const ProcessResult r = run_process({.argv = probe}); !r.ok()) {
    why = "bubblewrap cannot set up the sandbox here (" + r.err.substr(0, r.err.find('\n')) +
          "): it needs unprivileged user namespaces and a /proc that no mount covers in part (in a "
          "container, one that allows both)";
    return false;
  }
  if (!fs::exists(sandbox_wrapper())) {
    why = sandbox_wrapper().string() + " is missing: build it (bin/grader does)";
    return false;
  }
  return true;
}

std::vector<std::string> sandbox_prefix(const SandboxSpec& spec) {
  std::vector<std::string> argv;
  // Running as root, drop to an unprivileged user first: RLIMIT_NPROC does not apply to root, so
  // without this a fork bomb would only be stopped by the wall-clock limit.
  if (spec.uid > 0 && geteuid() == 0) {
    argv = {"setpriv", fmt::format("--reuid={}", spec.uid), fmt::format("--regid={}", spec.uid), "--clear-groups", "--"};
  }
  const std::vector<std::string> base = {
      "bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
      "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
      "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--ro-bind", "/etc", "/etc",
      "--proc", "/proc", "--dev", "/dev", "--size", std::to_string(spec.tmp_bytes), "--tmpfs", "/tmp"};
  argv.insert(argv.end(), base.begin(), base.end());
  for (const auto& m : spec.mounts) {
    if (!fs::exists(m.path)) continue;  // nothing to show or to hide
    const std::string p = m.path.string();
    switch (m.kind) {
      case Mount::read_only: argv.insert(argv.end(), {"--ro-bind", p, p}); break;
      case Mount::writable: argv.insert(argv.end(), {"--bind", p, p}); break;
      case Mount::hidden: argv.insert(argv.end(), {"--size", "65536", "--tmpfs", p, "--remount-ro", p}); break;
      case Mount::device: argv.insert(argv.end(), {"--dev-bind", p, p}); break;
    }
  }
  if (!spec.wrapper.empty()) argv.insert(argv.end(), {"--ro-bind", spec.wrapper.string(), spec.wrapper.string()});
  const std::string workdir = spec.workdir.empty() ? "/tmp" : spec.workdir.string();
  argv.insert(argv.end(), {"--chdir", workdir, "--setenv", "TMPDIR", "/tmp", "--setenv", "HOME", "/tmp", "--"});
  if (!spec.wrapper.empty()) argv.insert(argv.end(), {spec.wrapper.string(), "4"});
  return argv;
}

namespace {

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::string text, line;
  while (std::getline(in, line)) text += line + "\n";
  return text;
}

// The live processes whose real user is uid, from /proc. A zombie is not counted: it runs nothing
// and holds nothing, and whoever inherited it reaps it in its own time.
std::vector<pid_t> processes_of(int uid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(entry.path() / "status");
    std::string line;
    bool zombie = false;
    while (std::getline(status, line)) {
      if (line.rfind("State:", 0) == 0) zombie = line.find('Z') != std::string::npos || line.find('X') != std::string::npos;
      if (line.rfind("Uid:", 0) != 0) continue;
      if (!zombie && std::stoi(line.substr(4)) == uid) out.push_back(static_cast<pid_t>(std::stol(name)));
      break;
    }
  }
  return out;
}

}  // namespace

SandboxUser::SandboxUser() {
  const fs::path dir = access("/run/lock", W_OK) == 0 ? fs::path("/run/lock") : fs::temp_directory_path();
  for (int uid = kSandboxUid; uid < kSandboxUid + kSandboxUids; ++uid) {
    const fs::path lock = dir / fmt::format("kiln-sandbox-user-{}.lock", uid);
    const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      uid_ = uid;
      fd_ = fd;
      return;
    }
    ::close(fd);
  }
  throw std::runtime_error(fmt::format("no sandbox user is free: all {} from {} are taken by other graders on this "
                                       "machine", kSandboxUids, kSandboxUid));
}

SandboxUser::~SandboxUser() {
  if (fd_ >= 0) ::close(fd_);
}

bool end_sandbox_user(int uid) {
  if (uid <= 0 || geteuid() != 0) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    const auto left = processes_of(uid);
    if (left.empty()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    for (pid_t pid : left) kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

MemoryCgroup::MemoryCgroup(const std::string& name, std::size_t bytes) {
  if (geteuid() != 0) return;
  std::error_code ec;
  auto write = [](const fs::path& file, const std::string& text) {
    std::ofstream out(file);
    out << text;
    out.flush();
    return static_cast<bool>(out);
  };
  // cgroup v1: a memory hierarchy of its own.
  if (fs::exists("/sys/fs/cgroup/memory/memory.limit_in_bytes")) {
    dir_ = fs::path("/sys/fs/cgroup/memory") / name;
    fs::create_directory(dir_, ec);
    if (!ec && write(dir_ / "memory.limit_in_bytes", std::to_string(bytes))) procs_ = dir_ / "cgroup.procs";
    return;
  }
  // cgroup v2: where the memory controller is enabled for the root's children.
  const std::string controllers = read_text("/sys/fs/cgroup/cgroup.subtree_control");
  if (controllers.find("memory") != std::string::npos) {
    dir_ = fs::path("/sys/fs/cgroup") / name;
    fs::create_directory(dir_, ec);
    if (!ec && write(dir_ / "memory.max", std::to_string(bytes))) {
      write(dir_ / "memory.swap.max", "0");
      procs_ = dir_ / "cgroup.procs";
    }
  }
}

MemoryCgroup::~MemoryCgroup() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove(dir_, ec);  // empty by now: end_sandbox_user ran
}

CpuCgroup::CpuCgroup(const std::string& name) {
  if (geteuid() != 0) return;
  std::error_code ec;
  if (fs::exists("/sys/fs/cgroup/cpuacct/cpuacct.usage")) {
    dir_ = fs::path("/sys/fs/cgroup/cpuacct") / name;
  } else if (fs::exists("/sys/fs/cgroup/cgroup.controllers")) {
    dir_ = fs::path("/sys/fs/cgroup") / name;  // cpu.stat's usage_usec needs no controller
    v2_ = true;
  } else {
    return;
  }
  fs::create_directory(dir_, ec);
  if (!ec && fs::exists(dir_ / "cgroup.procs")) procs_ = dir_ / "cgroup.procs";
}

CpuCgroup::~CpuCgroup() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove(dir_, ec);
}

double CpuCgroup::seconds() const {
  if (procs_.empty()) return -1;
  if (!v2_) {
    const std::string text = read_text(dir_ / "cpuacct.usage");
    return text.empty() ? -1 : std::strtod(text.c_str(), nullptr) * 1e-9;
  }
  const std::string stat = read_text(dir_ / "cpu.stat");
  const auto at = stat.find("usage_usec ");
  return at == std::string::npos ? -1 : std::strtod(stat.c_str() + at + 11, nullptr) * 1e-6;
}

fs::path sandbox_wrapper() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path("kiln-sandbox-run") : self.parent_path() / "kiln-sandbox-run";
}

}  // namespace kiln::grader
