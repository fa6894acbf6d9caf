#include <exception>
#include <source_location>
#include <string>

#include "kiln/probe.h"

namespace kiln {

// The fixture stands alone, so it carries its own stand-in for kiln::NotImplemented: the grader
// recognises an unwritten stub by this message.
struct NotImplemented : std::exception {
  explicit NotImplemented(std::source_location where = std::source_location::current())
      : text("not written yet: " + std::string(where.function_name()) + " (" + where.file_name() + ":" +
             std::to_string(where.line()) + ")") {}
  const char* what() const noexcept override { return text.c_str(); }
  std::string text;
};

int add(int, int) { throw NotImplemented(); }
int crash() { throw NotImplemented(); }
int spin() { throw NotImplemented(); }
int quit() { throw NotImplemented(); }
int mul(int, int) { throw NotImplemented(); }

}  // namespace kiln
