// grader milestone: train the chosen milestones' models and report what the grader judged.
#include <cstdio>
#include <fstream>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli.h"
#include "kiln/grader/milestone.h"
#include "kiln/grader/report.h"

namespace kiln::grader {

namespace {

std::string percent(double fraction) { return fmt::format("{:.2f}%", 100 * fraction); }

std::string render_text(const MilestoneResult& r) {
  std::string out = fmt::format("\n{} {} ({} run, {:.1f} s)\n", r.passed ? "✓" : "✗", r.title, r.run, r.seconds);
  for (const auto& j : r.judged)
    out += fmt::format("    {}: accuracy {} on {} examples, mean loss {:.4f} nats{} (target {}) {}\n", j.output,
                       percent(j.accuracy), j.rows, j.loss,
                       j.bytes >= 0 ? fmt::format(", {} weight bytes", j.bytes) : "", j.target, j.met ? "✓" : "✗");
  for (const auto& b : r.behaved) out += fmt::format("    {}: {} {}\n", b.what, b.detail, b.met ? "✓" : "✗");
  if (!r.first_losses.empty() && !r.golden.empty()) {
    std::string steps;
    for (std::size_t i = 0; i < r.first_losses.size(); ++i)
      steps += fmt::format("{}{:.7f} (golden {:.7f})", i ? ", " : "", r.first_losses[i], r.golden[i]);
    out += "    first steps: " + steps + "\n";
  }
  if (!r.moved.empty()) {
    double smallest = std::numeric_limits<double>::infinity();
    std::string which;
    for (const auto& [name, change] : r.moved)
      if (change < smallest) smallest = change, which = name;
    out += fmt::format("    {} parameter tensors moved; the least: {} by up to {:.3g}\n", r.moved.size(), which, smallest);
  }
  if (!r.problem.empty()) out += "    " + wrap(r.problem, terminal_width(), "    ") + "\n";
  if (!r.plot.empty()) out += fmt::format("    loss curve: {}\n", r.plot.string());
  if (!r.tradeoff.empty()) out += fmt::format("    accuracy against size: {}\n", r.tradeoff.string());
  return out;
}

nlohmann::json to_json(const MilestoneResult& r) {
  nlohmann::json judged = nlohmann::json::array();
  for (const auto& j : r.judged)
    judged.push_back({{"output", j.output}, {"rows", j.rows}, {"accuracy", j.accuracy}, {"loss", j.loss},
                      {"target", j.target}, {"met", j.met}, {"bytes", j.bytes}});
  nlohmann::json behaved = nlohmann::json::array();
  for (const auto& b : r.behaved) behaved.push_back({{"check", b.what}, {"detail", b.detail}, {"met", b.met}});
  nlohmann::json moved = nlohmann::json::object();
  for (const auto& [name, change] : r.moved) moved[name] = change;
  return {{"id", r.id},       {"title", r.title},          {"run", r.run},         {"passed", r.passed},
          {"problem", r.problem}, {"seconds", r.seconds},  {"judged", judged},     {"behaviour", behaved}, {"moved", moved},
          {"first_losses", r.first_losses}, {"golden", r.golden}, {"epoch_losses", r.epoch_losses},
          {"notes", r.notes}, {"plot", r.plot.string()}, {"tradeoff", r.tradeoff.string()}};
}

// Puts what a passing full run made into the student's modules (Milestone::installs), the
// module's files backed up first as `grader reset` does; returns what it did, a line each.
std::string install(const Workspace& ws, const Milestone& m, const MilestoneResult& r, const MilestoneCommand& cmd) {
  std::string said;
  for (const auto& i : m.installs) {
    const fs::path made = ws.state_dir() / "milestones" / m.id / r.run / i.file;  // the run's folder
    const Module* module = ws.course.by_number(i.module);
    if (!module || !fs::exists(made)) continue;
    const fs::path to = module->dir / i.to;
    const std::string shown = fs::relative(to, ws.course.root).generic_string();
    if (cmd.solution || cmd.quick || !r.passed) {
      said += fmt::format("    {} is in {}; {} puts it in {}\n", i.file, made.string(),
                          "a passing full run of your own modules (no --quick, no --solution)", shown);
      continue;
    }
    const fs::path saved = back_up(ws, *module);
    said += fmt::format("    your module {} files as they were are in {} (grader reset {} --restore {} puts them back)\n",
                        module->number_text(), fs::relative(saved, ws.course.root).generic_string(),
                        module->number_text(), saved.filename().string());
    const fs::path partial = to.string() + ".part";
    fs::copy_file(made, partial, fs::copy_options::overwrite_existing);
    fs::rename(partial, to);  // whole or not at all
    said += fmt::format("    wrote {}: run grader check {:02}\n", shown, i.module);
  }
  return said;
}

}  // namespace

int run_milestone_command(const Workspace& ws, const MilestoneCommand& cmd) {
  const std::vector<Milestone> all = load_milestones(ws.course);
  std::vector<const Milestone*> chosen;
  for (const auto& m : all) {
    const bool named = cmd.names.empty() ||
                       std::find_if(cmd.names.begin(), cmd.names.end(), [&](const std::string& n) {
                         return n == m.id || n == fmt::format("{:02}", m.order) || n == std::to_string(m.order) ||
                                n == m.dir.filename().string();
                       }) != cmd.names.end();
    if (named) chosen.push_back(&m);
  }
  if (chosen.empty()) {
    std::string known;
    for (const auto& m : all) known += (known.empty() ? "" : ", ") + m.id;
    throw CourseError(all.empty() ? "this course has no milestones yet (milestones/NN_id/milestone.yaml)"
                                  : "no milestone is called that; the milestones are: " + known);
  }
  if (cmd.solution) require_solutions(ws, "milestone --solution");

  const std::vector<fs::path> trainers = build_trainers(ws, chosen, cmd.solution, cmd.verbose);
  bool all_passed = true;
  nlohmann::json results = nlohmann::json::array();
  std::string text;
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    const Milestone& m = *chosen[i];
    std::fprintf(stderr, "\n%s (%s run): %s\n", m.title.c_str(), cmd.quick ? "quick" : "full", m.summary.c_str());
    const MilestoneResult r = run_milestone(ws, m, cmd, trainers[i]);
    all_passed = all_passed && r.passed;
    results.push_back(to_json(r));
    const std::string installed = install(ws, m, r, cmd);
    text += render_text(r) + installed;
    if (cmd.format == "text") std::fputs((render_text(r) + installed).c_str(), stdout);
    std::fflush(stdout);
  }
  if (cmd.format == "json") std::fputs((results.dump(2) + "\n").c_str(), stdout);
  if (!cmd.out.empty()) std::ofstream(cmd.out) << (cmd.format == "json" ? results.dump(2) + "\n" : text);
  return all_passed ? 0 : 1;
}

namespace cli {

void add_milestone_command(CLI::App& app, Chosen& chosen) {
  auto* sub = app.add_subcommand("milestone", "Train a model built only from your modules on real data, and judge what it learned");
  auto milestone = std::make_shared<MilestoneCommand>();
  sub->add_option("names", milestone->names, "Milestones by id or number (default: every one whose module exists)");
  sub->add_flag("--solution", milestone->solution, "Train with the reference solutions (instructors)");
  sub->add_flag("--quick", milestone->quick, "The short run: fewer epochs on part of the data (what CI runs)");
  sub->add_option("--format", milestone->format, "Report format")->check(CLI::IsMember({"text", "json"}));
  sub->add_option("--out", milestone->out, "Also write the report to this file");
  sub->add_flag("-v,--verbose", milestone->verbose, "Print the build and run commands");
  on_workspace(sub, chosen, [milestone](const Workspace& ws) { return run_milestone_command(ws, *milestone); });
}

}  // namespace cli

}  // namespace kiln::grader
