// What a student's compiled code may call and include: read from its object files' undefined
// symbols (nm) and its depfiles, never from its source text.
#include <cstdlib>
#include <map>
#include <mutex>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kiln/grader/grading.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

namespace {


// The object files and archives a link command names, relative to `dir` unless absolute.
std::vector<fs::path> link_inputs(const std::string& command, const fs::path& dir) {
  std::vector<fs::path> out;
  std::istringstream words(command);
  for (std::string w; words >> w;) {
    const fs::path p(w);
    if (p.extension() == ".o" || p.extension() == ".a") out.push_back(p.is_absolute() ? p : dir / p);
  }
  return out;
}

// The test program's trusted side: the module's tests and the test library.
bool trusted_input(const fs::path& p) {
  const std::string s = p.generic_string();
  return s.find("_tests.dir/") != std::string::npos || s.find("kiln_testing") != std::string::npos ||
         s.find("kiln_observer") != std::string::npos;
}

// The headers an object's compile read: from its depfile (X.o.d), or where Ninja has taken the
// depfile into its own log, from `ninja -t deps`.
std::vector<std::string> included(const fs::path& object, const fs::path& build_dir) {
  std::vector<std::string> out;
  const fs::path depfile = object.string() + ".d";
  if (fs::exists(depfile)) {
    std::istringstream words(read_file(depfile));
    for (std::string w; words >> w;)
      if (w != "\\" && w.back() != ':') out.push_back(w);
    return out;
  }
  const ProcessResult deps = run_process(
      {.argv = {"ninja", "-C", build_dir.string(), "-t", "deps", fs::relative(object, build_dir).string()},
       .output_cap = 16 << 20});
  std::istringstream lines(deps.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("    ", 0) == 0) out.push_back(line.substr(4));
  return out;
}

constexpr const char* kForbids = "module.yaml's `forbids:` lists what this module's files may not use.";

// What `files` define that student code may not call, read once per set of files as they are (a
// batch's submissions share one trusted build).
const std::set<std::string>& trusted_symbols(const std::vector<fs::path>& files) {
  static std::mutex lock;
  static std::map<std::string, std::set<std::string>> cache;
  std::string key;
  for (const auto& f : files) {
    std::error_code ec;
    key += f.string() + "@" + std::to_string(fs::last_write_time(f, ec).time_since_epoch().count()) + ";";
  }
  const std::lock_guard<std::mutex> hold(lock);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  std::set<std::string>& trusted = cache[key];
  for (const auto& [name, type] : symbols_of(files)) {
    const bool strong = std::string_view("TDBRGS").find(type) != std::string_view::npos;
    const bool weak = type == 'W' || type == 'V';
    // A mangled name in kiln:: starts _ZN4kiln (or _ZNK4kiln for a const member).
    if (strong || (weak && (name.rfind("_ZN4kiln", 0) == 0 || name.rfind("_ZNK4kiln", 0) == 0))) trusted.insert(name);
  }
  return trusted;
}

}  // namespace

std::vector<std::pair<std::string, char>> symbols_of(const std::vector<fs::path>& files) {
  std::vector<std::pair<std::string, char>> out;
  if (files.empty()) return out;
  std::vector<std::string> argv = {"nm", "-P", "-A"};
  for (const auto& f : files) argv.push_back(f.string());
  const ProcessResult nm = run_process({.argv = argv, .output_cap = 256 << 20});
  std::istringstream lines(nm.out);
  for (std::string line; std::getline(lines, line);) {
    // "file.o: name T 0000 10" or, for an archive, "lib.a[member.o]: name U"
    const std::size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    std::istringstream fields(line.substr(colon + 2));
    std::string name, type;
    if (fields >> name >> type && type.size() == 1) out.emplace_back(name, type[0]);
  }
  return out;
}

Diagnostic calls_the_checks(const std::string& function) {
  return Diagnostic{.message = fmt::format("refused: your code calls {}, which belongs to the checks that judge it, "
                                           "not to the course's library: write what it does yourself",
                                           function),
                    .explanation = "Student code may call the module's given code, the earlier modules' "
                                   "functions and the C++ standard library; the test program's own helpers "
                                   "compute the answers your code is judged against."};
}

std::optional<Diagnostic> calls_the_checks_in_link(const std::string& log) {
  // GNU ld quotes with `...', gold with '...'.
  for (const char* quote : {"undefined reference to `kiln::testing::", "undefined reference to 'kiln::testing::"}) {
    const std::size_t at = log.find(quote);
    if (at == std::string::npos) continue;
    const std::size_t from = at + std::string_view(quote).size() - std::string_view("kiln::testing::").size();
    const std::size_t to = log.find('\'', from);
    if (to == std::string::npos) continue;
    return calls_the_checks(log.substr(from, to - from));
  }
  return std::nullopt;
}

std::optional<Diagnostic> forbidden_calls(const Module& module, const BuildResult& built,
                                          const std::vector<fs::path>& student_objects) {
  if (student_objects.empty() || built.link_command.empty()) return std::nullopt;
  // What the tests and the test library define: everything they define strongly, and the inline
  // functions of their headers (weak), which are all in kiln::'s namespaces. A weak definition of
  // anything else (a standard template) the student's code defines for itself where it uses it.
  std::vector<fs::path> trusted_files;
  for (const auto& p : link_inputs(built.link_command, built.link_dir))
    if (trusted_input(p)) trusted_files.push_back(p);
  const std::set<std::string>& trusted = trusted_symbols(trusted_files);
  for (const auto& [name, type] : symbols_of(student_objects)) {
    if (type != 'U') continue;
    if (trusted.count(name)) return calls_the_checks(demangled_symbol(name));
    if (module.forbidden_calls.empty()) continue;  // a name is read only where a module forbids some
    const std::string readable = demangled_symbol(name);
    for (const auto& f : module.forbidden_calls)
      if (readable.rfind(f.symbol, 0) == 0)
        return Diagnostic{.message = fmt::format("refused: your code calls {}, which {}", readable, f.reason),
                          .explanation = kForbids};
  }
  if (module.forbidden_includes.empty()) return std::nullopt;
  for (const auto& object : student_objects)
    for (const auto& header : included(object, built.link_dir))
      for (const auto& f : module.forbidden_includes)
        if (header.find(f.symbol) != std::string::npos)
          return Diagnostic{.message = fmt::format("refused: your code includes {}, which {}", header, f.reason),
                            .explanation = kForbids};
  return std::nullopt;
}

}  // namespace kiln::grader
