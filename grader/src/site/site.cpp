// `grader site build`: the pages (site_pages.cpp) put into the layout template, the assets copied
// (the site's own from site/assets, KaTeX, highlight.js and the Inter font from Debian's packages),
// and a search index over every section of every page.
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "internal.h"

namespace kiln::grader {

namespace site {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CourseError(fmt::format("cannot read {}", path.string()));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const CommandDoc* Context::command(const std::string& name) const {
  for (const auto& c : options.commands)
    if (c.name == name) return &c;
  return nullptr;
}

bool Context::has_command(const std::string& name) const { return options.commands.empty() || command(name); }

std::string markdown_section(const std::string& markdown, const std::string& heading) {
  std::istringstream in(markdown);
  std::string line, out;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      if (inside) break;
      inside = line.compare(3, heading.size(), heading) == 0;
      continue;
    }
    if (inside) out += line + "\n";
  }
  return out;
}

}  // namespace site

namespace {

using site::escape;

// Files the site takes from Debian's packages: where they are, where they go, which package.
struct Vendored {
  const char* from;
  const char* to;
  const char* package;
};
constexpr Vendored kVendored[] = {
    {"/usr/share/javascript/katex/katex.min.js", "assets/vendor/katex/katex.min.js", "libjs-katex"},
    {"/usr/share/javascript/katex/katex.min.css", "assets/vendor/katex/katex.min.css", "libjs-katex"},
    {"/usr/share/javascript/katex/fonts", "assets/vendor/katex/fonts", "libjs-katex"},
    {"/usr/share/javascript/highlight.js/highlight.min.js", "assets/vendor/highlight/highlight.min.js",
     "libjs-highlight.js"},
    {"/usr/share/fonts/opentype/inter/Inter-Regular.otf", "assets/fonts/Inter-Regular.otf", "fonts-inter"},
    {"/usr/share/fonts/opentype/inter/Inter-Italic.otf", "assets/fonts/Inter-Italic.otf", "fonts-inter"},
    {"/usr/share/fonts/opentype/inter/Inter-Medium.otf", "assets/fonts/Inter-Medium.otf", "fonts-inter"},
    {"/usr/share/fonts/opentype/inter/Inter-SemiBold.otf", "assets/fonts/Inter-SemiBold.otf", "fonts-inter"},
    {"/usr/share/fonts/opentype/inter/Inter-Bold.otf", "assets/fonts/Inter-Bold.otf", "fonts-inter"},
};

// Copies a file or a folder's files, skipping those already there with the same size and age.
void copy_tree(const fs::path& from, const fs::path& to) {
  auto copy_one = [](const fs::path& a, const fs::path& b) {
    std::error_code ec;
    if (fs::exists(b, ec) && fs::file_size(a) == fs::file_size(b) && fs::last_write_time(a) <= fs::last_write_time(b))
      return;
    fs::create_directories(b.parent_path());
    fs::copy_file(a, b, fs::copy_options::overwrite_existing);
  };
  if (fs::is_directory(from)) {
    for (const auto& entry : fs::recursive_directory_iterator(from))
      if (entry.is_regular_file()) copy_one(entry.path(), to / fs::relative(entry.path(), from));
  } else {
    copy_one(from, to);
  }
}

void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw CourseError(fmt::format("cannot write {}", path.string()));
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size()))
    text.replace(p, from.size(), to);
  return text;
}

std::string strip_tags(std::string_view html) {
  std::string out;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<') in_tag = true;
    else if (c == '>') in_tag = false, out += ' ';
    else if (!in_tag) out += c;
  }
  out = replace_all(replace_all(replace_all(replace_all(out, "&lt;", "<"), "&gt;", ">"), "&quot;", "\""), "&amp;", "&");
  std::string collapsed;
  for (char c : out) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!collapsed.empty() && collapsed.back() != ' ') collapsed += ' ';
    } else {
      collapsed += c;
    }
  }
  return collapsed;
}

// Removes the elements named `tag` with their content (math's TeX, the map's SVG) for the search.
// `open` is how the element starts: "<svg", "<span class=\"pts-badge\"".
std::string drop_elements(std::string html, const std::string& open) {
  const std::string tag = open.substr(1, open.find(' ') == std::string::npos ? std::string::npos : open.find(' ') - 1);
  for (std::size_t p = html.find(open); p != std::string::npos; p = html.find(open, p)) {
    const std::size_t end = html.find("</" + tag + ">", p);
    if (end == std::string::npos) break;
    html.erase(p, end + tag.size() + 3 - p);
  }
  return html;
}

// The headings of level 2 and 3 with ids, in order: the table of contents and the search's sections.
struct Heading {
  int level;
  std::string id, html;
  std::size_t at, end;
};
std::vector<Heading> headings(const std::string& body) {
  std::vector<Heading> out;
  for (std::size_t p = body.find("<h"); p != std::string::npos; p = body.find("<h", p + 1)) {
    if (p + 9 >= body.size() || (body[p + 2] != '2' && body[p + 2] != '3') || body.compare(p + 3, 5, " id=\"") != 0)
      continue;
    const std::size_t id_end = body.find('"', p + 8);
    const std::string close = std::string("</h") + body[p + 2] + ">";
    const std::size_t inner = body.find('>', id_end) + 1, end = body.find(close, inner);
    if (end == std::string::npos) continue;
    out.push_back({body[p + 2] - '0', body.substr(p + 8, id_end - p - 8), body.substr(inner, end - inner), p,
                   end + close.size()});
  }
  return out;
}

std::string nav_html(const Course& course, const std::string& current, bool has_authoring) {
  auto item = [&](const std::string& file, const std::string& label) {
    const bool active = file == current;
    return fmt::format("<a href=\"{}\"{}>{}</a>\n", file, active ? " class=\"active\" aria-current=\"page\"" : "", label);
  };
  std::string h = "<nav class=\"nav\" aria-label=\"Course\">\n<div class=\"nav-group\">\n";
  h += item("index.html", "Home") + item("quickstart.html", "Quick start");
  if (fs::exists(course.root / "docs" / "milestones.md")) h += item("milestones.html", "Milestones");
  h += "</div>\n";
  std::vector<std::string> tiers;
  for (const auto& m : course.modules)
    if (std::find(tiers.begin(), tiers.end(), m.tier) == tiers.end()) tiers.push_back(m.tier);
  for (const auto& tier : tiers) {
    std::string label = tier;
    if (!label.empty()) label[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(label[0])));
    h += fmt::format("<div class=\"nav-group tier-{}\">\n<p class=\"nav-label\">{}</p>\n", escape(tier), escape(label));
    for (const auto& m : course.modules)
      if (m.tier == tier)
        h += item(m.name() + ".html",
                  fmt::format("<span class=\"num\">{}</span>{}", m.number_text(), escape(m.title)));
    h += "</div>\n";
  }
  h += "<div class=\"nav-group\">\n<p class=\"nav-label\">Instructors</p>\n" + item("instructor.html", "Instructor guide");
  if (has_authoring) h += item("authoring.html", "Writing a module");
  h += "</div>\n</nav>\n";
  return h;
}

std::string toc_html(const std::string& body) {
  // The parts of a module page (the chapter, the assignment) label their sections, as on the page.
  std::vector<std::pair<std::size_t, std::string>> parts;
  for (std::size_t p = body.find("<div class=\"part"); p != std::string::npos; p = body.find("<div class=\"part", p + 1)) {
    const std::size_t span = body.find("<span>", p), span_end = body.find("</span>", span);
    if (span != std::string::npos && span_end != std::string::npos) parts.emplace_back(p, body.substr(span + 6, span_end - span - 6));
  }
  std::string items;
  std::size_t next_part = 0;
  for (const auto& h : headings(body)) {
    if (h.level != 2) continue;
    for (; next_part < parts.size() && parts[next_part].first < h.at; ++next_part)
      items += "<li class=\"toc-part\">" + parts[next_part].second + "</li>\n";
    items += fmt::format("<li><a href=\"#{}\">{}</a></li>\n", h.id, strip_tags(h.html));
  }
  if (items.empty()) return "";
  return "<nav class=\"toc-nav\" aria-label=\"On this page\"><p class=\"toc-label\">On this page</p>\n<ul>\n" + items +
         "</ul>\n</nav>\n";
}

// One entry per section: the page, the heading, where it is, and its text.
void index_page(nlohmann::json& index, const site::Page& page) {
  const std::string body = drop_elements(drop_elements(drop_elements(page.body, "<x-equation"), "<svg"), "<span class=\"pts-badge\"");
  const auto hs = headings(body);
  auto add = [&](const std::string& section, const std::string& url, std::size_t from, std::size_t to) {
    std::string text = strip_tags(body.substr(from, to - from));
    if (text.size() < 2) return;
    std::string title = section;
    while (!title.empty() && title.back() == ' ') title.pop_back();
    index.push_back({{"p", page.title}, {"s", title}, {"u", url}, {"x", text}});
  };
  add(page.title, page.file, 0, hs.empty() ? body.size() : hs.front().at);
  for (std::size_t i = 0; i < hs.size(); ++i)
    add(strip_tags(hs[i].html), page.file + "#" + hs[i].id, hs[i].end, i + 1 < hs.size() ? hs[i + 1].at : body.size());
}

// A guide may link a page this course does not have (authoring.html without docs/authoring.md):
// such a link becomes its text, so that no link on the site is broken.
std::string unlink_missing(std::string body, const std::set<std::string>& files) {
  for (std::size_t p = body.find("<a href=\""); p != std::string::npos; p = body.find("<a href=\"", p + 1)) {
    const std::size_t start = p + 9, end = body.find('"', start);
    const std::string target = body.substr(start, end - start);
    const std::string file = target.substr(0, target.find('#'));
    if (file.size() < 6 || file.compare(file.size() - 5, 5, ".html") != 0 || file.find_first_of("/:") != std::string::npos ||
        files.count(file))
      continue;
    const std::size_t open_end = body.find('>', end), close = body.find("</a>", open_end);
    if (open_end == std::string::npos || close == std::string::npos) break;
    body = body.substr(0, p) + body.substr(open_end + 1, close - open_end - 1) + body.substr(close + 4);
  }
  return body;
}

// Makes `out` ready: creates it, or clears the pages of a previous build; refuses anything else.
void prepare_output(const fs::path& out) {
  const fs::path marker = out / ".kiln-site";
  if (fs::exists(out) && !fs::is_empty(out) && !fs::exists(marker)) {
    throw CourseError(fmt::format("{} is not empty and holds no site built by Kiln (no .kiln-site): choose an empty "
                                  "or new folder with --out",
                                  out.string()));
  }
  fs::create_directories(out);
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.is_regular_file() && entry.path().extension() == ".html") fs::remove(entry.path());
  write_text(marker, "This folder is written by `grader site build`; it is replaced on every build.\n");
}

}  // namespace

SiteSummary build_site(const Workspace& ws, const SiteOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const Course& course = ws.course;
  const fs::path site_dir = ws.kiln_home / "site";
  const fs::path out = options.out.empty() ? course.root / "site" / "_site" : options.out;
  const fs::path layout_file = site_dir / "templates" / "layout.html";
  if (!fs::exists(layout_file))
    throw CourseError(fmt::format("{} is missing: the site's templates live in site/ of the Kiln framework (KILN_HOME)",
                                  layout_file.string()));
  for (const auto& v : kVendored)
    if (!fs::exists(v.from))
      throw CourseError(fmt::format("{} is missing: install the Debian package {} (bin/grader installs everything in "
                                    "bin/packages.txt)",
                                    v.from, v.package));
  prepare_output(out);

  site::Context cx{ws, options, fs::exists(course.root / "README.md") ? site::read_text(course.root / "README.md") : ""};
  std::vector<site::Page> pages;
  pages.push_back(site::home_page(cx));
  pages.push_back(site::guide_page(cx, site_dir / "pages" / "quickstart.md", "quickstart.html"));
  for (const auto& m : course.modules) pages.push_back(site::module_page(cx, m));
  // The milestones: what the student's library trains, with the reference's loss curves.
  if (fs::exists(course.root / "docs" / "milestones.md"))
    pages.push_back(site::guide_page(cx, course.root / "docs" / "milestones.md", "milestones.html"));
  pages.push_back(site::guide_page(cx, site_dir / "pages" / "instructor.md", "instructor.html"));
  const bool has_authoring = fs::exists(course.root / "docs" / "authoring.md");
  if (has_authoring) pages.push_back(site::guide_page(cx, course.root / "docs" / "authoring.md", "authoring.html"));

  std::string site_name = "Kiln";
  if (cx.readme.rfind("# ", 0) == 0) site_name = cx.readme.substr(2, cx.readme.find('\n') - 2);
  // site/templates/layout.html: {{site}}, {{title}}, {{description}}, {{kind}}, {{nav}}, {{toc}}, {{content}}.
  const std::string layout = site::read_text(layout_file);
  nlohmann::json index = nlohmann::json::array();
  std::set<std::string> files;
  for (const auto& page : pages) files.insert(page.file);
  for (auto& page : pages) page.body = unlink_missing(page.body, files);
  for (const auto& page : pages) {
    std::string html = layout;
    html = replace_all(html, "{{site}}", escape(site_name));
    html = replace_all(html, "{{title}}", escape(page.title));
    html = replace_all(html, "{{description}}", escape(page.description.empty() ? page.title : page.description));
    html = replace_all(html, "{{kind}}", page.kind);
    html = replace_all(html, "{{nav}}", nav_html(course, page.file, has_authoring));
    html = replace_all(html, "{{toc}}", toc_html(page.body));
    // The page body last: chapters may contain text that looks like a placeholder.
    const std::size_t at = html.find("{{content}}");
    if (at != std::string::npos) html.replace(at, 11, page.body);
    write_text(out / page.file, html);
    index_page(index, page);
  }
  write_text(out / "assets" / "search-index.js", "window.KILN_SEARCH = " + index.dump() + ";\n");

  copy_tree(site_dir / "assets", out / "assets");
  for (const auto& v : kVendored) copy_tree(v.from, out / v.to);
  // Figures and other files the chapters refer to, next to the pages as in docs/.
  if (fs::is_directory(course.root / "docs"))
    for (const auto& entry : fs::directory_iterator(course.root / "docs"))
      if (entry.is_directory()) copy_tree(entry.path(), out / entry.path().filename());

  SiteSummary summary;
  summary.out = out;
  summary.pages = static_cast<int>(pages.size());
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return summary;
}

}  // namespace kiln::grader
