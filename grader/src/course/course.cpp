#include "kiln/grader/course.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

namespace kiln::grader {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool write_if_changed(const fs::path& path, const std::string& content) {
  if (fs::exists(path) && read_file(path) == content) return false;
  fs::create_directories(path.parent_path());
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << content;
  }
  fs::rename(tmp, path);
  return true;
}

const Failure* Check::failure(const std::string& failure_id) const {
  for (const auto& f : failures)
    if (f.id == failure_id) return &f;
  return nullptr;
}

std::string Module::name() const { return fmt::format("{:02d}_{}", number, slug); }
std::string Module::number_text() const { return fmt::format("{:02d}", number); }

int Module::max_points() const {
  int total = 0;
  for (const auto& c : checks) total += c.points;
  return total;
}

const Check* Module::check(const std::string& check_id) const {
  for (const auto& c : checks)
    if (c.id == check_id) return &c;
  return nullptr;
}

namespace {

std::vector<fs::path> sources_in(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".cpp" || ext == ".cc" || ext == ".cu")) out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<fs::path> Module::given_sources() const {
  std::vector<fs::path> out;
  for (const auto& path : sources_in(dir / "src")) {
    const auto rel = fs::relative(path, dir).generic_string();
    if (std::find(student_files.begin(), student_files.end(), rel) == student_files.end() &&
        path.extension() != ".cu")
      out.push_back(path);
  }
  return out;
}

std::vector<fs::path> Module::test_sources() const { return sources_in(dir / "tests"); }
std::vector<fs::path> Module::bench_sources() const { return sources_in(dir / "bench"); }

namespace {

// Files directly in dir with the extension.
std::vector<fs::path> files_with(const fs::path& dir, const std::string& extension) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == extension) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<fs::path> Module::device_sources() const { return files_with(dir / "device", ".cu"); }
std::vector<fs::path> Module::device_test_sources() const { return files_with(dir / "device" / "tests", ".cpp"); }
std::vector<fs::path> Module::device_bench_sources() const { return files_with(dir / "device" / "bench", ".cpp"); }
std::vector<fs::path> Module::device_bench_cuda_sources() const {
  return files_with(dir / "device" / "bench", ".cu");
}
bool Module::has_device_checks() const {
  return std::any_of(checks.begin(), checks.end(), [](const Check& c) { return c.device; });
}

const std::vector<std::string>& module_tiers() {
  static const std::vector<std::string> tiers = {"foundation", "architecture", "optimization", "capstone"};
  return tiers;
}

std::vector<std::string> stray_solution_files(const Course& course, const Module& m) {
  std::vector<std::string> out;
  const fs::path solution = course.solution_dir(m);
  if (!fs::is_directory(solution / "src")) return out;
  for (const auto& entry : fs::recursive_directory_iterator(solution / "src")) {
    if (entry.is_directory()) continue;
    const std::string rel = fs::relative(entry.path(), solution).generic_string();
    if (std::find(m.student_files.begin(), m.student_files.end(), rel) == m.student_files.end())
      out.push_back(fs::relative(entry.path(), course.root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Course::has_solutions() const { return fs::is_directory(root / "solutions"); }
fs::path Course::solution_dir(const Module& m) const { return root / "solutions" / m.name(); }
fs::path Course::mutants_dir(const Module& m) const { return solution_dir(m) / "mutants"; }

const Module* Course::by_number(int number) const {
  for (const auto& m : modules)
    if (m.number == number) return &m;
  return nullptr;
}

const Module& Course::find(const std::string& name) const {
  const bool numeric = !name.empty() && std::all_of(name.begin(), name.end(), ::isdigit);
  for (const auto& m : modules) {
    if ((numeric && name.size() <= 3 && std::stoi(name) == m.number) || name == m.name() || name == m.slug)
      return m;
  }
  std::string known;
  for (const auto& m : modules) known += fmt::format("\n  {}  {}", m.number_text(), m.name());
  throw CourseError(fmt::format("there is no module '{}'. Name a module by number (1 or 01), folder "
                                "(01_tensor) or slug (tensor). The modules are:{}",
                                name, known));
}

std::vector<const Module*> Course::prerequisites(const Module& m) const {
  std::vector<const Module*> order;
  std::set<int> seen;
  std::function<void(const Module&)> visit = [&](const Module& current) {
    for (int n : current.requires_) {
      if (seen.count(n)) continue;
      seen.insert(n);
      const Module* dep = by_number(n);
      if (!dep) {
        throw CourseError(fmt::format("{}: requires module {:02d}, which is not in this course",
                                      current.yaml.string(), n));
      }
      visit(*dep);
      order.push_back(dep);
    }
  };
  visit(m);
  return order;
}

namespace {

// Reads module.yaml, reporting every problem as "file:line: what is wrong".
class Reader {
 public:
  explicit Reader(fs::path file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& what) const {
    const auto mark = node.Mark();
    const int line = mark.is_null() ? 0 : mark.line + 1;
    throw CourseError(fmt::format("{}:{}: {}", file_.string(), line, what));
  }

  YAML::Node field(const YAML::Node& map, const std::string& key, bool required) const {
    const YAML::Node value = map[key];
    if (!value && required) fail(map, fmt::format("missing required field '{}'", key));
    return value;
  }

  std::string text(const YAML::Node& map, const std::string& key, bool required = true) const {
    const YAML::Node value = field(map, key, required);
    if (!value) return "";
    if (!value.IsScalar()) fail(value, fmt::format("'{}' should be text", key));
    return value.as<std::string>();
  }

  int integer(const YAML::Node& map, const std::string& key, bool required, int fallback) const {
    const YAML::Node value = field(map, key, required);
    if (!value) return fallback;
    try {
      return value.as<int>();
    } catch (const YAML::Exception&) {
      fail(value, fmt::format("'{}' should be a whole number, not '{}'", key, value.Scalar()));
    }
  }

  double number(const YAML::Node& map, const std::string& key, double fallback) const {
    const YAML::Node value = field(map, key, false);
    if (!value) return fallback;
    try {
      return value.as<double>();
    } catch (const YAML::Exception&) {
      fail(value, fmt::format("'{}' should be a number, not '{}'", key, value.Scalar()));
    }
  }

  YAML::Node list(const YAML::Node& map, const std::string& key, bool required) const {
    const YAML::Node value = field(map, key, required);
    if (value && !value.IsSequence()) fail(value, fmt::format("'{}' should be a list", key));
    return value;
  }

  std::vector<std::string> texts(const YAML::Node& map, const std::string& key, bool required) const {
    std::vector<std::string> out;
    const YAML::Node items = list(map, key, required);
    if (!items) return out;
    for (const auto& item : items) {
      if (!item.IsScalar()) fail(item, fmt::format("each entry of '{}' should be text", key));
      out.push_back(item.as<std::string>());
    }
    return out;
  }

  const fs::path& file() const { return file_; }

 private:
  fs::path file_;
};

Visibility parse_visibility(const Reader& r, const YAML::Node& check) {
  const std::string v = r.text(check, "visibility", false);
  if (v.empty() || v == "visible") return Visibility::visible;
  if (v == "after_due_date") return Visibility::after_due_date;
  if (v == "hidden") return Visibility::hidden;
  r.fail(check["visibility"], fmt::format("visibility '{}' is not one of visible, after_due_date, hidden", v));
}

// A check's `speed:` mapping.
Speed parse_speed(const Reader& r, const YAML::Node& speed, bool device) {
  if (!speed.IsMap()) r.fail(speed, "'speed' should be a mapping: full_at, zero_at, rounds, calls");
  Speed sp;
  sp.full_at = r.number(speed, "full_at", sp.full_at);
  sp.zero_at = r.number(speed, "zero_at", sp.zero_at);
  sp.rounds = r.integer(speed, "rounds", false, sp.rounds);
  sp.calls = r.integer(speed, "calls", false, sp.calls);
  if (!(sp.full_at >= 1 && sp.zero_at > sp.full_at))
    r.fail(speed, "speed needs 1 <= full_at < zero_at (ratios of the student's time to the reference's)");
  if (sp.rounds < 1 || sp.rounds > 50 || sp.calls < 1 || sp.calls > 100)
    r.fail(speed, "speed needs 1 to 50 rounds and 1 to 100 calls");
  if (device) r.fail(speed, "a device check cannot be speed-graded here");
  return sp;
}

// One entry of `checks:`. Failure ids are unique in the module: `failure_ids` holds those seen.
Check parse_check(const Reader& r, const YAML::Node& node, std::set<std::string>& failure_ids) {
  if (!node.IsMap()) r.fail(node, "each check should be a mapping with id, test, points, description");
  Check c;
  c.id = r.text(node, "id");
  c.test = r.text(node, "test");
  c.points = r.integer(node, "points", true, 1);
  c.description = r.text(node, "description");
  while (!c.description.empty() && std::isspace(static_cast<unsigned char>(c.description.back()))) c.description.pop_back();
  c.visibility = parse_visibility(r, node);
  c.timeout_s = r.number(node, "timeout", 10.0);
  if (const YAML::Node device = r.field(node, "device", false)) {
    try {
      c.device = device.as<bool>();
    } catch (const YAML::Exception&) {
      r.fail(device, fmt::format("'device' should be true or false, not '{}'", device.Scalar()));
    }
  }
  if (const YAML::Node speed = r.field(node, "speed", false)) c.speed = parse_speed(r, speed, c.device);
  if (c.points < 0) r.fail(node["points"], "points cannot be negative");
  if (c.test.find('.') == std::string::npos)
    r.fail(node["test"], fmt::format("test '{}' should be a GoogleTest name, Suite.Name", c.test));
  if (const auto failures = r.list(node, "failures", false)) {
    for (const auto& fnode : failures) {
      if (!fnode.IsMap()) r.fail(fnode, "each failure should be a mapping with id, message, hint");
      Failure f{r.text(fnode, "id"), r.text(fnode, "message"), r.text(fnode, "hint")};
      if (!failure_ids.insert(f.id).second)
        r.fail(fnode["id"], fmt::format("failure id '{}' is used twice in this module", f.id));
      c.failures.push_back(std::move(f));
    }
  }
  return c;
}

// `forbids:` and `equivalent_mutants:`, which name what the student files may not use and which
// generated mutants cannot be told from the reference.
void read_forbids_and_equivalents(const Reader& r, const YAML::Node& root, Module& m) {
  if (const auto forbids = r.list(root, "forbids", false)) {
    for (const auto& f : forbids) {
      if (!f.IsMap() || (!f["call"] == !f["include"]))
        r.fail(f, "each entry of 'forbids' is a mapping with call: or include:, and why:");
      const bool call = static_cast<bool>(f["call"]);
      Module::Forbidden entry{r.text(f, call ? "call" : "include"), r.text(f, "why")};
      (call ? m.forbidden_calls : m.forbidden_includes).push_back(std::move(entry));
    }
  }
  if (const auto inputs = r.list(root, "observed_inputs", false)) {
    for (const auto& f : inputs) {
      if (!f.IsMap() || !f["function"]) r.fail(f, "each entry of 'observed_inputs' is a mapping with function: and why:");
      m.observed_inputs.push_back({r.text(f, "function"), r.text(f, "why")});
    }
  }
  for (const auto& l : m.links)
    if (l != "zlib" && l != "pcre2")
      r.fail(root["links"], fmt::format("unknown library '{}' in links (known: zlib, pcre2)", l));
  for (const auto& f : m.device_files) {
    if (std::find(m.student_files.begin(), m.student_files.end(), f) == m.student_files.end())
      r.fail(root["device_files"], fmt::format("device file '{}' is not one of the student_files", f));
  }

  const std::string expected_dir = m.name();
  if (m.dir.filename() != expected_dir) {
    r.fail(root["slug"], fmt::format("number {} and slug '{}' make '{}', but the folder is '{}'", m.number,
                                     m.slug, expected_dir, m.dir.filename().string()));
  }
  for (const auto& f : m.student_files) {
    if (f.find("..") != std::string::npos || (!f.empty() && f[0] == '/'))
      r.fail(root["student_files"], fmt::format("student file '{}' must be a path inside the module folder", f));
    if (!fs::exists(m.dir / f))
      r.fail(root["student_files"], fmt::format("student file '{}' does not exist in {}", f, m.dir.string()));
  }

  std::set<std::string> check_ids, failure_ids, tests;
  const YAML::Node checks = r.list(root, "checks", true);
  for (const auto& node : checks) {
    Check c = parse_check(r, node, failure_ids);
    c.needs = r.texts(node, "needs", false);
    for (const auto& id : c.needs)
      if (!check_ids.count(id))
        r.fail(node["needs"], fmt::format("check '{}' needs '{}', which is not a check declared before it", c.id, id));
    if (!check_ids.insert(c.id).second) r.fail(node["id"], fmt::format("check id '{}' is used twice", c.id));
    if (!tests.insert(c.test).second) r.fail(node["test"], fmt::format("test '{}' implements two checks", c.test));
    m.checks.push_back(std::move(c));
  }
  if (m.checks.empty()) r.fail(root, "a module needs at least one check");
  if (const auto equivalents = r.list(root, "equivalent_mutants", false)) {
    for (const auto& e : equivalents) {
      if (!e.IsMap())
        r.fail(e, "each entry of 'equivalent_mutants' is a mapping with file, code (or line), mutation, reason");
      EquivalentMutant eq{r.text(e, "file"), r.integer(e, "line", false, 0), r.integer(e, "column", false, 0),
                          r.text(e, "mutation"), r.text(e, "reason"), r.text(e, "code", false)};
      if (eq.code.empty() && eq.line < 1)
        r.fail(e, "an equivalent mutant needs the text of its line (code:) or its line number (line:)");
      if (std::find(m.student_files.begin(), m.student_files.end(), eq.file) == m.student_files.end())
        r.fail(e["file"], fmt::format("equivalent mutant's file '{}' is not one of the student_files", eq.file));
      m.equivalent_mutants.push_back(std::move(eq));
    }
  }
  if (const auto promises = r.list(root, "promises", false)) {
    for (const auto& p : promises) {
      if (!p.IsMap()) r.fail(p, "each entry of 'promises' is a mapping with function, promise and checks");
      Promise promise{r.text(p, "function"), r.text(p, "promise"), r.texts(p, "checks", true), p.Mark().line + 1};
      if (promise.checks.empty()) r.fail(p["checks"], "a promise names at least one check that holds a submission to it");
      for (const auto& id : promise.checks)
        if (!check_ids.count(id))
          r.fail(p["checks"], fmt::format("promise of {} names the check '{}', which this module does not have",
                                          promise.function, id));
      m.promises.push_back(std::move(promise));
    }
  }
}

}  // namespace

std::string visibility_name(Visibility v) {
  switch (v) {
    case Visibility::visible: return "visible";
    case Visibility::after_due_date: return "after_due_date";
    case Visibility::hidden: return "hidden";
  }
  return "visible";
}

Module load_module(const fs::path& yaml_path) {
  Reader r(yaml_path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(yaml_path.string());
  } catch (const YAML::ParserException& e) {
    throw CourseError(fmt::format("{}:{}: not valid YAML: {}", yaml_path.string(), e.mark.line + 1, e.msg));
  } catch (const YAML::BadFile&) {
    throw CourseError(fmt::format("{}: cannot be read", yaml_path.string()));
  }
  if (!root.IsMap()) r.fail(root, "a module.yaml should be a mapping of fields (number, slug, title, ...)");

  Module m;
  m.yaml = yaml_path;
  m.dir = yaml_path.parent_path();
  m.number = r.integer(root, "number", true, 0);
  m.slug = r.text(root, "slug");
  m.title = r.text(root, "title");
  m.subtitle = r.text(root, "subtitle", false);
  m.tier = r.text(root, "tier", false);
  const auto& tiers = module_tiers();
  if (!m.tier.empty() && std::find(tiers.begin(), tiers.end(), m.tier) == tiers.end())
    r.fail(root["tier"], fmt::format("field 'tier' is '{}', which is not one of: {}", m.tier, fmt::join(tiers, ", ")));
  m.difficulty = r.integer(root, "difficulty", false, 1);
  if (m.difficulty < kMinDifficulty || m.difficulty > kMaxDifficulty) {
    std::vector<int> difficulties;
    for (int d = kMinDifficulty; d <= kMaxDifficulty; ++d) difficulties.push_back(d);
    r.fail(root["difficulty"], fmt::format("field 'difficulty' is {}, which is not one of: {} ({} the easiest)",
                                           m.difficulty, fmt::join(difficulties, ", "), kMinDifficulty));
  }
  m.hours = r.text(root, "hours", false);
  if (const auto reqs = r.list(root, "requires", false)) {
    for (const auto& n : reqs) {
      try {
        m.requires_.push_back(n.as<int>());
      } catch (const YAML::Exception&) {
        r.fail(n, fmt::format("'requires' lists module numbers; '{}' is not one", n.Scalar()));
      }
    }
  }
  m.objectives = r.texts(root, "objectives", false);
  m.student_files = r.texts(root, "student_files", true);
  m.device_files = r.texts(root, "device_files", false);
  m.links = r.texts(root, "links", false);
  read_forbids_and_equivalents(r, root, m);
  if (m.has_device_checks() && (m.device_sources().empty() || m.device_test_sources().empty() || m.device_files.empty()))
    r.fail(root, fmt::format("device checks need the module's CUDA part: device_files (the student files with "
                             "kernels), device/*.cu (the launchers) and device/tests/*.cpp (the checks) in {}",
                             m.dir.string()));
  return m;
}

Course load_course(const fs::path& root) {
  Course course;
  course.root = fs::absolute(root).lexically_normal();
  const fs::path modules = course.root / "modules";
  if (!fs::is_directory(modules)) {
    throw CourseError(fmt::format("{} has no modules/ folder: run the grader inside a Kiln course", course.root.string()));
  }
  for (const auto& entry : fs::directory_iterator(modules)) {
    const fs::path yaml = entry.path() / "module.yaml";
    if (entry.is_directory() && fs::exists(yaml)) course.modules.push_back(load_module(yaml));
  }
  std::sort(course.modules.begin(), course.modules.end(),
            [](const Module& a, const Module& b) { return a.number < b.number; });
  for (std::size_t i = 1; i < course.modules.size(); ++i) {
    if (course.modules[i].number == course.modules[i - 1].number)
      throw CourseError(fmt::format("{} and {} share the number {}", course.modules[i - 1].yaml.string(),
                                    course.modules[i].yaml.string(), course.modules[i].number));
  }
  for (const auto& m : course.modules) {
    for (int n : m.requires_) {
      if (n >= m.number)
        throw CourseError(fmt::format("{}: requires module {:02d}, but a module can only build on earlier ones",
                                      m.yaml.string(), n));
    }
    course.prerequisites(m);  // every prerequisite exists
  }
  return course;
}

fs::path find_course_root(const fs::path& start) {
  if (const char* env = std::getenv("KILN_ROOT"); env && *env) return fs::absolute(env);
  for (fs::path dir = fs::absolute(start); ; dir = dir.parent_path()) {
    if (fs::is_directory(dir / "modules")) return dir;
    if (dir == dir.root_path()) break;
  }
  throw CourseError("no Kiln course here: run the grader inside the course folder (the one holding modules/)");
}

}  // namespace kiln::grader
