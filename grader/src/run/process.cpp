#include "kiln/grader/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

extern char** environ;

namespace kiln::grader {

namespace {

void set_limit(int resource, rlim_t value) {
  struct rlimit limit{value, value};
  setrlimit(resource, &limit);
}

struct Stream {
  int fd = -1;
  std::string* keep = nullptr;
  std::size_t* total = nullptr;
  std::size_t cap = 0;
  std::string pending;  // a partial event line
  bool events = false;
  std::string* tail = nullptr;  // the last bytes, however much came before
};

}  // namespace

std::string describe_signal(int sig) {
  switch (sig) {
    case SIGSEGV: return "segmentation fault (SIGSEGV): memory outside what was allocated was read or written";
    case SIGABRT: return "aborted (SIGABRT): abort() was called, often by a failed assert or a std::terminate";
    case SIGFPE: return "arithmetic error (SIGFPE), such as an integer division by zero";
    case SIGBUS: return "bus error (SIGBUS): a misaligned or invalid memory access";
    case SIGILL: return "illegal instruction (SIGILL)";
    case SIGKILL: return "killed (SIGKILL), usually for going over the memory limit";
    case SIGXCPU: return "went over the CPU-time limit (SIGXCPU)";
    case SIGXFSZ: return "wrote a file larger than the limit (SIGXFSZ)";
    default: return fmt::format("ended by signal {} ({})", sig, strsignal(sig));
  }
}

std::string shell_quote(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    const bool plain = !arg.empty() && arg.find_first_not_of(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") == std::string::npos;
    if (plain) {
      out += arg;
    } else {
      out += '\'';
      for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

ProcessResult run_process(const ProcessSpec& spec) {
  ProcessResult result;
  int out_pipe[2], err_pipe[2], event_pipe[2] = {-1, -1}, in_pipe[2] = {-1, -1}, status_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
      (!spec.stdin_data.empty() && pipe2(in_pipe, O_CLOEXEC) != 0) ||
      (spec.event_fd >= 0 && pipe2(event_pipe, O_CLOEXEC) != 0) ||
      (spec.status_fd >= 0 && pipe2(status_pipe, O_CLOEXEC) != 0)) {
    result.start_error = fmt::format("cannot create a pipe: {}", std::strerror(errno));
    return result;
  }

  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env_strings;
  if (spec.clean_env) env_strings = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
  for (char** e = spec.clean_env ? nullptr : environ; e && *e; ++e) {
    std::string entry = *e;
    bool replaced = false;
    for (const auto& [key, value] : spec.env) replaced |= entry.rfind(key + "=", 0) == 0;
    if (!replaced) env_strings.push_back(std::move(entry));
  }
  for (const auto& [key, value] : spec.env) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string cwd = spec.cwd.string();
  std::vector<std::string> cgroups;  // built before fork: the child only writes
  if (!spec.join_cgroup.empty()) cgroups.push_back(spec.join_cgroup.string());
  for (const auto& g : spec.also_join) cgroups.push_back(g.string());
  // The descriptors the child keeps besides 0, 1 and 2, in increasing order.
  std::vector<int> kept;
  for (int fd : {spec.event_fd, spec.status_fd})
    if (fd >= 3) kept.push_back(fd);
  std::sort(kept.begin(), kept.end());

  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    result.start_error = fmt::format("cannot start a process: {}", std::strerror(errno));
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    if (spec.event_fd >= 0) dup2(event_pipe[1], spec.event_fd);
    if (spec.status_fd >= 0) dup2(status_pipe[1], spec.status_fd);
    if (in_pipe[0] >= 0) {
      dup2(in_pipe[0], STDIN_FILENO);
    } else {
      int devnull = open("/dev/null", O_RDONLY);
      if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    }
    // Nothing else the grader holds open reaches the child: only 0, 1, 2 and its pipes.
    unsigned from = 3;
    for (int fd : kept) {
      if (static_cast<unsigned>(fd) > from) close_range(from, static_cast<unsigned>(fd) - 1, 0);
      from = static_cast<unsigned>(fd) + 1;
    }
    close_range(from, ~0U, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(127);
    for (const std::string& cgroup : cgroups) {
      const int fd = open(cgroup.c_str(), O_WRONLY);
      if (fd < 0 || write(fd, "0", 1) != 1) _exit(126);  // never run unbounded when a bound was asked for
      close(fd);
    }
    const Limits& l = spec.limits;
    if (l.cpu_s > 0) set_limit(RLIMIT_CPU, static_cast<rlim_t>(l.cpu_s + 0.999));
    if (l.memory_bytes > 0) set_limit(RLIMIT_AS, l.memory_bytes);
    if (l.processes > 0) set_limit(RLIMIT_NPROC, static_cast<rlim_t>(l.processes));
    if (l.file_bytes > 0) set_limit(RLIMIT_FSIZE, l.file_bytes);
    set_limit(RLIMIT_CORE, 0);
    execvpe(argv[0], argv.data(), envp.data());
    const char msg[] = "exec failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spec.event_fd >= 0) close(event_pipe[1]);
  if (spec.status_fd >= 0) close(status_pipe[1]);
  if (in_pipe[0] >= 0) {
    close(in_pipe[0]);
    // Small enough for the pipe's buffer, so this never blocks.
    (void)!write(in_pipe[1], spec.stdin_data.data(), std::min<std::size_t>(spec.stdin_data.size(), 4096));
    close(in_pipe[1]);
  }
  result.started = true;

  std::vector<Stream> streams;
  streams.push_back({out_pipe[0], &result.out, &result.out_bytes, spec.output_cap, {}, false});
  streams.push_back({err_pipe[0], &result.err, &result.err_bytes, spec.output_cap, {}, false, &result.err_tail});
  std::size_t event_total = 0;
  std::string event_keep;
  std::size_t status_total = 0;
  if (spec.status_fd >= 0) streams.push_back({status_pipe[0], &result.status_report, &status_total, 4096, {}, false});
  if (spec.event_fd >= 0) streams.push_back({event_pipe[0], &event_keep, &event_total, 0, {}, true});

  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  int status = 0;
  struct rusage usage {};
  bool exited = false;
  double exited_at = 0;
  char buffer[65536];
  for (;;) {
    std::vector<pollfd> fds;
    for (const auto& s : streams)
      if (s.fd >= 0) fds.push_back({s.fd, POLLIN, 0});
    if (fds.empty() && exited) break;
    // Once the child is gone, give stragglers that hold the pipes (grandchildren) a moment only.
    if (exited && elapsed() - exited_at > 0.5) break;
    poll(fds.data(), fds.size(), 20);
    for (auto& s : streams) {
      if (s.fd < 0) continue;
      pollfd* p = nullptr;
      for (auto& f : fds)
        if (f.fd == s.fd) p = &f;
      if (!p || !(p->revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(s.fd, buffer, sizeof buffer);
      if (n <= 0) {
        close(s.fd);
        s.fd = -1;
        continue;
      }
      *s.total += static_cast<std::size_t>(n);
      if (s.tail) {
        constexpr std::size_t kTail = 64 * 1024;
        s.tail->append(buffer, static_cast<std::size_t>(n));
        if (s.tail->size() > 2 * kTail) s.tail->erase(0, s.tail->size() - kTail);
      }
      if (s.events) {
        s.pending.append(buffer, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = s.pending.find('\n')) != std::string::npos) {
          if (spec.on_event) spec.on_event(std::string_view(s.pending).substr(0, nl));
          s.pending.erase(0, nl + 1);
        }
        if (s.pending.size() > spec.event_line_cap) s.pending.clear();  // no line is that long
      } else if (s.keep->size() < s.cap) {
        s.keep->append(buffer, std::min(static_cast<std::size_t>(n), s.cap - s.keep->size()));
      }
    }
    if (!exited) {
      const pid_t done = wait4(pid, &status, WNOHANG, &usage);
      if (done == pid) {
        exited = true;
        exited_at = elapsed();
        kill(-pid, SIGKILL);  // whatever the child left behind in its group
      } else if (spec.should_stop && spec.should_stop(elapsed())) {
        result.stopped = true;
        kill(-pid, SIGKILL);
        wait4(pid, &status, 0, &usage);
        exited = true;
        exited_at = elapsed();
      }
    }
  }
  for (auto& s : streams)
    if (s.fd >= 0) close(s.fd);
  if (spec.event_fd >= 0 && !streams.back().pending.empty() && spec.on_event)
    spec.on_event(streams.back().pending);
  result.wall_s = elapsed();
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  result.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace kiln::grader
