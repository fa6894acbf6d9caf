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

// Reads every class and function of one file. A declaration's comment is, in order: a comment at
// the end of its line; the block of `//` lines right above it; the comment of the declaration
// right above it, when no blank line separates them (a group under one comment).
std::vector<Entity> parse(const std::string& src) {
  const Lexed lexed = lex(src);
  const auto& t = lexed.tokens;
  std::map<int, const Comment*> own_line, trailing;
  for (const auto& c : lexed.comments) (c.own_line ? own_line : trailing)[c.line] = &c;

  auto above = [&](int line) {
    std::vector<const Comment*> lines;
    for (int l = line - 1; own_line.count(l); --l) lines.insert(lines.begin(), own_line.at(l));
    return block_text(lines);
  };

  struct Scope {
    std::string name;
    bool is_class = false;
    int last_end_line = -10;     // where the previous statement in this scope ended
    std::string last_group;      // and the comment it passed on to its group
  };
  std::vector<Scope> scopes{{}};
  std::vector<Entity> out;

  auto scope_names = [&] {
    std::vector<std::string> names;
    for (const auto& s : scopes)
      if (!s.name.empty()) names.push_back(s.name);
    return names;
  };
  // The comment for a statement starting at `first` and ending at `last`; updates the group.
  auto describe = [&](std::size_t first, std::size_t last) {
    Scope& scope = scopes.back();
    const int line = t[first].line;
    std::string group = above(line);
    if (group.empty() && scope.last_end_line == line - 1) group = scope.last_group;
    scope.last_end_line = t[last].line;
    scope.last_group = group;
    if (auto it = trailing.find(t[last].line); it != trailing.end()) return block_text({it->second});
    return group;
  };

  std::size_t start = 0;
  // A function declared or defined by the statement from `start`: its declaration ends before
  // token `end`, and its comment runs to token `last` (the ';', or the body's closing brace).
  auto function_entity = [&](const Declarator& d, std::size_t end, std::size_t last) {
    Entity e;
    e.scope = scope_names();
    e.scope.insert(e.scope.end(), d.qualifiers.begin(), d.qualifiers.end());
    e.name = d.name;
    e.params = normalise_params(t, d.open, d.close);
    e.text = source_text(src, t, start, end - 1);
    e.name_at = source_text(src, t, start, d.name_first).size() - t[d.name_first].text.size();
    e.line = t[start].line;
    e.comment = describe(start, last);
    return e;
  };
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string& s = t[i].text;
    if (s == "}") {
      if (scopes.size() > 1) scopes.pop_back();
      start = i + 1;
    } else if (s == ";") {
      if (start < i && !starts_with_any(t, start, {"using", "typedef", "friend", "static_assert", "return"})) {
        const Declarator d = find_declarator(t, start, i);
        if (d.found) {
          out.push_back(function_entity(d, i, i));
        } else {
          describe(start, i);
        }
      }
      start = i + 1;
    } else if (s == ":" && i == start + 1 && starts_with_any(t, start, {"public", "private", "protected"})) {
      start = i + 1;
    } else if (s == "{") {
      std::size_t head = start;
      if (head < i && t[head].text == "template") head = matching(t, head + 1, "<", ">") + 1;
      if (head < i && (t[head].text == "namespace" || (t[head].text == "extern" && head + 1 < i && t[head + 1].text[0] == '"'))) {
        std::string name;
        for (std::size_t j = head + 1; j < i; ++j)
          if (is_identifier(t[j].text)) name += (name.empty() ? "" : "::") + t[j].text;
        scopes.push_back({t[head].text == "extern" ? "" : name});
        start = i + 1;
        continue;
      }
      const Declarator d = find_declarator(t, head, i);
      if (head < i && starts_with_any(t, head, {"class", "struct", "union"}) && !d.found) {
        Entity e;
        e.is_class = true;
        e.scope = scope_names();
        std::size_t j = head + 1;
        while (j < i && (t[j].text == "[" || t[j].text == "alignas")) j = matching(t, j, t[j].text == "[" ? "[" : "(", t[j].text == "[" ? "]" : ")") + 1;
        e.name = j < i && is_identifier(t[j].text) ? t[j].text : "";
        e.text = source_text(src, t, start, i - 1);
        e.line = t[start].line;
        e.comment = describe(start, i);
        std::string base;
        int angle = 0;
        bool in_bases = false;
        for (std::size_t k = j + 1; k < i; ++k) {
          const std::string& b = t[k].text;
          if (b == "<") ++angle;
          if (b == ">") --angle;
          if (!in_bases) {
            in_bases = b == ":" && angle == 0;
            continue;
          }
          if (b == "," && angle == 0) {
            if (!base.empty()) e.bases.push_back(base);
            base.clear();
          } else if (!starts_with_any(t, k, {"public", "private", "protected", "virtual"})) {
            base += b;
          }
        }
        if (!base.empty()) e.bases.push_back(base);
        scopes.push_back({e.name, true});
        out.push_back(std::move(e));
        start = i + 1;
        continue;
      }
      if (head < i && t[head].text == "enum") {
        i = matching(t, i, "{", "}");
        continue;  // the statement ends at the `;` after the enumerators
      }
      // A brace after a constructor's member initialiser (`x_{a}`) belongs to the initialiser.
      bool initialiser = false;
      if (d.found && d.close + 1 < i) {
        for (std::size_t k = d.close + 1; k < i; ++k) initialiser |= t[k].text == ":";
        initialiser &= is_identifier(t[i - 1].text) || t[i - 1].text == ">";
      }
      const std::size_t close = matching(t, i, "{", "}");
      if (d.found && !initialiser) {
        Entity e = function_entity(d, i, close);
        for (std::size_t k = i + 1; k + 1 < close; ++k) {
          e.not_implemented |= t[k].text == "KILN_NOT_IMPLEMENTED";  // a kernel's stub: it cannot throw
          if (t[k].text != "throw") continue;
          std::size_t n = k + 1;
          if (n + 1 < close && t[n].text == "kiln" && t[n + 1].text == "::") n += 2;
          e.not_implemented |= t[n].text == "NotImplemented";
        }
        std::vector<const Comment*> inside;
        for (const auto& c : lexed.comments) {
          if (c.line <= t[i].line || c.line >= t[close].line || !c.own_line) continue;
          if (!inside.empty() && c.line != inside.back()->line + 1) break;
          inside.push_back(&c);
        }
        e.body_comment = block_text(inside);
        out.push_back(std::move(e));
        i = close;
        start = i + 1;
      } else {
        i = close;  // an initialiser: the statement goes on
      }
    }
  }
  return out;
}

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

}  // namespace

std::vector<StudentFunction> student_functions(const Course& course, const Module& m) {
  // The headers to look in: this module's, then its prerequisites' (a module may implement a
  // member an earlier header declared, as 06 does with Tensor::backward).
  std::vector<Header> headers;
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
      headers.push_back({fs::relative(f, course.root).generic_string(), parse(read_text(f))});
  }

  // The declaration of `qualified` with these parameters, else the first of that name; and its header.
  struct Found {
    const Entity* entity = nullptr;
    const Header* header = nullptr;
  };
  auto find_member = [&](const std::string& qualified, const std::string& params) {
    Found exact, by_name;
    for (const auto& h : headers) {
      for (const auto& e : h.entities) {
        if (e.is_class || !same_name(e.qualified(), qualified)) continue;
        if (e.params == params && !exact.entity) exact = {&e, &h};
        if (!by_name.entity) by_name = {&e, &h};
      }
    }
    return exact.entity ? exact : by_name;
  };
  auto find_class = [&](const std::string& qualified) -> const Entity* {
    for (const auto& h : headers)
      for (const auto& e : h.entities)
        if (e.is_class && same_name(e.qualified(), qualified)) return &e;
    return nullptr;
  };

  // The stubs as committed, as verify reads them: in a student's repository, the release's version,
  // so that the list stays whole after the student wrote the functions. Outside git, the working
  // copy.
  const Workspace ws{course, {}};
  std::vector<StudentFunction> out;
  for (const auto& file : m.student_files) {
    const fs::path working = m.dir / file;
    const std::optional<std::string> committed = committed_stub(ws, fs::relative(working, course.root));
    for (const Entity& stub : parse(committed ? *committed : read_text(working))) {
      if (stub.is_class || !stub.not_implemented) continue;
      StudentFunction f;
      const std::string qualified = stub.qualified();
      f.name = qualified.rfind("kiln::", 0) == 0 ? qualified.substr(6) : qualified;
      f.file = file;
      f.line = stub.line;
      const Found found = find_member(qualified, stub.params);
      const Entity* decl = found.entity;
      std::string comment = decl ? decl->comment : "";
      if (decl) {
        f.header = found.header->path;
        // The declaration with the class it belongs to: "Tensor Tensor::reshape(Shape shape) const".
        std::string owner;
        for (std::size_t k = 0; k < stub.scope.size(); ++k)
          if (find_class([&] {
                std::string q;
                for (std::size_t j = 0; j <= k; ++j) q += (j ? "::" : "") + stub.scope[j];
                return q;
              }()))
            owner += stub.scope[k] + "::";
        f.signature = decl->text.substr(0, decl->name_at) + owner + decl->text.substr(decl->name_at);
      } else {
        f.signature = stub.text;
      }
      // No comment of its own: a member says what its class says, or what the base it overrides says.
      const std::string owner_name = qualified.substr(0, qualified.rfind("::") == std::string::npos ? 0 : qualified.rfind("::"));
      const Entity* owner_class = owner_name.empty() ? nullptr : find_class(owner_name);
      if (comment.empty() && owner_class) comment = owner_class->comment;
      if (comment.empty() && owner_class) {
        for (const auto& base : owner_class->bases) {
          const Entity* base_class = find_class(base);
          if (!base_class) continue;
          if (const Entity* b = find_member(base_class->qualified() + "::" + stub.name, stub.params).entity)
            comment = b->comment;
          if (!comment.empty()) break;
        }
      }
      if (comment.empty()) comment = stub.body_comment;
      f.contract = comment;
      f.description = first_sentences(comment);
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace kiln::grader
