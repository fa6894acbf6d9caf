// Running a child process: captured output, resource limits, a wall-clock deadline, and an
// optional event pipe the child writes lines to.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::grader {

struct Limits {
  double cpu_s = 0;             // RLIMIT_CPU; 0 = none
  std::size_t memory_bytes = 0; // RLIMIT_AS
  long processes = 0;           // RLIMIT_NPROC (not enforced for root: the sandbox covers that)
  std::size_t file_bytes = 0;   // RLIMIT_FSIZE
};

struct ProcessSpec {
  std::vector<std::string> argv;
  std::filesystem::path cwd;
  std::vector<std::pair<std::string, std::string>> env;  // added to (or replacing in) the environment
  // When set, the child's environment is only `env`, a plain PATH and LANG: nothing of the
  // grader's own environment (a CI job's secrets, say) reaches code that runs in the sandbox.
  bool clean_env = false;
  Limits limits;
  std::string stdin_data;  // written to the child's standard input, which is then closed
  std::size_t output_cap = 256 * 1024;  // bytes kept of stdout and of stderr; the rest is counted
  // When set, the child gets a pipe on this descriptor number and every line written to it is
  // passed to on_event as it arrives.
  int event_fd = -1;
  std::function<void(std::string_view line)> on_event;
  std::size_t event_line_cap = std::size_t(1) << 20;  // longer event lines are dropped
  // When set, the child gets a second pipe on this descriptor; what is written to it (a few
  // lines at most) comes back as ProcessResult::status_report. The sandbox's wrapper reports its
  // child's exact end there.
  int status_fd = -1;
  // When set, the child joins this cgroup (writes "0" to its cgroup.procs) before it starts.
  std::filesystem::path join_cgroup;
  // More cgroups to join the same way (one of another hierarchy: cgroup v1's cpuacct, say).
  std::vector<std::filesystem::path> also_join;
  // Polled about every 20 ms with the seconds since start; returning true kills the process group.
  std::function<bool(double elapsed_s)> should_stop;
};

struct ProcessResult {
  bool started = false;
  std::string start_error;   // why exec failed
  int exit_code = -1;        // when it exited normally
  int signal = 0;            // when a signal ended it
  bool stopped = false;      // killed because should_stop said so
  std::string out, err;
  std::size_t out_bytes = 0, err_bytes = 0;  // total written, kept or not
  std::string status_report;
  std::string err_tail;  // the last 64 KiB of stderr, where a crash report ends up
  double wall_s = 0;
  // The CPU time (user and system) of the child and of the descendants it waited for, as the
  // kernel accounted it: nothing the child says about itself.
  double cpu_s = 0;

  bool ok() const { return started && signal == 0 && exit_code == 0 && !stopped; }
};

ProcessResult run_process(const ProcessSpec& spec);

// "segmentation fault (SIGSEGV)" and the like.
std::string describe_signal(int signal);

// "1.68 s", "16.7 ms", "420 µs", "85 ns": three significant digits in the unit that fits.
std::string format_duration(double ms);

// The command line as a person would type it in a shell, for `-v`.
std::string shell_quote(const std::vector<std::string>& argv);

}  // namespace kiln::grader
