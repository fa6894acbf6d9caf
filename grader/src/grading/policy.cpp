// What student code may not do to its own grading: switch the sanitizers off, in any of the ways
// the toolchain offers. Read from the linked program's symbols (a hook is found by the runtime by
// its name, so it cannot hide) and from the student's files.
#include <algorithm>
#include <array>
#include <sstream>

#include <fmt/format.h>

#include "kiln/grader/grading.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

namespace {

bool starts_with(const std::string& text, std::string_view prefix) { return text.rfind(prefix, 0) == 0; }

// The sanitizers' runtimes and the instrumentation the compiler adds use these prefixes.
bool sanitizer_name(const std::string& name) {
  for (std::string_view p : {"__asan_", "__lsan_", "__ubsan_", "__sanitizer_", "__tsan_", "__msan_", "__hwasan_"})
    if (starts_with(name, p)) return true;
  return false;
}

// A call into a runtime's interface that changes what it checks or reports. Instrumented code
// calls __asan_report_*, __asan_load*, __ubsan_handle_* and the like; never these.
bool switching_call(const std::string& name) {
  static const std::array<std::string_view, 9> prefixes = {
      "__sanitizer_set_",         "__sanitizer_install_", "__asan_set_",  "__lsan_",  "__asan_poison_memory_region",
      "__asan_unpoison_memory_region", "__ubsan_set_",   "__sanitizer_sandbox_", "__asan_default_"};
  for (std::string_view p : prefixes)
    if (starts_with(name, p)) return true;
  // Looking a function up by name at run time would reach any of them unseen.
  return name == "dlsym" || name == "dlvsym" || name == "dlopen" || name == "dlmopen";
}

// "defines __asan_default_options" or "calls __sanitizer_set_death_callback", for the first such
// symbol of `files` (the student's objects, or the linked program); "" when there is none.
std::string tampering_symbol(const std::vector<fs::path>& files) {
  for (const auto& [name, type] : symbols_of(files)) {
    const bool undefined = type == 'U' || type == 'w' || type == 'v';
    // A hook is a function the runtime looks up by name. The instrumentation's own data (a type
    // cache, the stack options) is defined in every sanitized program.
    const bool function = type == 'T' || type == 't' || type == 'W' || type == 'i';
    if (function && sanitizer_name(name)) return "defines " + name;
    if (undefined && switching_call(name)) return "calls " + name;
  }
  return "";
}

// Whether a line of code names the sanitizers, in any case: an attribute (no_sanitize,
// no_sanitize_address, no_address_safety_analysis) or a pragma that turns one off.
bool names_sanitizers(std::string line) {
  std::transform(line.begin(), line.end(), line.begin(), [](unsigned char c) { return std::tolower(c); });
  return line.find("sanitiz") != std::string::npos || line.find("no_address_safety_analysis") != std::string::npos;
}

constexpr const char* kCleanRuns = "A check passes only when its run is clean under AddressSanitizer and "
                                   "UndefinedBehaviorSanitizer, so student code may not switch them off: no "
                                   "no_sanitize attributes or optimize pragmas, none of their hooks or switches, and "
                                   "no looking functions up by name (dlsym).";

// C++ text without its comments (each replaced by a space, newlines kept), so that a comment
// that mentions the sanitizers is no offence. String and character literals are kept.
std::string without_comments(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      out += '\n';
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      for (std::size_t k = i; k < std::min(end, text.size()); ++k)
        if (text[k] == '\n') out += '\n';
      out += ' ';
      i = end == std::string::npos ? text.size() : end + 1;
    } else if (c == '"' || c == '\'') {
      out += c;
      for (++i; i < text.size() && text[i] != c && text[i] != '\n'; ++i) {
        out += text[i];
        if (text[i] == '\\' && i + 1 < text.size()) out += text[++i];
      }
      if (i < text.size()) out += text[i];
    } else {
      out += c;
    }
  }
  return out;
}

// The first line of a student file that asks the compiler not to instrument code: an attribute
// (no_sanitize, no_sanitize_address, no_address_safety_analysis, ...) or an optimize pragma that
// turns a sanitizer off. "" when there is none.
std::string unsanitized_line(const fs::path& file) {
  std::istringstream lines(without_comments(read_file(file)));
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    if (names_sanitizers(line))
      return fmt::format("{}:{}", file.string(), n);
  }
  return "";
}

}  // namespace

bool makes_tokens(const fs::path& file) {
  const std::string text = without_comments(read_file(file));
  return text.find("define") != std::string::npos || text.find("##") != std::string::npos ||
         text.find("_Pragma") != std::string::npos;
}

std::string unsanitized_preprocessed(const std::string& preprocessed, const fs::path& student_file) {
  // Line markers (# 12 "path" flags) say which file the lines after them come from.
  std::istringstream lines(preprocessed);
  bool own = false;
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# ", 0) == 0 && line.size() > 2 && std::isdigit(static_cast<unsigned char>(line[2]))) {
      const std::size_t open = line.find('"'), close = line.rfind('"');
      n = std::atoi(line.c_str() + 2) - 1;
      if (open != std::string::npos && close > open) own = fs::path(line.substr(open + 1, close - open - 1)) == student_file;
      continue;
    }
    ++n;
    if (!own) continue;
    if (names_sanitizers(line))
      return fmt::format("{}:{}", student_file.string(), n);
  }
  return "";
}

Diagnostic refusal(const std::string& where) {
  return Diagnostic{.message = fmt::format("refused: {} mentions the sanitizers, which check your code's memory and "
                                           "arithmetic; remove what switches them off",
                                           where),
                    .explanation = kCleanRuns};
}

std::optional<Diagnostic> sanitizer_tampering(const fs::path& binary, const std::vector<fs::path>& student_files,
                                              const std::vector<fs::path>& student_objects) {
  for (const auto& file : student_files) {
    if (const std::string where = unsanitized_line(file); !where.empty()) return refusal(where);
  }
  // The student's own objects say what their code defines and calls; the program holds far more.
  if (const std::string symbol = tampering_symbol(student_objects.empty() ? std::vector<fs::path>{binary} : student_objects);
      !symbol.empty())
    return Diagnostic{.message = fmt::format("refused: your code {}, which changes what the sanitizers check or "
                                             "report; remove it",
                                             symbol),
                      .explanation = kCleanRuns};
  return std::nullopt;
}

}  // namespace kiln::grader
