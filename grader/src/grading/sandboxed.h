// grade's side of the pipeline: a submission staged into a work folder, built by the trusted
// build's recipe inside the sandbox, and its optimised twin timed beside the reference's program.
#pragma once

#include <atomic>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "kiln/grader/grading.h"
#include "kiln/grader/recipe.h"
#include "kiln/grader/sandbox.h"

namespace kiln::grader {

// Copies the module's student files from the submission into `stage`; a file that is missing,
// reached through a link or too large is replaced by the course's stub and noted.
std::vector<std::string> stage_submission(const Submission& s, const Module& m, const fs::path& stubs,
                                          const fs::path& stage);

// Runs shell commands one after the other (sandboxed when a launcher is given), within one time
// budget for them all.
struct Compiled {
  bool ok = false;
  bool stopped = false;
  std::string log;
};
// `cancel`, when given and set, stops the command running and the rest.
Compiled run_commands(const std::vector<std::string>& commands, const std::vector<std::string>& launcher,
                      const fs::path& cwd, const Limits& limits, double budget_s,
                      const std::atomic<bool>* cancel = nullptr);

// What every compile of one submission shares: who it runs as, what it may read, its limits.
struct SandboxedCompile {
  int uid = 0;            // 0: no sandbox (trusted code only)
  bool sandbox = true;
  std::vector<fs::path> headers;  // the headers of the module and its prerequisites
  Limits limits;
  double budget_s = 120;  // for all of a submission's compiles
  std::vector<fs::path> student_files;
  fs::path work;          // the submission's work folder, handed to the sandbox user
  // The launcher for commands run in `build_dir` (a trusted build, read-only inside), with the
  // work folder writable and `extra` read-only.
  std::vector<std::string> launcher(const fs::path& build_dir, const std::vector<fs::path>& extra = {}) const;
  // Makes the cooked commands' output folders and hands the work folder to the sandbox user.
  void prepare(const Cooked& cooked) const;
};

// The recipe's commands for the staged sources, compiled in the sandbox.
class SandboxedBuilder : public Builder {
 public:
  SandboxedBuilder(const SandboxedCompile& compile, const Recipe& recipe, fs::path sources, bool device,
                   std::string device_skip_reason);
  BuildResult build() override;

 private:
  const SandboxedCompile& compile_;
  const Recipe& recipe_;
  fs::path sources_;
  bool device_;
  std::string device_skip_reason_;
};

// The submission compiled a second time by the optimised recipe, and timed beside the trusted
// reference's program, each in the same sandbox seeing only its own program.
class SandboxedSpeedTiming : public SpeedTiming {
 public:
  // batch: the reference's timings shared by the submissions of one grade (may be null).
  // cores: the batch's, given back while this submission waits for its turn to be timed (may be null).
  SandboxedSpeedTiming(const SandboxedCompile& compile, const Recipe& recipe, fs::path sources,
                       fs::path reference_program, ReferenceTimes* batch = nullptr, CoreShare* cores = nullptr);
  ~SandboxedSpeedTiming() override;
  // Starts the optimised build beside whatever runs next (the checks), in a folder of its own
  // that only it writes (work/speed). cancel_build() stops it (no speed check passed);
  // finish_build() waits for it. The caller ends the sandbox user's processes after that.
  void start_build();
  void cancel_build() { cancel_ = true; }
  void finish_build();
  bool prepare(std::string& why_not) override;
  SpeedResult time(const Check& check, const std::string& context) override;

 private:
  Compiled build() const;

  const SandboxedCompile& compile_;
  SandboxedCompile optimised_;  // compile_, writing only to work/speed
  Cooked cooked_;               // the optimised recipe's commands there
  const Recipe& recipe_;
  fs::path sources_;
  fs::path reference_;
  ReferenceTimes* batch_;
  SpeedPrograms programs_;
  bool ready_ = false;
  std::atomic<bool> cancel_{false};
  std::future<Compiled> building_;
  std::optional<Compiled> built_;
};

}  // namespace kiln::grader
