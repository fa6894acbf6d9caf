// Markdown to HTML with md4c: GitHub's tables and autolinks, $inline$ and $$display$$ math as
// <x-equation> elements (site.js renders them with KaTeX), and an id on every heading so that the
// table of contents, the search and other pages can link to it.
#include <md4c-html.h>

#include <cctype>
#include <set>

#include "kiln/grader/site.h"

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

}  // namespace

std::string markdown_to_html(const std::string& markdown, const std::vector<std::string>& reserved_ids) {
  std::string html;
  md_html(markdown.data(), static_cast<MD_SIZE>(markdown.size()), append, &html,
          MD_DIALECT_GITHUB | MD_FLAG_LATEXMATHSPANS, MD_HTML_FLAG_SKIP_UTF8_BOM);

  // Ids for headings (<h2>...</h2> as md4c writes them), unique within the page; tables wrapped so
  // that a wide one scrolls instead of widening the page.
  std::string out;
  out.reserve(html.size() + html.size() / 16);
  std::set<std::string> used(reserved_ids.begin(), reserved_ids.end());
  for (std::size_t i = 0; i < html.size();) {
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
      i += 7;
      continue;
    }
    if (html.compare(i, 8, "</table>") == 0) {
      out += "</table></div>";
      i += 8;
      continue;
    }
    out += html[i++];
  }
  return out;
}

}  // namespace kiln::grader
