// Markdown to HTML with md4c: GitHub's tables and autolinks, $inline$ and $$display$$ math as
// <x-equation> elements (site.js renders them with KaTeX; display math is set aside before md4c
// parses, so that its lines cannot read as Markdown), and an id on every heading so that the table
// of contents, the search and other pages can link to it.
#include <md4c-html.h>

#include <cctype>
#include <set>

#include "kiln/grader/site.h"
#include "internal.h"

namespace kiln::grader {

namespace {

void append(const MD_CHAR* text, MD_SIZE size, void* out) { static_cast<std::string*>(out)->append(text, size); }

std::string strip_tags(std::string_view html) {
  std::string out;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<') in_tag = true;
    else if (c == '>') in_tag = false;
    else if (!in_tag) out += c;
  }
  return out;
}

std::string slug(std::string_view html) {
  std::string out;
  for (char c : strip_tags(html)) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) out += static_cast<char>(std::tolower(u));
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "section" : out;
}

std::string token(std::size_t n) { return "KILNDISPLAYMATH" + std::to_string(n) + "X"; }

// Takes $$...$$ out of the text before Markdown sees it: display math spans lines, and a line of
// it can look like Markdown (a lone "=" under a line makes that line a heading). Code blocks and
// code spans are left alone.
std::string protect_display_math(const std::string& md, std::vector<std::string>& math) {
  std::string out;
  bool line_start = true, in_fence = false;
  std::string fence;
  for (std::size_t i = 0; i < md.size();) {
    if (line_start) {
      const std::size_t eol = std::min(md.find('\n', i), md.size());
      const std::size_t text = md.find_first_not_of(' ', i);
      const bool fence_line = text != std::string::npos && text < eol && text - i <= 3 &&
                              (md.compare(text, 3, "```") == 0 || md.compare(text, 3, "~~~") == 0);
      if (in_fence || fence_line) {
        if (!in_fence) in_fence = true, fence = md.substr(text, 3);
        else if (fence_line && md.compare(text, 3, fence) == 0) in_fence = false;
        out.append(md, i, std::min(eol + 1, md.size()) - i);
        i = eol + 1;
        continue;
      }
    }
    const char c = md[i];
    line_start = c == '\n';
    if (c == '`') {  // a code span: copied as it is, up to the same run of backticks
      const std::size_t run = std::min(md.find_first_not_of('`', i), md.size()) - i;
      const std::size_t close = md.find(std::string(run, '`'), i + run);
      const std::size_t end = close == std::string::npos ? i + run : close + run;
      out.append(md, i, end - i);
      line_start = false;
      i = end;
      continue;
    }
    if (c == '$' && i + 1 < md.size() && md[i + 1] == '$') {
      const std::size_t close = md.find("$$", i + 2);
      if (close != std::string::npos) {
        math.push_back(md.substr(i + 2, close - i - 2));
        out += token(math.size() - 1);
        i = close + 2;
        continue;
      }
    }
    out += c;
    ++i;
  }
  return out;
}

}  // namespace

std::string markdown_to_html(const std::string& markdown_text, const std::vector<std::string>& reserved_ids) {
  std::vector<std::string> math;
  const std::string markdown = protect_display_math(markdown_text, math);
  std::string rendered;
  md_html(markdown.data(), static_cast<MD_SIZE>(markdown.size()), append, &rendered,
          MD_DIALECT_GITHUB | MD_FLAG_LATEXMATHSPANS, MD_HTML_FLAG_SKIP_UTF8_BOM);
  std::string html;
  html.reserve(rendered.size());
  for (std::size_t i = 0; i < rendered.size();) {
    const std::size_t at = rendered.find("KILNDISPLAYMATH", i);
    if (at == std::string::npos) {
      html.append(rendered, i, std::string::npos);
      break;
    }
    html.append(rendered, i, at - i);
    const std::size_t x = rendered.find('X', at + 15);
    const std::string digits = x == std::string::npos ? "" : rendered.substr(at + 15, x - at - 15);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || std::stoul(digits) >= math.size()) {
      html += "KILNDISPLAYMATH";  // not one of ours
      i = at + 15;
      continue;
    }
    html += "<x-equation type=\"display\">" + site::escape(math[std::stoul(digits)]) + "</x-equation>";
    i = x + 1;
  }

  // Ids for headings (<h2>...</h2> as md4c writes them), unique within the page; tables wrapped so
  // that a wide one scrolls instead of widening the page. In a table, "\|" is how a cell writes a
  // pipe that does not end it, also inside a code span or inline math (as on GitHub, so that
  // $\|x\|$ in a table is |x|, not the norm); md4c leaves it escaped there.
  std::string out;
  out.reserve(html.size() + html.size() / 16);
  std::set<std::string> used(reserved_ids.begin(), reserved_ids.end());
  bool in_table = false, in_span = false;
  for (std::size_t i = 0; i < html.size();) {
    if (in_table) {
      for (const char* tag : {"<code>", "<x-equation>", "</code>", "</x-equation>"}) {
        if (html.compare(i, std::char_traits<char>::length(tag), tag) == 0) in_span = tag[1] != '/';
      }
      if (in_span && html.compare(i, 2, "\\|") == 0) {
        out += '|';
        i += 2;
        continue;
      }
    }
    if (html[i] == '<' && i + 3 < html.size() && html[i + 1] == 'h' && html[i + 2] >= '1' && html[i + 2] <= '6' &&
        html[i + 3] == '>') {
      const char level = html[i + 2];
      const std::string close = std::string("</h") + level + ">";
      const std::size_t end = html.find(close, i);
      if (end != std::string::npos) {
        const std::string inner = html.substr(i + 4, end - i - 4);
        std::string id = slug(inner);
        for (int n = 2; used.count(id); ++n) id = slug(inner) + "-" + std::to_string(n);
        used.insert(id);
        out += std::string("<h") + level + " id=\"" + id + "\">" + inner + close;
        i = end + close.size();
        continue;
      }
    }
    if (html.compare(i, 7, "<table>") == 0) {
      out += "<div class=\"table-wrap\"><table>";
      in_table = true;
      i += 7;
      continue;
    }
    if (html.compare(i, 8, "</table>") == 0) {
      out += "</table></div>";
      in_table = in_span = false;
      i += 8;
      continue;
    }
    out += html[i++];
  }
  return out;
}

}  // namespace kiln::grader
