// The judge: decides checks from what a test program observed (kiln/observe.h), never from what
// it says about itself.
#pragma once

#include <filesystem>
#include <vector>

#include "kiln/grader/runner.h"

namespace kiln::grader {

// The judge: runs `judge` (the module's checks linked with the untouched stubs and trusted code
// only) on the observations in `observed`, and returns every check's final result. A check whose
// run ended is decided by the judge alone; one that crashed, hung or exited keeps what the grader
// saw of it. `file` is where the observations are written for the judge.
RunResult judge_checks(const fs::path& judge, const RunResult& observed, const std::vector<const Check*>& checks,
                       const RunOptions& options, const fs::path& file);

// judge_checks for a built target: device checks are judged by its device binary (where it has
// one; they keep what was seen otherwise), the others by its binary.
RunResult judge_built_checks(const BuildResult& judge, const RunResult& observed,
                             const std::vector<const Check*>& checks, const RunOptions& options, const fs::path& file);

}  // namespace kiln::grader
