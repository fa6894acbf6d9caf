#include "kiln/grader/new_module.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kiln/grader/mutants.h"

namespace kiln::grader {

namespace {

// Lower-case letters, digits and single underscores, starting with a letter: a folder name, a
// header name and the start of a C++ identifier at once.
bool valid_slug(const std::string& slug) {
  if (slug.empty() || slug.size() > 40 || !std::islower(static_cast<unsigned char>(slug.front()))) return false;
  if (slug.back() == '_' || slug.find("__") != std::string::npos) return false;
  return std::all_of(slug.begin(), slug.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

// "flash_attention" -> "Flash attention" (the title) or "FlashAttention" (the GoogleTest suite).
std::string title_of(const std::string& slug) {
  std::string out = slug;
  std::replace(out.begin(), out.end(), '_', ' ');
  out.front() = static_cast<char>(std::toupper(static_cast<unsigned char>(out.front())));
  return out;
}
std::string suite_of(const std::string& slug) {
  std::string out;
  bool upper = true;
  for (char c : slug) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

std::string title_for(const NewModule& spec) { return spec.title.empty() ? title_of(spec.slug) : spec.title; }

std::string name_of(const NewModule& spec) { return fmt::format("{:02d}_{}", spec.number, spec.slug); }

// Folders under dir whose name starts with "NN_".
std::vector<std::string> numbered_folders(const fs::path& dir, int number) {
  std::vector<std::string> out;
  if (!fs::is_directory(dir)) return out;
  const std::string prefix = fmt::format("{:02d}_", number);
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) out.push_back((dir.filename() / name).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size()) text.replace(at, from.size(), to);
  return text;
}

fs::path templates_dir(const fs::path& kiln_home) { return kiln_home / "grader" / "templates" / "module"; }

CourseError missing_template(const fs::path& file) {
  return CourseError(fmt::format("the module template {} is missing: it belongs to the Kiln framework "
                                 "(grader/templates/module/ of KILN_HOME)",
                                 file.string()));
}

std::string read_template(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw missing_template(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Each template file and where it goes, relative to the course root.
std::vector<std::pair<std::string, fs::path>> layout(const NewModule& spec) {
  const fs::path module = fs::path("modules") / name_of(spec), solution = fs::path("solutions") / name_of(spec);
  return {
      {"module.yaml", module / "module.yaml"},
      {"header.h", module / "include" / "kiln" / (spec.slug + ".h")},
      {"stub.cpp", module / "src" / (spec.slug + ".cpp")},
      {"test.cpp", module / "tests" / (spec.slug + "_test.cpp")},
      {"solution.cpp", solution / "src" / (spec.slug + ".cpp")},
      {"mutant.yaml", solution / "mutants" / "scale_adds.yaml"},
      {"chapter.md", fs::path("docs") / (name_of(spec) + ".md")},
  };
}

}  // namespace

void check_new_module(const Course& course, const fs::path& kiln_home, const NewModule& spec) {
  if (!course.has_solutions()) {
    throw CourseError("new-module writes the module's reference solution into solutions/, which this course does not "
                      "have: run it in the instructors' repository, not in a student release");
  }
  if (spec.number < 1 || spec.number > 99)
    throw CourseError(fmt::format("module number {} is not from 1 to 99 (the folder is named NN_slug)", spec.number));
  if (!valid_slug(spec.slug)) {
    throw CourseError(fmt::format("slug '{}' is not a lower-case identifier: letters, digits and single underscores, "
                                  "starting with a letter and at most 40 long (say flash_attention). It names the "
                                  "folder, the header kiln/SLUG.h and the example function",
                                  spec.slug));
  }
  if (const Module* taken = course.by_number(spec.number)) {
    throw CourseError(fmt::format("module number {:02d} is taken by {} ({}): choose another number (grader list shows "
                                  "the course)",
                                  spec.number, taken->name(), fs::relative(taken->yaml, course.root).generic_string()));
  }
  for (const fs::path& dir : {course.root / "modules", course.root / "solutions"}) {
    const auto folders = numbered_folders(dir, spec.number);
    if (!folders.empty()) {
      throw CourseError(fmt::format("{} already exists: module number {:02d} has a folder in {}/; remove it or choose "
                                    "another number",
                                    fmt::join(folders, ", "), spec.number, dir.filename().string()));
    }
  }
  for (const auto& m : course.modules) {
    if (m.slug == spec.slug)
      throw CourseError(fmt::format("slug '{}' is taken by {}: `grader check {}` could not tell them apart", spec.slug,
                                    m.name(), spec.slug));
  }
  // The header kiln/SLUG.h must not shadow another one on the include path of a module's tests.
  std::vector<fs::path> include_dirs = {kiln_home / "grader" / "testing" / "include"};
  for (const auto& m : course.modules) include_dirs.push_back(m.dir / "include");
  for (const auto& dir : include_dirs) {
    const fs::path header = dir / "kiln" / (spec.slug + ".h");
    if (fs::exists(header)) {
      const fs::path base = header.string().rfind(course.root.string(), 0) == 0 ? course.root : kiln_home;
      throw CourseError(fmt::format("slug '{}' would make a header kiln/{}.h, and {} is one already: choose another slug",
                                    spec.slug, spec.slug, header.lexically_relative(base).generic_string()));
    }
  }
  const auto& tiers = module_tiers();
  if (std::find(tiers.begin(), tiers.end(), spec.tier) == tiers.end())
    throw CourseError(fmt::format("tier '{}' is not one of: {}", spec.tier, fmt::join(tiers, ", ")));

  std::set<int> reached;
  for (int n : spec.requires_) {
    const Module* dep = course.by_number(n);
    if (!dep) {
      throw CourseError(fmt::format("prerequisite {:02d} is not in this course (grader list shows the modules): "
                                    "a module can only build on modules that exist",
                                    n));
    }
    if (n >= spec.number) {
      throw CourseError(fmt::format("prerequisite {} comes after module {:02d}: a module can only build on earlier ones",
                                    dep->name(), spec.number));
    }
    reached.insert(n);
    for (const Module* p : course.prerequisites(*dep)) reached.insert(p->number);
  }
  if (!reached.count(1)) {
    const Module* tensor = course.by_number(1);
    throw CourseError(fmt::format("the template's example check uses module 01's Tensor (kiln/tensor.h), and {}: "
                                  "require 1 (--requires 1)",
                                  tensor ? fmt::format("the prerequisites [{}] do not reach {}",
                                                       fmt::join(spec.requires_, ", "), tensor->name())
                                         : std::string("this course has no module 01")));
  }
  const std::string title = title_for(spec);
  if (std::any_of(title.begin(), title.end(),
                  [](char c) { return c == '"' || c == '\\' || std::iscntrl(static_cast<unsigned char>(c)); }))
    throw CourseError(fmt::format("title '{}' holds a quote, a backslash or a control character: give a plain title",
                                  title));
  for (const auto& file : layout(spec))
    if (!fs::exists(templates_dir(kiln_home) / file.first)) throw missing_template(templates_dir(kiln_home) / file.first);
}

std::vector<fs::path> write_new_module(const Course& course, const fs::path& kiln_home, const NewModule& spec) {
  check_new_module(course, kiln_home, spec);

  std::vector<int> requires_ = spec.requires_;
  std::sort(requires_.begin(), requires_.end());
  requires_.erase(std::unique(requires_.begin(), requires_.end()), requires_.end());
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"@NUMBER@", std::to_string(spec.number)},
      {"@NN@", fmt::format("{:02d}", spec.number)},
      {"@NAME@", name_of(spec)},
      {"@SLUG@", spec.slug},
      {"@SUITE@", suite_of(spec.slug)},
      {"@TITLE@", title_for(spec)},
      {"@TIER@", spec.tier},
      {"@REQUIRES@", fmt::format("{}", fmt::join(requires_, ", "))},
  };

  std::vector<fs::path> written;
  auto remove_written = [&] {
    for (const auto& f : written) fs::remove(course.root / f);
    for (const char* top : {"modules", "solutions"}) fs::remove_all(course.root / top / name_of(spec));
  };
  try {
    for (const auto& [from, to] : layout(spec)) {
      const fs::path target = course.root / to;
      if (fs::exists(target)) continue;  // only the chapter can exist already: the author's, kept
      std::string text = read_template(templates_dir(kiln_home) / from);
      for (const auto& [key, value] : fields) text = replace_all(text, key, value);
      fs::create_directories(target.parent_path());
      std::ofstream out(target, std::ios::binary);
      out << text;
      if (!out) throw CourseError(fmt::format("cannot write {}", target.string()));
      written.push_back(to);
    }
    // The module as the course will read it: its module.yaml and its mutants load.
    const Module m = load_module(course.root / "modules" / name_of(spec) / "module.yaml");
    Course with = course;
    with.modules.push_back(m);
    load_mutants(with, m);
  } catch (...) {
    remove_written();
    throw;
  }
  return written;
}

}  // namespace kiln::grader
