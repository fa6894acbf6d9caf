// `grader new-module NN slug`: a new module written from the commented template in
// grader/templates/module/, which `grader verify NN` proves sound as it stands: one example check
// with one catalogued failure, its reference solution, its stub and the mutant that proves the
// failure. The author then replaces the example with the module's own (docs/authoring.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kiln/grader/course.h"

namespace kiln::grader {

struct NewModule {
  int number = 0;                    // 1 to 99
  std::string slug;                  // a lower-case identifier: demo, flash_attention
  std::string title;                 // empty: the slug with capitals and spaces ("Flash attention")
  std::string tier = "foundation";   // one of module_tiers()
  std::vector<int> requires_ = {1};  // direct prerequisites; the example needs module 01's Tensor
};

// Throws CourseError, saying what is wrong and what to do, when `spec` cannot be added to the
// course: no solutions/ (a student release), a number or a folder (modules/, solutions/) already
// taken, a slug that is not a lower-case identifier or is taken (by a module or by a header of
// kiln/), a tier not in module_tiers(), a prerequisite the course lacks or that is not earlier,
// or prerequisites that do not reach module 01, whose Tensor the example uses.
void check_new_module(const Course& course, const fs::path& kiln_home, const NewModule& spec);

// Checks `spec` (as check_new_module), then writes the module from the templates in
// kiln_home/grader/templates/module, and returns the files written, relative to course.root:
//   modules/NN_slug/module.yaml, include/kiln/slug.h, src/slug.cpp (the stub), tests/slug_test.cpp
//   solutions/NN_slug/src/slug.cpp (the reference), solutions/NN_slug/mutants/scale_adds.yaml
//   docs/NN_slug.md (the chapter; an existing chapter is kept)
// The written module is loaded back with its mutants before this returns; should that fail, what
// was written is removed again and the CourseError passed on.
std::vector<fs::path> write_new_module(const Course& course, const fs::path& kiln_home, const NewModule& spec);

}  // namespace kiln::grader
