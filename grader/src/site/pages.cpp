// What each page of the site says. Everything about checks, failures, functions and commands is
// read here from module.yaml, the module's headers and stubs, and the CLI; only the chapters and
// the guides' prose are written by people.
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "internal.h"

namespace kiln::grader::site {

namespace {

std::string capitalised(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// "5-7" as a reader expects a range: "5–7".
std::string en_dash(std::string s) {
  if (const auto dash = s.find('-'); dash != std::string::npos) s.replace(dash, 1, "–");
  return s;
}

std::string dots(int difficulty) {
  std::string out;
  for (int i = 1; i <= 4; ++i) out += i <= difficulty ? "●" : "○";
  return out;
}

std::string module_link(const Module& m, const std::string& css = "chip") {
  return fmt::format("<a class=\"{}\" href=\"{}.html\"><span class=\"num\">{}</span> {}</a>", css, m.name(),
                     m.number_text(), escape(m.title));
}

// A failure message with its {placeholders} marked, so a reader sees what the grader fills in.
std::string message_html(const std::string& message) {
  std::string out;
  for (std::size_t i = 0; i < message.size();) {
    const std::size_t open = message.find('{', i);
    const std::size_t close = open == std::string::npos ? open : message.find('}', open);
    if (close == std::string::npos) {
      out += escape(message.substr(i));
      break;
    }
    out += escape(message.substr(i, open - i));
    out += "<var>" + escape(message.substr(open, close - open + 1)) + "</var>";
    i = close + 1;
  }
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

// "5-7" -> {5, 7}; "4" -> {4, 4}.
std::pair<double, double> hour_range(const std::string& hours) {
  try {
    const auto dash = hours.find('-');
    if (dash == std::string::npos) return {std::stod(hours), std::stod(hours)};
    return {std::stod(hours.substr(0, dash)), std::stod(hours.substr(dash + 1))};
  } catch (const std::exception&) {
    return {0, 0};
  }
}

std::string command_row(const Context& cx, const std::string& example, const std::string& name,
                        const std::string& fallback = "") {
  const CommandDoc* doc = cx.command(name);
  const std::string what = doc && !doc->description.empty() ? doc->description : fallback;
  return fmt::format("<div class=\"command\"><pre class=\"terminal\"><code>{}</code></pre><p>{}</p></div>\n",
                     escape(example), escape(what));
}

std::vector<const Check*> visible_checks(const Module& m) {
  std::vector<const Check*> out;
  for (const auto& c : m.checks)
    if (c.visibility != Visibility::hidden) out.push_back(&c);
  return out;
}

// The module's header: tier, title, subtitle and the facts (difficulty, time, checks, prerequisites).
std::string module_header(const Course& course, const Module& m) {
  std::string prereqs;
  for (int n : m.requires_)
    if (const Module* dep = course.by_number(n)) prereqs += module_link(*dep) + " ";
  if (prereqs.empty()) prereqs = "<span class=\"muted\">nothing: start here</span>";
  return fmt::format(
      "<header class=\"module-hero tier-{tier}\">\n<p class=\"eyebrow\"><span class=\"tier-dot\"></span>Module {num} · "
      "{Tier} tier</p>\n<h1>{title}</h1>\n<p class=\"subtitle\">{subtitle}</p>\n<dl class=\"facts\">\n"
      "<div><dt>Difficulty</dt><dd><span class=\"dots\" aria-label=\"{d} of 4\">{dots}</span> {d} of 4</dd></div>\n"
      "<div><dt>Time</dt><dd>{hours} hours</dd></div>\n"
      "<div><dt>Checks</dt><dd>{checks} checks · {points} points</dd></div>\n"
      "<div class=\"wide\"><dt>Builds on</dt><dd>{prereqs}</dd></div>\n</dl>\n</header>\n",
      fmt::arg("tier", escape(m.tier)), fmt::arg("Tier", escape(capitalised(m.tier))), fmt::arg("num", m.number_text()),
      fmt::arg("title", escape(m.title)), fmt::arg("subtitle", escape(m.subtitle)), fmt::arg("d", m.difficulty),
      fmt::arg("dots", dots(m.difficulty)), fmt::arg("hours", escape(en_dash(m.hours))), fmt::arg("checks", m.checks.size()),
      fmt::arg("points", m.max_points()), fmt::arg("prereqs", prereqs));
}

// "What you will learn": the module's objectives, or nothing when it lists none.
std::string objectives_section(const Module& m) {
  if (m.objectives.empty()) return "";
  std::string h = "<section class=\"objectives\">\n<h2 id=\"objectives\">What you will learn</h2>\n<ul class=\"checklist\">\n";
  for (const auto& o : m.objectives) h += "<li>" + escape(o) + "</li>\n";
  return h + "</ul>\n</section>\n";
}

// The chapter (docs/NN_name.md) without its own title, since the header above is the title.
std::string chapter_part(const Course& course, const Module& m) {
  const fs::path chapter = course.root / "docs" / (m.name() + ".md");
  const std::vector<std::string> reserved{"objectives", "what-you-write", "checks",  "when-it-fails",
                                          "commands",   "whats-next",     "content", "search"};
  if (!fs::exists(chapter))
    return fmt::format("<p class=\"note\">This module has no chapter yet (docs/{}.md).</p>\n", m.name());
  std::string md = read_text(chapter);
  if (md.rfind("# ", 0) == 0) md.erase(0, md.find('\n') == std::string::npos ? md.size() : md.find('\n') + 1);
  return fmt::format("<div class=\"part part-chapter\"><span>The chapter</span><small>docs/{}.md</small></div>\n",
                     m.name()) +
         "<article class=\"chapter\">\n" + markdown_to_html(md, reserved) + "</article>\n";
}

// One function the student writes: its signature, description, where it is, and the header's comment.
std::string function_card(const StudentFunction& f, const Module& m) {
  std::string h = "<div class=\"function\">\n";
  h += "<pre class=\"signature\"><code class=\"language-cpp\">" + escape(f.signature) + "</code></pre>\n";
  h += "<p class=\"fn-desc\">" + (f.description.empty() ? "<span class=\"muted\">(no comment in the header)</span>"
                                                         : escape(f.description)) + "</p>\n";
  h += fmt::format("<p class=\"fn-where\">line {} of {}", f.line, escape(f.file));
  if (!f.header.empty()) h += " · declared in " + escape(f.header);
  h += "</p>\n";
  if (trim(f.contract) != trim(f.description) && !f.contract.empty())
    h += "<details class=\"contract\"><summary>What the header says</summary><pre>" + escape(f.contract) +
         "</pre></details>\n";
  // module.yaml's promises of this function, each with the checks that hold it (hidden ones unnamed).
  std::string promises;
  int count = 0;
  for (const auto& p : m.promises) {
    if (p.function != f.name) continue;
    ++count;
    std::string held;
    for (const auto& id : p.checks) {
      const Check* c = m.check(id);
      held += held.empty() ? "" : ", ";
      held += c && c->visibility == Visibility::hidden
                  ? std::string("a hidden check")
                  : fmt::format("<a href=\"#fail-{0}\"><code>{0}</code></a>", escape(id));
    }
    promises += "<li>" + escape(p.promise) + " <span class=\"muted\">· " + held + "</span></li>\n";
  }
  if (count > 0)
    h += fmt::format("<details class=\"contract\"><summary>What the checks hold it to ({})</summary><ul>\n{}</ul>"
                     "</details>\n",
                     count, promises);
  return h + "</div>\n";
}

// "What you write": the functions left to write, grouped by student file.
std::string what_you_write_section(const Course& course, const Module& m) {
  const auto functions = student_functions(course, m);
  std::string h = "<section>\n<h2 id=\"what-you-write\">What you write</h2>\n";
  std::vector<std::string> files;
  for (const auto& f : functions)
    if (std::find(files.begin(), files.end(), f.file) == files.end()) files.push_back(f.file);
  if (functions.empty()) {
    h += "<p>Nothing is left unwritten in this module's student files.</p>\n";
  } else {
    std::string file_list;
    for (std::size_t i = 0; i < files.size(); ++i)
      file_list += (i == 0 ? "" : i + 1 == files.size() ? " and " : ", ") + ("<code>" + escape(files[i]) + "</code>");
    h += fmt::format(
        "<p class=\"section-lead\">{} function{} in {}. Each one throws <code>kiln::NotImplemented</code> until you "
        "write it, and the check report names it: <em>not written yet</em>.</p>\n",
        functions.size(), functions.size() == 1 ? "" : "s", file_list);
  }
  for (const auto& file : files) {
    h += fmt::format("<h3 class=\"file-heading\"><span class=\"file-label\">file</span>"
                     "modules/{}/{}</h3>\n<div class=\"functions\">\n",
                     escape(m.name()), escape(file));
    for (const auto& f : functions)
      if (f.file == file) h += function_card(f, m);
    h += "</div>\n";
  }
  return h + "</section>\n";
}

// "How you know it works": the table of visible checks and their points, hidden ones as one row.
std::string checks_section(const Module& m, const std::vector<const Check*>& visible) {
  std::string h = fmt::format(
      "<section>\n<h2 id=\"checks\">How you know it works</h2>\n<p class=\"section-lead\"><code>grader check {}</code> "
      "builds your code and runs these checks, each on its own: a crash or a hang loses only the check it "
      "happened in.</p>\n<div class=\"table-wrap\"><table class=\"checks\">\n<thead><tr><th>Check</th><th>What it "
      "checks</th><th class=\"pts\">Points</th></tr></thead>\n<tbody>\n",
      m.number_text());
  int visible_points = 0;
  for (const Check* c : visible) {
    visible_points += c->points;
    h += fmt::format("<tr><td><a href=\"#fail-{0}\"><code>{0}</code></a>{3}</td><td>{1}</td><td class=\"pts\">{2}</td></tr>\n",
                     escape(c->id), escape(c->description), c->points,
                     std::string(c->visibility == Visibility::after_due_date
                                     ? " <span class=\"badge\">after the due date</span>"
                                     : "") +
                         (c->device ? " <span class=\"badge\">CUDA device</span>" : ""));
  }
  const int hidden_points = m.max_points() - visible_points;
  const std::size_t hidden_count = m.checks.size() - visible.size();
  if (hidden_count > 0)
    h += fmt::format("<tr class=\"hidden-row\"><td colspan=\"2\">{} hidden check{}, graded but not shown</td>"
                     "<td class=\"pts\">{}</td></tr>\n",
                     hidden_count, hidden_count == 1 ? "" : "s", hidden_points);
  return h + fmt::format("</tbody>\n<tfoot><tr><td colspan=\"2\">Total</td><td class=\"pts\">{}</td></tr></tfoot>\n"
                         "</table></div>\n</section>\n",
                         m.max_points());
}

// "When it fails": the catalogue, the same one `grader hint` and the check report print.
std::string failures_section(const Module& m, const std::vector<const Check*>& visible) {
  std::string h = fmt::format(
      "<section>\n<h2 id=\"when-it-fails\">When it fails</h2>\n<p class=\"section-lead\">Each message below is exactly "
      "what a check prints when it fails that way, followed by its hint. <code>grader hint {} CHECK</code> prints the "
      "same; <var>{{names}}</var> in braces are filled in with the values your code produced.</p>\n",
      m.number_text());
  for (const Check* c : visible) {
    h += fmt::format("<div class=\"check-failures\">\n<h3 id=\"fail-{0}\"><code>{0}</code><span class=\"pts-badge\">{1} "
                     "point{2}</span></h3>\n<p class=\"check-desc\">{3}</p>\n",
                     escape(c->id), c->points, c->points == 1 ? "" : "s", escape(c->description));
    if (c->failures.empty()) h += "<p class=\"muted\">No catalogued failures.</p>\n";
    for (const auto& f : c->failures) {
      h += fmt::format("<div class=\"failure\" data-failure=\"{}/{}\">\n<p class=\"message\"><span class=\"mark\" "
                       "aria-hidden=\"true\">✗</span><span class=\"text\">{}</span></p>\n<p class=\"hint\"><span "
                       "class=\"hint-label\">Hint</span> {}</p>\n</div>\n",
                       escape(c->id), escape(f.id), message_html(f.message), escape(trim(f.hint)));
    }
    h += "</div>\n";
  }
  return h + "</section>\n";
}

// "Commands": the grader's commands for this module, each only where this grader has it.
std::string commands_section(const Context& cx, const Module& m, const std::vector<const Check*>& visible) {
  const std::string n = m.number_text();
  const std::string first_check = visible.empty() ? "CHECK" : visible.front()->id;
  std::string h = "<section>\n<h2 id=\"commands\">Commands</h2>\n<div class=\"commands\">\n";
  if (cx.has_command("start")) h += command_row(cx, "grader start " + n, "start");
  if (cx.has_command("check")) {
    h += command_row(cx, "grader check " + n, "check");
    h += command_row(cx, "grader check " + n + " --check " + first_check + " -v", "",
                     "One check only; -v prints the exact build and run commands, to reproduce a result by hand.");
  }
  if (cx.has_command("watch")) h += command_row(cx, "grader watch " + n, "watch");
  if (cx.has_command("hint")) h += command_row(cx, "grader hint " + n + " " + first_check, "hint");
  if (cx.has_command("bench")) h += command_row(cx, "grader bench " + n, "bench");
  return h + "</div>\n</section>\n";
}

// "What comes next": a card for each module that requires this one.
std::string whats_next_section(const Course& course, const Module& m) {
  std::string h = "<section>\n<h2 id=\"whats-next\">What comes next</h2>\n";
  std::vector<const Module*> next;
  for (const auto& other : course.modules)
    if (std::find(other.requires_.begin(), other.requires_.end(), m.number) != other.requires_.end())
      next.push_back(&other);
  if (next.empty()) {
    h += "<p>No module of this course builds on this one yet.</p>\n";
  } else {
    h += "<p>These modules build on your code from this one:</p>\n<div class=\"cards\">\n";
    for (const Module* o : next)
      h += fmt::format("<a class=\"card tier-{}\" href=\"{}.html\"><span class=\"card-num\">{}</span><span "
                       "class=\"card-title\">{}</span><span class=\"card-sub\">{}</span></a>\n",
                       escape(o->tier), o->name(), o->number_text(), escape(o->title), escape(o->subtitle));
    h += "</div>\n";
  }
  return h + "</section>\n";
}

// The pager: the previous module by number (the quick start before the first) and the next one.
std::string pager(const Course& course, const Module& m) {
  const auto it = std::find_if(course.modules.begin(), course.modules.end(),
                               [&](const Module& o) { return o.number == m.number; });
  std::string h = "<nav class=\"pager\" aria-label=\"Modules\">";
  if (it != course.modules.begin()) {
    const Module& p = *std::prev(it);
    h += fmt::format("<a class=\"prev\" href=\"{}.html\"><small>Previous</small>{} {}</a>", p.name(), p.number_text(),
                     escape(p.title));
  } else {
    h += "<a class=\"prev\" href=\"quickstart.html\"><small>Previous</small>Quick start</a>";
  }
  if (std::next(it) != course.modules.end()) {
    const Module& q = *std::next(it);
    h += fmt::format("<a class=\"next\" href=\"{}.html\"><small>Next</small>{} {}</a>", q.name(), q.number_text(),
                     escape(q.title));
  }
  return h + "</nav>\n";
}

// The course's name and first paragraph, in the README's words ("Kiln" and nothing without one).
std::pair<std::string, std::string> readme_intro(const std::string& readme) {
  std::string name = "Kiln", paragraph;
  std::istringstream in(readme);
  std::string line;
  bool in_intro = false;
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0) {
      name = trim(line.substr(2));
      in_intro = true;
      continue;
    }
    if (!in_intro) continue;
    if (line.rfind("## ", 0) == 0) break;
    if (trim(line).empty()) {
      if (!paragraph.empty()) break;
      continue;
    }
    paragraph += line + "\n";
  }
  return {name, paragraph};
}

// The home page's hero: the course's name, its introduction, its totals and where to begin.
std::string hero_section(const Course& course, const std::string& name, const std::string& intro) {
  int checks = 0, points = 0;
  double low = 0, high = 0;
  for (const auto& m : course.modules) {
    checks += static_cast<int>(m.checks.size());
    points += m.max_points();
    const auto [a, b] = hour_range(m.hours);
    low += a, high += b;
  }
  const Module* first = course.modules.empty() ? nullptr : &course.modules.front();
  std::string h = "<section class=\"hero\">\n<p class=\"eyebrow\">The course</p>\n<h1>" + escape(name) + "</h1>\n";
  h += "<div class=\"lead\">" + markdown_to_html(intro) + "</div>\n";
  h += fmt::format("<ul class=\"stats\"><li><strong>{}</strong> modules</li><li><strong>{}</strong> checks</li>"
                   "<li><strong>{}</strong> points</li><li><strong>{}–{}</strong> hours</li></ul>\n",
                   course.modules.size(), checks, points, low, high);
  h += "<p class=\"actions\"><a class=\"button primary\" href=\"quickstart.html\">Start the course</a>";
  if (first) h += fmt::format(" <a class=\"button\" href=\"{}.html\">Read module {}</a>", first->name(), first->number_text());
  return h + "</p>\n</section>\n";
}

// "How to start": the README's Start section, or the first check command without one.
std::string start_section(const Context& cx) {
  const Course& course = cx.ws.course;
  const std::string start = markdown_section(cx.readme, "Start");
  std::string h = "<section>\n<h2 id=\"start\">How to start</h2>\n";
  if (!start.empty()) {
    h += "<div class=\"start-block\">" + markdown_to_html(start) + "</div>\n";
  } else if (!course.modules.empty()) {
    h += fmt::format("<pre class=\"terminal\"><code>bin/grader check {}</code></pre>\n",
                     course.modules.front().number_text());
  }
  return h + "</section>\n";
}

// "The module map": the drawing, and a legend of the tiers in the order they first appear.
std::string module_map_section(const Course& course) {
  std::string h = "<section>\n<h2 id=\"module-map\">The module map</h2>\n<p class=\"section-lead\">Each module runs on "
                  "your own code from the modules upstream of it: an arrow points from a module to one that builds "
                  "directly on it.</p>\n";
  h += "<div class=\"map-wrap\">" + module_map_svg(course) + "</div>\n<ul class=\"legend\">";
  std::vector<std::string> tiers;
  for (const auto& m : course.modules)
    if (std::find(tiers.begin(), tiers.end(), m.tier) == tiers.end()) tiers.push_back(m.tier);
  for (const auto& t : tiers) h += fmt::format("<li class=\"tier-{}\"><span class=\"swatch\"></span>{}</li>", escape(t), escape(capitalised(t)));
  return h + "</ul>\n</section>\n";
}

// "Modules": a card for each module, with its facts and what it requires.
std::string module_cards_section(const Course& course) {
  std::string h = "<section>\n<h2 id=\"modules\">Modules</h2>\n<div class=\"cards modules\">\n";
  for (const auto& m : course.modules) {
    std::string req;
    for (int r : m.requires_)
      if (const Module* d = course.by_number(r)) req += (req.empty() ? "" : ", ") + d->number_text();
    h += fmt::format(
        "<a class=\"card tier-{tier}\" href=\"{name}.html\"><span class=\"card-num\">{num}</span><span "
        "class=\"card-title\">{title}</span><span class=\"card-sub\">{sub}</span><span class=\"card-meta\">"
        "<span class=\"dots\">{dots}</span> · {hours} h · {checks} checks · {points} pts{req}</span></a>\n",
        fmt::arg("tier", escape(m.tier)), fmt::arg("name", m.name()), fmt::arg("num", m.number_text()),
        fmt::arg("title", escape(m.title)), fmt::arg("sub", escape(m.subtitle)), fmt::arg("dots", dots(m.difficulty)),
        fmt::arg("hours", escape(en_dash(m.hours))), fmt::arg("checks", m.checks.size()), fmt::arg("points", m.max_points()),
        fmt::arg("req", req.empty() ? "" : " · requires " + req));
  }
  return h + "</div>\n</section>\n";
}

// {{commands NAME...}}: a table of the named commands, each with the CLI's one-line description.
std::string commands_table(const Context& cx, const std::vector<std::string>& names) {
  std::string h = "<div class=\"table-wrap\"><table class=\"command-table\">\n<thead><tr><th>Command</th><th>What it "
                  "does</th></tr></thead>\n<tbody>\n";
  for (const auto& name : names) {
    const CommandDoc* doc = cx.command(name);
    if (cx.has_command(name))
      h += fmt::format("<tr><td><code>grader {}</code></td><td>{}</td></tr>\n", escape(name),
                       doc ? escape(doc->description) : "");
    else
      h += fmt::format("<tr class=\"absent\"><td><code>grader {}</code></td><td><span class=\"muted\">not in this "
                       "build of the grader</span></td></tr>\n",
                       escape(name));
  }
  return h + "</tbody></table></div>\n";
}

// {{help NAME...}}: each named command's full --help.
std::string help_blocks(const Context& cx, const std::vector<std::string>& names) {
  std::string h;
  for (const auto& name : names) {
    const CommandDoc* doc = cx.command(name);
    if (doc && !doc->help.empty())
      h += "<pre class=\"help\"><code>" + escape(doc->help) + "</code></pre>\n";
    else if (!cx.has_command(name))
      h += "<p class=\"muted\">Not in this build of the grader.</p>\n";
  }
  return h;
}

// {{modules}}: a table of every module, its facts, and links to what it requires.
std::string modules_table(const Course& course) {
  std::string h = "<div class=\"table-wrap\"><table class=\"module-table\">\n<thead><tr><th>Module</th><th>Tier</th>"
                  "<th>Difficulty</th><th>Hours</th><th class=\"pts\">Checks</th><th class=\"pts\">Points</th>"
                  "<th>Requires</th></tr></thead>\n<tbody>\n";
  for (const auto& m : course.modules) {
    std::string req;
    for (int r : m.requires_)
      if (const Module* d = course.by_number(r))
        req += fmt::format("{}<a href=\"{}.html\">{}</a>", req.empty() ? "" : ", ", d->name(), d->number_text());
    h += fmt::format("<tr><td><a href=\"{}.html\">{} {}</a></td><td>{}</td><td><span class=\"dots\">{}</span></td>"
                     "<td>{}</td><td class=\"pts\">{}</td><td class=\"pts\">{}</td><td>{}</td></tr>\n",
                     m.name(), m.number_text(), escape(m.title), escape(m.tier), dots(m.difficulty),
                     escape(en_dash(m.hours)), m.checks.size(), m.max_points(), req.empty() ? "—" : req);
  }
  return h + "</tbody></table></div>\n";
}

// What one {{directive args...}} line of a guide inserts.
std::string directive_html(const Context& cx, const fs::path& markdown_file, const std::string& line) {
  std::istringstream words(line.substr(2, line.size() - 4));
  std::string directive, word;
  words >> directive;
  std::vector<std::string> args;
  while (words >> word) args.push_back(word);
  if (directive == "readme") {
    const std::string section = markdown_section(cx.readme, args.empty() ? "Start" : args[0]);
    if (section.empty()) return "";
    return "<div class=\"start-block\">" + markdown_to_html(section, {"content", "search"}) + "</div>\n";
  }
  if (directive == "commands") return commands_table(cx, args);
  if (directive == "help") return help_blocks(cx, args);
  if (directive == "modules") return modules_table(cx.ws.course);
  throw CourseError(fmt::format("{}: unknown directive {{{{{}}}}} (known: readme, commands, help, modules)",
                                markdown_file.string(), directive));
}

}  // namespace

Page module_page(const Context& cx, const Module& m) {
  const Course& course = cx.ws.course;
  const auto visible = visible_checks(m);
  Page page{.file = m.name() + ".html",
            .title = m.number_text() + " " + m.title,
            .kind = "module",
            .description = m.subtitle};
  std::string& h = page.body;
  h += module_header(course, m);
  h += objectives_section(m);
  h += chapter_part(course, m);
  h += "<div class=\"part\"><span>The assignment</span><small>generated from module.yaml and the module's "
       "code</small></div>\n";
  h += what_you_write_section(course, m);
  h += checks_section(m, visible);
  h += failures_section(m, visible);
  h += commands_section(cx, m, visible);
  h += whats_next_section(course, m);
  h += pager(course, m);
  return page;
}

Page home_page(const Context& cx) {
  const Course& course = cx.ws.course;
  const auto [name, intro] = readme_intro(cx.readme);
  Page page{.file = "index.html", .title = "Home", .kind = "home", .description = trim(intro)};
  page.body += hero_section(course, name, intro);
  page.body += start_section(cx);
  page.body += module_map_section(course);
  page.body += module_cards_section(course);
  return page;
}

Page guide_page(const Context& cx, const fs::path& markdown_file, const std::string& file) {
  Page page{.file = file, .kind = "guide"};
  std::string md = read_text(markdown_file);
  if (md.rfind("# ", 0) == 0) {
    const std::size_t eol = md.find('\n');
    page.title = trim(md.substr(2, eol - 2));
    md.erase(0, eol == std::string::npos ? md.size() : eol + 1);
  }
  page.body = "<h1 class=\"page-title\">" + escape(page.title) + "</h1>\n";

  // Split at directive lines, render the Markdown between them, and insert what each directive makes.
  std::istringstream in(md);
  std::string line, chunk;
  auto flush = [&] {
    if (!trim(chunk).empty()) page.body += markdown_to_html(chunk, {"content", "search"});
    chunk.clear();
  };
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.size() < 4 || t.rfind("{{", 0) != 0 || t.compare(t.size() - 2, 2, "}}") != 0) {
      chunk += line + "\n";
      continue;
    }
    flush();
    page.body += directive_html(cx, markdown_file, t);
  }
  flush();
  return page;
}

}  // namespace kiln::grader::site
