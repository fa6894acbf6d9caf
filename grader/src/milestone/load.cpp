// The milestones as data: milestones/datasets.yaml (the data sets, where Debian puts them and how
// their labels are read) and each milestones/NN_id/milestone.yaml.
#include "kiln/grader/milestone.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace kiln::grader {

namespace {

// ---------------------------------------------------------------------------------------------
// datasets.yaml

// A problem in datasets.yaml, said as "file:line: what".
[[noreturn]] void refuse(const fs::path& yaml, const YAML::Node& node, const std::string& what) {
  const YAML::Mark mark = node.Mark();
  throw CourseError(fmt::format("{}:{}: {}", yaml.string(), mark.is_null() ? 0 : mark.line + 1, what));
}

// A field of text that `who` (a data set) must have.
std::string text(const fs::path& yaml, const YAML::Node& entry, const std::string& key, const std::string& who) {
  const YAML::Node value = entry[key];
  if (!value) refuse(yaml, entry, fmt::format("{} needs '{}'", who, key));
  if (!value.IsScalar() || value.Scalar().empty()) refuse(yaml, value, fmt::format("{}: '{}' should be text", who, key));
  return value.Scalar();
}

const std::pair<const char*, LabelFormat> kFormats[] = {
    {"idx", LabelFormat::idx}, {"digits-csv", LabelFormat::digits_csv}, {"text", LabelFormat::text}};

LabelFormat label_format(const fs::path& yaml, const YAML::Node& entry, const std::string& who) {
  const std::string name = text(yaml, entry, "format", who);
  for (const auto& [known, format] : kFormats)
    if (name == known) return format;
  refuse(yaml, entry["format"], fmt::format("{}: 'format' is '{}'; the formats are idx, digits-csv and text", who, name));
}

// Where a text's labels come from: its corpus, a list of files in dir, in order.
std::vector<std::string> corpus(const fs::path& yaml, const YAML::Node& entry, const std::string& who) {
  const YAML::Node files = entry["corpus"];
  if (!files || !files.IsSequence() || files.size() == 0)
    refuse(yaml, files ? files : entry, fmt::format("{} is a text: it needs 'corpus', the list of its files in order", who));
  std::vector<std::string> out;
  for (const auto& file : files) {
    if (!file.IsScalar()) refuse(yaml, file, fmt::format("{}: each file of 'corpus' should be text", who));
    out.push_back(file.Scalar());
  }
  return out;
}

// One entry of datasets.yaml, every field checked.
DataSource read_data_source(const fs::path& yaml, const YAML::Node& entry) {
  if (!entry.IsMap()) refuse(yaml, entry, "each data set should be a map: name, package, dir, format, and test_labels or corpus");
  static const std::set<std::string> fields = {"name", "package", "dir", "format", "test_labels", "corpus"};
  for (const auto& field : entry)
    if (!fields.count(field.first.Scalar()))
      refuse(yaml, field.first, fmt::format("unknown field '{}' (the fields: name, package, dir, format, test_labels, "
                                            "corpus)", field.first.Scalar()));
  DataSource d;
  d.name = text(yaml, entry, "name", "a data set");
  const std::string who = fmt::format("the data set '{}'", d.name);
  if (d.name == "none") refuse(yaml, entry["name"], "'none' is not a data set's name: it is a milestone without one");
  d.package = text(yaml, entry, "package", who);
  d.dir = text(yaml, entry, "dir", who);
  if (!d.dir.is_absolute())
    refuse(yaml, entry["dir"], fmt::format("{}: 'dir' should be an absolute path, not '{}'", who, d.dir.string()));
  d.format = label_format(yaml, entry, who);
  if (d.format == LabelFormat::text) {
    if (entry["test_labels"])
      refuse(yaml, entry["test_labels"], fmt::format("{} is a text: its labels come from its 'corpus', not 'test_labels'", who));
    d.corpus = corpus(yaml, entry, who);
  } else {
    if (entry["corpus"]) refuse(yaml, entry["corpus"], fmt::format("{}: its labels are in 'test_labels'; 'corpus' is for a text", who));
    d.test_labels = d.dir / text(yaml, entry, "test_labels", who);
  }
  return d;
}

// The data set a milestone names: none, or one of datasets.yaml's.
DataSource data_source(const std::vector<DataSource>& known, const std::string& name, const fs::path& yaml) {
  if (name == "none") return {.name = name};
  std::string names;
  for (const DataSource& d : known) {
    if (d.name == name) return d;
    names += d.name + ", ";
  }
  throw CourseError(fmt::format("unknown data set '{}' (known: {}none; {} describes them)", name, names, yaml.string()));
}

// ---------------------------------------------------------------------------------------------
// milestone.yaml

std::vector<LogitsTarget> read_targets(const YAML::Node& node, const fs::path& yaml) {
  std::vector<LogitsTarget> out;
  if (!node) return out;
  for (const auto& t : node) {
    LogitsTarget target;
    target.output = t["output"].as<std::string>();
    if (t["min_accuracy"]) target.min_accuracy = t["min_accuracy"].as<double>();
    if (t["max_accuracy"]) target.max_accuracy = t["max_accuracy"].as<double>();
    if (t["max_loss"]) target.max_loss = t["max_loss"].as<double>();
    if (t["max_drop"]) target.max_drop = t["max_drop"].as<double>();
    if (t["max_drop_from"]) target.drop_from = t["max_drop_from"].as<std::string>();
    if (target.max_drop.has_value() != !target.drop_from.empty())
      throw CourseError(fmt::format("{}: the target for '{}' needs both max_drop and max_drop_from", yaml.string(),
                                    target.output));
    if (!target.min_accuracy && !target.max_accuracy && !target.max_loss && !target.max_drop)
      throw CourseError(fmt::format("{}: the target for '{}' needs min_accuracy, max_accuracy, max_loss or max_drop",
                                    yaml.string(), target.output));
    out.push_back(target);
  }
  return out;
}

MilestoneRun read_run(const YAML::Node& spec) {
  MilestoneRun run;
  if (spec["args"])
    for (const auto& a : spec["args"]) run.args.push_back(a.as<std::string>());
  if (spec["test_count"]) run.test_count = spec["test_count"].as<std::int64_t>();
  if (spec["timeout"]) run.timeout_s = spec["timeout"].as<double>();
  if (spec["golden"])
    for (const auto& g : spec["golden"]) run.golden.push_back(g.as<double>());
  if (spec["golden_tolerance"]) run.golden_tolerance = spec["golden_tolerance"].as<double>();
  return run;
}

std::vector<BehaviourCheck> read_behaviour(const YAML::Node& node) {
  std::vector<BehaviourCheck> out;
  if (!node) return out;
  for (const auto& b : node) {
    BehaviourCheck check;
    check.kind = b["check"].as<std::string>();
    check.output = b["output"].as<std::string>();
    if (check.kind == "causal") {
      check.changed = b["changed"].as<std::string>();
      check.position = b["position"].as<std::int64_t>();
      if (b["tolerance"]) check.tolerance = b["tolerance"].as<double>();
    } else if (check.kind != "positional") {
      throw CourseError(fmt::format("unknown behaviour check '{}' (known: causal, positional)", check.kind));
    }
    out.push_back(check);
  }
  return out;
}

std::vector<Milestone::Install> read_installs(const YAML::Node& node, const Course& course) {
  std::vector<Milestone::Install> out;
  for (const auto& i : node) {
    Milestone::Install install{i["file"].as<std::string>(), i["module"].as<int>(), i["to"].as<std::string>()};
    const Module* target = course.by_number(install.module);
    if (target && std::find(target->student_files.begin(), target->student_files.end(), install.to) ==
                      target->student_files.end())
      throw CourseError(fmt::format("it installs {} as {}, which is not one of module {}'s student files",
                                    install.file, install.to, install.module));
    out.push_back(install);
  }
  return out;
}

// One milestone's folder and milestone.yaml; what is wrong is a CourseError without the file's name.
Milestone read_milestone(const fs::path& dir, const Course& course, const std::vector<DataSource>& data_sets) {
  const fs::path yaml = dir / "milestone.yaml";
  const YAML::Node y = YAML::LoadFile(yaml.string());
  Milestone m;
  m.dir = dir;
  const std::string folder = dir.filename().string();
  const auto underscore = folder.find('_');
  if (underscore == std::string::npos) throw CourseError("the folder must be named NN_id");
  m.order = std::stoi(folder.substr(0, underscore));
  m.id = folder.substr(underscore + 1);
  m.title = y["title"].as<std::string>();
  m.summary = y["summary"] ? y["summary"].as<std::string>() : "";
  for (const auto& n : y["modules"]) m.modules.push_back(n.as<int>());
  if (m.modules.empty()) throw CourseError("it needs `modules`: the modules whose code it trains");
  for (const auto& s : y["sources"]) m.sources.push_back(dir / s.as<std::string>());
  m.data = data_source(data_sets, y["data"] ? y["data"].as<std::string>() : "none", dir.parent_path() / "datasets.yaml");
  if (y["labels"])
    for (const auto& l : y["labels"]) m.labels.push_back(l.as<std::int64_t>());
  for (const auto& r : y["runs"]) m.runs[r.first.as<std::string>()] = read_run(r.second);
  if (!m.runs.count("full") || !m.runs.count("quick")) throw CourseError("it needs two runs, `full` and `quick`");
  m.targets = read_targets(y["targets"], yaml);
  m.quick_targets = y["quick_targets"] ? read_targets(y["quick_targets"], yaml) : m.targets;
  m.behaviour = read_behaviour(y["behaviour"]);
  m.installs = read_installs(y["installs"], course);
  if (m.targets.empty()) throw CourseError("it judges nothing: add targets");
  if (m.data.name == "none" && m.labels.empty()) throw CourseError("without a data set it needs its labels");
  return m;
}

}  // namespace

std::vector<DataSource> load_data_sources(const fs::path& yaml) {
  std::vector<DataSource> out;
  if (!fs::exists(yaml)) return out;
  try {
    const YAML::Node root = YAML::LoadFile(yaml.string());
    if (root.IsNull()) return out;
    if (!root.IsSequence()) refuse(yaml, root, "it should be a list of data sets, each with a name, package, dir and format");
    for (const auto& entry : root) {
      DataSource d = read_data_source(yaml, entry);
      if (std::any_of(out.begin(), out.end(), [&](const DataSource& o) { return o.name == d.name; }))
        refuse(yaml, entry["name"], fmt::format("the data set '{}' is described twice", d.name));
      out.push_back(std::move(d));
    }
  } catch (const YAML::Exception& e) {
    throw CourseError(fmt::format("{}:{}: {}", yaml.string(), e.mark.line + 1, e.msg));
  }
  return out;
}

std::vector<Milestone> load_milestones(const Course& course) {
  std::vector<Milestone> out;
  const fs::path root = course.root / "milestones";
  if (!fs::is_directory(root)) return out;
  const std::vector<DataSource> data_sets = load_data_sources(root / "datasets.yaml");
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "milestone.yaml")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    const fs::path yaml = dir / "milestone.yaml";
    try {
      Milestone m = read_milestone(dir, course, data_sets);
      // A milestone whose modules are not all in this course (yet) is left out.
      if (std::any_of(m.modules.begin(), m.modules.end(), [&](int n) { return !course.by_number(n); })) continue;
      out.push_back(std::move(m));
    } catch (const YAML::Exception& e) {
      throw CourseError(fmt::format("{}:{}: {}", yaml.string(), e.mark.line + 1, e.msg));
    } catch (const CourseError& e) {
      throw CourseError(fmt::format("{}: {}", yaml.string(), e.what()));
    }
  }
  return out;
}

}  // namespace kiln::grader
