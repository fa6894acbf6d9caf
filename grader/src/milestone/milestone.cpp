#include "kiln/grader/milestone.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "kiln/grader/build.h"
#include "kiln/grader/process.h"
#include "kiln/grader/report.h"

namespace kiln::grader {

// ---------------------------------------------------------------------------------------------
// The milestones as data

DataSource data_source(const std::string& name) {
  if (name == "none") return {name, {}, {}};
  if (name == "fashion-mnist") {
    const fs::path dir = "/usr/share/datasets/fashion-mnist";  // Debian's dataset-fashion-mnist
    return {name, dir, dir / "t10k-labels-idx1-ubyte.gz"};
  }
  if (name == "digits") {
    // scikit-learn's 8×8 handwritten digits, from Debian's python3-sklearn.
    const fs::path dir = "/usr/lib/python3/dist-packages/sklearn/datasets/data";
    return {name, dir, dir / "digits.csv.gz"};
  }
  if (name == "fortunes") {
    // Debian's fortunes: the files milestones/support/text.h names, in the same order.
    return {name, "/usr/share/games/fortunes", {},
            {"fortunes", "literature", "riddles", "wisdom", "humorists", "platitudes", "people", "science", "work",
             "love", "education", "food", "pets"}};
  }
  throw CourseError(fmt::format("unknown data set '{}' (known: fashion-mnist, digits, fortunes, none)", name));
}

namespace {

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

}  // namespace

std::vector<Milestone> load_milestones(const Course& course) {
  std::vector<Milestone> out;
  const fs::path root = course.root / "milestones";
  if (!fs::is_directory(root)) return out;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "milestone.yaml")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    const fs::path yaml = dir / "milestone.yaml";
    try {
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
      m.data = data_source(y["data"] ? y["data"].as<std::string>() : "none");
      if (y["labels"])
        for (const auto& l : y["labels"]) m.labels.push_back(l.as<std::int64_t>());
      for (const auto& r : y["runs"]) {
        MilestoneRun run;
        const YAML::Node spec = r.second;
        if (spec["args"])
          for (const auto& a : spec["args"]) run.args.push_back(a.as<std::string>());
        if (spec["test_count"]) run.test_count = spec["test_count"].as<std::int64_t>();
        if (spec["timeout"]) run.timeout_s = spec["timeout"].as<double>();
        if (spec["golden"])
          for (const auto& g : spec["golden"]) run.golden.push_back(g.as<double>());
        if (spec["golden_tolerance"]) run.golden_tolerance = spec["golden_tolerance"].as<double>();
        m.runs[r.first.as<std::string>()] = run;
      }
      if (!m.runs.count("full") || !m.runs.count("quick"))
        throw CourseError("it needs two runs, `full` and `quick`");
      m.targets = read_targets(y["targets"], yaml);
      m.quick_targets = y["quick_targets"] ? read_targets(y["quick_targets"], yaml) : m.targets;
      if (y["behaviour"]) {
        for (const auto& b : y["behaviour"]) {
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
          m.behaviour.push_back(check);
        }
      }
      for (const auto& i : y["installs"]) {
        Milestone::Install install{i["file"].as<std::string>(), i["module"].as<int>(), i["to"].as<std::string>()};
        const Module* target = course.by_number(install.module);
        if (target && std::find(target->student_files.begin(), target->student_files.end(), install.to) ==
                          target->student_files.end())
          throw CourseError(fmt::format("it installs {} as {}, which is not one of module {}'s student files",
                                        install.file, install.to, install.module));
        m.installs.push_back(install);
      }
      if (m.targets.empty()) throw CourseError("it judges nothing: add targets");
      if (m.data.name == "none" && m.labels.empty()) throw CourseError("without a data set it needs its labels");
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

// ---------------------------------------------------------------------------------------------
// Trusted judging

std::vector<std::int64_t> read_idx_labels(const fs::path& file) {
  std::string bytes;
  if (file.extension() == ".gz") {
    const ProcessResult r = run_process({.argv = {"gzip", "-dc", file.string()}, .output_cap = 64 << 20});
    if (!r.ok()) throw CourseError(fmt::format("cannot decompress {}: {}", file.string(), r.err));
    bytes = r.out;
  } else {
    bytes = read_file(file);
  }
  auto u32 = [&](std::size_t at) {
    return (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at])) << 24) |
           (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 16) |
           (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 2])) << 8) |
           static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 3]));
  };
  if (bytes.size() < 8 || u32(0) != 0x00000801)
    throw CourseError(fmt::format("{} is not an IDX label file (magic 0x00000801 at byte 0)", file.string()));
  const std::uint32_t count = u32(4);
  if (bytes.size() != 8 + static_cast<std::size_t>(count))
    throw CourseError(fmt::format("{} holds {} bytes of labels where its header says {}", file.string(),
                                  bytes.size() - 8, count));
  std::vector<std::int64_t> labels(count);
  for (std::uint32_t i = 0; i < count; ++i) labels[i] = static_cast<unsigned char>(bytes[8 + i]);
  return labels;
}

std::vector<std::int64_t> read_digits_held_out_labels(const fs::path& file) {
  const ProcessResult r = run_process({.argv = {"gzip", "-dc", file.string()}, .output_cap = 64 << 20});
  if (!r.ok()) throw CourseError(fmt::format("cannot decompress {}: {}", file.string(), r.err));
  std::vector<std::int64_t> labels;
  std::istringstream lines(r.out);
  std::string line;
  for (std::int64_t row = 0; std::getline(lines, line); ++row) {
    const auto comma = line.rfind(',');
    if (comma == std::string::npos) throw CourseError(fmt::format("{}: line {} is not CSV", file.string(), row + 1));
    if (row % 5 == 4) labels.push_back(std::stoll(line.substr(comma + 1)));
  }
  return labels;
}

namespace {

// The code points of UTF-8 text; a malformed sequence is an error that says where.
std::vector<char32_t> code_points(const std::string& text, const fs::path& file) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + static_cast<std::size_t>(length) > text.size())
      throw CourseError(fmt::format("{} is not UTF-8 (byte {})", file.string(), i));
    char32_t c = length == 1 ? lead : lead & (0x7F >> length);
    for (int k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if ((next >> 6) != 0x2) throw CourseError(fmt::format("{} is not UTF-8 (byte {})", file.string(), i + k));
      c = (c << 6) | (next & 0x3F);
    }
    out.push_back(c);
    i += static_cast<std::size_t>(length);
  }
  return out;
}

}  // namespace

std::pair<std::vector<std::int64_t>, std::int64_t> read_fortunes_held_out(const fs::path& dir,
                                                                          const std::vector<std::string>& files) {
  std::string all, held_out;
  std::int64_t index = 0;
  for (const std::string& name : files) {
    const std::string text = read_file(dir / name);
    std::string fortune;
    auto finish = [&] {
      if (fortune.empty()) return;
      (++index % 10 == 0 ? held_out : all) += fortune + "%\n";
      fortune.clear();
    };
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      if (line == "%") finish();
      else fortune += line + "\n";
    }
    finish();
  }
  all += held_out;
  const std::vector<char32_t> every = code_points(all, dir);
  std::vector<char32_t> vocabulary(every.begin(), every.end());
  std::sort(vocabulary.begin(), vocabulary.end());
  vocabulary.erase(std::unique(vocabulary.begin(), vocabulary.end()), vocabulary.end());
  std::vector<std::int64_t> ids;
  for (const char32_t c : code_points(held_out, dir))
    ids.push_back(std::lower_bound(vocabulary.begin(), vocabulary.end(), c) - vocabulary.begin());
  return {ids, static_cast<std::int64_t>(vocabulary.size())};
}

std::pair<double, double> accuracy_and_loss(const std::vector<float>& logits, std::int64_t rows, std::int64_t classes,
                                            const std::vector<std::int64_t>& labels) {
  std::int64_t correct = 0;
  double loss = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* row = logits.data() + i * classes;
    std::int64_t best = 0;
    double top = -std::numeric_limits<double>::infinity();
    for (std::int64_t c = 0; c < classes; ++c)
      if (row[c] > top) top = row[c], best = c;
    correct += best == labels[static_cast<std::size_t>(i)];
    double total = 0;
    for (std::int64_t c = 0; c < classes; ++c) total += std::exp(static_cast<double>(row[c]) - top);
    loss += top + std::log(total) - row[labels[static_cast<std::size_t>(i)]];
  }
  return {rows ? static_cast<double>(correct) / static_cast<double>(rows) : 0.0, rows ? loss / static_cast<double>(rows) : 0.0};
}

namespace {

std::vector<float> read_floats(const fs::path& file) {
  const std::string bytes = read_file(file);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

std::string percent(double fraction) { return fmt::format("{:.2f}%", 100 * fraction); }

// Draws a progress bar on a terminal (epoch, a bar over all steps, the latest loss); the epochs'
// lines and the notes are printed everywhere, so that a CI log shows them too.
class Progress {
 public:
  Progress(bool lines, bool bar) : lines_(lines), bar_(bar) {}
  void update(int epoch, int epochs, double done, double loss) {
    if (!bar_) return;
    const int width = 30;
    const int filled = std::clamp(static_cast<int>(done * width), 0, width);
    std::fprintf(stderr, "\r  epoch %d/%d [%s%s] %3.0f%%  loss %.4f ", epoch, epochs, std::string(filled, '#').c_str(),
                 std::string(width - filled, '-').c_str(), 100 * done, loss);
    std::fflush(stderr);
    drawn_ = true;
  }
  void line(const std::string& text) {
    if (!lines_) return;
    if (drawn_) std::fputs("\r\x1b[K", stderr);
    std::fprintf(stderr, "  %s\n", text.c_str());
    drawn_ = false;
  }
  void end() {
    if (drawn_) std::fputs("\n", stderr);
    drawn_ = false;
  }

 private:
  bool lines_, bar_;
  bool drawn_ = false;
};

}  // namespace

MilestoneResult run_milestone(const Workspace& ws, const Milestone& m, const MilestoneCommand& cmd, const fs::path& binary) {
  const std::string run_name = cmd.quick ? "quick" : "full";
  const MilestoneRun& run = m.runs.at(run_name);
  MilestoneResult result{.id = m.id, .title = m.title, .run = run_name};
  const fs::path out = ws.state_dir() / "milestones" / m.id / run_name;  // quick and full kept apart
  fs::remove_all(out);
  fs::create_directories(out);

  std::vector<std::string> argv = {binary.string()};
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  if (!m.data.dir.empty()) {
    const fs::path needed = m.data.corpus.empty() ? m.data.test_labels : m.data.dir / m.data.corpus.front();
    if (!fs::exists(needed))
      throw CourseError(fmt::format("the data set {} is not installed ({} is missing): bin/grader installs it",
                                    m.data.name, needed.string()));
    argv.insert(argv.end(), {"--data", m.data.dir.string()});
  }
  argv.insert(argv.end(), {"--out", out.string()});
  if (cmd.verbose) std::fprintf(stderr, "  KILN_MILESTONE_FD=3 %s\n", shell_quote(argv).c_str());

  int epochs = 1;
  std::int64_t steps_per_epoch = 1;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> logits;  // name -> rows, classes
  std::map<std::string, std::vector<std::pair<std::string, std::int64_t>>> parameters;
  std::map<std::string, std::int64_t> sizes;  // output -> weight bytes
  Progress progress(cmd.format == "text", isatty(STDERR_FILENO) && cmd.format == "text");
  ProcessSpec spec{.argv = argv, .cwd = out, .env = {{"KILN_MILESTONE_FD", "3"}, {"OMP_NUM_THREADS", "1"}},
                   .output_cap = 1 << 20};
  spec.event_fd = 3;
  spec.on_event = [&](std::string_view line) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_object()) return;
    const std::string event = e.value("event", "");
    if (event == "begin") {
      epochs = std::max(1, e.value("epochs", 1));
      steps_per_epoch = std::max<std::int64_t>(1, e.value("steps_per_epoch", std::int64_t{1}));
    } else if (event == "step") {
      const int epoch = e.value("epoch", 1);
      const std::int64_t step = e.value("step", std::int64_t{0});
      const double loss = e.value("loss", 0.0);
      const double at = (epoch - 1) + static_cast<double>(step) / static_cast<double>(steps_per_epoch);
      result.curve.emplace_back(at, loss);
      if (result.first_losses.size() < run.golden.size()) result.first_losses.push_back(loss);
      progress.update(epoch, epochs, at / epochs, loss);
    } else if (event == "epoch") {
      result.epoch_losses.emplace_back(e.value("epoch", 0), e.value("loss", 0.0));
      progress.line(fmt::format("epoch {}: mean training loss {:.4f} ({:.1f} s)", e.value("epoch", 0),
                                e.value("loss", 0.0), e.value("seconds", 0.0)));
    } else if (event == "logits") {
      logits[e.value("name", "")] = {e.value("rows", std::int64_t{0}), e.value("classes", std::int64_t{0})};
    } else if (event == "parameters") {
      auto& list = parameters[e.value("which", "")];
      list.clear();
      for (const auto& t : e.value("tensors", nlohmann::json::array()))
        list.emplace_back(t.value("name", ""), t.value("numel", std::int64_t{0}));
    } else if (event == "size") {
      sizes[e.value("name", "")] = e.value("bytes", std::int64_t{-1});
    } else if (event == "note") {
      result.notes.push_back(e.value("text", ""));
      progress.line(e.value("text", ""));
    }
  };
  spec.should_stop = [&](double elapsed) { return elapsed > run.timeout_s; };
  const auto started = std::chrono::steady_clock::now();
  const ProcessResult r = run_process(spec);
  progress.end();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  auto fail = [&](std::string why) {
    if (result.problem.empty()) result.problem = std::move(why);
  };
  // An unwritten function of the student's library: say which, and where to go first.
  const std::string text = r.err + r.err_tail;
  if (const auto at = text.find("not written yet: "); at != std::string::npos && !r.ok()) {
    const std::string what = text.substr(at, text.find('\n', at) - at);
    fail(fmt::format("the trainer needs a function of your library that is {}. Finish the modules it builds on first "
                     "(`grader check {}` and the modules it requires)",
                     relative_to(ws.course.root, what), ws.course.by_number(m.modules.back())->number_text()));
  }
  if (r.stopped) fail(fmt::format("stopped after {:.0f} s, the run's time limit", run.timeout_s));
  else if (r.signal) fail("the trainer crashed: " + describe_signal(r.signal) + "\n" + r.err_tail.substr(r.err_tail.size() > 2000 ? r.err_tail.size() - 2000 : 0));
  else if (r.exit_code != 0) {
    std::string tail = r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err;
    fail(fmt::format("the trainer ended with exit code {}: {}", r.exit_code, tail));
  }

  // The golden first steps: a correct library, seeded the same way, computes these losses.
  result.golden = run.golden;
  if (r.ok() && !run.golden.empty()) {
    if (result.first_losses.size() < run.golden.size()) fail("the trainer reported fewer steps than the golden trajectory has");
    for (std::size_t i = 0; i < std::min(result.first_losses.size(), run.golden.size()); ++i) {
      if (std::fabs(result.first_losses[i] - run.golden[i]) > run.golden_tolerance) {
        fail(fmt::format("step {}'s loss is {:.7f}, and a correct library's is {:.7f}: the seeded first steps must "
                         "match to {:g} (the initialisation, the shuffle, the loss or the optimizer differs)",
                         i + 1, result.first_losses[i], run.golden[i], run.golden_tolerance));
        break;
      }
    }
  }

  // Every parameter moved.
  if (r.ok()) {
    const auto& initial = parameters["initial"];
    const auto& final_ = parameters["final"];
    if (initial.empty() || initial != final_) {
      fail("the trainer did not report the same parameters before and after training");
    } else {
      const std::vector<float> before = read_floats(out / "parameters-initial.f32");
      const std::vector<float> after = read_floats(out / "parameters-final.f32");
      std::size_t at = 0;
      for (const auto& [name, numel] : initial) {
        double largest = 0;
        for (std::int64_t k = 0; k < numel && at + static_cast<std::size_t>(k) < std::min(before.size(), after.size()); ++k)
          largest = std::max(largest, static_cast<double>(std::fabs(after[at + k] - before[at + k])));
        at += static_cast<std::size_t>(numel);
        result.moved.emplace_back(name, largest);
        if (!(largest > 1e-7)) fail(fmt::format("the parameter {} did not move during training", name));
      }
      if (at != before.size() || at != after.size()) fail("the parameter files do not hold what the trainer reported");
    }
  }

  // Accuracy and loss, from the logits and labels the grader reads itself.
  if (r.ok()) {
    std::vector<std::int64_t> labels = m.labels;
    std::int64_t vocabulary = 0;  // a text's: the number of classes every row must have
    if (labels.empty()) {
      if (!m.data.corpus.empty()) {
        auto [ids, size] = read_fortunes_held_out(m.data.dir, m.data.corpus);
        // Row r of a text's logits predicts its character r + 1.
        labels.assign(ids.begin() + (ids.empty() ? 0 : 1), ids.end());
        vocabulary = size;
      } else {
        labels = m.data.name == "digits" ? read_digits_held_out_labels(m.data.test_labels) : read_idx_labels(m.data.test_labels);
      }
    }
    const std::int64_t expected_rows = run.test_count ? run.test_count : static_cast<std::int64_t>(labels.size());
    // One output's logits, checked for shape; nothing when they are missing or malformed.
    auto read_logits = [&](const std::string& name, std::int64_t rows_expected) -> std::optional<std::vector<float>> {
      const auto found = logits.find(name);
      if (found == logits.end()) {
        fail(fmt::format("the trainer wrote no logits called '{}'", name));
        return std::nullopt;
      }
      const auto [rows, classes] = found->second;
      std::vector<float> values = read_floats(out / ("logits-" + name + ".f32"));
      if ((rows_expected >= 0 && rows != rows_expected) || rows < 1 || classes < 2 ||
          (vocabulary && classes != vocabulary) || static_cast<std::int64_t>(values.size()) != rows * classes) {
        fail(fmt::format("the logits '{}' have {} rows of {} classes ({} values), where {} rows{} were expected", name,
                         rows, classes, values.size(), rows_expected >= 0 ? std::to_string(rows_expected) : "some",
                         vocabulary ? fmt::format(" of {} classes", vocabulary) : ""));
        return std::nullopt;
      }
      return values;
    };
    std::map<std::string, double> accuracy_of;
    auto judge = [&](const std::string& name) -> std::optional<MilestoneResult::Judged> {
      const auto values = read_logits(name, expected_rows);
      if (!values) return std::nullopt;
      const auto [rows, classes] = logits.at(name);
      if (rows > static_cast<std::int64_t>(labels.size())) {
        fail(fmt::format("the logits '{}' have {} rows, and there are only {} labels", name, rows, labels.size()));
        return std::nullopt;
      }
      const auto [accuracy, loss] = accuracy_and_loss(*values, rows, classes, labels);
      accuracy_of[name] = accuracy;
      const auto size = sizes.find(name);
      return MilestoneResult::Judged{.output = name, .rows = rows, .accuracy = accuracy, .loss = loss,
                                     .bytes = size == sizes.end() ? -1 : size->second};
    };
    for (const LogitsTarget& target : cmd.quick ? m.quick_targets : m.targets) {
      auto judged = judge(target.output);
      if (!judged) continue;
      MilestoneResult::Judged j = *judged;
      j.met = true;
      auto add = [&](const std::string& text, bool met) {
        j.target += (j.target.empty() ? "" : ", ") + text;
        j.met = j.met && met;
      };
      if (target.min_accuracy) add("at least " + percent(*target.min_accuracy), j.accuracy >= *target.min_accuracy);
      if (target.max_accuracy) add("at most " + percent(*target.max_accuracy), j.accuracy <= *target.max_accuracy);
      if (target.max_loss) add(fmt::format("loss at most {:g}", *target.max_loss), j.loss <= *target.max_loss);
      if (target.max_drop) {
        if (!accuracy_of.count(target.drop_from)) judge(target.drop_from);
        const auto from = accuracy_of.find(target.drop_from);
        const double base = from == accuracy_of.end() ? 1.0 : from->second;
        add(fmt::format("at most {:g} point{} below {} ({})", 100 * *target.max_drop, 100 * *target.max_drop == 1 ? "" : "s",
                        target.drop_from, percent(base)),
            from != accuracy_of.end() && j.accuracy >= base - *target.max_drop);
      }
      if (!j.met)
        fail(fmt::format("{}: accuracy {}, mean loss {:.4f} on {} examples, where the target is {}", target.output,
                         percent(j.accuracy), j.loss, j.rows, j.target));
      result.judged.push_back(j);
    }

    // How the model behaves, from the probes' logits.
    for (const BehaviourCheck& check : m.behaviour) {
      if (check.kind == "causal") {
        const auto a = read_logits(check.output, -1), b = read_logits(check.changed, -1);
        if (!a || !b) continue;
        const auto [rows, classes] = logits.at(check.output);
        if (logits.at(check.changed) != logits.at(check.output) || check.position >= rows) {
          fail(fmt::format("the logits '{}' and '{}' do not have the same shape, with more than {} rows", check.output,
                           check.changed, check.position));
          continue;
        }
        double before = 0, after = 0;
        std::int64_t worst = 0;
        for (std::int64_t i = 0; i < rows * classes; ++i) {
          const double change = std::fabs(static_cast<double>((*a)[i]) - (*b)[i]);
          if (i < check.position * classes) {
            if (change > before || std::isnan(change)) before = change, worst = i / classes;
          } else {
            after = std::max(after, change);
          }
        }
        MilestoneResult::Behaved seen{.what = fmt::format("causal: a token changed at position {}", check.position)};
        seen.met = before <= check.tolerance && after > check.tolerance;
        seen.detail = fmt::format("outputs before it changed by at most {:.2g} (allowed {:g}), from it on by up to {:.3g}",
                                before, check.tolerance, after);
        if (!(before <= check.tolerance))  // NaN included
          fail(fmt::format("the model is not causal: changing the token at position {} changed the output at position "
                           "{} by {:.3g} (allowed {:g}); a position must not see the tokens after it",
                           check.position, worst, before, check.tolerance));
        else if (!(after > check.tolerance))
          fail(fmt::format("changing the token at position {} changed no output at all", check.position));
        result.behaved.push_back(seen);
      } else {
        const auto a = read_logits(check.output, -1);
        if (!a) continue;
        const auto [rows, classes] = logits.at(check.output);
        double spread = 0;
        for (std::int64_t t = 1; t < rows; ++t)
          for (std::int64_t c = 0; c < classes; ++c)
            spread = std::max(spread, std::fabs(static_cast<double>((*a)[t * classes + c]) - (*a)[c]));
        MilestoneResult::Behaved seen{.what = "positional: one token repeated"};
        seen.met = spread > 1e-3;
        seen.detail = fmt::format("outputs at positions 1 to {} differ from position 0's by up to {:.3g}", rows - 1, spread);
        if (!seen.met)
          fail(fmt::format("one token repeated gives the same output at every position (the largest difference is "
                           "{:.2g}): the model does not see where a token is",
                           spread));
        result.behaved.push_back(seen);
      }
    }
  }
  result.passed = result.problem.empty();
  result.plot = out / "loss.svg";
  write_if_changed(result.plot, loss_curve_svg(result));
  if (std::count_if(result.judged.begin(), result.judged.end(), [](const auto& j) { return j.bytes > 0; }) >= 2) {
    result.tradeoff = out / "tradeoff.svg";
    write_if_changed(result.tradeoff, tradeoff_svg(result));
  }
  return result;
}

std::vector<fs::path> build_trainers(const Workspace& ws, const std::vector<const Milestone*>& chosen, bool solution,
                                    bool verbose) {
  // One optimised build for every milestone: the trainers train for minutes, and -O2 pays.
  const fs::path build_dir = ws.build_dir("milestone");
  const auto lock = lock_build_dir(build_dir);
  CourseBuild build(ws.course, build_dir, ws.kiln_home, "-O2 -march=native -DNDEBUG");
  build.set_device_builds(false);
  std::vector<std::string> names;
  for (const Milestone* m : chosen) {
    // The libraries of the variant: every module it names and their prerequisites, the highest
    // number first (a static library comes before the libraries it uses).
    const std::string variant = solution ? "solution" : "student";
    std::set<int> numbers;
    for (int n : m->modules) {
      numbers.insert(n);
      for (const Module* dep : ws.course.prerequisites(*ws.course.by_number(n))) numbers.insert(dep->number);
    }
    std::vector<std::string> libraries;
    for (auto it = numbers.rbegin(); it != numbers.rend(); ++it)
      libraries.push_back(CourseBuild::library_target(*ws.course.by_number(*it), variant));
    std::vector<fs::path> sources = m->sources;
    sources.push_back(ws.course.root / "milestones" / "support" / "milestone.cpp");
    const std::string name = fmt::format("milestone_{}__{}", m->id, variant);
    build.add_program({name, sources, {ws.course.root / "milestones" / "support"}, libraries});
    names.push_back(name);
  }
  BuildResult built;
  std::fprintf(stderr, "Building the trainers (optimised; the first build takes a minute)...\n");
  if (!build.build_named(standard_targets(ws.course), names, built)) {
    const std::string where = built.error && !built.error->file.empty()
                                  ? fmt::format("{}:{}: ", relative_to(ws.course.root, built.error->file.string()),
                                                built.error->line)
                                  : "";
    if (verbose) std::fputs(built.log.c_str(), stderr);
    throw CourseError(fmt::format("the trainers do not build: {}{}. `grader check` on their modules shows why "
                                  "(-v: the compiler's whole output)",
                                  where, built.error ? built.error->message : ""));
  }

  std::vector<fs::path> out;
  for (const auto& name : names) out.push_back(build.dir() / name);
  return out;
}

std::string tradeoff_svg(const MilestoneResult& r) {
  // Accuracy against weight bytes, one point per output that has both; bytes on a log scale.
  const double w = 760, h = 420, left = 70, right = 40, top = 56, bottom = 56;
  double b0 = 1e300, b1 = 0, a0 = 1, a1 = 0;
  for (const auto& j : r.judged)
    if (j.bytes > 0) b0 = std::min(b0, double(j.bytes)), b1 = std::max(b1, double(j.bytes)), a0 = std::min(a0, j.accuracy),
                     a1 = std::max(a1, j.accuracy);
  const double lx0 = std::floor(std::log10(b0) * 2) / 2, lx1 = std::ceil(std::log10(b1) * 2) / 2 + (b0 == b1 ? 0.5 : 0);
  const double ya = std::max(0.0, std::floor(a0 * 10) / 10), yb = std::min(1.0, std::ceil(a1 * 20 + 0.01) / 20);
  auto px = [&](double bytes) { return left + (std::log10(bytes) - lx0) / (lx1 - lx0) * (w - left - right); };
  auto py = [&](double acc) { return h - bottom - (acc - ya) / std::max(1e-9, yb - ya) * (h - top - bottom); };
  std::string s = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
                              "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
                              "<text x=\"{}\" y=\"22\" font-size=\"14\" font-weight=\"bold\">{}</text>\n"
                              "<text x=\"{}\" y=\"38\" fill=\"#4a5568\">test accuracy against the bytes of the weights, {} run</text>\n",
                              w, h, left, xml_escape(r.title), left, r.run);
  for (double e = std::ceil(lx0); e <= lx1 + 1e-9; e += 1)
    for (const double m : {1.0, 2.0, 5.0}) {
      const double bytes = m * std::pow(10.0, e);
      if (std::log10(bytes) > lx1 + 1e-9) continue;
      const std::string label = bytes >= 1e6 ? fmt::format("{:g} MB", bytes / 1e6) : fmt::format("{:g} kB", bytes / 1e3);
      s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e2e8f0\"/><text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       px(bytes), top, h - bottom, h - bottom + 16, label);
    }
  for (double a = ya; a <= yb + 1e-9; a += (yb - ya > 0.3 ? 0.1 : 0.05))
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e2e8f0\"/><text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:.0f}%</text>\n",
                     left, py(a), w - right, py(a), left - 6, py(a) + 4, 100 * a);
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">weight bytes (log scale)</text>\n", (left + w - right) / 2, h - 16);
  s += fmt::format("<text x=\"18\" y=\"{0}\" transform=\"rotate(-90 18 {0})\" text-anchor=\"middle\">test accuracy</text>\n", (top + h - bottom) / 2);
  // Each label takes the first of eight places around its point whose box meets no label placed
  // before it and no point (boxes estimated at 7 pixels a character, 14 high).
  struct Box {
    double x0, y0, x1, y1;
    bool meets(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  };
  std::vector<Box> taken;
  for (const auto& j : r.judged)
    if (j.bytes > 0) taken.push_back({px(double(j.bytes)) - 6, py(j.accuracy) - 6, px(double(j.bytes)) + 6, py(j.accuracy) + 6});
  for (const auto& j : r.judged) {
    if (j.bytes <= 0) continue;
    const double x = px(double(j.bytes)), y = py(j.accuracy);
    const std::string label = j.output + " " + percent(j.accuracy);
    const double width = 7.0 * static_cast<double>(label.size()), height = 14;
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>\n", x, y, j.met ? "#2b6cb0" : "#c05621");
    const std::pair<double, double> places[] = {{8, -height / 2}, {-8 - width, -height / 2}, {4, -height - 8}, {-width - 4, -height - 8},
                                                {4, 8}, {-width - 4, 8}, {-width / 2, -height - 10}, {-width / 2, 10}};
    Box chosen{x + 8, y - height / 2, x + 8 + width, y + height / 2};
    for (const auto& [dx, dy] : places) {
      const Box b{x + dx, y + dy, x + dx + width, y + dy + height};
      if (b.x0 < left || b.x1 > w - 4 || b.y0 < top - 12 || b.y1 > h - bottom) continue;
      if (std::none_of(taken.begin(), taken.end(), [&](const Box& t) { return t.meets(b); })) {
        chosen = b;
        break;
      }
    }
    taken.push_back(chosen);
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", chosen.x0, chosen.y1 - 3, xml_escape(label));
  }
  return s + "</svg>\n";
}

namespace {

// A round step for about five gridlines from 0 to `highest`: 1, 2, 2.5 or 5 times a power of ten.
double round_step(double highest) {
  const double wanted = highest / 5, scale = std::pow(10.0, std::floor(std::log10(wanted)));
  for (const double m : {1.0, 2.0, 2.5, 5.0})
    if (m * scale >= wanted * (1 - 1e-9)) return m * scale;
  return 10 * scale;
}

}  // namespace

std::string loss_curve_svg(const MilestoneResult& r) {
  const double w = 720, h = 360, left = 60, right = 20, top = 40, bottom = 50;
  double x1 = 1, highest = 0;
  for (const auto& [x, y] : r.curve) x1 = std::max(x1, x), highest = std::max(highest, y);
  for (const auto& j : r.judged) highest = std::max(highest, j.loss);
  if (!(highest > 0) || !std::isfinite(highest)) highest = 1;
  // The axis ends at the first round value at or above the highest loss, with a gridline at each step.
  const double step = round_step(highest);
  const int steps = std::max(1, static_cast<int>(std::ceil(highest / step - 1e-9)));
  const double y1 = step * steps;
  auto px = [&](double x) { return left + x / x1 * (w - left - right); };
  auto py = [&](double y) { return h - bottom - std::clamp(y, 0.0, y1) / y1 * (h - top - bottom); };
  std::string s = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
                              "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
                              "<text x=\"{}\" y=\"24\" font-size=\"15\" font-weight=\"bold\">{} ({} run): training loss</text>\n",
                              w, h, left, xml_escape(r.title), r.run);
  for (int i = 0; i <= steps; ++i) {
    const double y = step * i;
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#e2e8f0\"/><text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{:g}</text>\n",
                     left, py(y), w - right, py(y), left - 6, py(y) + 4, y);
  }
  // An epoch tick every 1, 2, 5, 10, 20, ... epochs: a dozen labels at most.
  int every = 1;
  for (int scale = 1; std::ceil(x1) / every > 12; scale *= 10)
    for (const int step : {1, 2, 5})
      if (std::ceil(x1) / every > 12) every = step * scale;
  for (int e = 0; e <= static_cast<int>(std::ceil(x1)); e += every) {
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e2e8f0\"/><text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                     px(e), top, h - bottom, h - bottom + 16, e);
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">epoch</text>\n", (left + w - right) / 2, h - 14);
  s += fmt::format("<text x=\"16\" y=\"{0}\" transform=\"rotate(-90 16 {0})\" text-anchor=\"middle\">loss (nats)</text>\n", (top + h - bottom) / 2);
  // Every step's loss, thin; a running mean over about 1% of the steps, thick.
  std::string raw, smooth;
  const std::size_t window = std::max<std::size_t>(1, r.curve.size() / 100);
  double sum = 0;
  // At most about 2,000 points of each line: a picture, not a data file.
  const std::size_t stride = std::max<std::size_t>(1, r.curve.size() / 2000);
  for (std::size_t i = 0; i < r.curve.size(); ++i) {
    sum += r.curve[i].second;
    if (i >= window) sum -= r.curve[i - window].second;
    if (i % stride != 0 && i + 1 != r.curve.size()) continue;
    raw += fmt::format("{:.1f},{:.1f} ", px(r.curve[i].first), py(r.curve[i].second));
    if (i + 1 >= window) smooth += fmt::format("{:.1f},{:.1f} ", px(r.curve[i].first), py(sum / static_cast<double>(window)));
  }
  s += fmt::format("<polyline fill=\"none\" stroke=\"#90cdf4\" stroke-width=\"1\" points=\"{}\"/>\n", raw);
  s += fmt::format("<polyline fill=\"none\" stroke=\"#2b6cb0\" stroke-width=\"2.5\" points=\"{}\"/>\n", smooth);
  // The test loss the grader computed, at the end.
  double legend_y = top + 14;
  for (const auto& j : r.judged) {
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"#c05621\"/>\n", px(x1), py(j.loss));
    // An output named "test" is the test set itself: "test loss", not "test: test loss".
    const std::string of = j.output == "test" ? "" : xml_escape(j.output) + ": ";
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#c05621\">{}test loss {:.3f}, accuracy {}</text>\n",
                     w - right - 4, legend_y, of, j.loss, percent(j.accuracy));
    legend_y += 16;
  }
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" fill=\"#2b6cb0\">training loss per step, and its running mean</text>\n",
                   w - right - 4, legend_y);
  return s + "</svg>\n";
}

}  // namespace kiln::grader
