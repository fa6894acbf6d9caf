// Given: UTF-8 conversions, how messages name a character, GPT-2's pre-tokenizer (through PCRE2),
// and the BpeTokenizer's bookkeeping (its constructors, special tokens and lookups). The learning,
// encoding, decoding and the vocabulary file are yours.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tokenization.h"

namespace kiln {
namespace {

// "0x%02X" and "U+%04X" without a formatting library.
std::string hex(std::uint32_t value, const char* format) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

}  // namespace

std::vector<char32_t> utf8_decode(const std::string& text) {
  // A lead byte says how many bytes follow: 0xxxxxxx (none), 110xxxxx (1), 1110xxxx (2),
  // 11110xxx (3); every following byte is 10xxxxxx and carries 6 bits.
  std::vector<char32_t> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto lead = static_cast<unsigned char>(text[at]);
    int extra = 0;
    char32_t value = 0;
    char32_t smallest = 0;  // the smallest value that needs this many bytes (no overlong forms)
    if (lead < 0x80) {
      value = lead;
    } else if ((lead & 0xE0) == 0xC0) {
      extra = 1, value = lead & 0x1F, smallest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      extra = 2, value = lead & 0x0F, smallest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      extra = 3, value = lead & 0x07, smallest = 0x10000;
    } else {
      throw TokenizerError("invalid UTF-8: byte " + std::to_string(at) + " (" + hex(lead, "0x%02X") +
                           ") cannot start a character");
    }
    if (extra > 0 && at + static_cast<std::size_t>(extra) >= text.size()) {
      throw TokenizerError("invalid UTF-8: the character at byte " + std::to_string(at) +
                           " is cut short by the end of the text");
    }
    for (int k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[at + static_cast<std::size_t>(k)]);
      if ((next & 0xC0) != 0x80) {
        throw TokenizerError("invalid UTF-8: byte " + std::to_string(at + static_cast<std::size_t>(k)) + " (" +
                             hex(next, "0x%02X") + ") should continue the character at byte " + std::to_string(at));
      }
      value = (value << 6) | (next & 0x3F);
    }
    if (value < smallest || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
      throw TokenizerError("invalid UTF-8: the character at byte " + std::to_string(at) + " encodes " +
                           hex(value, "U+%04X") + ", which is not a character");
    }
    out.push_back(value);
    at += 1 + static_cast<std::size_t>(extra);
  }
  return out;
}

std::string utf8_encode(char32_t c) {
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
    throw std::invalid_argument("utf8_encode: " + hex(c, "U+%04X") + " is not a character");
  }
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

std::string code_point_name(char32_t c) {
  const std::string name = hex(c, "U+%04X");
  const bool control = c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0);
  if (control || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return name;
  return name + " '" + utf8_encode(c) + "'";
}

std::vector<std::string> gpt2_pretokenize(const std::string& text) {
  // GPT-2's split pattern (openai/gpt-2, src/encoder.py): contractions, a letter run, a digit run
  // or a run of other symbols, each with at most one space before it, then whitespace, which
  // leaves its last space to the word that follows.
  static constexpr const char* kPattern =
      R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  // Compiled once. PCRE2_UTF reads code points; PCRE2_UCP gives \s, \p{L} and \p{N} their Unicode meaning.
  static const std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)> pattern = [] {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                                     PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (code == nullptr) throw std::logic_error("gpt2_pretokenize: the split pattern does not compile");
    return std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)>(code, &pcre2_code_free);
  }();
  utf8_decode(text);  // throws TokenizerError naming the first byte that is not UTF-8
  const std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(pattern.get(), nullptr), &pcre2_match_data_free);
  std::vector<std::string> pieces;
  std::size_t at = 0;
  while (at < text.size()) {
    // The pattern matches every character (its last alternative takes any whitespace, the others
    // everything else), so each match starts where the last one ended.
    const int found = pcre2_match(pattern.get(), reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), at,
                                  PCRE2_NO_UTF_CHECK, match.get(), nullptr);
    const PCRE2_SIZE* bounds = pcre2_get_ovector_pointer(match.get());
    if (found < 0 || bounds[0] != at || bounds[1] <= at) {
      throw std::logic_error("gpt2_pretokenize: the split pattern does not match at byte " + std::to_string(at));
    }
    pieces.push_back(text.substr(at, bounds[1] - at));
    at = bounds[1];
  }
  return pieces;
}

BpeTokenizer::BpeTokenizer() : BpeTokenizer(std::vector<Merge>{}) {}

BpeTokenizer::BpeTokenizer(std::vector<Merge> merges) : merges_(std::move(merges)) {
  token_bytes_.reserve(256 + merges_.size());
  for (int b = 0; b < 256; ++b) token_bytes_.push_back(std::string(1, static_cast<char>(b)));
  for (std::size_t r = 0; r < merges_.size(); ++r) {
    const Merge& m = merges_[r];
    const auto defined = static_cast<std::int64_t>(256 + r);
    if (m.first < 0 || m.first >= defined || m.second < 0 || m.second >= defined) {
      throw std::invalid_argument("BpeTokenizer: merge " + std::to_string(r) + " (" + std::to_string(m.first) + ", " +
                                  std::to_string(m.second) + ") names an id outside [0, " + std::to_string(defined) +
                                  ")");
    }
    // A repeated pair would never be used (the earlier rank always wins); it is still a token.
    ranks_.emplace(std::pair(m.first, m.second), static_cast<std::int64_t>(r));
    token_bytes_.push_back(token_bytes_[static_cast<std::size_t>(m.first)] +
                           token_bytes_[static_cast<std::size_t>(m.second)]);
  }
}

BpeTokenizer BpeTokenizer::train(const std::string& corpus, std::int64_t vocab_size) {
  return BpeTokenizer(train_bpe(corpus, vocab_size));
}

std::int64_t BpeTokenizer::add_special(const std::string& text) {
  if (text.empty()) throw std::invalid_argument("add_special: a special token cannot be empty");
  if (text.find('\n') != std::string::npos) {
    throw std::invalid_argument("add_special: a special token cannot hold a newline");
  }
  for (const std::string& s : specials_) {
    if (s == text) throw std::invalid_argument("add_special: \"" + text + "\" is already a special token");
  }
  const std::int64_t id = vocab_size();
  specials_.push_back(text);
  return id;
}

std::int64_t BpeTokenizer::vocab_size() const {
  return static_cast<std::int64_t>(token_bytes_.size() + specials_.size());
}

const std::string& BpeTokenizer::token_bytes(std::int64_t id) const {
  if (id < 0 || id >= static_cast<std::int64_t>(token_bytes_.size())) {
    throw IndexError("token_bytes: id " + std::to_string(id) + " is not a byte or merge token (there are " +
                     std::to_string(token_bytes_.size()) + ")");
  }
  return token_bytes_[static_cast<std::size_t>(id)];
}

std::int64_t BpeTokenizer::rank_of(std::int64_t first, std::int64_t second) const {
  const auto found = ranks_.find({first, second});
  return found == ranks_.end() ? -1 : found->second;
}

}  // namespace kiln
