// Module 10, Tokenization: turning text into the integer ids a model reads, and back.
//
// Two tokenizers:
//   CharVocab     one id per distinct character (Unicode code point) of a text
//   BpeTokenizer  byte-pair encoding: the 256 bytes, then merged pairs learned from a corpus,
//                 then special tokens such as "<|endoftext|>"
//
// Text is a std::string of UTF-8 bytes. A code point is a char32_t (U+0000 .. U+10FFFF); the
// given utf8_decode and utf8_encode convert between the two. Token ids are std::int64_t.
//
// Byte-pair encoding, the rules kiln uses (every check relies on them):
//   * Ids 0 .. 255 are the bytes themselves: id b stands for the byte b (read as unsigned char,
//     so 'a' is 97 and the first byte of "é", 0xC3, is 195). Any byte string, valid UTF-8 or
//     not, NUL bytes included, is a sequence of these ids, so nothing is ever unknown.
//   * Merge r (r = 0, 1, 2, ...) joins the adjacent pair (first, second) into the new id 256 + r.
//     first and second are ids that existed before it: both are below 256 + r. Its rank is r.
//   * Training counts pairs over the whole corpus as ONE sequence (no splitting into words):
//     every adjacent position counts, overlapping ones too ("aaa" holds (97, 97) twice).
//     (train_bpe_pretokenized, below, is GPT-2's way instead: it counts within pre-tokens.)
//   * The pair merged next is the most frequent one; among pairs of equal count, the smallest
//     (first, second), compared first by first, then by second. (97, 98) beats (256, 97).
//   * Merging replaces the occurrences left to right without overlap: merging (97, 97) in
//     "aaa" gives [256, 97], and in "aaaa" gives [256, 256].
//   * Training stops when the vocabulary holds vocab_size tokens (256 + number of merges) or when
//     the most frequent pair occurs fewer than 2 times (merging it would save nothing).
//     vocab_size is only a bound, and may be far past what the corpus allows (2^32 + 257 is a
//     request like any other): reserve and size nothing by it.
//   * encode applies the merges by rank: while some adjacent pair of the sequence is a merge,
//     take the pair of lowest rank and merge all its occurrences (left to right); then look
//     again. Not greedily from the left: with merges (98, 99) -> 256 and (97, 98) -> 257,
//     "abc" encodes to [97, 256], never to [257, 99].
//   * decode concatenates the bytes of the tokens: decode(encode(s)) == s for every byte string.
//   * Special tokens get the ids after the merges, 256 + merges + 0, 1, ...; encode recognises
//     their text only when asked to (allow_special), otherwise it is ordinary text.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/errors.h"

namespace kiln {

// A character a vocabulary does not have, or a vocabulary file that is not one. The message
// says what and where: the character and its position, or the file, the line and what was
// expected there.
class TokenizerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using TokenIds = std::vector<std::int64_t>;

// ---------------------------------------------------------------------------------------------
// Given (src/tokenization_given.cpp)

// The code points of the UTF-8 text, in order. Throws TokenizerError naming the byte offset
// ("byte 3") of a sequence that is not valid UTF-8 (a stray continuation byte, a sequence cut
// short, an overlong form, a surrogate, a value above U+10FFFF).
std::vector<char32_t> utf8_decode(const std::string& text);

// The UTF-8 bytes of one code point (1 to 4 bytes). Throws std::invalid_argument for a surrogate
// or a value above U+10FFFF.
std::string utf8_encode(char32_t code_point);

// How messages name a character: "U+00E9 'é'" (the code point in hexadecimal, at least 4 digits,
// then the character itself; a control character is shown by its code point only, "U+0000").
std::string code_point_name(char32_t code_point);

// ---------------------------------------------------------------------------------------------
// The character vocabulary (yours: src/char_vocab.cpp)
//
// The vocabulary of a text is its distinct code points, sorted by code point: id 0 is the
// smallest. For "hello" that is e, h, l, o: 'e' -> 0, 'h' -> 1, 'l' -> 2, 'o' -> 3.
class CharVocab {
 public:
  // Builds the vocabulary of `text` (UTF-8). Throws what utf8_decode throws.
  explicit CharVocab(const std::string& text);

  // The id of every character of `text`, in order. A character that is not in the vocabulary
  // throws TokenizerError naming it (code_point_name) and its position as "position N", counted
  // in characters from 0 (not in bytes): "unknown character U+00E9 'é' at position 3".
  TokenIds encode(const std::string& text) const;

  // The UTF-8 text of the ids. An id outside [0, size()) throws kiln::IndexError naming the id
  // and size().
  std::string decode(const TokenIds& ids) const;

  // Given: the number of characters, and the character of every id (characters()[id]).
  std::int64_t size() const { return static_cast<std::int64_t>(characters_.size()); }
  const std::vector<char32_t>& characters() const { return characters_; }

 private:
  std::vector<char32_t> characters_;         // id -> code point, ascending
  std::map<char32_t, std::int64_t> ids_;     // code point -> id
};

// ---------------------------------------------------------------------------------------------
// Byte-pair encoding: the pieces (yours: src/bpe.cpp)

// How often each adjacent pair (ids[i], ids[i + 1]) occurs, overlapping positions included:
// [97, 97, 97] gives {(97, 97): 2}. Fewer than two ids give no pairs. (A std::map iterates its
// pairs from the smallest to the largest, which is the order the tie rule needs.)
using PairCounts = std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t>;
PairCounts count_pairs(const TokenIds& ids);

// ids with every occurrence of `pair` replaced by new_id, scanning left to right and never
// reusing an id that was just merged: merge_pair([97, 97, 97], {97, 97}, 256) = [256, 97].
TokenIds merge_pair(const TokenIds& ids, std::pair<std::int64_t, std::int64_t> pair, std::int64_t new_id);

// One merge: the pair (first, second) becomes the id 256 + (its index in the list of merges).
struct Merge {
  std::int64_t first = 0;
  std::int64_t second = 0;
  bool operator==(const Merge&) const = default;
};

// Learns merges from `corpus` until the vocabulary holds vocab_size tokens or no pair occurs
// twice (the rules at the top of this file). "aaabdaaabac" with any vocab_size >= 259 gives
// (97, 97) -> 256, (97, 98) -> 257, (256, 257) -> 258. Throws std::invalid_argument naming
// vocab_size when it is below 256.
std::vector<Merge> train_bpe(const std::string& corpus, std::int64_t vocab_size);

// The same merges as train_bpe, for every corpus and vocab_size (the same counts over one
// sequence, the same tie rule, the same stop rule, the same std::invalid_argument), learned
// without recounting: the pair counts, and the positions where each pair occurs, are kept from
// merge to merge, and a merge updates only the pairs around the occurrences it replaces. Where
// train_bpe takes time proportional to merges × corpus length, this takes time proportional to
// the corpus length plus the occurrences merged (times a logarithm).
std::vector<Merge> train_bpe_incremental(const std::string& corpus, std::int64_t vocab_size);

// ---------------------------------------------------------------------------------------------
// GPT-2's pre-tokenization (given: src/tokenization_given.cpp, through PCRE2)

// The pieces GPT-2's split pattern cuts `text` into, in order; concatenated they are `text`:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// contractions, a run of letters, of digits or of other symbols (each with at most one space
// before it), and whitespace, whose last space goes to the word after it: "Hello  world!\n\n"
// gives "Hello", " ", " world", "!", "\n\n". Letters, digits and whitespace are Unicode's
// (PCRE2 with UTF and UCP). Throws TokenizerError, as utf8_decode does, for text that is not UTF-8.
std::vector<std::string> gpt2_pretokenize(const std::string& text);

// Which pair is merged among pairs of equal count.
enum class TieRule {
  smallest_ids,    // Kiln's: the smallest (first, second), compared as ids (train_bpe's rule)
  greatest_bytes,  // the widely used reference's (GPT-2-style trainers; Stanford CS336's tests):
                   // the greatest (bytes of first, bytes of second), compared as byte strings
};

// Byte-pair encoding the way GPT-2 trains it (yours: src/bpe.cpp). The corpus is cut at every
// special token (the longest where several start, as encode does) and the specials are left out;
// every stretch between them is pre-tokenized with gpt2_pretokenize; pairs are counted within
// each pre-token only, so that no merge reaches across a space or a special. vocab_size counts
// the 256 bytes, the merges and the specials, so at most vocab_size - 256 - specials.size()
// merges are learned; as in train_bpe, training stops early when no pair occurs twice, and a
// merge replaces occurrences left to right. Throws std::invalid_argument naming vocab_size when
// it is below 256 + specials.size(), and std::invalid_argument, before any work, when a special is
// empty (the empty text occurs everywhere; add_special refuses it too).
std::vector<Merge> train_bpe_pretokenized(const std::string& corpus, std::int64_t vocab_size,
                                          const std::vector<std::string>& specials = {},
                                          TieRule tie = TieRule::smallest_ids);

// ---------------------------------------------------------------------------------------------
// The tokenizer (encode and decode: src/bpe.cpp; save and load: src/vocab_file.cpp)
class BpeTokenizer {
 public:
  // Given: the 256 byte tokens, no merges, no special tokens.
  BpeTokenizer();
  // Given: the byte tokens and these merges. Throws std::invalid_argument when merge r names an
  // id that is negative or not below 256 + r.
  explicit BpeTokenizer(std::vector<Merge> merges);
  // Given: BpeTokenizer(train_bpe(corpus, vocab_size)).
  static BpeTokenizer train(const std::string& corpus, std::int64_t vocab_size);

  // Given: registers a special token and returns its id, vocab_size() before the call (the first
  // is 256 + merges().size()). Throws std::invalid_argument when text is empty, holds a newline
  // (the vocabulary file keeps one per line) or is already a special token.
  std::int64_t add_special(const std::string& text);

  // The ids of `text`. With allow_special, every occurrence of a special token's text becomes
  // its id: scanning from the left, at each position where specials start the longest one is
  // taken, and the text between specials is encoded on its own (merges never reach across a
  // special). Without allow_special (the default) specials are ordinary text.
  TokenIds encode(const std::string& text, bool allow_special = false) const;

  // encode, GPT-2's way: specials as in encode; the ordinary text between them is cut by
  // gpt2_pretokenize, and every piece is encoded on its own, so that no merge reaches across
  // pieces. With GPT-2's merges this gives GPT-2's tokens (its ids are others: see the chapter).
  TokenIds encode_pretokenized(const std::string& text, bool allow_special = false) const;

  // The bytes of the ids, concatenated; a special token's id gives its text. An id outside
  // [0, vocab_size()) throws kiln::IndexError naming the id and vocab_size().
  std::string decode(const TokenIds& ids) const;

  // Writes the vocabulary file (the format below) to `path`, replacing it. Throws
  // std::runtime_error naming the path when it cannot be written: when it cannot be opened, or
  // when it opens but does not take every byte (a full disk).
  void save(const std::string& path) const;

  // Replaces this tokenizer's merges and special tokens with those of the file at `path`. All or
  // nothing: on any error this tokenizer is left exactly as it was. A file that cannot be opened
  // throws std::runtime_error naming the path; a damaged file throws TokenizerError naming the
  // path, the line as "line N" (from 1) and what was expected there.
  void load(const std::string& path);

  // Given: 256 + merges + specials; the merges in rank order; the specials in id order.
  std::int64_t vocab_size() const;
  const std::vector<Merge>& merges() const { return merges_; }
  const std::vector<std::string>& specials() const { return specials_; }
  // Given: the bytes of a byte or merge token (id < 256 + merges().size()); the rank (index in
  // merges()) of a pair, or -1 when it is not a merge.
  const std::string& token_bytes(std::int64_t id) const;
  std::int64_t rank_of(std::int64_t first, std::int64_t second) const;

 private:
  std::vector<Merge> merges_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> ranks_;  // (first, second) -> rank
  std::vector<std::string> token_bytes_;                                  // id -> its bytes
  std::vector<std::string> specials_;                                     // id - (256 + merges) -> text
};

// The vocabulary file, a text file of lines ending in "\n":
//
//   kiln-bpe 1            line 1: the format and its version, exactly
//   merges 3              line 2: "merges", one space, the number of merges M in decimal digits
//   97 97                 M lines, one merge each, in rank order: two ids in decimal digits
//   97 98                   separated by one space; merge r (its line is 3 + r) may only name
//   256 257                 ids below 256 + r
//   specials 1            line 3 + M: "specials", one space, the number of special tokens S
//   <|endoftext|>         S lines, one special token each, verbatim (blanks at its ends
//                           included: "<pad> " is not "<pad>"); none empty, none twice
//
// and nothing after them. A number is 1 to 18 decimal digits, so that it fits a std::int64_t
// (an empty field, as in "merges " or "97 ", is no number, not 0; leading zeros are digits like
// any other: "merges 03" is 3 and "097" is 97, though save never writes them),
// and a count may be that large however few lines follow it. Anything else is a damaged file: a
// wrong first line, a count or an id that is not decimal digits or has more than 18, a merge
// line without exactly two numbers separated by one space (a tab or two spaces between them is
// damage too), an id not yet defined, a file that ends before its counts say (the message
// names the line that is missing: the last line + 1), a repeated special, or a line after the
// last special.

}  // namespace kiln
