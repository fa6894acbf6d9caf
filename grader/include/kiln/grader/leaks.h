// Finding solution code in a tree that must not hold any: every function body of the reference
// solutions is compared, token by token, with the text of every file in the tree.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kiln::grader {

namespace fs = std::filesystem;

// C++-ish tokens: identifiers, numbers, string and character literals, single punctuation
// characters; comments and white space dropped. Works on any text (Markdown code too).
std::vector<std::string> tokenize(const std::string& text);

struct Body {
  fs::path file;
  int line = 0;
  std::string signature;  // a few tokens before the body, to name it
  std::vector<std::string> tokens;
};

// The outermost function bodies in a source file with at least min_tokens tokens.
std::vector<Body> function_bodies(const fs::path& file, std::size_t min_tokens);

struct Leak {
  Body body;
  fs::path found_in;
};

// Every body that appears, whole and in order, in one of the files.
std::vector<Leak> find_leaks(const std::vector<Body>& bodies, const std::vector<fs::path>& files);

}  // namespace kiln::grader
