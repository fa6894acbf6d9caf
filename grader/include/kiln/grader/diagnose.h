// Where a crash or a hang happened, and what a sanitizer saw, in words a student can act on.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::grader {

namespace fs = std::filesystem;

struct Frame {
  std::string function;  // "Tensor::at", shortened
  std::string file;
  int line = 0;
};

// The functions and lines of `addresses` ("0x1a2b", offsets into `binary`), innermost first; a
// function inlined into another is a frame of its own. Empty when addr2line cannot read them.
std::vector<Frame> frames_at(const std::vector<std::string>& addresses, const fs::path& binary);

// The frames of the last block between `marker` and "[kiln-frames-end]" in a test program's
// standard error (written by the test main), turned into functions and lines with addr2line.
std::vector<Frame> frames_after(const std::string& err, const std::string& marker, const fs::path& binary);

// "in Tensor::at (tensor.cpp:42), called from Tensor::sum (tensor.cpp:88)": the frames in the
// student's files, innermost first; empty when none is.
std::string student_frames(const std::vector<Frame>& frames, const std::vector<fs::path>& student_files);

// The innermost of `frames` in the student's files, when there is one.
std::optional<Frame> innermost_student_frame(const std::vector<Frame>& frames, const std::vector<fs::path>& student_files);

// The first AddressSanitizer or UndefinedBehaviorSanitizer report in `err`, in plain words:
// "wrote 4 bytes past the end of a 40-byte buffer allocated in Tensor::Tensor
// (tensor_given.cpp:47), at tensor.cpp:57 in Tensor::set". Nothing when there is none.
struct SanitizerReport {
  std::string text;
  bool crash = false;  // it would have crashed without the sanitizers too (a bad pointer, a stack overflow)
};
std::optional<SanitizerReport> sanitizer_report(const std::string& err, const std::vector<fs::path>& student_files);

// "kiln::Tensor::sum(long, bool) const" -> "Tensor::sum"; "kiln::(anonymous namespace)::helper(int)"
// -> "helper"; a lambda -> "a lambda in BpeTokenizer::encode".
std::string short_function(const std::string& name);

}  // namespace kiln::grader
