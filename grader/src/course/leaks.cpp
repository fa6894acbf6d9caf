#include "kiln/grader/leaks.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "kiln/grader/course.h"

namespace kiln::grader {

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Tokens with the line each starts on.
std::vector<std::pair<std::string, int>> tokenize_with_lines(const std::string& text) {
  std::vector<std::pair<std::string, int>> out;
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const auto end = text.find("*/", i + 2);
      const std::size_t stop = end == std::string::npos ? text.size() : end + 2;
      line += static_cast<int>(std::count(text.begin() + i, text.begin() + stop, '\n'));
      i = stop;
    } else if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < text.size() && text[j] != c && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, text.size());
      out.emplace_back(text.substr(i, j - i), line);
      i = j;
    } else if (word_char(c)) {
      std::size_t j = i;
      while (j < text.size() && (word_char(text[j]) || (text[j] == '.' && std::isdigit(static_cast<unsigned char>(c)))))
        ++j;
      out.emplace_back(text.substr(i, j - i), line);
      i = j;
    } else {
      out.emplace_back(std::string(1, c), line);
      ++i;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> tokenize(const std::string& text) {
  std::vector<std::string> out;
  for (auto& [token, line] : tokenize_with_lines(text)) out.push_back(std::move(token));
  return out;
}

std::vector<Body> function_bodies(const fs::path& file, std::size_t min_tokens) {
  const auto tokens = tokenize_with_lines(read_file(file));
  std::vector<Body> out;
  static const std::vector<std::string> qualifiers = {"const", "noexcept", "override", "final", "mutable"};
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].first != "{") continue;
    // A body opens after a parameter list, perhaps followed by qualifiers.
    std::size_t k = i;
    while (k > 0 && std::find(qualifiers.begin(), qualifiers.end(), tokens[k - 1].first) != qualifiers.end()) --k;
    if (k == 0 || tokens[k - 1].first != ")") continue;
    int depth = 0;
    std::size_t end = i;
    for (; end < tokens.size(); ++end) {
      if (tokens[end].first == "{") ++depth;
      if (tokens[end].first == "}" && --depth == 0) break;
    }
    if (end >= tokens.size()) break;
    Body body{file, tokens[i].second, "", {}};
    for (std::size_t t = i; t <= end; ++t) body.tokens.push_back(tokens[t].first);
    // Named by the tokens since the end of the previous statement or block: its signature.
    std::size_t from = i;
    while (from > 0 && i - from < 24 && tokens[from - 1].first != ";" && tokens[from - 1].first != "}" &&
           tokens[from - 1].first != "{")
      --from;
    for (std::size_t t = from; t < i; ++t) {
      const bool space = word_char(tokens[t].first[0]) && t + 1 < i && word_char(tokens[t + 1].first[0]);
      body.signature += tokens[t].first + (space ? " " : "");
    }
    if (body.tokens.size() >= min_tokens) out.push_back(std::move(body));
    i = end;  // the outermost body only
  }
  return out;
}

std::vector<Leak> find_leaks(const std::vector<Body>& bodies, const std::vector<fs::path>& files) {
  std::vector<Leak> leaks;
  for (const auto& file : files) {
    const auto tokens = tokenize(read_file(file));
    for (const auto& body : bodies) {
      const auto at = std::search(tokens.begin(), tokens.end(),
                                  std::boyer_moore_horspool_searcher(body.tokens.begin(), body.tokens.end()));
      if (at != tokens.end()) leaks.push_back({body, file});
    }
  }
  return leaks;
}

}  // namespace kiln::grader
