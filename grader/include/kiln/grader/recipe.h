// How `grader grade` turns a submission's files into a test binary without a build system: the
// exact commands the trusted course build used for a module's untouched stubs, with the stub files
// replaced by the submission's and every output sent to the submission's own folder. The commands
// run in the trusted build directory, which they can read but not write.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kiln/grader/build.h"

namespace kiln::grader {

struct Recipe {
  fs::path build_dir;                 // where the commands run
  std::vector<std::string> host;      // compile each student file, archive, link: shell commands
  std::vector<std::string> device;    // the device binary's (empty when it is not built)
  std::string device_unit;            // the one nvcc translation unit, as the stubs' build wrote it
  fs::path stub_root;                 // where the stubs' student files are, in the commands
};

// The compiler launcher the build in `build_dir` was configured with (CMAKE_CXX_COMPILER_LAUNCHER in
// its CMakeCache.txt, such as ccache, a list's items joined by spaces), as Ninja writes it before the
// compiler; empty when there is none. make_recipe leaves it out: a submission's files are compiled
// in the sandbox by the compiler itself.
std::string compiler_launcher(const fs::path& build_dir);

// Reads the commands of `stub`'s test binary (its sanitized twin when `sanitized`), and of its
// device binary when `device`, from the trusted build in `build`, which has built them. Throws
// CourseError when they cannot be found.
Recipe make_recipe(const CourseBuild& build, const TestTarget& stub, bool device, bool sanitized);

// The commands for one submission whose student files are at `sources` (at their relative paths),
// writing into `work`: the test binary `work/t`, the device binary `work/d`.
struct Cooked {
  std::vector<std::string> host, device;
  fs::path binary, device_binary, device_unit_file;
  std::string device_unit;
};
Cooked cook(const Recipe& recipe, const fs::path& sources, const fs::path& work);

}  // namespace kiln::grader
