// main() of every module test binary.
//
// With KILN_RESULTS_FD set, it streams one JSON line per event to that descriptor as the checks
// run: a check's start, each of its observations (kiln/observe.h), and its end. A check that
// crashes, hangs or ends the process early still leaves what came before it, and the grader knows
// which check was running. Nothing in this stream is trusted by `grader grade`: there only the
// observations count, and the judge decides what they are worth.
//
// With KILN_JUDGE set (a file of observations the grader wrote), the program is the judge: every
// observe() returns the next recorded observation instead of calling anything.
//
// With KILN_SPEED_CALLS or KILN_SPEED_VERIFY set, it runs a speed check's timed or verifying run
// (kiln/testing.h), and GoogleTest prints nothing.
#include <execinfo.h>
#include <signal.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/protocol.h"
#include "session.h"

namespace {

namespace session = kiln::testing::session;

// The address of the instruction the signal interrupted, from the context the kernel saved for the
// handler; nothing on a machine this file does not know.
void* interrupted_at(void* context) {
  const auto* saved = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  return reinterpret_cast<void*>(saved->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return reinterpret_cast<void*>(saved->uc_mcontext.pc);
#else
  (void)saved;
  return nullptr;
#endif
}

// Where a crash or a hang happened, for the grader: the interrupted instruction, then the return
// addresses of the frames that called it, written to standard error between marker lines (the
// grader turns them into functions and lines). The handler's own frames and the signal trampoline
// are left out: the interrupted frame is the innermost one that matters.
void write_frames(const char* marker, void* interrupted) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  int callers = 0;
  for (int i = 0; interrupted != nullptr && i < n; ++i)
    if (frames[i] == interrupted) {
      callers = i + 1;
      break;
    }
  (void)!write(STDERR_FILENO, marker, std::strlen(marker));
  (void)!write(STDERR_FILENO, "\n", 1);
  if (interrupted != nullptr) {
    const char* prefix = kiln::protocol::kInterruptedFrame;
    (void)!write(STDERR_FILENO, prefix, std::strlen(prefix));
    backtrace_symbols_fd(&interrupted, 1, STDERR_FILENO);
  }
  backtrace_symbols_fd(frames + callers, n - callers, STDERR_FILENO);
  (void)!write(STDERR_FILENO, kiln::protocol::kFramesEnd, std::strlen(kiln::protocol::kFramesEnd));
  (void)!write(STDERR_FILENO, "\n", 1);
}

void on_crash(int signal, siginfo_t*, void* context) {
  write_frames(kiln::protocol::kFramesMarker, interrupted_at(context));
  raise(signal);  // the handler was reset: the process ends by the signal itself
}

// A check that overran its time: say where it was, then end with the code the grader reads as
// "stopped while running".
void on_stuck(int, siginfo_t*, void* context) {
  write_frames(kiln::protocol::kStuckMarker, interrupted_at(context));
  _exit(kiln::protocol::kStuckExit);
}

void install_handlers(bool crashes) {
  static char alternate[1 << 16];  // a stack overflow needs a stack to report on
  stack_t stack{};
  stack.ss_sp = alternate;
  stack.ss_size = sizeof alternate;
  sigaltstack(&stack, nullptr);
  void* warm[1];
  backtrace(warm, 1);  // loads the unwinder now, not inside a signal handler
  struct sigaction action{};
  action.sa_sigaction = on_crash;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  if (crashes)
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(s, &action, nullptr);
  struct sigaction stuck{};
  stuck.sa_sigaction = on_stuck;
  stuck.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGALRM, &stuck, nullptr);
}

// KILN_CHECK_TIMEOUTS="Suite.Name=10;Other.Name=3": each check's time, after which it reports
// where it is. The grader's own deadline comes a little later and does not depend on this.
std::map<std::string, double> check_timeouts() {
  std::map<std::string, double> out;
  const char* text = std::getenv(kiln::protocol::kCheckTimeouts);
  if (!text) return out;
  std::string all = text;
  for (std::size_t start = 0; start < all.size();) {
    const std::size_t end = std::min(all.find(';', start), all.size());
    const std::string item = all.substr(start, end - start);
    const auto eq = item.find('=');
    if (eq != std::string::npos) out[item.substr(0, eq)] = std::atof(item.c_str() + eq + 1);
    start = end + 1;
  }
  return out;
}

void arm(double seconds) {
  itimerval timer{};
  timer.it_value.tv_sec = static_cast<time_t>(seconds);
  timer.it_value.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(timer.it_value.tv_sec)) * 1e6);
  setitimer(ITIMER_REAL, &timer, nullptr);
}

class ResultStream : public ::testing::EmptyTestEventListener {
 public:
  explicit ResultStream(bool judging) : judging_(judging), timeouts_(check_timeouts()) {}

  void OnTestStart(const ::testing::TestInfo& info) override {
    if (const auto t = timeouts_.find(name(info)); t != timeouts_.end() && t->second > 0) arm(t->second);
    failures_ = nlohmann::json::array();
    started_ = std::chrono::steady_clock::now();
    session::begin_check(name(info));
    session::emit({{"event", "start"}, {"test", name(info)}});
  }

  void OnTestPartResult(const ::testing::TestPartResult& part) override {
    if (part.type() == ::testing::TestPartResult::kSuccess) return;
    failures_.push_back({{"file", part.file_name() ? part.file_name() : ""},
                         {"line", part.line_number()},
                         {"skipped", part.type() == ::testing::TestPartResult::kSkip},
                         {"message", part.message()}});
  }

  void OnTestEnd(const ::testing::TestInfo& info) override {
    arm(0);
    const auto elapsed = std::chrono::steady_clock::now() - started_;
    const auto* result = info.result();
    const session::CheckEnd end = session::end_check(result->Failed());
    nlohmann::json event = {{"event", "end"},
                            {"test", name(info)},
                            {"passed", result->Passed()},
                            {"skipped", result->Skipped()},
                            {"ms", std::chrono::duration<double, std::milli>(elapsed).count()},
                            {"failures", failures_}};
    if (!end.unobserved.empty()) event["unobserved"] = end.unobserved;
    if (!end.stopped_during.empty()) event["stopped_during"] = end.stopped_during;
    if (!end.stub.empty()) event["not_written"] = end.stub;
    if (!end.figures.empty()) event["figures"] = end.figures;
    if (!end.speed_context.empty()) event["speed_context"] = end.speed_context;
    if (judging_ && end.unobserved.empty() && !end.stub_replayed) {
      // In the judge a stub is only ever reached through an observation; one reached directly
      // means the check called student code outside observe().
      for (const auto& f : failures_) {
        const std::string message = f.value("message", "");
        const auto at = message.find(kiln::protocol::kNotWrittenYet);
        if (at != std::string::npos) {
          event["judge_error"] = "the check called student code outside observe(): " +
                                 message.substr(at, message.find('\n', at) - at);
          break;
        }
      }
    }
    session::emit(std::move(event));
  }

 private:
  static std::string name(const ::testing::TestInfo& info) {
    return std::string(info.test_suite_name()) + "." + info.name();
  }

  bool judging_;
  std::map<std::string, double> timeouts_;
  nlohmann::json failures_ = nlohmann::json::array();
  std::chrono::steady_clock::time_point started_;
};

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // A speed check's timed or verifying run (kiln/testing.h): standard output carries its results
  // or its verdict alone.
  const char* speed_calls = std::getenv(kiln::protocol::kSpeedCalls);
  const char* speed_verify = std::getenv(kiln::protocol::kSpeedVerify);
  if ((speed_calls && *speed_calls) || (speed_verify && *speed_verify)) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    // Standard output is kept for the results alone: what the code under test prints goes to
    // standard error instead.
    std::fflush(stdout);
    const int results = dup(STDOUT_FILENO);
    if (results >= 0 && dup2(STDERR_FILENO, STDOUT_FILENO) >= 0) session::keep_speed_results_fd(results);
  }
  bool judging = false;
  if (const char* path = std::getenv(kiln::protocol::kJudge); path && *path) {
    if (const auto error = session::load_observations(path)) {
      std::fprintf(stderr, "kiln judge: %s\n", error->c_str());
      return 3;
    }
    judging = true;
  }
  if (const char* number = std::getenv(kiln::protocol::kResultsFd); number && *number) {
    session::open_channel(std::atoi(number));  // a pipe the grader reads as the checks run
  }
  // Under the sanitizers their own reports say where a crash happened; otherwise these handlers do.
  if (!judging) install_handlers(!std::getenv(kiln::protocol::kSanitized));
  ::testing::UnitTest::GetInstance()->listeners().Append(new ResultStream(judging));
  return RUN_ALL_TESTS();
}
