// Running a milestone: the trainers built against the student's modules (or the solutions), one
// trainer's run with its events collected, then the grader's judgement of what it did, a step a
// function, and its pictures.
#include "kiln/grader/milestone.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/build.h"
#include "kiln/grader/process.h"
#include "kiln/grader/report.h"

namespace kiln::grader {

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

// Keeps the first reason a run does not pass: the one the student reads.
void fail(MilestoneResult& result, std::string why) {
  if (result.problem.empty()) result.problem = std::move(why);
}

// What the trainer's events said.
struct Events {
  int epochs = 1;
  std::int64_t steps_per_epoch = 1;
  std::vector<std::pair<double, double>> curve;  // (epoch as a fraction, loss) per step
  std::vector<std::pair<std::size_t, std::string>> models;  // where each model's steps start in curve
  std::vector<double> first_losses;              // the first steps', as many as the golden trajectory has
  std::vector<std::pair<int, double>> epoch_losses;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> logits;  // name -> rows, classes
  std::map<std::string, std::vector<std::pair<std::string, std::int64_t>>> parameters;  // which -> (name, numel)
  std::map<std::string, std::int64_t> sizes;     // output -> weight bytes
  std::vector<std::string> notes;
};

// Takes one event line into `events`, and shows the person watching how training goes.
void take_event(std::string_view line, std::size_t golden_steps, Events& events, Progress& progress) {
  const auto e = nlohmann::json::parse(line, nullptr, false);
  if (!e.is_object()) return;
  const std::string event = e.value("event", "");
  if (event == "begin") {
    events.epochs = std::max(1, e.value("epochs", 1));
    events.steps_per_epoch = std::max<std::int64_t>(1, e.value("steps_per_epoch", std::int64_t{1}));
  } else if (event == "step") {
    const int epoch = e.value("epoch", 1);
    const std::int64_t step = e.value("step", std::int64_t{0});
    const double loss = e.value("loss", 0.0);
    const double at = (epoch - 1) + static_cast<double>(step) / static_cast<double>(events.steps_per_epoch);
    events.curve.emplace_back(at, loss);
    if (events.first_losses.size() < golden_steps) events.first_losses.push_back(loss);
    progress.update(epoch, events.epochs, at / events.epochs, loss);
  } else if (event == "epoch") {
    events.epoch_losses.emplace_back(e.value("epoch", 0), e.value("loss", 0.0));
    progress.line(fmt::format("{}epoch {}: mean training loss {:.4f} ({:.1f} s)",
                              events.models.empty() ? "" : events.models.back().second + ", ", e.value("epoch", 0),
                              e.value("loss", 0.0), e.value("seconds", 0.0)));
  } else if (event == "model") {
    events.models.emplace_back(events.curve.size(), e.value("name", ""));
  } else if (event == "logits") {
    events.logits[e.value("name", "")] = {e.value("rows", std::int64_t{0}), e.value("classes", std::int64_t{0})};
  } else if (event == "parameters") {
    auto& list = events.parameters[e.value("which", "")];
    list.clear();
    for (const auto& t : e.value("tensors", nlohmann::json::array()))
      list.emplace_back(t.value("name", ""), t.value("numel", std::int64_t{0}));
  } else if (event == "size") {
    events.sizes[e.value("name", "")] = e.value("bytes", std::int64_t{-1});
  } else if (event == "note") {
    events.notes.push_back(e.value("text", ""));
    progress.line(e.value("text", ""));
  }
}

// The trainer's command line: the run's settings, the data set (which must be installed), OUT.
std::vector<std::string> trainer_argv(const Milestone& m, const MilestoneRun& run, const fs::path& binary,
                                      const fs::path& out) {
  std::vector<std::string> argv = {binary.string()};
  argv.insert(argv.end(), run.args.begin(), run.args.end());
  if (!m.data.dir.empty()) {
    const fs::path needed = m.data.format == LabelFormat::text ? m.data.dir / m.data.corpus.front() : m.data.test_labels;
    if (!fs::exists(needed))
      throw CourseError(fmt::format("the data set {} is not installed ({} is missing): bin/grader installs it",
                                    m.data.name, needed.string()));
    argv.insert(argv.end(), {"--data", m.data.dir.string()});
  }
  argv.insert(argv.end(), {"--out", out.string()});
  return argv;
}

// A trainer's run: how its process ended, what its events said, and how long it took.
struct Trained {
  ProcessResult process;
  Events events;
  double seconds = 0;
};

// Starts the trainer in OUT and collects its events until it ends or its time is up.
Trained run_trainer(const std::vector<std::string>& argv, const fs::path& out, const MilestoneRun& run,
                    const MilestoneCommand& cmd) {
  if (cmd.verbose) std::fprintf(stderr, "  KILN_MILESTONE_FD=3 %s\n", shell_quote(argv).c_str());
  Trained trained;
  Progress progress(cmd.format == "text", isatty(STDERR_FILENO) && cmd.format == "text");
  ProcessSpec spec{.argv = argv, .cwd = out, .env = {{"KILN_MILESTONE_FD", "3"}, {"OMP_NUM_THREADS", "1"}},
                   .output_cap = 1 << 20};
  spec.event_fd = 3;
  spec.on_event = [&](std::string_view line) { take_event(line, run.golden.size(), trained.events, progress); };
  spec.should_stop = [&](double elapsed) { return elapsed > run.timeout_s; };
  const auto started = std::chrono::steady_clock::now();
  trained.process = run_process(spec);
  progress.end();
  trained.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return trained;
}

// Judges how the trainer ended: an unwritten function of the student's library (say which, and
// where to go first), its time running out, a crash, an exit code.
void judge_exit(const ProcessResult& r, const Workspace& ws, const Milestone& m, const MilestoneRun& run,
                MilestoneResult& result) {
  const std::string text = r.err + r.err_tail;
  if (const auto at = text.find("not written yet: "); at != std::string::npos && !r.ok()) {
    const std::string what = text.substr(at, text.find('\n', at) - at);
    fail(result, fmt::format("the trainer needs a function of your library that is {}. Finish the modules it builds on "
                             "first (`grader check {}` and the modules it requires)",
                             relative_to(ws.course.root, what), ws.course.by_number(m.modules.back())->number_text()));
  }
  if (r.stopped) fail(result, fmt::format("stopped after {:.0f} s, the run's time limit", run.timeout_s));
  else if (r.signal)
    fail(result, "the trainer crashed: " + describe_signal(r.signal) + "\n" +
                     r.err_tail.substr(r.err_tail.size() > 2000 ? r.err_tail.size() - 2000 : 0));
  else if (r.exit_code != 0) {
    std::string tail = r.err.size() > 2000 ? r.err.substr(r.err.size() - 2000) : r.err;
    fail(result, fmt::format("the trainer ended with exit code {}: {}", r.exit_code, tail));
  }
}

// Where to look when the first steps differ: of the modules the trainer uses (and what they
// build on), those changed since their checks last all passed, and those whose checks do not all
// pass (grader status knows both). "" when every one passed as it is now.
std::string suspects(const Workspace& ws, const Milestone& m) {
  std::vector<const Module*> used;
  for (int n : m.modules) {
    const Module* module = ws.course.by_number(n);
    if (!module) continue;
    for (const Module* dep : ws.course.prerequisites(*module))
      if (std::find(used.begin(), used.end(), dep) == used.end()) used.push_back(dep);
    if (std::find(used.begin(), used.end(), module) == used.end()) used.push_back(module);
  }
  const auto progress = load_progress(ws);
  std::string changed, failing;
  for (const Module* module : used) {
    const auto entry = progress.find(module->name());
    const bool same = entry != progress.end() && entry->second.fingerprint == fingerprint(*module, module->dir);
    if (entry != progress.end() && entry->second.all_passed && !same)
      changed += (changed.empty() ? "" : ", ") + module->number_text();
    else if (!same || !entry->second.all_passed)
      failing += (failing.empty() ? "" : ", ") + module->number_text();
  }
  std::string out;
  if (!changed.empty()) out += " Changed since their checks last all passed: " + changed + ".";
  if (!failing.empty()) out += " Not known to pass all their checks as they are now: " + failing + ".";
  if (!out.empty()) out += " `grader status` shows each; run `grader check` on them first.";
  return out;
}

// Judges the golden first steps: a correct library, seeded the same way, computes these losses.
void judge_first_steps(const Workspace& ws, const Milestone& m, const MilestoneRun& run, bool solution,
                       MilestoneResult& result) {
  if (run.golden.empty()) return;
  if (result.first_losses.size() < run.golden.size())
    fail(result, "the trainer reported fewer steps than the golden trajectory has");
  for (std::size_t i = 0; i < std::min(result.first_losses.size(), run.golden.size()); ++i) {
    if (std::fabs(result.first_losses[i] - run.golden[i]) > run.golden_tolerance) {
      fail(result, fmt::format("step {}'s loss is {:.7f}, and a correct library's is {:.7f}: the seeded first steps "
                               "must match to {:g} (the initialisation, the shuffle, the loss or the optimizer differs).{}",
                               i + 1, result.first_losses[i], run.golden[i], run.golden_tolerance,
                               solution ? "" : suspects(ws, m)));
      break;
    }
  }
}

// Judges that every parameter moved during training, from the files of its values before and after.
void judge_parameters(const Events& events, const fs::path& out, MilestoneResult& result) {
  const auto reported = [&](const std::string& which) {
    const auto found = events.parameters.find(which);
    return found == events.parameters.end() ? std::vector<std::pair<std::string, std::int64_t>>{} : found->second;
  };
  const auto initial = reported("initial"), final_ = reported("final");
  if (initial.empty() || initial != final_) {
    fail(result, "the trainer did not report the same parameters before and after training");
    return;
  }
  const std::vector<float> before = read_floats(out / "parameters-initial.f32");
  const std::vector<float> after = read_floats(out / "parameters-final.f32");
  std::size_t at = 0;
  for (const auto& [name, numel] : initial) {
    double largest = 0;
    for (std::int64_t k = 0; k < numel && at + static_cast<std::size_t>(k) < std::min(before.size(), after.size()); ++k)
      largest = std::max(largest, static_cast<double>(std::fabs(after[at + k] - before[at + k])));
    at += static_cast<std::size_t>(numel);
    result.moved.emplace_back(name, largest);
    if (!(largest > 1e-7)) fail(result, fmt::format("the parameter {} did not move during training", name));
  }
  if (at != before.size() || at != after.size()) fail(result, "the parameter files do not hold what the trainer reported");
}

// The labels the logits are judged against, as the grader reads them itself (by the data set's
// format), and a text's vocabulary: the number of classes every row must have (0: not a text).
struct TestLabels {
  std::vector<std::int64_t> labels;
  std::int64_t vocabulary = 0;
};

TestLabels test_labels(const Milestone& m) {
  if (!m.labels.empty()) return {m.labels};
  switch (m.data.format) {
    case LabelFormat::text: {
      auto [ids, size] = read_fortunes_held_out(m.data.dir, m.data.corpus);
      // Row r of a text's logits predicts its character r + 1.
      return {{ids.begin() + (ids.empty() ? 0 : 1), ids.end()}, size};
    }
    case LabelFormat::digits_csv: return {read_digits_held_out_labels(m.data.test_labels)};
    case LabelFormat::idx: return {read_idx_labels(m.data.test_labels)};
    case LabelFormat::none: break;
  }
  return {};
}

// The trainer's logits: each output's read and checked for shape, then measured against the labels.
class Logits {
 public:
  Logits(const Events& events, const fs::path& out, TestLabels labels, std::int64_t test_count, MilestoneResult& result)
      : events_(events), out_(out), labels_(std::move(labels)), result_(result),
        expected_rows_(test_count ? test_count : static_cast<std::int64_t>(labels_.labels.size())) {}

  // One output's logits, checked for shape (rows_expected -1: any number of rows); nothing, and
  // the problem said, when they are missing or malformed.
  std::optional<std::vector<float>> read(const std::string& name, std::int64_t rows_expected) {
    const auto found = events_.logits.find(name);
    if (found == events_.logits.end()) {
      fail(result_, fmt::format("the trainer wrote no logits called '{}'", name));
      return std::nullopt;
    }
    const auto [rows, classes] = found->second;
    const std::int64_t vocabulary = labels_.vocabulary;
    std::vector<float> values = read_floats(out_ / ("logits-" + name + ".f32"));
    if ((rows_expected >= 0 && rows != rows_expected) || rows < 1 || classes < 2 ||
        (vocabulary && classes != vocabulary) || static_cast<std::int64_t>(values.size()) != rows * classes) {
      fail(result_, fmt::format("the logits '{}' have {} rows of {} classes ({} values), where {} rows{} were expected",
                                name, rows, classes, values.size(), rows_expected >= 0 ? std::to_string(rows_expected) : "some",
                                vocabulary ? fmt::format(" of {} classes", vocabulary) : ""));
      return std::nullopt;
    }
    return values;
  }

  // One output's accuracy and mean loss against the labels, with its weight bytes.
  std::optional<MilestoneResult::Judged> measure(const std::string& name) {
    const auto values = read(name, expected_rows_);
    if (!values) return std::nullopt;
    const auto [rows, classes] = shape(name);
    if (rows > static_cast<std::int64_t>(labels_.labels.size())) {
      fail(result_, fmt::format("the logits '{}' have {} rows, and there are only {} labels", name, rows,
                                labels_.labels.size()));
      return std::nullopt;
    }
    const auto [accuracy, loss] = accuracy_and_loss(*values, rows, classes, labels_.labels);
    accuracy_of_[name] = accuracy;
    const auto size = events_.sizes.find(name);
    return MilestoneResult::Judged{.output = name, .rows = rows, .accuracy = accuracy, .loss = loss,
                                   .bytes = size == events_.sizes.end() ? -1 : size->second};
  }

  // An output's accuracy, measuring it first when it has not been; nothing when it cannot be.
  std::optional<double> accuracy(const std::string& name) {
    if (!accuracy_of_.count(name)) measure(name);
    const auto found = accuracy_of_.find(name);
    return found == accuracy_of_.end() ? std::nullopt : std::optional<double>(found->second);
  }

  std::pair<std::int64_t, std::int64_t> shape(const std::string& name) const { return events_.logits.at(name); }

 private:
  const Events& events_;
  fs::path out_;
  TestLabels labels_;
  MilestoneResult& result_;
  std::int64_t expected_rows_;
  std::map<std::string, double> accuracy_of_;
};

// Judges the outputs' accuracy and loss against the run's targets, from the logits the trainer
// wrote and the labels the grader reads itself.
void judge_targets(const std::vector<LogitsTarget>& targets, Logits& logits, MilestoneResult& result) {
  for (const LogitsTarget& target : targets) {
    auto judged = logits.measure(target.output);
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
      const std::optional<double> from = logits.accuracy(target.drop_from);
      const double base = from.value_or(1.0);
      add(fmt::format("at most {:g} point{} below {} ({})", 100 * *target.max_drop, 100 * *target.max_drop == 1 ? "" : "s",
                      target.drop_from, percent(base)),
          from && j.accuracy >= base - *target.max_drop);
    }
    if (!j.met)
      fail(result, fmt::format("{}: accuracy {}, mean loss {:.4f} on {} examples, where the target is {}", target.output,
                               percent(j.accuracy), j.loss, j.rows, j.target));
    result.judged.push_back(j);
  }
}

// Judges that the model is causal: a token changed at `position` changes no output before it, and
// some output from it on.
void judge_causal(const BehaviourCheck& check, Logits& logits, MilestoneResult& result) {
  const auto a = logits.read(check.output, -1), b = logits.read(check.changed, -1);
  if (!a || !b) return;
  const auto [rows, classes] = logits.shape(check.output);
  if (logits.shape(check.changed) != logits.shape(check.output) || check.position >= rows) {
    fail(result, fmt::format("the logits '{}' and '{}' do not have the same shape, with more than {} rows", check.output,
                             check.changed, check.position));
    return;
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
    fail(result, fmt::format("the model is not causal: changing the token at position {} changed the output at "
                             "position {} by {:.3g} (allowed {:g}); a position must not see the tokens after it",
                             check.position, worst, before, check.tolerance));
  else if (!(after > check.tolerance))
    fail(result, fmt::format("changing the token at position {} changed no output at all", check.position));
  result.behaved.push_back(seen);
}

// Judges that the model sees position: one token repeated does not give the same output everywhere.
void judge_positional(const BehaviourCheck& check, Logits& logits, MilestoneResult& result) {
  const auto a = logits.read(check.output, -1);
  if (!a) return;
  const auto [rows, classes] = logits.shape(check.output);
  double spread = 0;
  for (std::int64_t t = 1; t < rows; ++t)
    for (std::int64_t c = 0; c < classes; ++c)
      spread = std::max(spread, std::fabs(static_cast<double>((*a)[t * classes + c]) - (*a)[c]));
  MilestoneResult::Behaved seen{.what = "positional: one token repeated"};
  seen.met = spread > 1e-3;
  seen.detail = fmt::format("outputs at positions 1 to {} differ from position 0's by up to {:.3g}", rows - 1, spread);
  if (!seen.met)
    fail(result, fmt::format("one token repeated gives the same output at every position (the largest difference is "
                             "{:.2g}): the model does not see where a token is",
                             spread));
  result.behaved.push_back(seen);
}

// Draws the loss curve, and accuracy against weight bytes when two outputs or more have a size.
void draw(MilestoneResult& result, const fs::path& out) {
  // A run that reported no step has no curve to draw, and shows none.
  if (!result.curve.empty()) {
    result.plot = out / "loss.svg";
    write_if_changed(result.plot, loss_curve_svg(result));
  }
  if (std::count_if(result.judged.begin(), result.judged.end(), [](const auto& j) { return j.bytes > 0; }) >= 2) {
    result.tradeoff = out / "tradeoff.svg";
    write_if_changed(result.tradeoff, tradeoff_svg(result));
  }
}

}  // namespace

MilestoneResult run_milestone(const Workspace& ws, const Milestone& m, const MilestoneCommand& cmd, const fs::path& binary) {
  const std::string run_name = cmd.quick ? "quick" : "full";
  const MilestoneRun& run = m.runs.at(run_name);
  MilestoneResult result{.id = m.id, .title = m.title, .run = run_name};
  const fs::path out = ws.state_dir() / "milestones" / m.id / run_name;  // quick and full kept apart
  fs::remove_all(out);
  fs::create_directories(out);

  const Trained trained = run_trainer(trainer_argv(m, run, binary, out), out, run, cmd);
  const Events& events = trained.events;
  result.seconds = trained.seconds;
  result.curve = events.curve;
  result.models = events.models;
  result.first_losses = events.first_losses;
  result.epoch_losses = events.epoch_losses;
  result.notes = events.notes;
  result.golden = run.golden;

  judge_exit(trained.process, ws, m, run, result);
  if (trained.process.ok()) {
    judge_first_steps(ws, m, run, cmd.solution, result);
    judge_parameters(events, out, result);
    Logits logits(events, out, test_labels(m), run.test_count, result);
    judge_targets(cmd.quick ? m.quick_targets : m.targets, logits, result);
    for (const BehaviourCheck& check : m.behaviour)
      (check.kind == "causal" ? judge_causal : judge_positional)(check, logits, result);
  }
  result.passed = result.problem.empty();
  draw(result, out);
  return result;
}

}  // namespace kiln::grader
