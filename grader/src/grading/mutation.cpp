// The mutator of `grader verify --mutation` (mutation.h): C++ source → tokens with their context
// (in a function body, a for header, an index, a throw) → one mutant per rule and place.
#include "kiln/grader/mutation.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <string_view>

#include <fmt/format.h>

namespace kiln::grader {

namespace {

enum class Kind { word, number, punct, literal };  // literal: a string or character literal

struct Token {
  Kind kind;
  std::size_t offset, length;
  int line, column;
  bool space_before, space_after;  // whitespace (or the file's edge) right before / after it
  std::string text;
  // Context, filled in after lexing.
  bool in_body = false;        // inside a function body
  bool in_for_header = false;  // inside the parentheses of a for
  bool in_index = false;       // inside [ ]
  bool in_throw = false;       // from `throw` to its `;`
  int paren_depth = 0;         // ( and [ open around it
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Longest first, so that `<<=` is one token and `<` `<=` `<<` are told apart.
constexpr std::array<std::string_view, 28> kPunctuators = {
    "<<=", ">>=", "<=>", "->*", "...", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==",
    "!=",  "&&",  "||",  "+=",  "-=",  "*=", "/=", "%=", "&=", "|=", "^=", ".*", "##", "<:"};

// Splits the source into tokens, leaving out comments and preprocessor lines.
std::vector<Token> lex(const std::string& s) {
  std::vector<Token> out;
  std::size_t i = 0;
  int line = 1;
  std::size_t line_start = 0;
  bool line_blank = true;  // only whitespace so far on this line: a `#` here starts a directive
  auto advance_to = [&](std::size_t end) {
    for (; i < end && i < s.size(); ++i) {
      if (s[i] == '\n') {
        ++line;
        line_start = i + 1;
        line_blank = true;
      }
    }
  };
  auto push = [&](Kind kind, std::size_t start, std::size_t end) {
    Token t{kind, start, end - start, line, static_cast<int>(start - line_start) + 1,
            start == 0 || is_space(s[start - 1]), end >= s.size() || is_space(s[end]), s.substr(start, end - start)};
    out.push_back(std::move(t));
    line_blank = false;
    advance_to(end);
  };
  while (i < s.size()) {
    const char c = s[i];
    if (is_space(c)) {
      advance_to(i + 1);
      continue;
    }
    if (c == '#' && line_blank) {  // a directive, with its continuation lines
      std::size_t end = i;
      while (end < s.size() && !(s[end] == '\n' && s[end - 1] != '\\')) ++end;
      advance_to(end);
      continue;
    }
    if (s.compare(i, 2, "//") == 0) {
      advance_to(std::min(s.find('\n', i), s.size()));
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      const std::size_t end = s.find("*/", i + 2);
      advance_to(end == std::string::npos ? s.size() : end + 2);
      continue;
    }
    if (is_word_start(c)) {
      std::size_t end = i;
      while (end < s.size() && is_word_char(s[end])) ++end;
      const std::string word = s.substr(i, end - i);
      const bool raw = end < s.size() && s[end] == '"' && !word.empty() && word.back() == 'R' &&
                       (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR");
      if (raw) {  // R"delim( ... )delim"
        const std::size_t open = s.find('(', end);
        const std::string delim = s.substr(end + 1, open - end - 1);
        const std::size_t close = s.find(")" + delim + "\"", open);
        push(Kind::literal, i, close == std::string::npos ? s.size() : close + delim.size() + 2);
        continue;
      }
      push(Kind::word, i, end);
      continue;
    }
    if (c == '"' || c == '\'') {
      std::size_t end = i + 1;
      while (end < s.size() && s[end] != c && s[end] != '\n') end += s[end] == '\\' ? 2 : 1;
      push(Kind::literal, i, std::min(end + 1, s.size()));
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      std::size_t end = i;
      const bool hex = s.compare(i, 2, "0x") == 0 || s.compare(i, 2, "0X") == 0;
      while (end < s.size()) {
        const char d = s[end];
        const char prev = end > i ? s[end - 1] : '\0';
        const bool exponent_sign = (d == '+' || d == '-') &&
                                   (hex ? (prev == 'p' || prev == 'P') : (prev == 'e' || prev == 'E'));
        if (is_word_char(d) || d == '.' || d == '\'' || exponent_sign) ++end;
        else break;
      }
      push(Kind::number, i, end);
      continue;
    }
    std::size_t len = 1;
    for (const auto p : kPunctuators) {
      if (s.compare(i, p.size(), p) == 0) {
        len = p.size();
        break;
      }
    }
    push(Kind::punct, i, i + len);
  }
  return out;
}

bool is(const Token& t, std::string_view text) { return t.kind != Kind::literal && t.text == text; }

// The index of the token that closes the bracket opened at `open` ( `(` `[` `{` ), or tokens.size().
std::size_t matching(const std::vector<Token>& tokens, std::size_t open) {
  const std::string o = tokens[open].text;
  const std::string c = o == "(" ? ")" : o == "[" ? "]" : "}";
  int depth = 0;
  for (std::size_t k = open; k < tokens.size(); ++k) {
    if (is(tokens[k], o)) ++depth;
    if (is(tokens[k], c) && --depth == 0) return k;
  }
  return tokens.size();
}

// Marks each token's context: function bodies by their braces (a `{` right after `)` or a
// function's trailing qualifier opens one), for headers, indices and throw statements.
void mark_context(std::vector<Token>& tokens) {
  enum class Brace { body, other };
  std::vector<Brace> braces;
  std::vector<bool> parens;  // per open ( or [: whether it is a for header
  int brackets = 0;          // open [ ]
  bool next_paren_is_for = false;
  int throw_depth = -1;      // the brace depth of the throw statement we are in, or -1
  static const std::set<std::string> qualifiers = {")", "const", "noexcept", "override", "final", "mutable"};
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    Token& t = tokens[k];
    const bool in_body = std::find(braces.begin(), braces.end(), Brace::body) != braces.end();
    if (is(t, "throw") && in_body) throw_depth = static_cast<int>(braces.size());
    t.in_body = in_body;
    t.in_for_header = std::find(parens.begin(), parens.end(), true) != parens.end();
    t.in_index = brackets > 0;
    t.in_throw = throw_depth >= 0;
    t.paren_depth = static_cast<int>(parens.size());
    if (is(t, "for")) next_paren_is_for = true;
    if (is(t, "(") || is(t, "[")) {
      parens.push_back(is(t, "(") && next_paren_is_for);
      if (is(t, "(")) next_paren_is_for = false;
      if (is(t, "[")) ++brackets;
    } else if ((is(t, ")") || is(t, "]")) && !parens.empty()) {
      parens.pop_back();
      if (is(t, "]")) --brackets;
    } else if (is(t, "{")) {
      const bool opens_body = in_body || (k > 0 && tokens[k - 1].kind != Kind::literal && qualifiers.count(tokens[k - 1].text));
      braces.push_back(opens_body ? Brace::body : Brace::other);
    } else if (is(t, "}") && !braces.empty()) {
      braces.pop_back();
    } else if (is(t, ";") && throw_depth == static_cast<int>(braces.size()) && parens.empty()) {
      throw_depth = -1;
    }
  }
}

// "`if (x < 0)`": a piece of source on one line, shortened for a one-line report.
std::string quoted(const std::string& source, std::size_t from, std::size_t to) {
  std::string text;
  for (std::size_t k = from; k < to; ++k) {
    const char c = source[k];
    if (is_space(c)) {
      if (!text.empty() && text.back() != ' ') text += ' ';
    } else {
      text += c;
    }
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (text.size() > 70) text = text.substr(0, 66) + " ...";
  return "`" + text + "`";
}

// The line breaks of a deleted piece of source, so that later lines keep their numbers.
std::string line_breaks_in(const std::string& source, std::size_t from, std::size_t to) {
  return std::string(static_cast<std::size_t>(std::count(source.begin() + from, source.begin() + to, '\n')), '\n');
}

bool is_decimal_integer(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 18 || (digits > 1 && text[0] == '0')) return false;  // octal, hex, binary: left alone
  return text.find_first_not_of("uUlLzZ", digits) == std::string::npos;
}

bool is_floating(const std::string& text) {
  if (text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) return false;
  return text.find_first_of(".eE") != std::string::npos;
}

// "2.5f" ×2 → "5.0f"; zero becomes one.
std::string doubled(const std::string& text) {
  std::size_t end = text.size();
  while (end > 0 && (text[end - 1] == 'f' || text[end - 1] == 'F' || text[end - 1] == 'l' || text[end - 1] == 'L')) --end;
  std::string digits = text.substr(0, end);
  digits.erase(std::remove(digits.begin(), digits.end(), '\''), digits.end());
  const double value = std::stod(digits);
  std::string out = fmt::format("{}", value == 0.0 ? 1.0 : value * 2);
  if (out.find_first_of(".en") == std::string::npos) out += ".0";
  return out + text.substr(end);
}

const std::set<std::string>& declaration_starts() {
  static const std::set<std::string> words = {
      "const", "constexpr", "static", "auto", "using", "typedef", "struct", "class", "enum", "unsigned", "signed",
      "int", "float", "double", "bool", "char", "long", "short", "void", "thread_local", "volatile", "extern",
      "inline", "typename", "register", "template", "namespace"};
  return words;
}

// A statement that declares something (`std::vector<float> y(n);`, `Tensor out = ...;`): a type
// (names joined by ::, template arguments, * & const) then a name then = ( { ; [ or ,.
bool looks_like_declaration(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  if (t[first].kind != Kind::word) return false;
  if (declaration_starts().count(t[first].text)) return true;
  std::size_t k = first + 1;
  while (k <= last) {
    if (is(t[k], "::") && k + 1 <= last && t[k + 1].kind == Kind::word) {
      k += 2;
    } else if (is(t[k], "<") && !t[k].space_before) {  // template arguments
      int depth = 0;
      for (; k <= last; ++k) {
        if (is(t[k], "<")) ++depth;
        if (is(t[k], ">")) --depth;
        if (is(t[k], ">>")) depth -= 2;
        if (depth <= 0) break;
      }
      ++k;
    } else {
      break;
    }
  }
  while (k <= last && (is(t[k], "*") || is(t[k], "&") || is(t[k], "&&") || is(t[k], "const"))) ++k;
  if (k + 1 > last || t[k].kind != Kind::word) return false;
  const Token& after = t[k + 1];
  return is(after, "=") || is(after, "(") || is(after, "{") || is(after, ";") || is(after, "[") || is(after, ",");
}

const std::set<std::string>& not_calls() {
  static const std::set<std::string> words = {"if", "for", "while", "switch", "return", "sizeof", "alignof",
                                              "decltype", "catch", "static_assert", "throw", "noexcept"};
  return words;
}

// `text` without the blanks at either end.
std::string trimmed(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

class Mutator {
 public:
  Mutator(const std::string& file, const std::string& source) : file_(file), s_(source), t_(lex(source)) {
    mark_context(t_);
  }

  std::vector<GeneratedMutant> run() {
    int last_line = 0;
    for (std::size_t k = 0; k < t_.size(); ++k) {
      if (t_[k].line != last_line) {
        last_line = t_[k].line;
        statement(k);
      }
      check(k);
      operators(k);
      numbers(k);
      arguments(k);
      if (is(t_[k], "stable_sort")) add(t_[k], "sort", "sort", "`stable_sort` → `sort`");
    }
    return std::move(out_);
  }

 private:
  void add(const Token& at, const std::string& kind, std::string replacement, std::string mutation,
           std::size_t length = std::string::npos) {
    GeneratedMutant m;
    m.file = file_;
    m.line = at.line;
    m.column = at.column;
    m.kind = kind;
    m.mutation = std::move(mutation);
    m.offset = at.offset;
    m.length = length == std::string::npos ? at.length : length;
    m.replacement = std::move(replacement);
    const std::size_t line_start = at.offset - static_cast<std::size_t>(at.column - 1);
    m.code = trimmed(s_.substr(line_start, s_.find('\n', at.offset) - line_start));
    out_.push_back(std::move(m));
  }

  // A binary operator, as clang-format writes one: a space on both sides.
  static bool binary(const Token& t) { return t.kind == Kind::punct && t.space_before && t.space_after; }

  void operators(std::size_t k) {
    const Token& t = t_[k];
    if (t.kind != Kind::punct || t.in_throw || !binary(t)) return;
    static const std::vector<std::pair<std::string, std::string>> relational = {
        {"<", "<="}, {"<=", "<"}, {">", ">="}, {">=", ">"}, {"==", "!="}, {"!=", "=="}};
    static const std::vector<std::pair<std::string, std::string>> arithmetic = {
        {"+", "-"}, {"-", "+"}, {"*", "/"}, {"/", "*"}};
    for (const auto& [from, to] : relational)
      if (t.text == from) add(t, "relational", to, fmt::format("`{}` → `{}`", from, to));
    const bool next_to_text = (k > 0 && t_[k - 1].kind == Kind::literal && t_[k - 1].text[0] == '"') ||
                              (k + 1 < t_.size() && t_[k + 1].kind == Kind::literal && t_[k + 1].text[0] == '"');
    if (!next_to_text)  // "a" + b joins text
      for (const auto& [from, to] : arithmetic)
        if (t.text == from) add(t, "arithmetic", to, fmt::format("`{}` → `{}`", from, to));
    if (t.text == "+=") add(t, "assignment", "=", "`+=` → `=`");
  }

  void numbers(std::size_t k) {
    const Token& t = t_[k];
    if (t.kind != Kind::number || t.in_throw) return;
    if (is_decimal_integer(t.text)) {
      const std::size_t digits = t.text.find_first_not_of("0123456789");
      const std::string suffix = digits == std::string::npos ? "" : t.text.substr(digits);
      const unsigned long long value = std::stoull(t.text.substr(0, digits));
      const bool bound = t.in_for_header || t.in_index;
      const std::string up = std::to_string(value + 1) + suffix;
      add(t, bound ? "bound" : "constant", up, fmt::format("`{}` → `{}`", t.text, up));
      if (bound && value > 0) {
        const std::string down = std::to_string(value - 1) + suffix;
        add(t, "bound", down, fmt::format("`{}` → `{}`", t.text, down));
      }
    } else if (is_floating(t.text)) {
      const std::string changed = doubled(t.text);
      add(t, "constant", changed, fmt::format("`{}` → `{}`", t.text, changed));
    }
  }

  // A line that is one whole statement in a function body, deleted.
  void statement(std::size_t first) {
    const Token& t = t_[first];
    if (!t.in_body || t.in_throw || t.paren_depth > 0 || first == 0) return;
    const Token& before = t_[first - 1];
    if (!(is(before, ";") || is(before, "{") || is(before, "}"))) return;
    std::size_t last = first;
    while (last + 1 < t_.size() && t_[last + 1].line == t.line) ++last;
    if (!is(t_[last], ";") || last == first) return;
    int depth = 0;
    for (std::size_t k = first; k <= last; ++k) {
      if (is(t_[k], "(") || is(t_[k], "[") || is(t_[k], "{")) ++depth;
      if (is(t_[k], ")") || is(t_[k], "]") || is(t_[k], "}")) --depth;
      if (depth < 0) return;
      if (depth == 0 && is(t_[k], ";") && k != last) return;  // two statements on the line
      if (is(t_[k], "throw")) return;  // a check: deleted with its if, by check()
    }
    if (depth != 0) return;
    if (is(t, "return") && !is(t_[first + 1], ";")) return;
    if (is(t, "case") || is(t, "default") || is(t, "else") || looks_like_declaration(t_, first, last)) return;
    const std::size_t end = t_[last].offset + 1;
    add(t, "statement", "", "statement deleted: " + quoted(s_, t.offset, end), end - t.offset);
  }

  // `if (cond) throw ...;` or `if (cond) { throw ...; }`, deleted whole.
  void check(std::size_t k) {
    const Token& t = t_[k];
    if (!is(t, "if") || !t.in_body || k + 1 >= t_.size() || !is(t_[k + 1], "(")) return;
    if (k > 0 && is(t_[k - 1], "else")) return;
    const std::size_t close = matching(t_, k + 1);
    if (close + 1 >= t_.size()) return;
    std::size_t end = 0;  // the last token of the if statement
    if (is(t_[close + 1], "throw")) {
      end = semicolon_after(close + 1);
    } else if (is(t_[close + 1], "{") && close + 2 < t_.size() && is(t_[close + 2], "throw")) {
      const std::size_t semi = semicolon_after(close + 2);
      if (semi + 1 >= t_.size() || !is(t_[semi + 1], "}")) return;
      end = semi + 1;
    } else {
      return;
    }
    if (end == 0 || end >= t_.size() || (end + 1 < t_.size() && is(t_[end + 1], "else"))) return;
    const std::size_t to = t_[end].offset + t_[end].length;
    add(t, "check", line_breaks_in(s_, t.offset, to),
        "check deleted: " + quoted(s_, t.offset, t_[close].offset + 1) + " and its throw", to - t.offset);
  }

  // The `;` that ends the statement starting at `from`, or 0.
  std::size_t semicolon_after(std::size_t from) const {
    int depth = 0;
    for (std::size_t k = from; k < t_.size(); ++k) {
      if (is(t_[k], "(") || is(t_[k], "[") || is(t_[k], "{")) ++depth;
      if (is(t_[k], ")") || is(t_[k], "]") || is(t_[k], "}")) --depth;
      if (depth < 0) return 0;
      if (depth == 0 && is(t_[k], ";")) return k;
    }
    return 0;
  }

  // f(a, b, ...) → f(b, a, ...), where a and b are plain expressions (no braces, lambdas or text).
  void arguments(std::size_t k) {
    const Token& t = t_[k];
    if (t.kind != Kind::word || !t.in_body || t.in_throw || not_calls().count(t.text) || k + 1 >= t_.size() ||
        !is(t_[k + 1], "(") || t_[k + 1].space_before)
      return;
    const std::size_t close = matching(t_, k + 1);
    if (close >= t_.size()) return;
    std::vector<std::pair<std::size_t, std::size_t>> args;  // first and last token of each
    std::size_t start = k + 2;
    int depth = 0;
    for (std::size_t j = k + 2; j <= close; ++j) {
      const Token& a = t_[j];
      if (a.kind == Kind::literal && a.text[0] == '"') return;
      if (is(a, "{") || is(a, "[")) return;
      if (is(a, "(")) ++depth;
      if (is(a, ")") && j != close) --depth;
      if ((is(a, ",") && depth == 0) || j == close) {
        if (j == start) return;
        args.emplace_back(start, j - 1);
        start = j + 1;
      }
    }
    if (args.size() < 2) return;
    const auto [a0, a1] = args[0];
    const auto [b0, b1] = args[1];
    const std::string first = s_.substr(t_[a0].offset, t_[a1].offset + t_[a1].length - t_[a0].offset);
    const std::string second = s_.substr(t_[b0].offset, t_[b1].offset + t_[b1].length - t_[b0].offset);
    if (first == second) return;
    const std::size_t from = t_[a0].offset;
    const std::size_t to = t_[b1].offset + t_[b1].length;
    const std::string between = s_.substr(t_[a1].offset + t_[a1].length, t_[b0].offset - t_[a1].offset - t_[a1].length);
    const std::string before = t.text + "(" + first + between + second + ")";
    const std::string after = t.text + "(" + second + between + first + ")";
    add(t_[a0], "arguments", second + between + first,
        fmt::format("arguments swapped: {} → {}", quoted(before, 0, before.size()), quoted(after, 0, after.size())),
        to - from);
  }

  std::string file_;
  const std::string& s_;
  std::vector<Token> t_;
  std::vector<GeneratedMutant> out_;
};

// "`<` -> `<=`" and "`<`  →  `<=`" read the same.
std::string normalized(std::string text) {
  for (std::size_t at; (at = text.find("->")) != std::string::npos;) text.replace(at, 2, "→");
  std::string out;
  for (char c : text)
    if (!is_space(c)) out += c;
  return out;
}

}  // namespace

std::string GeneratedMutant::description() const {
  return fmt::format("{}:{}: {}", fs::path(file).filename().string(), line, mutation);
}

std::vector<GeneratedMutant> generate_mutants(const std::string& file, const std::string& source) {
  std::vector<GeneratedMutant> out = Mutator(file, source).run();
  std::stable_sort(out.begin(), out.end(), [](const GeneratedMutant& a, const GeneratedMutant& b) {
    return a.offset < b.offset;
  });
  return out;
}

std::string mutated_source(const GeneratedMutant& mutant, const std::string& source) {
  std::string out = source;
  out.replace(mutant.offset, mutant.length, mutant.replacement);
  return out;
}

std::vector<std::size_t> sample_by_stride(std::size_t count, std::size_t k) {
  std::vector<std::size_t> out;
  if (k == 0 || k >= count) {
    for (std::size_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  for (std::size_t i = 0; i < k; ++i) out.push_back(i * count / k);
  return out;
}

bool names(const EquivalentMutant& e, const GeneratedMutant& mutant) {
  return e.file == mutant.file && (e.code.empty() || trimmed(e.code) == mutant.code) &&
         (e.line == 0 || e.line == mutant.line) && (e.column == 0 || e.column == mutant.column) &&
         normalized(e.mutation) == normalized(mutant.mutation);
}

const EquivalentMutant* declared_equivalent(const Module& module, const GeneratedMutant& mutant) {
  for (const auto& e : module.equivalent_mutants)
    if (names(e, mutant)) return &e;
  return nullptr;
}

}  // namespace kiln::grader
