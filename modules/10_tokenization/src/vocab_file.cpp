// The vocabulary file: saving the merges and special tokens, and loading them back with errors
// that say where a damaged file goes wrong. kiln/tokenization.h shows the format.
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tokenization.h"

namespace kiln {

void BpeTokenizer::save(const std::string& path) const {
  // std::ofstream out(path, std::ios::binary); cannot open: throw std::runtime_error naming path.
  // Then "kiln-bpe 1\n", "merges " M "\n", one "first second\n" per merge, "specials " S "\n",
  // and one "text\n" per special token. Last, out.flush() and check !out again: a file can open
  // and still refuse the bytes (a full disk), and a small one meets it only at the flush.
  throw kiln::NotImplemented();
}

void BpeTokenizer::load(const std::string& path) {
  // Cannot open: throw std::runtime_error naming path. Read every line (std::getline) and keep
  // its number (from 1). Check each line against the format, and on the first problem throw
  // TokenizerError(path + ": line " + N + ": expected ..., found ..."), for example
  // "vocab.bpe: line 1: expected \"kiln-bpe 1\", found \"kiln-bpe 2\"" (for a line past the end,
  // name the line that is missing: the number of lines + 1). A number is 1 to 18 decimal digits
  // (std::stoll accepts "+9", " 9" and the "9" of "9x": check the characters yourself; an empty
  // field, "merges " or "97 ", has no digit and is no number, not 0; "03" and "097" are 3 and 97,
  // leading zeros are digits too), and a
  // count that large is still a count: never reserve() room for it before the lines are there.
  // A special token is its whole line, verbatim: trim nothing ("<pad> " is not "<pad>").
  // All or nothing: collect the merges in a local vector, build a local
  // BpeTokenizer(merges), add_special() the specials to it (it rejects a repeated one with
  // std::invalid_argument: report that line), and only when the whole file is good,
  // *this = that local tokenizer.
  throw kiln::NotImplemented();
}

}  // namespace kiln
