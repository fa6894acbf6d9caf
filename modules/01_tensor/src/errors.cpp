#include "kiln/errors.h"

#include <string_view>

namespace kiln {

namespace {

// "kiln::Tensor kiln::Tensor::reshape(kiln::Shape) const" -> "Tensor::reshape".
std::string short_function_name(std::string_view signature) {
  std::string_view name = signature.substr(0, signature.find('('));
  // The name starts after the last space outside template brackets (the return type ends there).
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '<') ++depth;
    if (name[i] == '>') --depth;
    if (name[i] == ' ' && depth == 0) start = i + 1;
  }
  name = name.substr(start);
  for (std::string_view prefix : {"kiln::", "(anonymous namespace)::"}) {
    while (name.substr(0, prefix.size()) == prefix) name.remove_prefix(prefix.size());
  }
  return std::string(name);
}

}  // namespace

NotImplemented::NotImplemented(std::source_location where)
    : function_(short_function_name(where.function_name())),
      file_(where.file_name()),
      line_(where.line()),
      message_("not written yet: " + function_ + " (" + file_ + ":" + std::to_string(line_) + ")") {}

}  // namespace kiln
