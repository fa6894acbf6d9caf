#include "kiln/grader/sandbox.h"

#include <unistd.h>

#include <fmt/format.h>

#include "kiln/grader/process.h"

namespace kiln::grader {

bool sandbox_available(std::string& why) {
  const ProcessResult r = run_process({.argv = {"bwrap", "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"}});
  if (!r.ok()) {
    why = r.started && r.exit_code != 127
              ? "bubblewrap cannot create namespaces here (" + r.err.substr(0, r.err.find('\n')) +
                    "); user namespaces may be disabled"
              : "bubblewrap is not installed: apt-get install bubblewrap";
    return false;
  }
  if (geteuid() == 0 && !run_process({.argv = {"setpriv", "--version"}}).ok()) {
    why = "setpriv (util-linux) is missing: apt-get install util-linux";
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
      "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"};
  argv.insert(argv.end(), base.begin(), base.end());
  for (const auto& [mount, path] : spec.mounts) {
    if (!fs::exists(path)) continue;  // nothing to show or to hide
    switch (mount) {
      case Mount::read_only: argv.insert(argv.end(), {"--ro-bind", path.string(), path.string()}); break;
      case Mount::writable: argv.insert(argv.end(), {"--bind", path.string(), path.string()}); break;
      case Mount::hidden: argv.insert(argv.end(), {"--tmpfs", path.string()}); break;
      case Mount::device: argv.insert(argv.end(), {"--dev-bind", path.string(), path.string()}); break;
    }
  }
  if (!spec.workdir.empty()) argv.insert(argv.end(), {"--chdir", spec.workdir.string()});
  argv.insert(argv.end(), {"--setenv", "TMPDIR", spec.workdir.empty() ? "/tmp" : spec.workdir.string(), "--"});
  return argv;
}

}  // namespace kiln::grader
