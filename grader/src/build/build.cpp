#include "kiln/grader/build.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>

#include "kiln/grader/cuda.h"
#include "kiln/grader/process.h"

namespace kiln::grader {

std::string TestTarget::target_name() const {
  return fmt::format("t_{}__{}{}", module->name(), own.name, observer ? "__observed" : "");
}
std::string TestTarget::sanitized_name() const {
  return fmt::format("s_{}__{}{}", module->name(), own.name, observer ? "__observed" : "");
}
std::string TestTarget::bench_name() const { return fmt::format("b_{}__{}", module->name(), own.name); }
std::string TestTarget::device_name() const {
  return fmt::format("d_{}__{}{}", module->name(), own.name, observer ? "__observed" : "");
}
std::string TestTarget::gpu_bench_name() const { return fmt::format("g_{}__{}", module->name(), own.name); }

CourseBuild::CourseBuild(const Course& course, fs::path dir, fs::path kiln_home, std::string cxx_flags)
    : course_(course),
      dir_(std::move(dir)),
      kiln_home_(std::move(kiln_home)),
      cxx_flags_(std::move(cxx_flags)),
      nvcc_(find_nvcc()) {}

namespace {

std::string cmake_path(const fs::path& p) {
  std::string s = p.generic_string();
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\' || c == '$') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string CourseBuild::library_target(const Module& m, const std::string& source_set) {
  return fmt::format("lib_{}__{}", m.name(), source_set);
}

std::string CourseBuild::cmake_description(const std::vector<TestTarget>& targets) const {
  std::string out = "# Written by the grader from the modules' module.yaml files. Do not edit.\n";
  if (!nvcc_.empty()) out += fmt::format("kiln_cuda({})\n", cmake_path(nvcc_));
  std::set<std::string> modules_done, libraries_done, variants_done;
  auto list = [&](const char* keyword, const std::vector<fs::path>& files) {
    if (files.empty()) return;
    out += fmt::format("\n  {}", keyword);
    for (const auto& f : files) out += " " + cmake_path(f);
  };

  auto module_block = [&](const Module& m) {
    if (!modules_done.insert(m.name()).second) return;
    out += fmt::format("kiln_module(m_{} DIR {}", m.name(), cmake_path(m.dir));
    const auto given = m.given_sources();
    if (!given.empty()) {
      out += "\n  GIVEN";
      for (const auto& g : given) out += " " + cmake_path(g);
    }
    // A module being written may have no tests yet: its library still builds for later modules.
    if (!m.test_sources().empty()) {
      out += "\n  TESTS";
      for (const auto& t : m.test_sources()) out += " " + cmake_path(t);
    }
    if (!m.requires_.empty()) {
      out += "\n  REQUIRES";
      for (int n : m.requires_) out += " m_" + course_.by_number(n)->name();
    }
    if (!nvcc_.empty() && m.has_device_checks()) {
      list("DEVICE", m.device_sources());
      list("DEVICE_TESTS", m.device_test_sources());
      list("DEVICE_BENCH", m.device_bench_sources());
      list("DEVICE_BENCH_CUDA", m.device_bench_cuda_sources());
    }
    out += ")\n";
  };

  // The library of module m from a source set, linked to its prerequisites from `base`.
  auto link_block = [&](const Module& m, const std::string& base) {
    if (m.requires_.empty() && m.links.empty()) return;
    out += "\n  LINK";
    for (int n : m.requires_) out += " " + library_target(*course_.by_number(n), base);
    for (const auto& l : m.links)
      out += l == "zlib" ? " ZLIB::ZLIB" : l == "pcre2" ? " PkgConfig::PCRE2" : "";
  };
  // A mutant's files that equal the reference's come from the reference's library (its objects
  // filtered by file name; the reference's library is then part of the build too).
  std::function<void(const Module&, const std::string&, const fs::path&, const std::string&, bool)> library_block =
      [&](const Module& m, const std::string& source, const fs::path& root, const std::string& base, bool reuse) {
        const std::string name = library_target(m, source);
        if (!libraries_done.insert(name).second) return;
        std::vector<std::string> compiled, reused;
        for (const auto& f : m.student_files) {
          const bool same = reuse && source != "solution" && read_file(root / f) == read_file(course_.solution_dir(m) / f);
          (same ? reused : compiled).push_back(f);
        }
        if (!reused.empty()) library_block(m, "solution", course_.solution_dir(m), "solution", false);
        out += fmt::format("kiln_library({} MODULE m_{}\n  SOURCES", name, m.name());
        for (const auto& f : compiled) out += " " + cmake_path(root / f);
        if (!reused.empty()) {
          // An object's name ends in its source's path: ".../src/tensor.cpp.o".
          std::string pattern;
          for (const auto& f : reused) {
            std::string escaped;
            for (const char c : f) {
              if (std::string_view(".+*?^$()[]{}|\\").find(c) != std::string_view::npos) escaped += "\\\\";
              escaped += c;
            }
            pattern += (pattern.empty() ? "" : "|") + escaped;
          }
          out += fmt::format("\n  REUSE {} REUSED \"/({})\\\\.o$\"", library_target(m, "solution"), pattern);
        }
        link_block(m, base);
        out += ")\n";
      };

  for (const auto& t : targets) {
    for (const Module* dep : course_.prerequisites(*t.module)) module_block(*dep);
    module_block(*t.module);
  }
  for (const auto& t : targets) {
    for (const Module* dep : course_.prerequisites(*t.module))
      library_block(*dep, t.base_name, t.base_root / dep->name(), t.base_name, false);
    library_block(*t.module, t.own.name, t.own.root, t.base_name, t.reuses_reference_objects);
    if (t.module->test_sources().empty()) continue;
    out += fmt::format("kiln_test_binary({} MODULE m_{} LIBRARIES {}{})\n", t.target_name(), t.module->name(),
                       library_target(*t.module, t.own.name), t.observer ? " OBSERVER" : "");
    // A variant built both ways (verify) gets a device test program each way, its benches once.
    const bool first_of_variant = variants_done.insert(t.module->name() + "/" + t.own.name).second;
    if (!nvcc_.empty() && t.module->has_device_checks()) {
      // The device binaries link the prerequisites, not the module's own (emulator) library.
      std::string kernels, libraries;
      for (const auto& f : t.module->device_files) kernels += " " + cmake_path(t.own.root / f);
      for (int n : t.module->requires_) libraries += " " + library_target(*course_.by_number(n), t.base_name);
      const std::string variant = library_target(*t.module, t.own.name);
      out += fmt::format("kiln_device_test_binary({} MODULE m_{} VARIANT {}\n  KERNELS{}\n  LIBRARIES{}{})\n",
                         t.device_name(), t.module->name(), variant, kernels, libraries, t.observer ? " OBSERVER" : "");
      if (first_of_variant && !t.module->device_bench_sources().empty()) {
        out += fmt::format("kiln_gpu_bench_binary({} MODULE m_{} VARIANT {}\n  KERNELS{}\n  LIBRARIES{})\n",
                           t.gpu_bench_name(), t.module->name(), variant, kernels, libraries);
      }
    }
    if (const auto bench = t.module->bench_sources(); first_of_variant && !bench.empty()) {
      out += fmt::format("kiln_bench_binary({} MODULE m_{}\n  SOURCES", t.bench_name(), t.module->name());
      for (const auto& b : bench) out += " " + cmake_path(b);
      out += fmt::format("\n  LIBRARIES {})\n", library_target(*t.module, t.own.name));
    }
  }
  for (const auto& p : programs_) {
    out += fmt::format("kiln_program({}\n  SOURCES", p.name);
    for (const auto& f : p.sources) out += " " + cmake_path(f);
    out += "\n  INCLUDES";
    for (const auto& d : p.include_dirs) out += " " + cmake_path(d);
    out += "\n  LIBRARIES";
    for (const auto& l : p.libraries) out += " " + l;
    out += ")\n";
  }
  return out;
}

namespace {

// Holds an exclusive lock on a file while alive: one build at a time in a folder that several
// course builds, in this process or another, use.
class FileLock {
 public:
  explicit FileLock(const fs::path& file) : fd_(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0)
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// FNV-1a, as hex: a stable name for a set of flags.
std::string digest(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:016x}", h);
}

}  // namespace

fs::path CourseBuild::testing_dir() const {
  const char* cxx = std::getenv("CXX");
  const std::string key =
      fmt::format("{}\n{}\n{}", fs::absolute(kiln_home_).lexically_normal().string(), cxx_flags_, cxx ? cxx : "");
  return fs::absolute(course_.root / ".grader" / "build" / ("testing-" + digest(key).substr(0, 12)));
}

bool CourseBuild::build_testing(BuildResult& result) {
  const fs::path dir = testing_dir();
  fs::create_directories(dir);
  const FileLock lock(dir / ".lock");
  if (!fs::exists(dir / "build.ninja")) {
    const std::vector<std::string> configure = {
        "cmake", "-S", (kiln_home_ / "grader" / "testing").string(), "-B", dir.string(), "-G", "Ninja",
        "-DCMAKE_BUILD_TYPE=Check", "-DCMAKE_CXX_FLAGS_CHECK=" + cxx_flags_};
    result.commands.push_back(shell_quote(configure));
    const ProcessResult r = run_process({.argv = configure});
    if (!r.ok()) {
      result.log += r.out + r.err;
      fs::remove(dir / "build.ninja");
      result.error = Diagnostic{.message = "the test library's build could not be configured",
                                .explanation = "CMake failed before compiling anything; its output is below "
                                               "(run `grader doctor` to check the tools and libraries)."};
      return false;
    }
  }
  const std::vector<std::string> ninja = {"ninja", "-C", dir.string(), "kiln_testing", "kiln_observer",
                                          "kiln_testing_main", "kiln_testing_pch"};
  result.commands.push_back(shell_quote(ninja));
  const ProcessResult r = run_process({.argv = ninja, .output_cap = 4 << 20});
  if (r.ok()) return true;
  result.log += r.out + r.err;
  result.error = first_error(result.log, {});
  if (!result.error)
    result.error = Diagnostic{.message = "the test library failed to build",
                              .explanation = "the grader's test library (grader/testing) did not build; its output is below."};
  return false;
}

bool CourseBuild::prepare(const std::vector<TestTarget>& all_targets, BuildResult& result) {
  fs::create_directories(dir_);
  // The test library first: built once for these flags, in its own folder, and shared.
  if (!build_testing(result)) return false;
  const fs::path description = dir_ / "course.cmake";
  write_if_changed(description, cmake_description(all_targets));
  // Configured, and with this test library (a folder configured before it was shared builds its own).
  const std::string testing = "-DKILN_TESTING_DIR=" + testing_dir().string();
  if (fs::exists(dir_ / "build.ninja") &&
      read_file(dir_ / "CMakeCache.txt").find("KILN_TESTING_DIR:PATH=" + testing_dir().string() + "\n") !=
          std::string::npos)
    return true;
  std::vector<std::string> configure = {
      "cmake", "-S", kiln_home_.string(), "-B", dir_.string(), "-G", "Ninja",
      "-DKILN_BUILD_GRADER=OFF", "-DKILN_COURSE=" + description.string(),
      "-DCMAKE_BUILD_TYPE=Check", "-DCMAKE_CXX_FLAGS_CHECK=" + cxx_flags_, testing};
  result.commands.push_back(shell_quote(configure));
  const ProcessResult r = run_process({.argv = configure});
  result.log += r.out + r.err;
  if (r.ok()) return true;
  fs::remove(dir_ / "build.ninja");
  result.error = Diagnostic{.message = "the build could not be configured",
                            .explanation = "CMake failed before compiling anything; its output is below "
                                           "(run `grader doctor` to check the tools and libraries)."};
  return false;
}

bool CourseBuild::build_named(const std::vector<TestTarget>& all_targets, const std::vector<std::string>& names,
                              BuildResult& result) {
  if (!prepare(all_targets, result)) return false;
  std::vector<std::string> ninja = {"ninja", "-C", dir_.string()};
  ninja.insert(ninja.end(), names.begin(), names.end());
  result.commands.push_back(shell_quote(ninja));
  const ProcessResult r = run_process({.argv = ninja, .output_cap = 4 << 20});
  result.log += r.out + r.err;
  if (!r.ok() && !result.error) {
    result.error = first_error(result.log, {});
    if (!result.error) result.error = Diagnostic{.message = "the build failed"};
  }
  return r.ok();
}

BuildResult CourseBuild::build(const std::vector<TestTarget>& all_targets, const TestTarget& wanted) {
  return build_many(all_targets, {wanted}).front();
}


std::vector<BuildResult> CourseBuild::build_many(const std::vector<TestTarget>& all_targets,
                                                 const std::vector<TestTarget>& wanted) {
  BuildResult shared;
  for (const auto& t : wanted) {
    if (t.module->test_sources().empty()) {
      shared.error = Diagnostic{.message = fmt::format("module {} has no tests yet", t.module->number_text()),
                                .explanation = fmt::format("{} holds no *.cpp: every check of module.yaml needs its "
                                                           "TEST there (docs/authoring.md)",
                                                           (t.module->dir / "tests").string())};
      return std::vector<BuildResult>(wanted.size(), shared);
    }
  }
  if (!prepare(all_targets, shared)) return std::vector<BuildResult>(wanted.size(), shared);

  std::vector<std::string> names;
  for (const auto& t : wanted) names.push_back(t.target_name());
  for (const auto& t : wanted)
    if (t.with_sanitized) names.push_back(t.sanitized_name());
  // The device checks' binaries too, in the same run: a kernel that compiles for the CPU but not
  // for the device costs only the device checks (-k 0 keeps going past it).
  std::vector<std::string> devices;
  for (const auto& t : wanted)
    if (!nvcc_.empty() && device_builds_ && t.with_device && t.module->has_device_checks())
      devices.push_back(t.device_name());
  names.insert(names.end(), devices.begin(), devices.end());

  std::vector<std::string> ninja = {"ninja", "-C", dir_.string()};
  if (names.size() > 1) ninja.insert(ninja.end(), {"-k", "0"});
  ninja.insert(ninja.end(), names.begin(), names.end());
  shared.commands.push_back(shell_quote(ninja));
  const ProcessResult r = run_process({.argv = ninja, .output_cap = 8 << 20});
  shared.log += r.out + r.err;

  // A target whose build failed keeps its old binary, if any: ask ninja which are still not up
  // to date rather than trusting that a binary exists.
  std::set<std::string> stale;
  if (!r.ok()) {
    std::vector<std::string> dry = {"ninja", "-C", dir_.string(), "-n", "-k", "0"};
    dry.insert(dry.end(), names.begin(), names.end());
    const ProcessResult d = run_process({.argv = dry, .output_cap = 8 << 20});
    for (const auto& name : names)
      if ((d.out + d.err).find(" " + name + "\n") != std::string::npos ||
          (d.out + d.err).find(" " + name + " ") != std::string::npos ||
          (d.out + d.err).find("/" + name + "\n") != std::string::npos)
        stale.insert(name);
  }

  std::vector<BuildResult> results;
  for (const auto& t : wanted) {
    BuildResult result = shared;
    if (nvcc_.empty()) {
      result.device_skip_reason = "no CUDA Toolkit: nvcc was not found, so the device checks were not built (the "
                                  "emulator checks cover the same kernels; `grader doctor` shows what is installed)";
    } else if (!device_builds_) {
      result.device_skip_reason = "no CUDA device: this machine has no /dev/nvidia* device, so the device checks "
                                  "were not built (the emulator checks cover the same kernels)";
    } else if (t.with_device && t.module->has_device_checks()) {
      const fs::path device = dir_ / t.device_name();
      if (!stale.count(t.device_name()) && fs::exists(device)) {
        result.device_binary = device;
      } else {
        std::vector<fs::path> student;
        for (const auto& f : t.module->device_files) student.push_back(t.own.root / f);
        result.device_error = first_error(shared.log, student);
        if (!result.device_error || (names.size() > 1 && !result.device_error->in_student_file))
          result.device_error = Diagnostic{.message = "the device build failed"};
      }
    }
    result.binary = dir_ / t.target_name();
    result.observed = t.observer;
    result.ok = !stale.count(t.target_name()) && fs::exists(result.binary);
    if (t.with_sanitized && !stale.count(t.sanitized_name()) && fs::exists(dir_ / t.sanitized_name()))
      result.sanitized_binary = dir_ / t.sanitized_name();
    if (!result.ok) {
      std::vector<fs::path> student;
      for (const auto& f : t.module->student_files) student.push_back(t.own.root / f);
      result.error = first_error(result.log, student);
      // In a shared run, an error in another target's files is not this target's.
      if (wanted.size() > 1 && result.error && !result.error->in_student_file) result.error.reset();
      if (!result.error) {
        result.error = Diagnostic{.message = "the build failed",
                                  .explanation = "the build stopped without a compiler error the grader "
                                                 "recognises; the full output is below."};
      }
    }
    results.push_back(std::move(result));
  }
  return results;
}

namespace {

// GCC quotes with typographic quotes; the patterns below are written with plain ones.
std::string plain_quotes(std::string text) {
  for (const char* q : {"\u2018", "\u2019"})
    for (std::size_t at; (at = text.find(q)) != std::string::npos;) text.replace(at, std::strlen(q), "'");
  return text;
}

// What a compiler error usually means, in plain words; the notes may say more than the error.
std::string explain(const std::string& raw, const std::vector<std::string>& notes = {}) {
  const std::string message = plain_quotes(raw);
  for (const auto& n : notes) {
    const std::string note = plain_quotes(n);
    const auto at = note.find("deduced conflicting types for parameter");
    if (at == std::string::npos) continue;
    // "... ('long int' and 'int')": name the two types.
    const auto open = note.find("('", at);
    const auto mid = note.find("' and '", at);
    const auto close = note.find("')", mid == std::string::npos ? at : mid);
    std::string types;
    if (open != std::string::npos && mid != std::string::npos && close != std::string::npos)
      types = fmt::format(" ({} and {})", note.substr(open + 2, mid - open - 2), note.substr(mid + 7, close - mid - 7));
    return "the arguments have different types" + types +
           ", and a template such as std::max or std::min needs both the same: convert one, for example "
           "std::max<std::int64_t>(n, 0) or std::max(n, std::int64_t{0})";
  }
  struct Pattern {
    const char* needle;
    const char* meaning;
  };
  static const Pattern patterns[] = {
      {"was not declared in this scope", "a name is used that the compiler does not know here: a typo, a "
                                         "missing #include, or a variable declared in another block"},
      {"expected ';'", "a statement is missing its semicolon, usually at the end of the line before"},
      {"expected ',' or ';'", "a statement is missing its semicolon, usually at the end of the line before"},
      {"expected '}'", "a brace is not closed: count the { and } above this line"},
      {"no return statement in function returning non-void", "the function must return a value on every path: "
                                                             "add the missing return"},
      {"control reaches end of non-void function", "the function must return a value on every path: the end of "
                                                   "the function is reached without a return"},
      {"no matching function for call", "no version of this function takes arguments of these types: "
                                        "compare the call with the declaration in the header"},
      {"no match for 'operator", "this operator is not defined for these operand types"},
      {"cannot convert", "a value has a different type than the one expected here"},
      {"has no member named", "this type has no member of that name: check the spelling and the header"},
      {"does not name a type", "a type is used that the compiler does not know here: a typo or a missing #include"},
      {"return-statement with no value", "the function must return a value on every path"},
      {"discards qualifiers", "a const object is used through a non-const function or reference"},
      {"undefined reference to", "a function is declared but has no definition: was a stub deleted or "
                                  "its signature changed?"},
      {"redefinition of", "the same thing is defined twice"},
      {"is private within this context", "this member is private to its class"},
  };
  for (const auto& p : patterns)
    if (message.find(p.needle) != std::string::npos) return p.meaning;
  return "";
}

std::string line_of(const fs::path& file, int line) {
  std::ifstream in(file);
  std::string text;
  for (int i = 1; std::getline(in, text); ++i)
    if (i == line) return text;
  return "";
}

}  // namespace

namespace {

// nvcc's own form, "path(12): error: message".
std::optional<Diagnostic> parse_nvcc_error_line(const std::string& line) {
  const std::size_t marker = line.find("): error: ");
  if (marker == std::string::npos) return std::nullopt;
  const std::size_t open = line.rfind('(', marker);
  if (open == std::string::npos || open == 0) return std::nullopt;
  const std::string number = line.substr(open + 1, marker - open - 1);
  if (number.empty() || number.size() > 9 || number.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  Diagnostic d;
  d.line = std::stoi(number);
  d.file = line.substr(0, open);
  d.message = line.substr(marker + 10);
  return d;
}

// "path:12:5: error: message" (or "fatal error:"), split into its parts.
std::optional<Diagnostic> parse_error_line(const std::string& line) {
  if (auto nvcc = parse_nvcc_error_line(line)) return nvcc;
  std::size_t marker = line.find(": error: ");
  std::size_t length = 9;
  if (marker == std::string::npos) {
    marker = line.find(": fatal error: ");
    length = 15;
  }
  if (marker == std::string::npos) return std::nullopt;
  const std::string where = line.substr(0, marker);  // path:line:column
  const auto c2 = where.rfind(':');
  const auto c1 = c2 == std::string::npos || c2 == 0 ? std::string::npos : where.rfind(':', c2 - 1);
  if (c1 == std::string::npos) return std::nullopt;
  Diagnostic d;
  try {
    d.line = std::stoi(where.substr(c1 + 1, c2 - c1 - 1));
    d.column = std::stoi(where.substr(c2 + 1));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  d.file = where.substr(0, c1);
  d.message = line.substr(marker + length);
  return d;
}

}  // namespace

std::optional<Diagnostic> first_error(const std::string& log, const std::vector<fs::path>& student_files) {
  std::set<std::string> student;
  for (const auto& f : student_files) student.insert(fs::weakly_canonical(f).string());

  std::optional<Diagnostic> first, first_student;
  Diagnostic* collecting = nullptr;  // the error whose notes follow
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (auto d = parse_error_line(line)) {
      d->source_line = line_of(d->file, d->line);
      d->in_student_file = student.count(fs::weakly_canonical(d->file).string()) > 0;
      collecting = nullptr;
      if (!first) collecting = &first.emplace(*d);
      if (d->in_student_file && !first_student) collecting = &first_student.emplace(*d);
    } else if (const auto at = line.find("undefined reference to `"); !first && at != std::string::npos) {
      const auto begin = at + 24;
      Diagnostic link;
      link.message = "undefined reference to " + line.substr(begin, line.find('\'', begin) - begin);
      first = link;
      collecting = nullptr;
    } else if (const auto note = line.find(": note: "); collecting && note != std::string::npos) {
      // Only the notes that explain: conflicting or mismatched types, wrong argument counts.
      std::string text = line.substr(note + 8);
      while (!text.empty() && text.front() == ' ') text.erase(0, 1);
      const std::string p = plain_quotes(text);
      const bool telling = p.find("deduced conflicting types") != std::string::npos ||
                           p.find("mismatched types") != std::string::npos ||
                           p.find("candidate expects") != std::string::npos ||
                           p.find("cannot convert") != std::string::npos ||
                           p.find("suggested alternative") != std::string::npos;
      if (telling && collecting->notes.size() < 3 &&
          std::find(collecting->notes.begin(), collecting->notes.end(), text) == collecting->notes.end())
        collecting->notes.push_back(text);
    } else if (line.rfind("ninja: ", 0) == 0 || line.rfind("FAILED: ", 0) == 0) {
      collecting = nullptr;
    }
  }
  for (auto* d : {&first, &first_student})
    if (*d && (*d)->explanation.empty()) (*d)->explanation = explain((*d)->message, (*d)->notes);
  return first_student ? first_student : first;
}

}  // namespace kiln::grader
