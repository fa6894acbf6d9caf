// A failed link explained: which function, where it is declared, where the student defined it and
// what differs. Reads the linker's own words (GNU ld's and gold's) and the student's objects.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "kiln/grader/grading.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

namespace {

std::string readable(std::string name);

// A demangled name as a person writes it: std::vector<long> without its allocator, std::string.
std::string readable(std::string name) {
  if (name.find("std::allocator") == std::string::npos) return name;  // both patterns below hold it
  static const std::regex allocator(R"(, std::allocator<[^<>]*(<[^<>]*>)?[^<>]*> ?>)");
  static const std::regex string("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> ?>");
  name = std::regex_replace(name, string, "std::string");
  for (std::string before; before != name;) before = name, name = std::regex_replace(name, allocator, ">");
  return name;
}



// "kiln::softmax(kiln::Tensor const&, long) const" -> {"kiln::softmax", {"kiln::Tensor const&", "long"}}.
std::pair<std::string, std::vector<std::string>> split_signature(const std::string& signature) {
  const std::size_t open = signature.find('(');
  if (open == std::string::npos) return {signature, {}};
  std::vector<std::string> params;
  std::string current;
  int depth = 0;
  for (std::size_t i = open + 1; i < signature.size(); ++i) {
    const char c = signature[i];
    if ((c == ')' && depth == 0)) break;
    if (c == '(' || c == '<') ++depth;
    if (c == ')' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      params.push_back(current);
      current.clear();
      continue;
    }
    if (!(current.empty() && c == ' ')) current += c;
  }
  if (!current.empty()) params.push_back(current);
  return {signature.substr(0, open), params};
}

// The functions the student's objects define, demangled.
std::vector<std::string> defined_by(const std::vector<fs::path>& objects) {
  std::vector<std::string> out;
  for (const auto& [name, type] : symbols_of(objects))
    if (type == 'T' || type == 'W') out.push_back(demangled_symbol(name));
  return out;
}

// Every file of `files` where `name(` (its last component) is written, with its first such line.
std::vector<std::pair<fs::path, int>> all_written(const std::vector<fs::path>& files, const std::string& qualified) {
  std::vector<std::pair<fs::path, int>> out;
  const std::string name = qualified.substr(qualified.rfind("::") == std::string::npos ? 0 : qualified.rfind("::") + 2);
  const std::regex call("(^|[^A-Za-z0-9_:])" + name + "\\s*\\(");
  for (const auto& file : files) {
    std::istringstream lines(read_file(file));
    int n = 0;
    for (std::string line; std::getline(lines, line);) {
      ++n;
      const std::size_t first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line.compare(first, 2, "//") == 0) continue;
      if (std::regex_search(line, call)) {
        out.emplace_back(file, n);
        break;
      }
    }
  }
  return out;
}

std::optional<std::pair<fs::path, int>> written_at(const std::vector<fs::path>& files, const std::string& qualified) {
  const auto all = all_written(files, qualified);
  if (all.empty()) return std::nullopt;
  return all.front();
}

std::string line_of(const fs::path& file, int n) {
  std::istringstream lines(read_file(file));
  std::string line;
  for (int k = 0; k < n && std::getline(lines, line); ++k) {
  }
  const std::size_t first = line.find_first_not_of(" \t");
  return first == std::string::npos ? "" : line.substr(first);
}

Diagnostic undefined(const std::string& symbol, const std::vector<fs::path>& student_files,
                     const std::vector<fs::path>& headers, const std::vector<fs::path>& student_objects) {
  const auto [name, wanted] = split_signature(symbol);
  Diagnostic d{.message = fmt::format("undefined reference to {}: the program calls it, and nothing defines it", symbol)};
  if (const auto declared = written_at(headers, name))
    d.notes.push_back(fmt::format("{}:{}: the header declares it: {}", declared->first.string(), declared->second,
                                  line_of(declared->first, declared->second)));
  for (const auto& defined : defined_by(student_objects)) {
    const auto [other_name, params] = split_signature(defined);
    if (other_name != name) continue;
    std::string differs;
    for (std::size_t i = 0; i < std::max(params.size(), wanted.size()); ++i) {
      const std::string mine = i < params.size() ? params[i] : "nothing";
      const std::string theirs = i < wanted.size() ? wanted[i] : "nothing";
      if (mine != theirs) {
        differs = fmt::format("parameter {} is {} in your definition and {} in the header", i + 1, mine, theirs);
        break;
      }
    }
    if (differs.empty()) differs = "the qualifiers after the parameters differ (const, say)";
    d.message = fmt::format("undefined reference to {}: your definition has other parameters, so it defines another "
                            "function, {}; {}",
                            symbol, defined, differs);
    d.explanation = "A definition must repeat the header's declaration exactly: the same parameter types (std::int64_t "
                    "is long, not int), the same const, the same namespace. Copy the signature from the header.";
    if (const auto at = written_at(student_files, name)) {
      d.file = at->first;
      d.line = at->second;
      d.column = 1;
      d.source_line = line_of(at->first, at->second);
      d.in_student_file = true;
    }
    return d;
  }
  d.explanation = fmt::format("Nothing in your files defines {}. Is it written, spelled as in the header, inside "
                              "`namespace kiln {{ ... }}` (or qualified, kiln::{})?",
                              name, name.substr(name.rfind("::") == std::string::npos ? 0 : name.rfind("::") + 2));
  return d;
}

Diagnostic multiple(const std::string& symbol, const std::vector<fs::path>& student_files) {
  const auto [name, params] = split_signature(symbol);
  const auto places = all_written(student_files, name);
  Diagnostic d{.message = fmt::format("{} is defined more than once{}", symbol,
                                      places.size() >= 2 ? fmt::format(": in {} and in {}", places[0].first.string(),
                                                                       places[1].first.string())
                                                         : "")};
  d.explanation = "Each function is defined once in the whole program. A helper that one file uses belongs in an "
                  "anonymous namespace (`namespace { ... }`) or is `static`; one that two files use is defined in "
                  "one and declared in the other. A function defined in a header is `inline`.";
  for (std::size_t i = 1; i < places.size(); ++i)
    d.notes.push_back(fmt::format("{}:{}: also defined here: {}", places[i].first.string(), places[i].second,
                                  line_of(places[i].first, places[i].second)));
  if (!places.empty()) {
    d.file = places[0].first;
    d.line = places[0].second;
    d.column = 1;
    d.source_line = line_of(places[0].first, places[0].second);
    d.in_student_file = true;
  }
  return d;
}

}  // namespace

std::string demangled(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && text ? std::string(text.get()) : name;
}

std::string readable_symbol(std::string name) { return readable(std::move(name)); }

std::string demangled_symbol(const std::string& name) { return readable(demangled(name)); }

std::optional<Diagnostic> link_error(const std::string& log, const std::vector<fs::path>& student_files,
                                     const std::vector<fs::path>& headers, const std::vector<fs::path>& student_objects) {
  // GNU ld: "undefined reference to `f(int)'"; gold: "undefined reference to 'f(int)'".
  static const std::regex undefined_re(R"(undefined reference to [`']([^']+)')");
  static const std::regex multiple_re(R"(multiple definition of [`']([^']+)')");
  std::smatch m;
  if (std::regex_search(log, m, undefined_re))
    return undefined(readable(m[1].str()), student_files, headers, student_objects);
  if (std::regex_search(log, m, multiple_re)) return multiple(readable(m[1].str()), student_files);
  return std::nullopt;
}

}  // namespace kiln::grader
