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

namespace {

// The pipes between the grader and the child: standard output and error, and where asked for,
// standard input, the event channel and the status channel ({-1, -1} when not).
struct Pipes {
  int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1}, event[2] = {-1, -1}, status[2] = {-1, -1};
};

bool open_pipes(const ProcessSpec& spec, Pipes& p) {
  return pipe2(p.out, O_CLOEXEC) == 0 && pipe2(p.err, O_CLOEXEC) == 0 &&
         (spec.stdin_data.empty() || pipe2(p.in, O_CLOEXEC) == 0) &&
         (spec.event_fd < 0 || pipe2(p.event, O_CLOEXEC) == 0) &&
         (spec.status_fd < 0 || pipe2(p.status, O_CLOEXEC) == 0);
}

// Everything the child needs, prepared before vfork: after it, only system calls.
struct ChildPlan {
  std::vector<std::string> env_strings, args, cgroups;
  std::vector<char*> envp, argv;
  std::string cwd;
  std::vector<int> kept;  // the descriptors the child keeps besides 0, 1 and 2, in increasing order
};

void plan_child(const ProcessSpec& spec, ChildPlan& plan) {
  if (spec.clean_env) plan.env_strings = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
  for (char** e = spec.clean_env ? nullptr : environ; e && *e; ++e) {
    std::string entry = *e;
    bool replaced = false;
    for (const auto& [key, value] : spec.env) replaced |= entry.rfind(key + "=", 0) == 0;
    if (!replaced) plan.env_strings.push_back(std::move(entry));
  }
  for (const auto& [key, value] : spec.env) plan.env_strings.push_back(key + "=" + value);
  for (auto& s : plan.env_strings) plan.envp.push_back(s.data());
  plan.envp.push_back(nullptr);
  plan.args = spec.argv;
  for (auto& s : plan.args) plan.argv.push_back(s.data());
  plan.argv.push_back(nullptr);
  plan.cwd = spec.cwd.string();
  if (!spec.join_cgroup.empty()) plan.cgroups.push_back(spec.join_cgroup.string());
  for (const auto& g : spec.also_join) plan.cgroups.push_back(g.string());
  for (int fd : {spec.event_fd, spec.status_fd})
    if (fd >= 3) plan.kept.push_back(fd);
  std::sort(plan.kept.begin(), plan.kept.end());
}

// In the child, after vfork: the pipes in place, nothing else of the grader's open, the cgroups
// joined, the limits set, then the program.
[[noreturn]] void become_child(const ProcessSpec& spec, const Pipes& p, ChildPlan& plan) {
  setpgid(0, 0);
  dup2(p.out[1], STDOUT_FILENO);
  dup2(p.err[1], STDERR_FILENO);
  if (spec.event_fd >= 0) dup2(p.event[1], spec.event_fd);
  if (spec.status_fd >= 0) dup2(p.status[1], spec.status_fd);
  if (p.in[0] >= 0) {
    dup2(p.in[0], STDIN_FILENO);
  } else {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  }
  // Nothing else the grader holds open reaches the child: only 0, 1, 2 and its pipes.
  unsigned from = 3;
  for (int fd : plan.kept) {
    if (static_cast<unsigned>(fd) > from) close_range(from, static_cast<unsigned>(fd) - 1, 0);
    from = static_cast<unsigned>(fd) + 1;
  }
  close_range(from, ~0U, 0);
  if (!plan.cwd.empty() && chdir(plan.cwd.c_str()) != 0) _exit(127);
  for (const std::string& cgroup : plan.cgroups) {
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
  execvpe(plan.argv[0], plan.argv.data(), plan.envp.data());
  const char msg[] = "exec failed\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(127);
}

// What one read from a stream brought: counted, its tail kept, its lines handed on (an event
// stream: only the new bytes are scanned for a newline, so a long line costs linear time), or
// kept up to the cap.
void take(Stream& s, const char* bytes, std::size_t n, const ProcessSpec& spec) {
  *s.total += n;
  if (s.tail) {
    constexpr std::size_t kTail = 64 * 1024;
    s.tail->append(bytes, n);
    if (s.tail->size() > 2 * kTail) s.tail->erase(0, s.tail->size() - kTail);
  }
  if (!s.events) {
    if (s.keep->size() < s.cap) s.keep->append(bytes, std::min(n, s.cap - s.keep->size()));
    return;
  }
  std::size_t scanned = s.pending.size();
  s.pending.append(bytes, n);
  std::size_t line_start = 0;
  for (std::size_t nl; (nl = s.pending.find('\n', scanned)) != std::string::npos; scanned = line_start) {
    if (spec.on_event) spec.on_event(std::string_view(s.pending).substr(line_start, nl - line_start));
    line_start = nl + 1;
  }
  s.pending.erase(0, line_start);
  if (s.pending.size() > spec.event_line_cap) s.pending.clear();  // no line is that long
}

}  // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  ProcessResult result;
  Pipes p;
  if (!open_pipes(spec, p)) {
    result.start_error = fmt::format("cannot create a pipe: {}", std::strerror(errno));
    return result;
  }
  ChildPlan plan;
  plan_child(spec, plan);
  const auto start = std::chrono::steady_clock::now();
  // vfork: the child shares the grader's memory until it execs, so starting it costs the same
  // however large the grader has grown (fork copied its page tables, then faulted on every page it
  // wrote). The child only makes system calls on what plan_child prepared, then execs or _exits.
  const pid_t pid = vfork();
  if (pid < 0) {
    result.start_error = fmt::format("cannot start a process: {}", std::strerror(errno));
    return result;
  }
  if (pid == 0) become_child(spec, p, plan);
  setpgid(pid, pid);
  for (int fd : {p.out[1], p.err[1], p.event[1], p.status[1]})
    if (fd >= 0) close(fd);
  if (p.in[0] >= 0) {
    close(p.in[0]);
    // Small enough for the pipe's buffer, so this never blocks.
    (void)!write(p.in[1], spec.stdin_data.data(), std::min<std::size_t>(spec.stdin_data.size(), 4096));
    close(p.in[1]);
  }
  result.started = true;

  std::vector<Stream> streams;
  streams.push_back({p.out[0], &result.out, &result.out_bytes, spec.output_cap, {}, false});
  streams.push_back({p.err[0], &result.err, &result.err_bytes, spec.output_cap, {}, false, &result.err_tail});
  std::size_t event_total = 0, status_total = 0;
  std::string event_keep;
  if (spec.status_fd >= 0) streams.push_back({p.status[0], &result.status_report, &status_total, 4096, {}, false});
  if (spec.event_fd >= 0) streams.push_back({p.event[0], &event_keep, &event_total, 0, {}, true});

  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int status = 0;
  struct rusage usage {};
  bool exited = false;
  double exited_at = 0;
  std::vector<char> buffer(65536);
  for (;;) {
    std::vector<pollfd> fds;
    for (const auto& s : streams)
      if (s.fd >= 0) fds.push_back({s.fd, POLLIN, 0});
    if (fds.empty() && exited) break;
    // Once the child is gone, give stragglers that hold the pipes (grandchildren) a moment only.
    if (exited && elapsed() - exited_at > 0.5) break;
    poll(fds.data(), fds.size(), 20);
    for (auto& s : streams) {
      const auto polled = std::find_if(fds.begin(), fds.end(), [&](const pollfd& f) { return s.fd >= 0 && f.fd == s.fd; });
      if (polled == fds.end() || !(polled->revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(s.fd, buffer.data(), buffer.size());
      if (n <= 0) {
        close(s.fd);
        s.fd = -1;
        continue;
      }
      take(s, buffer.data(), static_cast<std::size_t>(n), spec);
    }
    if (exited) continue;
    if (wait4(pid, &status, WNOHANG, &usage) == pid) {
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
  for (auto& s : streams)
    if (s.fd >= 0) close(s.fd);
  if (spec.event_fd >= 0 && !streams.back().pending.empty() && spec.on_event) spec.on_event(streams.back().pending);
  result.wall_s = elapsed();
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  result.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

std::string format_duration(double ms) {
  struct Unit {
    double ms;
    const char* name;
  };
  for (const Unit u : {Unit{1e3, "s"}, Unit{1, "ms"}, Unit{1e-3, "µs"}}) {
    if (ms >= u.ms) {
      const double v = ms / u.ms;
      return fmt::format("{:.{}f} {}", v, v >= 100 ? 0 : v >= 10 ? 1 : 2, u.name);
    }
  }
  const double ns = ms * 1e6;
  return fmt::format("{:.{}f} ns", ns, ns >= 100 ? 0 : ns >= 10 ? 1 : 2);
}

}  // namespace kiln::grader
