// Planted bugs: solutions/NN_slug/mutants/*.yaml, each a one-place change to a reference file
// and the catalogued failure it must produce.
#pragma once

#include <string>
#include <vector>

#include "kiln/grader/course.h"

namespace kiln::grader {

struct Mutant {
  std::string id;  // the file name without .yaml
  std::string description;
  std::string check;
  std::string failure;  // a catalogued failure of the check, or kMemoryError
  std::string file;     // a student file of the module
  std::string replace;  // must occur exactly once in the reference file
  std::string with;
  fs::path yaml;
};

// A mutant whose planted bug reads or writes outside its memory without changing a value: the
// check must end as a memory error under the sanitizers.
inline constexpr const char* kMemoryError = "memory_error";

// Loads and checks every mutant of the module (fields present, check and failure catalogued,
// file a student file). Throws CourseError naming the file and what is wrong.
std::vector<Mutant> load_mutants(const Course& course, const Module& m);

// The reference file with the mutant's change; throws CourseError unless `replace` occurs once.
std::string apply_mutant(const Mutant& mutant, const std::string& reference);

}  // namespace kiln::grader
