#include "kiln/grader/report.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include <fmt/color.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kiln::grader {

bool Report::all_passed() const {
  if (build_error) return false;
  for (const auto& c : checks)
    if (c.status != Status::passed && c.status != Status::skipped && !c.optional()) return false;
  return !checks.empty();
}

bool Report::every_check_passed() const {
  if (build_error) return false;
  for (const auto& c : checks)
    if (c.status != Status::passed && c.status != Status::skipped) return false;
  return !checks.empty();
}

int Report::passed_count() const {
  int n = 0;
  for (const auto& c : checks) n += c.status == Status::passed;
  return n;
}

std::string render_message(const std::string& message, const std::map<std::string, std::string>& params) {
  std::string out;
  for (std::size_t i = 0; i < message.size();) {
    if (message[i] == '{') {
      const auto close = message.find('}', i);
      if (close != std::string::npos) {
        const auto it = params.find(message.substr(i + 1, close - i - 1));
        if (it != params.end()) {
          out += it->second;
          i = close + 1;
          continue;
        }
      }
    }
    out += message[i++];
  }
  return out;
}

std::vector<std::string> unfilled_placeholders(const std::string& message, const std::map<std::string, std::string>& params) {
  std::vector<std::string> out;
  for (std::size_t open = message.find('{'); open != std::string::npos; open = message.find('{', open + 1)) {
    const auto close = message.find('}', open);
    if (close == std::string::npos) break;
    const std::string name = message.substr(open + 1, close - open - 1);
    const bool placeholder = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    });
    if (placeholder && !params.count(name)) out.push_back("{" + name + "}");
  }
  return out;
}

std::string relative_to(const fs::path& root, const std::string& path) {
  const std::string prefix = root.generic_string() + "/";
  std::string out = path;
  for (std::size_t at; (at = out.find(prefix)) != std::string::npos;) out.erase(at, prefix.size());
  return out;
}

namespace {

// "accuracy 87.12 %, size 52,344 bytes": a check's figures in one line.
std::string figures_text(const std::vector<Figure>& figures) {
  std::string out;
  for (const auto& f : figures) {
    std::string value;
    if (f.value == std::floor(f.value) && std::fabs(f.value) < 1e15) {
      const std::string digits = fmt::format("{}", static_cast<long long>(std::fabs(f.value)));
      for (std::size_t k = 0; k < digits.size(); ++k) {
        if (k > 0 && (digits.size() - k) % 3 == 0) value += ',';
        value += digits[k];
      }
      if (f.value < 0) value = "-" + value;
    } else {
      value = fmt::format("{:.2f}", f.value);
    }
    const std::string unit = f.unit.empty() ? "" : f.unit == "%" ? "%" : " " + f.unit;
    out += (out.empty() ? "" : ", ") + f.name + " " + value + unit;
  }
  return out;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A failure id the test reported that module.yaml does not catalogue: a slip in the test, named
// as such, with the nearest id it may have meant.
std::string unknown_failure(const std::string& id, const Check& check, const Module& module) {
  std::string nearest;
  std::size_t best = std::string::npos;
  for (const auto& c : module.checks)
    for (const auto& f : c.failures) {
      const std::size_t d = edit_distance(id, f.id) + (&c == &check ? 0 : 1);  // this check's first
      if (d < best) best = d, nearest = f.id;
    }
  std::string text = fmt::format("the test reported the failure '{}', which is not in {}'s module.yaml", id, module.name());
  if (!nearest.empty() && best <= std::max<std::size_t>(3, id.size() / 3)) text += fmt::format(" (did you mean '{}'?)", nearest);
  return text;
}

}  // namespace

Report make_report(const Course& course, const Module& module, const std::vector<const Check*>& checks,
                   const BuildResult& build, const RunResult* run, const std::string& variant,
                   const fs::path& work) {
  // Paths inside the course, or inside the folder a submission was graded in, read as the course's.
  const auto relative = [&](const std::string& text) {
    return relative_to(course.root, work.empty() ? text : relative_to(work, text));
  };
  Report report;
  report.module = module.name();
  report.number = module.number_text();
  report.title = module.title;
  report.variant = variant;
  report.commands = build.commands;
  if (run) {
    report.commands.insert(report.commands.end(), run->commands.begin(), run->commands.end());
    report.output = run->output;
  }
  if (!build.ok) {
    report.build_error = build.error;
    if (report.build_error) {
      report.build_error->file = relative(report.build_error->file.string());
      report.build_error->message = relative(report.build_error->message);
      for (auto& note : report.build_error->notes) note = relative(note);
    }
    report.build_log = relative(build.log);
  }
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const Check& check = *checks[i];
    CheckReport c;
    c.id = check.id;
    c.test = check.test;
    c.description = check.description;
    c.visibility = check.visibility;
    c.device = check.device;
    c.max_points = check.points;
    if (!run) {
      c.status = Status::did_not_compile;
      if (build.error && !build.error->file.empty()) {
        c.summary = fmt::format("did not compile: {}:{}", relative(build.error->file.string()),
                                build.error->line);
      } else if (build.error && !build.error->message.empty()) {
        c.summary = "did not compile: " + build.error->message;
      } else {
        c.summary = "did not compile";
      }
      report.checks.push_back(std::move(c));
      continue;
    }
    const CheckResult& r = run->checks[i];
    c.status = r.status;
    if (!r.waits_for.empty()) {  // its failure would only repeat the one of the check it needs
      c.waits_for = r.waits_for;
      c.summary = fmt::format("skipped: fix {} first (this check builds on it)", r.waits_for);
      report.checks.push_back(std::move(c));
      continue;
    }
    c.ms = r.ms;
    c.figures = r.figures;
    c.speed_context = r.speed_context;
    switch (r.status) {
      case Status::passed:
        c.points = check.points;
        if (r.speed) {  // a speed-graded check earns the share of its points its time earned
          c.points = static_cast<int>(std::lround(check.points * r.speed->fraction));
          c.speed = r.speed->text;
          c.speed_ratio = r.speed->ratio;
        }
        break;
      case Status::not_written:
        c.summary = fmt::format("not written yet: {} ({})", r.stub, relative(r.stub_location));
        break;
      case Status::failed:
        for (const auto& f : r.failures) {
          if (f.id.empty()) {
            c.messages.push_back(relative(f.raw));
            continue;
          }
          if (std::find(c.failure_ids.begin(), c.failure_ids.end(), f.id) != c.failure_ids.end()) continue;
          c.failure_ids.push_back(f.id);
          if (const Failure* known = check.failure(f.id)) {
            const std::string message = render_message(known->message, f.params);
            for (const auto& name : unfilled_placeholders(known->message, f.params))
              c.unfilled.push_back(f.id + ": " + name);
            c.messages.push_back(work.empty() ? message : relative(message));
            c.rendered[f.id] = c.messages.back();
            c.hints.push_back(known->hint);
          } else {
            c.messages.push_back(unknown_failure(f.id, check, module));
          }
          if (!f.detail.empty()) c.details.push_back(f.detail);
        }
        c.summary = c.messages.empty() ? "failed" : c.messages.front();
        break;
      default:
        c.summary = relative(r.reason);
        if (!r.during.empty()) c.summary += ", while running " + r.during;
        break;
    }
    report.checks.push_back(std::move(c));
  }
  for (const auto& c : report.checks) {
    report.score += c.points;
    report.max_score += c.max_points;
  }

  // What to do next: the first thing that is not passing.
  const std::string check_cmd = fmt::format("grader check {}", module.number_text());
  if (report.build_error) {
    report.next_step = fmt::format("fix the compile error above, then run {}", check_cmd);
  } else {
    // The first required check that does not pass; the optional challenges after every other.
    const CheckReport* first = nullptr;
    for (const bool optional : {false, true}) {
      for (const auto& c : report.checks) {
        if (c.status == Status::passed || c.status == Status::skipped || !c.waits_for.empty() ||
            c.optional() != optional)
          continue;
        first = &c;
        break;
      }
      if (first) break;
    }
    const std::string done = fmt::format("`grader list` shows what comes next; module {} is done", module.number_text());
    if (!first) {
      report.next_step = "all checks pass. " + done;
    } else if (first->optional()) {
      report.next_step = fmt::format("every check with points passes: {}. The optional challenge '{}' (no points) is "
                                     "still open, if you want it",
                                     done, first->id);
    } else if (first->status == Status::not_written) {
      report.next_step = fmt::format("write {}, then run {}",
                                     first->summary.substr(std::string_view("not written yet: ").size()), check_cmd);
    } else {
      report.next_step = fmt::format("fix '{}' first; `grader hint {} {}` explains the usual cause", first->id,
                                     module.number_text(), first->id);
    }
  }
  return report;
}

namespace {

struct Mark {
  const char* symbol;
  fmt::terminal_color color;
  const char* word;
};

Mark mark_for(Status s) {
  switch (s) {
    case Status::passed: return {"✓", fmt::terminal_color::green, "passed"};
    case Status::failed: return {"✗", fmt::terminal_color::red, "failed"};
    case Status::not_written: return {"○", fmt::terminal_color::yellow, "not written"};
    case Status::crashed: return {"✗", fmt::terminal_color::red, "crashed"};
    case Status::timed_out: return {"✗", fmt::terminal_color::red, "timed out"};
    case Status::exited_early: return {"✗", fmt::terminal_color::red, "exited early"};
    case Status::skipped: return {"-", fmt::terminal_color::cyan, "skipped"};
    case Status::did_not_compile: return {"✗", fmt::terminal_color::red, "did not compile"};
    case Status::missing: return {"?", fmt::terminal_color::magenta, "missing"};
    case Status::no_result: return {"✗", fmt::terminal_color::red, "no result"};
    case Status::memory_error: return {"✗", fmt::terminal_color::red, "memory error"};
  }
  return {"?", fmt::terminal_color::white, "?"};
}

std::string paint(const TextStyle& style, fmt::terminal_color color, const std::string& text, bool bold = false) {
  if (!style.color) return text;
  auto st = fmt::fg(color);
  if (bold) st |= fmt::emphasis::bold;
  return fmt::format(st, "{}", text);
}

std::string dim(const TextStyle& style, const std::string& text) {
  return style.color ? fmt::format(fmt::emphasis::faint, "{}", text) : text;
}

}  // namespace

bool use_color() {
  const char* no_color = std::getenv("NO_COLOR");
  return isatty(STDOUT_FILENO) && !(no_color && *no_color);
}

std::size_t terminal_width() {
  std::size_t width = 0;
  if (const char* columns = std::getenv("COLUMNS"); columns && *columns) width = std::strtoul(columns, nullptr, 10);
  winsize size{};
  if (width == 0 && isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) width = size.ws_col;
  if (width == 0) return 100;
  return std::clamp<std::size_t>(width, 60, 120);
}

std::string wrap(const std::string& text, std::size_t width, const std::string& indent) {
  const std::size_t room = width > indent.size() + 20 ? width - indent.size() : 20;
  std::string out, line;
  std::istringstream words(text);
  std::string word;
  auto length = [](const std::string& s) {  // columns, not bytes: colour codes and UTF-8 continuation bytes take none
    std::size_t n = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\x1b') {
        const auto end = s.find('m', i);
        if (end == std::string::npos) break;
        i = end;
        continue;
      }
      n += (static_cast<unsigned char>(s[i]) & 0xc0) != 0x80;
    }
    return n;
  };
  // A grader command is never broken across lines: "`grader hint 10 bpe_ties`" up to its closing
  // backtick, a bare "grader check 01" with its two words, so that it can be read and copied whole.
  std::vector<std::string> units;
  for (std::string w; words >> w;) {
    if (!units.empty()) {
      const std::string& last = units.back();
      const bool quoted = last.rfind("`grader", 0) == 0 && std::count(last.begin(), last.end(), '`') == 1;
      const bool bare = last.rfind("grader", 0) == 0 && std::count(last.begin(), last.end(), ' ') < 2 &&
                        last.back() != ',' && last.back() != '.';
      if (quoted || (bare && last.find('`') == std::string::npos)) {
        units.back() += " " + w;
        continue;
      }
    }
    units.push_back(w);
  }
  for (std::string& unit : units) {
    word = std::move(unit);
    if (!line.empty() && length(line) + 1 + length(word) > room) {
      out += line + "\n" + indent;
      line.clear();
    }
    while (length(word) > room) {  // a path or a number longer than the line
      out += word.substr(0, room) + "\n" + indent;
      word.erase(0, room);
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

std::string render_text(const Report& report, const TextStyle& style) {
  std::string out;
  out += paint(style, fmt::terminal_color::bright_white,
               fmt::format("Module {} · {}", report.number, report.title), true);
  if (report.variant != "student") out += dim(style, fmt::format("  ({})", report.variant));
  out += "\n";
  for (const auto& note : report.notes) out += paint(style, fmt::terminal_color::yellow, "  ! " + note) + "\n";
  if (!report.notes.empty()) out += "\n";

  if (report.build_error) {
    const Diagnostic& d = *report.build_error;
    out += paint(style, fmt::terminal_color::red, "  Did not compile", true) + "\n";
    if (!d.file.empty())
      out += "    " + wrap(fmt::format("{}:{}:{}: {}", d.file.generic_string(), d.line, d.column, d.message), style.width,
                             "      ") + "\n";
    else
      out += "    " + wrap(d.message, style.width, "      ") + "\n";
    if (!d.source_line.empty()) {
      out += fmt::format("    {:>5} | {}\n", d.line, d.source_line);
      if (d.column > 0) out += fmt::format("          | {}^\n", std::string(d.column - 1, ' '));
    }
    for (const auto& note : d.notes) out += "    " + wrap("note: " + note, style.width, "          ") + "\n";
    if (!d.explanation.empty())
      out += "    " + wrap("What it usually means: " + d.explanation, style.width, "    ") + "\n";
    if (style.verbose) out += "\n" + report.build_log + "\n";
    else out += dim(style, fmt::format("    (grader check {} -v shows the compiler's whole output)", report.number)) + "\n";
    out += "\n";
  }

  std::size_t id_width = 0;
  for (const auto& c : report.checks) id_width = std::max(id_width, c.id.size());
  const std::string pad(id_width + 12, ' ');
  for (const auto& c : report.checks) {
    const Mark m = mark_for(c.status);
    out += fmt::format("  {} {:<{}}  {:>2}/{:<2} ", paint(style, m.color, m.symbol), c.id, id_width, c.points,
                       c.max_points);
    // A check worth no points is an optional challenge (or a device check): say so where it fails.
    const std::string optional = c.optional() && c.status != Status::passed ? "(optional challenge, no points) " : "";
    if (!optional.empty()) out += dim(style, optional);
    if (c.status == Status::passed) {
      out += dim(style, wrap(c.description, style.width, pad)) + "\n";
      if (!c.speed.empty()) out += pad + wrap("speed: " + c.speed, style.width, pad) + "\n";
      if (!c.figures.empty()) out += pad + wrap("measured: " + figures_text(c.figures), style.width, pad) + "\n";
      continue;
    }
    if (c.status == Status::failed) {
      out += paint(style, m.color, wrap(c.summary, style.width, pad), true) + "\n";
      if (!c.figures.empty()) out += pad + wrap("measured: " + figures_text(c.figures), style.width, pad) + "\n";
      for (std::size_t i = 1; i < c.messages.size(); ++i)
        out += pad + paint(style, m.color, wrap(c.messages[i], style.width, pad), true) + "\n";
      for (const auto& d : c.details) out += pad + dim(style, wrap(d, style.width, pad)) + "\n";
      for (const auto& h : c.hints) out += pad + wrap("hint: " + h, style.width, pad) + "\n";
      continue;
    }
    if (c.status == Status::did_not_compile || c.status == Status::not_written) {
      out += paint(style, m.color, wrap(c.summary, style.width, pad)) + "\n";
      continue;
    }
    out += paint(style, m.color, wrap(std::string(m.word) + ": " + c.summary, style.width, pad)) + "\n";
  }

  out += "\n";
  const int passed = report.passed_count();
  // Skipped checks (device checks without a device) count as neither passed nor failed.
  const auto skipped = std::count_if(report.checks.begin(), report.checks.end(),
                                     [](const CheckReport& c) { return c.status == Status::skipped; });
  // A skipped check is neither passed nor failed: it is counted apart, not among the checks that ran.
  std::string tally = fmt::format("{}/{} points · {} of {} checks pass", report.score, report.max_score, passed,
                                  report.checks.size() - static_cast<std::size_t>(skipped));
  if (skipped > 0) tally += fmt::format(" · {} skipped", skipped);
  out += "  " + paint(style, report.all_passed() ? fmt::terminal_color::green : fmt::terminal_color::yellow, tally, true) + "\n";
  if (!report.next_step.empty()) out += "  " + wrap("Next: " + report.next_step, style.width, "        ") + "\n";
  if (!style.verbose) {
    // What the student's code printed (not GoogleTest's own lines) is shown with -v: say so.
    std::istringstream lines(report.output);
    int printed = 0;
    bool frames = false;   // between the test program's frame markers: a stack, not the student's
    bool failure = false;  // a GoogleTest failure report ("file:line: Failure" up to the next [ line)
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("[kiln-frames", 0) == 0 || line.rfind("[kiln-stuck", 0) == 0) frames = line != "[kiln-frames-end]";
      if (!line.empty() && line[0] == '[') failure = false;
      if (line.size() >= 9 && line.compare(line.size() - 9, 9, ": Failure") == 0) failure = true;
      const bool tooling = line.empty() || line[0] == '[' || line.rfind("==", 0) == 0 || line.rfind("    #", 0) == 0 ||
                           line.rfind("Note: Google Test filter", 0) == 0 || line.find("runtime error:") != std::string::npos ||
                           line.find(" FAILED TEST") != std::string::npos;
      printed += !frames && !failure && !tooling;
    }
    if (printed > 0)
      out += dim(style, fmt::format("  Your code printed {} line{} while the checks ran: `grader check {} -v` shows them.",
                                    printed, printed == 1 ? "" : "s", report.number)) + "\n";
  }
  if (style.verbose) {
    out += "\n  Commands (run them by hand to reproduce this result):\n";
    for (const auto& cmd : report.commands) out += "    " + cmd + "\n";
    if (!report.output.empty()) out += "\n  Output of the checks:\n" + report.output + "\n";
  }
  return out;
}

namespace {

nlohmann::json figures_json(const std::vector<Figure>& figures) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : figures)
    out.push_back({{"name", f.name}, {"value", f.value}, {"unit", f.unit}, {"higher_is_better", f.higher_is_better}});
  return out;
}

nlohmann::json to_json(const Report& report) {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : report.checks) {
    checks.push_back({{"id", c.id},
                      {"test", c.test},
                      {"description", c.description},
                      {"status", status_name(c.status)},
                      {"points", c.points},
                      {"max_points", c.max_points},
                      {"speed", c.speed},
                      {"figures", figures_json(c.figures)},
                      {"visibility", visibility_name(c.visibility)},
                      {"device", c.device},
                      {"summary", c.summary},
                      {"waits_for", c.waits_for},
                      {"messages", c.messages},
                      {"failure_ids", c.failure_ids},
                      {"hints", c.hints},
                      {"details", c.details},
                      {"ms", c.ms}});
  }
  nlohmann::json j = {{"version", kResultsVersion},
                      {"module", report.module},
                      {"number", report.number},
                      {"title", report.title},
                      {"variant", report.variant},
                      {"score", report.score},
                      {"max_score", report.max_score},
                      {"passed", report.all_passed()},
                      {"notes", report.notes},
                      {"next_step", report.next_step},
                      {"checks", checks},
                      {"output", report.output.substr(0, 4096)}};
  if (report.build_error) {
    const auto& d = *report.build_error;
    j["build_error"] = {{"file", d.file.generic_string()}, {"line", d.line},       {"column", d.column},
                        {"message", d.message},             {"explanation", d.explanation},
                        {"notes", d.notes}};
    // The build's output, cut to what matters: it can be long, and only its start explains.
    j["build_log"] = report.build_log.substr(0, 8192);
  }
  return j;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters, even escaped.
        if (ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') out += ' ';
        else out += static_cast<char>(ch);
    }
  }
  return out;
}

namespace {

std::string clipped(const std::string& text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) --cut;  // whole UTF-8 characters
  return text.substr(0, cut) + fmt::format(" [... {} more bytes]", text.size() - cut);
}

}  // namespace

void bound_report(Report& report, std::size_t per_text) {
  for (auto& c : report.checks) {
    c.summary = clipped(c.summary, per_text);
    for (auto& m : c.messages) m = clipped(m, per_text);
    for (auto& d : c.details) d = clipped(d, per_text);
    if (c.details.size() > 8) c.details.resize(8);
  }
  report.build_log = clipped(report.build_log, 4 * per_text);
  report.output = clipped(report.output, 4 * per_text);
  if (report.build_error) {
    report.build_error->message = clipped(report.build_error->message, per_text);
    report.build_error->source_line = clipped(report.build_error->source_line, 200);
  }
  for (auto& n : report.notes) n = clipped(n, per_text);
}

std::string render_json(const Report& report) { return to_json(report).dump(2) + "\n"; }

std::string render_gradescope(const std::vector<Report>& reports, double execution_s) {
  nlohmann::json tests = nlohmann::json::array();
  int score = 0;
  std::string output;
  for (const auto& r : reports) {
    score += r.score;
    output += fmt::format("Module {} {}: {}/{} points\n", r.number, r.title, r.score, r.max_score);
    if (r.build_error) {
      const auto& d = *r.build_error;
      output += fmt::format("  did not compile: {}:{}: {}\n", d.file.generic_string(), d.line, d.message);
    }
    for (const auto& c : r.checks) {
      const bool passed = c.status == Status::passed;
      std::string text;
      if (c.visibility == Visibility::hidden) {
        // A hidden check says whether it passed, never what it tests or why it failed.
        text = passed ? "" : "This hidden check did not pass.";
      } else if (passed) {
        if (!c.speed.empty()) text = "Speed: " + c.speed;
        if (!c.figures.empty()) text += std::string(text.empty() ? "" : "\n") + "Measured: " + figures_text(c.figures);
      } else {
        text = c.summary;
        for (std::size_t i = 1; i < c.messages.size(); ++i) text += "\n" + c.messages[i];
        for (const auto& d : c.details) text += "\n" + d;
        for (const auto& h : c.hints) text += "\nHint: " + h;
      }
      const std::string name = c.visibility == Visibility::hidden
                                   ? fmt::format("{} hidden check {}", r.number, tests.size() + 1)
                                   : fmt::format("{} {}: {}", r.number, c.id, c.description);
      nlohmann::json test = {{"name", name},
                             {"score", c.points},
                             {"max_score", c.max_points},
                             {"status", passed ? "passed" : "failed"},
                             {"output", text},
                             {"visibility", visibility_name(c.visibility)}};
      // Skipped (a device check without a GPU): neither passed nor failed, so no status at all.
      if (c.status == Status::skipped) {
        test.erase("status");
        if (c.visibility != Visibility::hidden) test["output"] = "Skipped: " + c.summary;
      }
      tests.push_back(std::move(test));
    }
  }
  // The top-level output is HTML to Gradescope unless told otherwise: as text, a compiler's
  // "std::vector<float>" reads as written instead of losing "<float>" as a tag.
  nlohmann::json j = {{"score", score},
                      {"execution_time", execution_s},
                      {"output", output},
                      {"output_format", "text"},
                      {"visibility", "visible"},
                      {"stdout_visibility", "hidden"},
                      {"tests", tests}};
  // Gradescope's leaderboard: every speed-graded check that was timed, its time as a multiple of
  // the reference's (lower is better), and the figures of every check that passed (the
  // capstone's accuracy and size).
  nlohmann::json leaderboard = nlohmann::json::array();
  for (const auto& r : reports)
    for (const auto& c : r.checks) {
      if (c.visibility == Visibility::hidden) continue;
      if (c.speed_ratio > 0)
        leaderboard.push_back({{"name", fmt::format("{} {} (× reference)", r.number, c.id)},
                               {"value", std::round(c.speed_ratio * 1000) / 1000},
                               {"order", "asc"}});
      if (c.status == Status::passed)
        for (const auto& f : c.figures)
          leaderboard.push_back({{"name", fmt::format("{} {}{}", r.number, f.name, f.unit.empty() ? "" : " (" + f.unit + ")")},
                                 {"value", std::round(f.value * 1000) / 1000},
                                 {"order", f.higher_is_better ? "desc" : "asc"}});
    }
  if (!leaderboard.empty()) j["leaderboard"] = leaderboard;
  return j.dump(2) + "\n";
}

std::string render_junit(const std::vector<Report>& reports) {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  std::string suites;
  for (const auto& r : reports) {
    int f = 0, e = 0, s = 0;
    std::string cases;
    for (const auto& c : r.checks) {
      cases += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\">\n", xml_escape(r.module),
                           xml_escape(c.id), c.ms / 1000.0);
      std::string body;
      for (std::size_t i = 0; i < c.messages.size(); ++i) body += c.messages[i] + "\n";
      for (const auto& d : c.details) body += d + "\n";
      for (const auto& h : c.hints) body += "hint: " + h + "\n";
      switch (c.status) {
        case Status::passed: break;
        case Status::skipped:
          ++s;
          cases += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(c.summary));
          break;
        case Status::failed:
        case Status::not_written:
          ++f;
          cases += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", xml_escape(c.summary),
                               status_name(c.status), xml_escape(body));
          break;
        default:
          ++e;
          cases += fmt::format("      <error message=\"{}\" type=\"{}\">{}</error>\n", xml_escape(c.summary),
                               status_name(c.status), xml_escape(body));
      }
      cases += "    </testcase>\n";
    }
    tests += static_cast<int>(r.checks.size());
    failures += f;
    errors += e;
    skipped += s;
    suites += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n{}  </testsuite>\n",
                          xml_escape(r.module + " " + r.title), r.checks.size(), f, e, s, cases);
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kiln\" tests=\"{}\" "
                     "failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n{}</testsuites>\n",
                     tests, failures, errors, skipped, suites);
}

}  // namespace kiln::grader
