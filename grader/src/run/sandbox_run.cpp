// kiln-sandbox-run STATUS_FD PROGRAM [ARGS...]: runs PROGRAM inside the sandbox and reports on
// STATUS_FD exactly how it ended ("exit N" or "signal N"), which the sandbox's own exit code
// cannot tell apart (exit(139) and a segmentation fault both read 139). Then it ends every process
// PROGRAM left behind in the sandbox, so that a submission is over when its run is.
//
// PROGRAM never holds STATUS_FD, and this process is not dumpable, so PROGRAM can neither write to
// the descriptor nor reach it through /proc.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln-sandbox-run STATUS_FD PROGRAM [ARGS...]\n");
    return 126;
  }
  const int status_fd = std::atoi(argv[1]);
  prctl(PR_SET_DUMPABLE, 0);
  if (status_fd > 2) fcntl(status_fd, F_SETFD, FD_CLOEXEC);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("kiln-sandbox-run: fork");
    return 126;
  }
  if (child == 0) {
    execv(argv[2], argv + 2);
    std::fprintf(stderr, "kiln-sandbox-run: cannot run %s: %s\n", argv[2], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  char report[64];
  int n = WIFSIGNALED(status) ? std::snprintf(report, sizeof report, "signal %d\n", WTERMSIG(status))
                              : std::snprintf(report, sizeof report, "exit %d\n", WEXITSTATUS(status));
  if (status_fd > 2) (void)!write(status_fd, report, static_cast<std::size_t>(n));
  // Every other process of this user in the sandbox: what PROGRAM started and left running.
  signal(SIGKILL, SIG_DFL);
  kill(-1, SIGKILL);
  while (waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
  }
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
