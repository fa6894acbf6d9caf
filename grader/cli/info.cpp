// The commands that only read the course: hint, list, status, start.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "cli.h"

namespace kiln::grader {

namespace {

void print(const std::string& text) { std::fputs(text.c_str(), stdout); }

std::string requires_text(const Course& course, const Module& m) {
  if (m.requires_.empty()) return "none";
  std::string out;
  for (int n : m.requires_) {
    const Module* dep = course.by_number(n);
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", dep->number_text(), dep->title);
  }
  return out;
}

// The functions still to write in a file: the signature line above each NotImplemented (or, in
// kernels, KILN_NOT_IMPLEMENTED).
std::vector<std::pair<int, std::string>> stubs_in(const fs::path& file) {
  std::vector<std::pair<int, std::string>> out;
  std::ifstream in(file);
  std::string line, signature;
  int signature_line = 0;
  for (int n = 1; std::getline(in, line); ++n) {
    // A definition starts at column 0 with a parameter list: `Tensor Tensor::reshape(Shape shape) const {`.
    if (!line.empty() && std::isalpha(static_cast<unsigned char>(line[0])) && line.find('(') != std::string::npos &&
        line.rfind("namespace", 0) != 0) {
      signature = line.substr(0, line.find('{'));
      while (!signature.empty() && signature.back() == ' ') signature.pop_back();
      signature_line = n;
    }
    const bool stub = line.find("NotImplemented()") != std::string::npos ||
                      line.find("KILN_NOT_IMPLEMENTED()") != std::string::npos;
    if (stub && !signature.empty() && line.find("//") == std::string::npos) {
      out.emplace_back(signature_line, signature);
      signature.clear();
    }
  }
  return out;
}

}  // namespace

int run_hint(const Workspace& ws, const std::string& module, const std::string& check_id, bool all) {
  const Module& m = ws.course.find(module);
  const bool color = use_color();
  const std::size_t width = terminal_width();
  auto bold = [&](const std::string& s) { return color ? "\033[1m" + s + "\033[0m" : s; };
  if (!check_id.empty() && !m.check(check_id)) {
    std::string known;
    for (const auto& c : m.checks) known += " " + c.id;
    throw CourseError(fmt::format("module {} has no check '{}'. Its checks are:{}", m.number_text(), check_id, known));
  }
  // What the last `grader check` of this module found, when it is still about these files.
  const auto progress = load_progress(ws);
  const auto last = progress.find(m.name());
  const bool known = last != progress.end() && last->second.fingerprint == fingerprint(m, m.dir);
  auto failing = [&](const Check& c) {
    return known && std::find(last->second.not_passing.begin(), last->second.not_passing.end(), c.id) !=
                        last->second.not_passing.end();
  };
  auto reported = [&](const Failure& f) {
    return known && std::find(last->second.failure_ids.begin(), last->second.failure_ids.end(), f.id) !=
                        last->second.failure_ids.end();
  };
  std::vector<const Check*> shown;
  for (const auto& c : m.checks)
    if (c.id == check_id || (check_id.empty() && (all || !known || failing(c)))) shown.push_back(&c);
  if (check_id.empty() && !all && known && shown.empty()) {
    print(fmt::format("Every check of module {} passed at the last `grader check {}`. `grader hint {} --all` shows "
                      "every hint.\n",
                      m.number_text(), m.number_text(), m.number_text()));
    return 0;
  }
  // Failing checks first, and within a check the failures it reported first.
  std::stable_sort(shown.begin(), shown.end(), [&](const Check* a, const Check* b) { return failing(*a) > failing(*b); });
  for (const Check* c : shown) {
    // The id starts the first line, so the description is wrapped with it.
    print(wrap(bold(c->id) + " · " + c->description + (failing(*c) ? " (did not pass last time)" : ""), width, "  ") +
          "\n");
    if (c->visibility == Visibility::hidden) {
      print("  (a hidden check: its failures are not listed)\n\n");
      continue;
    }
    // After a memory error, a crash or a hang the catalogue is not the news: what happened is.
    const ProgressEntry::Said* said_last = nullptr;
    if (known)
      if (const auto it = last->second.said.find(c->id); it != last->second.said.end()) said_last = &it->second;
    const bool has_said = said_last != nullptr;
    static const std::map<std::string, std::string> happened = {
        {"memory_error", "had a memory error"}, {"crashed", "crashed"},          {"timed_out", "timed out"},
        {"exited_early", "exited early"},       {"no_result", "gave no result"}};
    if (has_said && happened.count(said_last->status)) {
      print("  " + wrap(fmt::format("Last time it {}: {}", happened.at(said_last->status), bold(said_last->summary)),
                        width, "  ") + "\n");
      print("  " + wrap("Hint: fix that first, at the place it names; `grader check " + m.number_text() + " --check " +
                            c->id + " -v` shows the whole output. The usual causes of a wrong value come after.",
                        width, "    ") + "\n");
    } else if (has_said && said_last->status != "failed") {
      print("  " + wrap("Last time: " + bold(said_last->summary), width, "  ") + "\n");
    }
    std::vector<const Failure*> failures;
    for (const auto& f : c->failures) failures.push_back(&f);
    std::stable_sort(failures.begin(), failures.end(),
                     [&](const Failure* a, const Failure* b) { return reported(*a) > reported(*b); });
    for (const Failure* f : failures) {
      // The message as it read last time, its placeholders filled; the catalogue's wording otherwise.
      const auto filled = has_said ? said_last->messages.find(f->id) : std::map<std::string, std::string>::const_iterator{};
      if (has_said && filled != said_last->messages.end())
        print("  " + wrap(fmt::format("Last time: {}", bold(filled->second)), width, "  ") + "\n");
      else
        print("  " + wrap(fmt::format("When it fails: {}{}", bold(f->message), reported(*f) ? " (reported last time)" : ""),
                          width, "  ") + "\n");
      print("  " + wrap("Hint: " + f->hint, width, "    ") + "\n");
    }
    print("\n");
  }
  if (check_id.empty() && !all && known && shown.size() < m.checks.size())
    print(fmt::format("{} other check{} passed; `grader hint {} --all` shows every hint.\n", m.checks.size() - shown.size(),
                      m.checks.size() - shown.size() == 1 ? "" : "s", m.number_text()));
  return 0;
}

int run_list(const Workspace& ws) {
  for (const auto& m : ws.course.modules) {
    print(fmt::format("{}  {:<16} {:<13} {}  {:>5} h  {:>2} checks {:>3} points  requires: {}\n", m.number_text(),
                      m.title, m.tier, std::string(m.difficulty, '*') + std::string(4 - std::min(m.difficulty, 4), '.'),
                      m.hours, m.checks.size(), m.max_points(), requires_text(ws.course, m)));
  }
  return 0;
}

int run_status(const Workspace& ws) {
  const auto progress = load_progress(ws);
  int total = 0, max_total = 0;
  for (const auto& m : ws.course.modules) {
    const auto it = progress.find(m.name());
    max_total += m.max_points();
    if (it == progress.end()) {
      print(fmt::format("  {}  {:<16} not checked yet             grader check {}\n", m.number_text(), m.title,
                        m.number_text()));
      continue;
    }
    const ProgressEntry& e = it->second;
    total += e.score;
    const bool stale = e.fingerprint != fingerprint(m, m.dir);
    // Files changed since the last check: what it found no longer says they pass.
    print(fmt::format("{} {}  {:<16} {:>3}/{:<3} points  {:>2}/{:<2} checks{}\n", e.all_passed && !stale ? "✓" : " ",
                      m.number_text(), m.title, e.score, e.max_score, e.passed, e.total,
                      stale ? fmt::format("  (files changed since {}: run grader check {})", e.checked_at,
                                          m.number_text())
                            : ""));
  }
  print(fmt::format("\nTotal {}/{} points\n", total, max_total));
  return 0;
}

int run_start(const Workspace& ws, const std::string& module) {
  const Module& m = ws.course.find(module);
  print(fmt::format("Module {} · {}\n{}\n\n", m.number_text(), m.title, m.subtitle));
  print(fmt::format("Difficulty {}/4 · about {} hours · builds on: {}\n\n", m.difficulty, m.hours,
                    requires_text(ws.course, m)));
  if (!m.objectives.empty()) {
    print("You will:\n");
    for (const auto& o : m.objectives) print(fmt::format("  - {}\n", o));
    print("\n");
  }
  print("What to write:\n");
  int count = 0;
  for (const auto& f : m.student_files) {
    const fs::path path = m.dir / f;
    const auto stubs = stubs_in(path);
    print(fmt::format("  {}{}\n", fs::relative(path, ws.course.root).generic_string(),
                      stubs.empty() ? "  (nothing left unwritten)" : ""));
    for (const auto& [line, signature] : stubs) {
      print(fmt::format("    line {:>4}  {}\n", line, signature));
      ++count;
    }
  }
  print(fmt::format("\n{} function{} to write. The chapter: docs/{}.md. Check your work with: grader check {}\n",
                    count, count == 1 ? "" : "s", m.name(), m.number_text()));
  return 0;
}

namespace cli {

void add_hint_command(CLI::App& app, Chosen& chosen) {
  auto* sub = app.add_subcommand("hint", "Show what each check looks for, its failure messages and hints");
  auto module = std::make_shared<std::string>(), check = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  sub->add_option("module", *module, "The module")->required();
  sub->add_option("check", *check, "One check's id (default: the checks that failed last time)");
  sub->add_flag("--all", *all, "Every check's hints, passing or not");
  on_workspace(sub, chosen, [module, check, all](const Workspace& ws) { return run_hint(ws, *module, *check, *all); });
}

void add_info_commands(CLI::App& app, Chosen& chosen) {
  on_workspace(app.add_subcommand("list", "List the modules with their prerequisites, checks and points"), chosen,
               [](const Workspace& ws) { return run_list(ws); });
  on_workspace(app.add_subcommand("status", "Your progress over all modules"), chosen,
               [](const Workspace& ws) { return run_status(ws); });
  auto* start = app.add_subcommand("start", "What to write in a module: its functions, files and objectives");
  auto module = std::make_shared<std::string>();
  start->add_option("module", *module, "The module")->required();
  on_workspace(start, chosen, [module](const Workspace& ws) { return run_start(ws, *module); });
}

}  // namespace cli

}  // namespace kiln::grader
