// Errors the student library raises, and the marker every unwritten stub throws.
#pragma once

#include <exception>
#include <source_location>
#include <stdexcept>
#include <string>

namespace kiln {

// Thrown by every function a student has still to write. It deliberately derives from
// std::exception only, so that no `catch (const std::logic_error&)` or
// `catch (const std::invalid_argument&)` written for a real error can swallow it: an unwritten
// stub must never satisfy a check that expects an error.
class NotImplemented : public std::exception {
 public:
  explicit NotImplemented(std::source_location where = std::source_location::current());
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& function() const { return function_; }
  const std::string& file() const { return file_; }
  unsigned line() const { return line_; }

 private:
  std::string function_;
  std::string file_;
  unsigned line_;
  std::string message_;
};

// Two shapes that do not fit together. The message names both shapes.
class ShapeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// An index outside the tensor, or another argument out of range.
class IndexError : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

}  // namespace kiln
