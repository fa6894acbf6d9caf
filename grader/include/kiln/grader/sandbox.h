// The sandbox `grader grade` runs submissions in, built from Linux namespaces (bubblewrap) and
// rlimits. It sees only the system's programs and libraries, the course tree read-only with every
// solution hidden, and one writable folder; no network; the checks run as an unprivileged user so
// that the process limit holds.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kiln::grader {

namespace fs = std::filesystem;

enum class Mount {
  read_only,  // visible, read-only
  writable,   // visible and writable
  hidden,     // replaced by an empty folder (solutions, the grader's state)
  device,     // a device node passed through (/dev/nvidia*, for device checks)
};

struct SandboxSpec {
  // Applied in order, so a later mount can hide part of an earlier one or expose part of a
  // hidden one again.
  std::vector<std::pair<Mount, fs::path>> mounts;
  fs::path workdir;                  // the current directory inside
  // Run as this unprivileged user (for student code); 0 keeps the caller's. Concurrent runs need
  // distinct users: the process limit counts per user, so one submission's fork bomb must not use
  // up another's allowance.
  int uid = 0;
};

// Whether the sandbox can run here; when not, `why` says what is missing and how to get it.
bool sandbox_available(std::string& why);

// The command prefix that runs a command inside the sandbox described by `spec`.
std::vector<std::string> sandbox_prefix(const SandboxSpec& spec);

// The users the checks run as, one per concurrent run: kSandboxUid + slot.
constexpr int kSandboxUid = 61000;

}  // namespace kiln::grader
