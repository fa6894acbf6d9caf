#include "kiln/grader/recipe.h"

#include <algorithm>

#include <fmt/format.h>

#include "kiln/grader/process.h"

namespace kiln::grader {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(text.substr(start, nl - start));
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (std::size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += to.size())
    text.replace(at, from.size(), to);
  return text;
}

// The commands Ninja runs for `target`, in order.
std::vector<std::string> commands_of(const fs::path& dir, const std::string& target) {
  const ProcessResult r = run_process({.argv = {"ninja", "-C", dir.string(), "-t", "commands", target}, .output_cap = 16 << 20});
  if (!r.ok()) throw CourseError(fmt::format("cannot read the build commands of {}: {}", target, r.err));
  return lines_of(r.out);
}

constexpr const char* kSources = "@KILN_SOURCES@";
constexpr const char* kWork = "@KILN_WORK@";

}  // namespace

std::string compiler_launcher(const fs::path& build_dir) {
  const std::string cache = "\n" + read_file(build_dir / "CMakeCache.txt");
  const std::size_t at = cache.find("\nCMAKE_CXX_COMPILER_LAUNCHER:");
  if (at == std::string::npos) return "";
  const std::size_t value = cache.find('=', at) + 1;
  std::string launcher = cache.substr(value, cache.find('\n', value) - value);
  std::replace(launcher.begin(), launcher.end(), ';', ' ');
  return launcher;
}

Recipe make_recipe(const CourseBuild& build, const TestTarget& stub, bool device, bool sanitized) {
  Recipe recipe;
  recipe.build_dir = build.dir();
  recipe.stub_root = stub.own.root;
  const Module& m = *stub.module;
  const std::string library = CourseBuild::library_target(m, stub.own.name) + (sanitized ? "_san" : "");
  const std::string binary = sanitized ? stub.sanitized_name() : stub.target_name();
  const std::string objects = "CMakeFiles/" + library + ".dir/";  // where the stubs' objects go
  const std::string archive = "lib" + library + ".a";
  const std::string root = stub.own.root.string() + "/";
  // Everything variant-specific is a placeholder; the rest (shared objects, prerequisites'
  // archives, the test main) is used from the trusted build as it is.
  // Each student object file of the stubs' build becomes the submission's own object file.
  std::vector<std::pair<std::string, std::string>> renamed;
  auto generic = [&](std::string c) {
    for (const auto& [from, to] : renamed) c = replace_all(c, from, to);
    c = replace_all(c, root, std::string(kSources) + "/");
    c = replace_all(c, archive, std::string(kWork) + "/lib.a");
    c = replace_all(c, "-o " + binary + " ", "-o " + std::string(kWork) + "/t ");
    c = replace_all(c, "-o " + stub.device_name() + " ", "-o " + std::string(kWork) + "/d ");
    return c;
  };
  std::string archive_members;  // what the stubs' archive holds, linked directly instead
  const std::string launcher = compiler_launcher(build.dir());
  for (const auto& c : commands_of(build.dir(), binary)) {
    const bool compile = c.find(objects) != std::string::npos && c.find(" -c " + root) != std::string::npos;
    const bool archives = c.find(" " + archive) != std::string::npos && c.find("ar qc") != std::string::npos;
    const bool links = c.find("-o " + binary + " ") != std::string::npos;
    if (compile) {
      const std::size_t at = c.find(" -o ");
      if (at == std::string::npos) throw CourseError("a compile command without -o: " + c);
      const std::size_t begin = at + 4;
      const std::string object = c.substr(begin, c.find(' ', begin) - begin);
      renamed.emplace_back(object, fmt::format("{}/obj/{}.o", kWork, renamed.size()));
      if (launcher.empty()) {
        recipe.host.push_back(generic(c));
      } else if (c.starts_with(launcher + " ")) {
        recipe.host.push_back(generic(c.substr(launcher.size() + 1)));
      } else {
        throw CourseError(fmt::format("the build was configured with the compiler launcher \"{}\", which this compile "
                                      "command does not start with: {}", launcher, c));
      }
    } else if (archives) {
      // ": && cmake -E rm -f lib.a && ar qc lib.a OBJECTS && ranlib lib.a && :": an archive
      // costs a copy of every given object per submission; the link takes the objects as they are.
      const std::string marker = "ar qc " + archive + " ";
      const std::size_t from = c.find(marker) + marker.size();
      archive_members = c.substr(from, c.find(" &&", from) - from);
    } else if (links) {
      recipe.host.push_back(c);  // made generic once the archive's members are known
    }
  }
  if (archive_members.empty()) throw CourseError(fmt::format("the build commands of {} have no archive step", binary));
  for (auto& c : recipe.host) {
    if (c.find("-o " + binary + " ") == std::string::npos) continue;
    c = replace_all(c, " " + archive + " ", " " + archive_members + " ");
    c = generic(c);
  }
  if (recipe.host.size() < m.student_files.size() + 1)
    throw CourseError(fmt::format("the build commands of {} do not have the expected form", binary));
  if (device) {
    // The device part is never sanitized: its kernels are the same file, compiled by nvcc.
    const std::string library = CourseBuild::library_target(m, stub.own.name);
    const std::string unit_stem = "device/" + library + "_cuda";
    const fs::path unit = build.dir() / (unit_stem + ".cu");
    recipe.device_unit = replace_all(read_file(unit), root, std::string(kSources) + "/");
    for (const auto& c : commands_of(build.dir(), stub.device_name())) {
      if (c.find(unit_stem) == std::string::npos && c.find("-o " + stub.device_name() + " ") == std::string::npos)
        continue;
      std::string g = replace_all(c, unit.string(), std::string(kWork) + "/device.cu");
      g = replace_all(g, (build.dir() / (unit_stem + ".o")).string(), std::string(kWork) + "/device.o");
      g = replace_all(g, unit_stem + ".o", std::string(kWork) + "/device.o");
      recipe.device.push_back(generic(g));
    }
    if (recipe.device.size() != 2)
      throw CourseError(fmt::format("the build commands of {} do not have the expected form", stub.device_name()));
  }
  return recipe;
}

Cooked cook(const Recipe& recipe, const fs::path& sources, const fs::path& work) {
  Cooked out;
  auto fill = [&](const std::string& c) {
    return replace_all(replace_all(c, kSources, sources.string()), kWork, work.string());
  };
  for (const auto& c : recipe.host) out.host.push_back(fill(c));
  for (const auto& c : recipe.device) out.device.push_back(fill(c));
  out.binary = work / "t";
  if (!recipe.device.empty()) {
    out.device_binary = work / "d";
    out.device_unit_file = work / "device.cu";
    out.device_unit = fill(recipe.device_unit);
  }
  return out;
}

}  // namespace kiln::grader
