// Speed timing for check and verify: the variant's program and the reference's, built optimised in
// .grader/build/speed, the reference's also judging every timed result.
#include <cstdio>
#include <random>

#include <fmt/format.h>

#include "kiln/grader/grading.h"
#include "kiln/protocol.h"

namespace kiln::grader {

LocalSpeedTiming::LocalSpeedTiming(const Workspace& ws, const Module& module, TestTarget target, bool say_so)
    : ws_(ws), module_(module), target_(std::move(target)), say_so_(say_so) {}

bool LocalSpeedTiming::prepare(std::string& why_not) {
  if (programs_) return true;
  if (!ws_.course.has_solutions()) return false;  // a student's release: grade times it
  if (say_so_) std::fprintf(stderr, "Timing the speed-graded checks beside the reference...\n");
  SpeedPrograms programs;
  const fs::path dir = ws_.build_dir("speed");
  programs.hold = lock_build_dir(dir);
  // Built for speed, as a student would build a kernel they time: the same flags for both.
  CourseBuild build(ws_.course, dir, ws_.kiln_home, "-O2 -march=native -DNDEBUG");
  build.set_device_builds(false);
  const TestTarget reference = solution_target(ws_.course, module_);
  const BuildResult theirs = build.build(standard_targets(ws_.course), reference);
  if (!theirs.ok)
    throw CourseError("the reference solution of module " + module_.number_text() + " does not build for timing:\n" +
                      theirs.log);
  const BuildResult mine =
      target_.own.name == reference.own.name ? theirs : build.build(standard_targets(ws_.course), target_);
  if (!mine.ok) {
    why_not = "its optimised build (-O2, no sanitizers) failed";
    if (mine.error)
      why_not += fmt::format(": {}:{}: {}", mine.error->file.filename().string(), mine.error->line, mine.error->message);
    return false;
  }
  programs.student = mine.binary;
  programs.reference = programs.verifier = theirs.binary;
  std::random_device entropy;
  programs.env = {{protocol::kSeed, std::to_string((std::uint64_t(entropy()) << 32) ^ entropy())}};
  programs.scratch = dir / "rounds";
  programs_ = std::move(programs);
  return true;
}

SpeedResult LocalSpeedTiming::time(const Check& check, const std::string& context) {
  return time_speed_check(check, *programs_, context);
}

}  // namespace kiln::grader
