// kiln-sandbox-run STATUS_FD PROGRAM [ARGS...]: runs PROGRAM inside the sandbox and reports on
// STATUS_FD exactly how it ended ("exit N" or "signal N", then "cpu SECONDS": the CPU time of it and
// of every process it started), which the sandbox's own exit code cannot tell apart (exit(139) and a
// segmentation fault both read 139). Then it ends every process
// PROGRAM left behind in the sandbox, so that a submission is over when its run is.
//
// PROGRAM never holds STATUS_FD, and this process is not dumpable, so PROGRAM can neither write to
// the descriptor nor reach it through /proc.
//
// PROGRAM runs under a seccomp filter that refuses the kernel's key management (keyctl, add_key,
// request_key) with EPERM: the namespaces bubblewrap makes do not separate keyrings, so without it
// a submission could read the grader's session keyring, or leave a key for the next submission in
// its sandbox user's keyring.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include <seccomp.h>

namespace {

// The filter PROGRAM runs under: everything allowed but the key management calls.
bool refuse_keyrings() {
  scmp_filter_ctx filter = seccomp_init(SCMP_ACT_ALLOW);
  if (!filter) return false;
  bool ok = true;
  for (int call : {SCMP_SYS(keyctl), SCMP_SYS(add_key), SCMP_SYS(request_key)})
    ok = ok && seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), call, 0) == 0;
  ok = ok && seccomp_load(filter) == 0;
  seccomp_release(filter);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln-sandbox-run STATUS_FD PROGRAM [ARGS...]\n");
    return 126;
  }
  const int status_fd = std::atoi(argv[1]);
  prctl(PR_SET_DUMPABLE, 0);
  // Every process PROGRAM leaves behind becomes this one's child when its parent ends, so that it
  // is reaped here and its CPU time counted with PROGRAM's.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (status_fd > 2) fcntl(status_fd, F_SETFD, FD_CLOEXEC);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("kiln-sandbox-run: fork");
    return 126;
  }
  if (child == 0) {
    if (!refuse_keyrings()) {
      std::fprintf(stderr, "kiln-sandbox-run: cannot install the seccomp filter\n");
      _exit(126);
    }
    execv(argv[2], argv + 2);
    std::fprintf(stderr, "kiln-sandbox-run: cannot run %s: %s\n", argv[2], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  // Every other process of this user in the sandbox: what PROGRAM started and left running.
  signal(SIGKILL, SIG_DFL);
  kill(-1, SIGKILL);
  while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  // The CPU time of PROGRAM and of every process it started, all reaped by now, as the kernel
  // accounted it. Outside the sandbox it cannot be seen: the sandbox's own processes do not pass a
  // child's time on.
  struct rusage usage {};
  getrusage(RUSAGE_CHILDREN, &usage);
  const double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                     static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  char report[96];
  int n = WIFSIGNALED(status) ? std::snprintf(report, sizeof report, "signal %d cpu %.6f\n", WTERMSIG(status), cpu)
                              : std::snprintf(report, sizeof report, "exit %d cpu %.6f\n", WEXITSTATUS(status), cpu);
  if (status_fd > 2) (void)!write(status_fd, report, static_cast<std::size_t>(n));
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
