#include "kiln/grader/mutants.h"

#include <algorithm>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace kiln::grader {

std::vector<Mutant> load_mutants(const Course& course, const Module& m) {
  std::vector<Mutant> out;
  const fs::path dir = course.mutants_dir(m);
  if (!fs::is_directory(dir)) return out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    YAML::Node node;
    try {
      node = YAML::LoadFile(file.string());
    } catch (const YAML::Exception& e) {
      throw CourseError(fmt::format("{}:{}: not valid YAML: {}", file.string(), e.mark.line + 1, e.msg));
    }
    auto text = [&](const char* key) {
      const YAML::Node v = node[key];
      if (!v || !v.IsScalar())
        throw CourseError(fmt::format("{}: missing text field '{}' (a mutant needs description, check, failure, "
                                      "file, replace, with)",
                                      file.string(), key));
      return v.as<std::string>();
    };
    Mutant mu{file.stem().string(), text("description"), text("check"), text("failure"), text("file"),
              text("replace"), text("with"), file};
    const Check* check = m.check(mu.check);
    if (!check) throw CourseError(fmt::format("{}: module {} has no check '{}'", file.string(), m.name(), mu.check));
    if (mu.failure != kMemoryError && !check->failure(mu.failure))
      throw CourseError(fmt::format("{}: check '{}' has no catalogued failure '{}'", file.string(), mu.check, mu.failure));
    if (std::find(m.student_files.begin(), m.student_files.end(), mu.file) == m.student_files.end())
      throw CourseError(fmt::format("{}: '{}' is not one of the module's student files", file.string(), mu.file));
    out.push_back(std::move(mu));
  }
  return out;
}

std::string apply_mutant(const Mutant& mutant, const std::string& reference) {
  const auto at = reference.find(mutant.replace);
  if (mutant.replace.empty() || at == std::string::npos)
    throw CourseError(fmt::format("{}: the text to replace is not in {}", mutant.yaml.string(), mutant.file));
  if (reference.find(mutant.replace, at + 1) != std::string::npos)
    throw CourseError(fmt::format("{}: the text to replace occurs more than once in {}; make it unique",
                                  mutant.yaml.string(), mutant.file));
  std::string out = reference;
  out.replace(at, mutant.replace.size(), mutant.with);
  return out;
}

}  // namespace kiln::grader
