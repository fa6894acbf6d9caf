// The sandbox `grader grade` compiles and runs submissions in, built from Linux namespaces
// (bubblewrap) and rlimits. It sees the system's programs and libraries, the folders a step needs
// (read-only unless stated) and nothing else of the course: no solutions, no .git, no other
// submission. It has no network, a private /tmp of bounded size, and runs as an unprivileged user
// of its own per concurrent run, so that the process limit holds and every process it starts can
// be ended.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln::grader {

namespace fs = std::filesystem;

enum class Mount {
  read_only,  // visible, read-only
  writable,   // visible and writable
  hidden,     // replaced by an empty folder
  device,     // a device node passed through (/dev/nvidia*, for device checks)
};

struct MountSpec {
  Mount kind = Mount::read_only;
  fs::path path;
};

struct SandboxSpec {
  // Applied in order, so a later mount can hide part of an earlier one or expose part of a
  // hidden one again.
  std::vector<MountSpec> mounts;
  fs::path workdir;  // the current directory inside (default /tmp)
  // The size of the private /tmp (a tmpfs: what is written there counts against this, not the disk).
  std::size_t tmp_bytes = std::size_t(64) << 20;
  // Run as this unprivileged user (for student code); 0 keeps the caller's. Concurrent runs need
  // distinct users: the process limit counts per user, so one submission's fork bomb must not use
  // up another's allowance.
  int uid = 0;
  // kiln-sandbox-run: started inside, it runs the command, reports on descriptor 4 exactly how it
  // ended and ends everything it left running. Empty: the command runs directly.
  fs::path wrapper;
};

// Whether the sandbox can run here; when not, `why` says what is missing and how to get it.
bool sandbox_available(std::string& why);

// The command prefix that runs a command inside the sandbox described by `spec`.
std::vector<std::string> sandbox_prefix(const SandboxSpec& spec);

// The users the checks run as, one per concurrent run, from kSandboxUid on.
constexpr int kSandboxUid = 61000;
constexpr int kSandboxUids = 1000;

// A sandbox user of this machine's own, held while this object lives: two graders on one machine
// (or two workers of one) never share one, so that ending one's processes never ends the other's.
// Each user is taken with an exclusive lock on a file in /run/lock (or /tmp); a grader that ends
// in any way lets go of it.
class SandboxUser {
 public:
  SandboxUser();
  ~SandboxUser();
  SandboxUser(const SandboxUser&) = delete;
  SandboxUser& operator=(const SandboxUser&) = delete;
  int uid() const { return uid_; }

 private:
  int uid_ = 0;
  int fd_ = -1;
};

// Ends every process of the sandbox user `uid` and waits until none is left (root only; without
// root the sandbox's own process namespace ends them). False if some outlived the wait.
bool end_sandbox_user(int uid);

// A memory cgroup that bounds everything a sandbox's processes use, its private /tmp included:
// the limit that still holds when the address-space limit cannot (under the sanitizers). Needs
// root and a writable cgroup file system (v1 or v2); without them `available()` is false and the
// sanitizers' own allocator limits are all there is.
class MemoryCgroup {
 public:
  MemoryCgroup(const std::string& name, std::size_t bytes);
  ~MemoryCgroup();
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;
  bool available() const { return !procs_.empty(); }
  // The file a process writes "0" to, to join the group (ProcessSpec::join_cgroup).
  const fs::path& procs() const { return procs_; }

 private:
  fs::path dir_, procs_;
};

// A cgroup that counts the CPU time of every process in it, however each one ends: a process
// nobody waits for (a worker forked with SIGCHLD ignored, say) still adds its time here. cgroup
// v1's cpuacct hierarchy, or v2's cpu.stat; not available without root or a cgroup file system.
class CpuCgroup {
 public:
  explicit CpuCgroup(const std::string& name);
  ~CpuCgroup();
  CpuCgroup(const CpuCgroup&) = delete;
  CpuCgroup& operator=(const CpuCgroup&) = delete;
  bool available() const { return !procs_.empty(); }
  const fs::path& procs() const { return procs_; }
  // The CPU seconds of every process that has been in the group; negative when unreadable.
  double seconds() const;

 private:
  fs::path dir_, procs_;
  bool v2_ = false;
};

// kiln-sandbox-run beside the running grader.
fs::path sandbox_wrapper();

}  // namespace kiln::grader
