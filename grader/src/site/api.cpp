// "What you write": the stubs of a module's student files (function bodies that throw
// kiln::NotImplemented), each matched to its declaration in the public headers and described by
// the comment above that declaration. A small C++ reader, not a compiler: it knows namespaces,
// classes, declarations, bodies and comments, which is all that headers written for people need.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "kiln/grader/site.h"
#include "kiln/grader/workspace.h"

namespace kiln::grader {

namespace {

struct Token {
  std::string text;
  int line = 0;
  std::size_t begin = 0, end = 0;  // offsets in the source
};

struct Comment {
  int line = 0;
  bool own_line = false;  // nothing but the comment on its line
  std::string text;       // after the `//`
};

struct Lexed {
  std::vector<Token> tokens;
  std::vector<Comment> comments;
};

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80; }
bool is_identifier(const std::string& s) { return !s.empty() && ident_char(s[0]) && !std::isdigit(static_cast<unsigned char>(s[0])); }

Lexed lex(const std::string& src) {
  Lexed out;
  int line = 1;
  bool code_on_line = false;
  const std::size_t n = src.size();
  for (std::size_t i = 0; i < n;) {
    const char c = src[i];
    if (c == '\n') {
      ++line, ++i, code_on_line = false;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      std::size_t e = src.find('\n', i);
      if (e == std::string::npos) e = n;
      out.comments.push_back({line, !code_on_line, src.substr(i + 2, e - i - 2)});
      i = e;
    } else if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      std::size_t e = src.find("*/", i + 2);
      e = e == std::string::npos ? n : e + 2;
      line += static_cast<int>(std::count(src.begin() + i, src.begin() + e, '\n'));
      i = e;
    } else if (c == '#' && !code_on_line) {  // a preprocessor line, with its continuations
      while (i < n && src[i] != '\n') {
        if (src[i] == '\\' && i + 1 < n && src[i + 1] == '\n') ++line, ++i;
        ++i;
      }
    } else if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < n && src[j] != c && src[j] != '\n') j += src[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, n);
      out.tokens.push_back({src.substr(i, j - i), line, i, j});
      i = j, code_on_line = true;
    } else if (ident_char(c)) {
      std::size_t j = i;
      while (j < n && ident_char(src[j])) ++j;
      out.tokens.push_back({src.substr(i, j - i), line, i, j});
      i = j, code_on_line = true;
    } else {
      const std::size_t len = (c == ':' && i + 1 < n && src[i + 1] == ':') ? 2 : 1;
      out.tokens.push_back({src.substr(i, len), line, i, i + len});
      i += len, code_on_line = true;
    }
  }
  return out;
}

// A function declaration or definition, or a class.
struct Entity {
  bool is_class = false;
  std::vector<std::string> scope;  // enclosing namespaces and classes, outermost first
  std::string name;                // "reshape", "Tensor" (a constructor), "operator+"
  std::string params;              // parameter types, normalised for comparison
  std::string text;                // as written, whitespace collapsed, without `;` or body
  std::size_t name_at = 0;         // where the name (with its written qualifiers) starts in text
  std::string comment;             // the comment that describes it (see parse)
  std::string body_comment;        // a definition's first comment inside its body
  bool not_implemented = false;    // a definition whose body throws kiln::NotImplemented (or is a kernel's KILN_NOT_IMPLEMENTED)
  std::vector<std::string> bases;  // a class's base classes, as written
  int line = 0;

  std::string qualified() const {
    std::string q;
    for (const auto& s : scope) q += s + "::";
    return q + name;
  }
};

std::string collapse(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
    } else {
      if (space && !(out.back() == '(' || c == ')' || c == ',')) out += ' ';
      out += c, space = false;
    }
  }
  return out;
}

// The source text of tokens [first, last], without comments, whitespace collapsed.
std::string source_text(const std::string& src, const std::vector<Token>& t, std::size_t first, std::size_t last) {
  std::string raw;
  for (std::size_t i = first; i <= last; ++i) {
    if (i > first && t[i].begin > t[i - 1].end) raw += ' ';
    raw += t[i].text;
  }
  (void)src;
  return collapse(raw);
}

// Parameter types without names or default values: "const Tensor& a, int k = 1" -> "constTensor&,int".
std::string normalise_params(const std::vector<Token>& t, std::size_t open, std::size_t close) {
  std::string out;
  std::vector<std::string> param;
  auto flush = [&] {
    auto eq = std::find(param.begin(), param.end(), "=");
    param.erase(eq, param.end());
    if (param.size() >= 2 && is_identifier(param.back()) && param[param.size() - 2] != "::") param.pop_back();
    if (!(param.size() == 1 && param[0] == "void")) {
      if (!out.empty()) out += ',';
      for (const auto& p : param) out += p;
    }
    param.clear();
  };
  int depth = 0;
  for (std::size_t i = open + 1; i < close; ++i) {
    const std::string& s = t[i].text;
    if (s == "(" || s == "<" || s == "[" || s == "{") ++depth;
    if (s == ")" || s == ">" || s == "]" || s == "}") --depth;
    if (s == "," && depth == 0) {
      flush();
      continue;
    }
    param.push_back(s);
  }
  if (!param.empty()) flush();
  return out;
}

std::size_t matching(const std::vector<Token>& t, std::size_t open, const std::string& o, const std::string& c) {
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    if (t[i].text == o) ++depth;
    if (t[i].text == c && --depth == 0) return i;
  }
  return t.size() - 1;
}

// The declarator of a function statement [first, last): its name, qualifiers and parameter list.
struct Declarator {
  bool found = false;
  std::vector<std::string> qualifiers;
  std::string name;
  std::size_t name_first = 0;  // first token of the qualified name
  std::size_t open = 0, close = 0;
};

Declarator find_declarator(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  Declarator d;
  int angle = 0;
  for (std::size_t i = first; i < last; ++i) {
    const std::string& s = t[i].text;
    if (s == "operator") {
      d.name = "operator";
      std::size_t j = i + 1;
      if (j + 1 < last && t[j].text == "(" && t[j + 1].text == ")") {
        d.name += "()", j += 2;
      }
      while (j < last && t[j].text != "(") d.name += t[j++].text;
      if (j >= last) return d;
      d.open = j;
      d.name_first = i;
    } else if (s == "<") {
      ++angle;
      continue;
    } else if (s == ">") {
      --angle;
      continue;
    } else if (angle > 0) {
      continue;
    } else if (s == "=") {
      return d;  // a variable with an initialiser
    } else if (s == "(") {
      if (i == first || !is_identifier(t[i - 1].text)) return d;
      d.name = t[i - 1].text;
      d.open = i;
      d.name_first = i - 1;
      if (d.name_first > first && t[d.name_first - 1].text == "~") d.name = "~" + d.name, --d.name_first;
    } else {
      continue;
    }
    // Qualifiers written before the name: Tensor::reshape, autograd::AddFunction::backward.
    while (d.name_first >= first + 2 && t[d.name_first - 1].text == "::" && is_identifier(t[d.name_first - 2].text)) {
      d.qualifiers.insert(d.qualifiers.begin(), t[d.name_first - 2].text);
      d.name_first -= 2;
    }
    d.close = matching(t, d.open, "(", ")");
    d.found = d.close < last;
    return d;
  }
  return d;
}

bool starts_with_any(const std::vector<Token>& t, std::size_t i, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (t[i].text == w) return true;
  return false;
}

// The text of a comment block: the `//` lines, one leading space removed, joined with newlines.
std::string block_text(const std::vector<const Comment*>& lines) {
  std::string out;
  for (const Comment* c : lines) {
    std::string s = c->text;
    if (!s.empty() && s[0] == ' ') s.erase(0, 1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    out += (out.empty() ? "" : "\n") + s;
  }
  return out;
}

// The base classes in a class head's tokens [first, last), after the `:`: "Function", "Module<float>".
std::vector<std::string> class_bases(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  std::vector<std::string> bases;
  std::string base;
  int angle = 0;
  bool in_bases = false;
  for (std::size_t k = first; k < last; ++k) {
    const std::string& b = t[k].text;
    if (b == "<") ++angle;
    if (b == ">") --angle;
    if (!in_bases) {
      in_bases = b == ":" && angle == 0;
      continue;
    }
    if (b == "," && angle == 0) {
      if (!base.empty()) bases.push_back(base);
      base.clear();
    } else if (!starts_with_any(t, k, {"public", "private", "protected", "virtual"})) {
      base += b;
    }
  }
  if (!base.empty()) bases.push_back(base);
  return bases;
}

// Whether the `{` at token `brace` belongs to a constructor's member initialiser (`x_{a}`), not a body.
bool initialiser_brace(const std::vector<Token>& t, const Declarator& d, std::size_t brace) {
  if (!d.found || d.close + 1 >= brace) return false;
  bool initialiser = false;
  for (std::size_t k = d.close + 1; k < brace; ++k) initialiser |= t[k].text == ":";
  return initialiser && (is_identifier(t[brace - 1].text) || t[brace - 1].text == ">");
}

// Whether the body between braces `open` and `close` throws kiln::NotImplemented (or is a kernel's
// KILN_NOT_IMPLEMENTED(), since device code cannot throw).
bool throws_not_implemented(const std::vector<Token>& t, std::size_t open, std::size_t close) {
  bool stub = false;
  for (std::size_t k = open + 1; k + 1 < close; ++k) {
    stub |= t[k].text == "KILN_NOT_IMPLEMENTED";
    if (t[k].text != "throw") continue;
    std::size_t n = k + 1;
    if (n + 1 < close && t[n].text == "kiln" && t[n + 1].text == "::") n += 2;
    stub |= t[n].text == "NotImplemented";
  }
  return stub;
}

// Reads every class and function of one file, statement by statement. A declaration's comment is,
// in order: a comment at the end of its line; the block of `//` lines right above it; the comment
// of the declaration right above it, when no blank line separates them (a group under one comment).
class Parser {
 public:
  explicit Parser(const std::string& src) : src_(src), lexed_(lex(src)), t_(lexed_.tokens) {
    for (const auto& c : lexed_.comments) (c.own_line ? own_line_ : trailing_)[c.line] = &c;
  }

  std::vector<Entity> run() {
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const std::string& s = t_[i].text;
      if (s == "}") {
        if (scopes_.size() > 1) scopes_.pop_back();
        start_ = i + 1;
      } else if (s == ";") {
        end_statement(i);
        start_ = i + 1;
      } else if (s == ":" && i == start_ + 1 && starts_with_any(t_, start_, {"public", "private", "protected"})) {
        start_ = i + 1;
      } else if (s == "{") {
        i = open_brace(i);
      }
    }
    return std::move(out_);
  }

 private:
  struct Scope {
    std::string name;
    bool is_class = false;
    int last_end_line = -10;  // where the previous statement in this scope ended
    std::string last_group;   // and the comment it passed on to its group
  };

  // The block of own-line comments that ends right above `line`.
  std::string above(int line) const {
    std::vector<const Comment*> lines;
    for (int l = line - 1; own_line_.count(l); --l) lines.insert(lines.begin(), own_line_.at(l));
    return block_text(lines);
  }

  // The enclosing namespaces and classes that have names, outermost first.
  std::vector<std::string> scope_names() const {
    std::vector<std::string> names;
    for (const auto& s : scopes_)
      if (!s.name.empty()) names.push_back(s.name);
    return names;
  }

  // The comment for a statement starting at `first` and ending at `last`; updates the group.
  std::string describe(std::size_t first, std::size_t last) {
    Scope& scope = scopes_.back();
    const int line = t_[first].line;
    std::string group = above(line);
    if (group.empty() && scope.last_end_line == line - 1) group = scope.last_group;
    scope.last_end_line = t_[last].line;
    scope.last_group = group;
    if (auto it = trailing_.find(t_[last].line); it != trailing_.end()) return block_text({it->second});
    return group;
  }

  // A function declared or defined by the statement from start_: its declaration ends before
  // token `end`, and its comment runs to token `last` (the ';', or the body's closing brace).
  Entity function_entity(const Declarator& d, std::size_t end, std::size_t last) {
    Entity e;
    e.scope = scope_names();
    e.scope.insert(e.scope.end(), d.qualifiers.begin(), d.qualifiers.end());
    e.name = d.name;
    e.params = normalise_params(t_, d.open, d.close);
    e.text = source_text(src_, t_, start_, end - 1);
    e.name_at = source_text(src_, t_, start_, d.name_first).size() - t_[d.name_first].text.size();
    e.line = t_[start_].line;
    e.comment = describe(start_, last);
    return e;
  }

  // A statement ended by the `;` at token i: a function's declaration, or something that only
  // passes its comment on to its group.
  void end_statement(std::size_t i) {
    if (start_ >= i || starts_with_any(t_, start_, {"using", "typedef", "friend", "static_assert", "return"})) return;
    const Declarator d = find_declarator(t_, start_, i);
    if (d.found) {
      out_.push_back(function_entity(d, i, i));
    } else {
      describe(start_, i);
    }
  }

  // The `{` at token i: a namespace, a class, an enum, an initialiser's braces or a function's
  // body. Returns the token the statement loop goes on after.
  std::size_t open_brace(std::size_t i) {
    std::size_t head = start_;
    if (head < i && t_[head].text == "template") head = matching(t_, head + 1, "<", ">") + 1;
    if (head < i && (t_[head].text == "namespace" ||
                     (t_[head].text == "extern" && head + 1 < i && t_[head + 1].text[0] == '"'))) {
      open_namespace(head, i);
      return i;
    }
    const Declarator d = find_declarator(t_, head, i);
    if (head < i && starts_with_any(t_, head, {"class", "struct", "union"}) && !d.found) {
      open_class(head, i);
      return i;
    }
    if (head < i && t_[head].text == "enum") return matching(t_, i, "{", "}");  // it ends at the `;` after the enumerators
    const std::size_t close = matching(t_, i, "{", "}");
    if (d.found && !initialiser_brace(t_, d, i)) {
      out_.push_back(function_definition(d, i, close));
      start_ = close + 1;
    }
    return close;  // after an initialiser's braces the statement goes on
  }

  // A namespace (its name joins the scope) or an `extern "C"` block (a scope without a name).
  void open_namespace(std::size_t head, std::size_t brace) {
    std::string name;
    for (std::size_t j = head + 1; j < brace; ++j)
      if (is_identifier(t_[j].text)) name += (name.empty() ? "" : "::") + t_[j].text;
    scopes_.push_back({t_[head].text == "extern" ? "" : name});
    start_ = brace + 1;
  }

  // A class, struct or union whose body opens at `brace`: its entity, and a scope for its members.
  void open_class(std::size_t head, std::size_t brace) {
    Entity e;
    e.is_class = true;
    e.scope = scope_names();
    std::size_t j = head + 1;
    while (j < brace && (t_[j].text == "[" || t_[j].text == "alignas"))
      j = matching(t_, j, t_[j].text == "[" ? "[" : "(", t_[j].text == "[" ? "]" : ")") + 1;
    e.name = j < brace && is_identifier(t_[j].text) ? t_[j].text : "";
    e.text = source_text(src_, t_, start_, brace - 1);
    e.line = t_[start_].line;
    e.comment = describe(start_, brace);
    e.bases = class_bases(t_, j + 1, brace);
    scopes_.push_back({e.name, true});
    out_.push_back(std::move(e));
    start_ = brace + 1;
  }

  // A function defined with its body between `open` and `close`: whether it is a stub, and the
  // first block of own-line comments inside the body.
  Entity function_definition(const Declarator& d, std::size_t open, std::size_t close) {
    Entity e = function_entity(d, open, close);
    e.not_implemented = throws_not_implemented(t_, open, close);
    std::vector<const Comment*> inside;
    for (const auto& c : lexed_.comments) {
      if (c.line <= t_[open].line || c.line >= t_[close].line || !c.own_line) continue;
      if (!inside.empty() && c.line != inside.back()->line + 1) break;
      inside.push_back(&c);
    }
    e.body_comment = block_text(inside);
    return e;
  }

  const std::string& src_;
  const Lexed lexed_;
  const std::vector<Token>& t_;
  std::map<int, const Comment*> own_line_, trailing_;
  std::vector<Scope> scopes_{{}};
  std::vector<Entity> out_;
  std::size_t start_ = 0;  // the first token of the statement being read
};

std::vector<Entity> parse(const std::string& src) { return Parser(src).run(); }

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The one-line description in a comment: the first sentence of its first prose paragraph (two
// when the first is only a label, "Element access."). A paragraph ends at a blank line, at an
// indented line (a formula or a listing), and after a line that ends like a formula (`]`, `)`)
// when the next one starts a sentence. A one-line title without a full stop is skipped, rulers
// and the course's "Yours (file)." marker are dropped, and a long sentence is cut at a comma.
std::string first_sentences(const std::string& comment) {
  std::vector<std::string> lines;
  {
    std::istringstream in(comment);
    for (std::string line; std::getline(in, line);) {
      const bool ruler = line.size() >= 3 && line.find_first_not_of("-=*/_~ ") == std::string::npos;
      if (!ruler) lines.push_back(line);
    }
  }
  auto indented = [](const std::string& l) { return l.size() > 1 && l[0] == ' ' && l[1] == ' '; };
  auto blank = [](const std::string& l) { return l.find_first_not_of(' ') == std::string::npos; };
  std::vector<std::string> paragraphs;
  std::string current;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (blank(l) || indented(l)) {
      if (!current.empty()) paragraphs.push_back(current), current.clear();
      continue;
    }
    current += (current.empty() ? "" : " ") + l;
    const char last = l.back();
    const bool formula_end = !std::isalpha(static_cast<unsigned char>(last)) && static_cast<unsigned char>(last) < 0x80 && std::string(",;:(-/.'\"`").find(last) == std::string::npos;
    if (formula_end && i + 1 < lines.size() && !lines[i + 1].empty() && std::isupper(static_cast<unsigned char>(lines[i + 1][0])))
      paragraphs.push_back(current), current.clear();
  }
  if (!current.empty()) paragraphs.push_back(current);
  if (paragraphs.empty()) return "";
  std::string flat = collapse(paragraphs[0]);
  const bool title = flat.find(' ') != std::string::npos && std::string(".:!?").find(flat.back()) == std::string::npos &&
                     lines.size() > 1 && paragraphs.size() > 1 && flat.size() < 80;
  if (title) flat = collapse(paragraphs[1]);
  if (flat.rfind("Yours", 0) == 0) {  // "Yours.", "Yours (src/x.cpp).", "Yours: ..."
    std::size_t p = 5;
    if (p < flat.size() && flat[p] == ' ' && p + 1 < flat.size() && flat[p + 1] == '(') p = flat.find(')', p) + 1;
    if (p < flat.size() && (flat[p] == '.' || flat[p] == ':')) {
      flat = collapse(flat.substr(p + 1));
      if (!flat.empty()) flat[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(flat[0])));
    }
  }
  auto sentence_end = [&](std::size_t from) {
    for (std::size_t p = flat.find(". ", from); p != std::string::npos; p = flat.find(". ", p + 1)) {
      const bool abbreviation = (p >= 3 && (flat.compare(p - 3, 3, "e.g") == 0 || flat.compare(p - 3, 3, "i.e") == 0)) ||
                                (p >= 2 && flat.compare(p - 2, 2, "vs") == 0);
      if (!abbreviation) return p + 1;
    }
    return flat.size();
  };
  std::size_t end = sentence_end(0);
  if (end < 40 && end < flat.size()) end = sentence_end(end + 1);
  std::string out = flat.substr(0, end);
  if (!out.empty() && out.back() == ':') out.back() = '.';
  if (out.size() > 240) {
    const std::size_t cut = out.rfind(", ", 220);
    out = out.substr(0, cut == std::string::npos || cut < 80 ? 220 : cut) + "…";
  }
  return out;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `want` names the same thing as `have` when they are equal or `want` is `have` without leading
// namespaces ("Tensor::reshape" for "kiln::Tensor::reshape").
bool same_name(const std::string& have, const std::string& want) {
  return have == want || ends_with(have, "::" + want) || ends_with(want, "::" + have);
}

struct Header {
  std::string path;  // relative to the course root
  std::vector<Entity> entities;
};

// The declarations a module's stubs are matched to: its own headers, then its prerequisites'
// (a module may implement a member an earlier header declared, as 06 does with Tensor::backward).
class Declarations {
 public:
  struct Found {
    const Entity* entity = nullptr;
    const Header* header = nullptr;
  };

  Declarations(const Course& course, const Module& m) {
    std::vector<const Module*> order{&m};
    for (const Module* dep : course.prerequisites(m)) order.push_back(dep);
    std::reverse(order.begin() + 1, order.end());  // nearest prerequisite first
    for (const Module* mod : order) {
      const fs::path include = mod->dir / "include";
      if (!fs::is_directory(include)) continue;
      std::vector<fs::path> files;
      for (const auto& entry : fs::recursive_directory_iterator(include))
        if (entry.is_regular_file()) files.push_back(entry.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files)
        headers_.push_back({fs::relative(f, course.root).generic_string(), parse(read_text(f))});
    }
  }

  // The declaration of `qualified` with these parameters, else the first of that name; and its header.
  Found member(const std::string& qualified, const std::string& params) const {
    Found exact, by_name;
    for (const auto& h : headers_) {
      for (const auto& e : h.entities) {
        if (e.is_class || !same_name(e.qualified(), qualified)) continue;
        if (e.params == params && !exact.entity) exact = {&e, &h};
        if (!by_name.entity) by_name = {&e, &h};
      }
    }
    return exact.entity ? exact : by_name;
  }

  // The class named `qualified`, or nullptr.
  const Entity* class_named(const std::string& qualified) const {
    for (const auto& h : headers_)
      for (const auto& e : h.entities)
        if (e.is_class && same_name(e.qualified(), qualified)) return &e;
    return nullptr;
  }

 private:
  std::vector<Header> headers_;
};

// The declaration with the class it belongs to: "Tensor Tensor::reshape(Shape shape) const".
std::string qualified_signature(const Declarations& decls, const Entity& stub, const Entity& decl) {
  std::string owner;
  for (std::size_t k = 0; k < stub.scope.size(); ++k) {
    std::string q;
    for (std::size_t j = 0; j <= k; ++j) q += (j ? "::" : "") + stub.scope[j];
    if (decls.class_named(q)) owner += stub.scope[k] + "::";
  }
  return decl.text.substr(0, decl.name_at) + owner + decl.text.substr(decl.name_at);
}

// The comment that describes a stub: its declaration's; without one, what its class says, or
// what the base it overrides says; else the first comment in its own body.
std::string contract_of(const Declarations& decls, const Entity& stub, const Entity* decl) {
  std::string comment = decl ? decl->comment : "";
  const std::string qualified = stub.qualified();
  const std::string owner_name = qualified.substr(0, qualified.rfind("::") == std::string::npos ? 0 : qualified.rfind("::"));
  const Entity* owner_class = owner_name.empty() ? nullptr : decls.class_named(owner_name);
  if (comment.empty() && owner_class) comment = owner_class->comment;
  if (comment.empty() && owner_class) {
    for (const auto& base : owner_class->bases) {
      const Entity* base_class = decls.class_named(base);
      if (!base_class) continue;
      if (const Entity* b = decls.member(base_class->qualified() + "::" + stub.name, stub.params).entity)
        comment = b->comment;
      if (!comment.empty()) break;
    }
  }
  if (comment.empty()) comment = stub.body_comment;
  return comment;
}

// One function the student writes, from its stub in `file` and its declaration in the headers.
StudentFunction student_function(const Declarations& decls, const std::string& file, const Entity& stub) {
  StudentFunction f;
  const std::string qualified = stub.qualified();
  f.name = qualified.rfind("kiln::", 0) == 0 ? qualified.substr(6) : qualified;
  f.file = file;
  f.line = stub.line;
  const Declarations::Found found = decls.member(qualified, stub.params);
  if (found.entity) {
    f.header = found.header->path;
    f.signature = qualified_signature(decls, stub, *found.entity);
  } else {
    f.signature = stub.text;
  }
  f.contract = contract_of(decls, stub, found.entity);
  f.description = first_sentences(f.contract);
  return f;
}

}  // namespace

std::vector<StudentFunction> student_functions(const Course& course, const Module& m) {
  const Declarations decls(course, m);
  // The stubs as committed, as verify reads them: in a student's repository, the release's version,
  // so that the list stays whole after the student wrote the functions. Outside git, the working
  // copy.
  const Workspace ws{course, {}};
  std::vector<StudentFunction> out;
  for (const auto& file : m.student_files) {
    const fs::path working = m.dir / file;
    const std::optional<std::string> committed = committed_stub(ws, fs::relative(working, course.root));
    for (const Entity& stub : parse(committed ? *committed : read_text(working)))
      if (!stub.is_class && stub.not_implemented) out.push_back(student_function(decls, file, stub));
  }
  return out;
}

}  // namespace kiln::grader
