// The vocabulary file: saving the merges and special tokens, and loading them back with errors
// that say where a damaged file goes wrong.
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tokenization.h"

namespace kiln {
namespace {

// Whether `text` is a number in decimal digits (at most 18 of them, so that it fits); its value.
bool parse_number(const std::string& text, std::int64_t& value) {
  if (text.empty() || text.size() > 18) return false;
  value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

// Whether `line` is `label`, one space and a number; the number.
bool parse_count(const std::string& line, const std::string& label, std::int64_t& count) {
  return line.compare(0, label.size() + 1, label + " ") == 0 && parse_number(line.substr(label.size() + 1), count);
}

}  // namespace

void BpeTokenizer::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write the vocabulary file " + path);
  out << "kiln-bpe 1\n";
  out << "merges " << merges_.size() << '\n';
  for (const Merge& m : merges_) out << m.first << ' ' << m.second << '\n';
  out << "specials " << specials_.size() << '\n';
  for (const std::string& special : specials_) out << special << '\n';
  out.flush();  // a small file waits in the stream's buffer: only the flush finds a full disk
  if (!out) throw std::runtime_error("could not write all of the vocabulary file " + path);
}

void BpeTokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open the vocabulary file " + path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);

  // lines[index] is line index + 1 of the file; `next` is the index of the next line to read.
  std::size_t next = 0;
  auto damaged = [&](std::size_t index, const std::string& expected) {
    const std::string found = index < lines.size() ? "found \"" + lines[index] + "\"" : "but the file ends";
    return TokenizerError(path + ": line " + std::to_string(index + 1) + ": expected " + expected + ", " + found);
  };
  auto take = [&](const std::string& expected) -> const std::string& {
    if (next >= lines.size()) throw damaged(next, expected);
    return lines[next++];
  };

  if (take("\"kiln-bpe 1\"") != "kiln-bpe 1") throw damaged(next - 1, "\"kiln-bpe 1\"");
  std::int64_t merge_count = 0;
  if (!parse_count(take("\"merges N\""), "merges", merge_count)) throw damaged(next - 1, "\"merges N\"");
  std::vector<Merge> merges;
  for (std::int64_t r = 0; r < merge_count; ++r) {
    const std::string expected = "merge " + std::to_string(r) + " of " + std::to_string(merge_count) +
                                 ": two ids below " + std::to_string(256 + r) + " separated by one space";
    const std::string& line = take(expected);
    const std::size_t space = line.find(' ');
    Merge m;
    if (space == std::string::npos || !parse_number(line.substr(0, space), m.first) ||
        !parse_number(line.substr(space + 1), m.second) || m.first >= 256 + r || m.second >= 256 + r) {
      throw damaged(next - 1, expected);
    }
    merges.push_back(m);
  }
  // Everything is read into `loaded`; this tokenizer changes only once the whole file is good.
  BpeTokenizer loaded(std::move(merges));
  std::int64_t special_count = 0;
  if (!parse_count(take("\"specials N\""), "specials", special_count)) throw damaged(next - 1, "\"specials N\"");
  for (std::int64_t s = 0; s < special_count; ++s) {
    const std::string expected = "special token " + std::to_string(s) + " of " + std::to_string(special_count) +
                                 ", not empty and not listed before";
    const std::string& line = take(expected);
    try {
      loaded.add_special(line);
    } catch (const std::invalid_argument&) {
      throw damaged(next - 1, expected);
    }
  }
  if (next < lines.size()) throw damaged(next, "the end of the file after the last special token");
  *this = std::move(loaded);
}

}  // namespace kiln
