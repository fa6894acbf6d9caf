// Module 10 checks for the character vocabulary: its characters, encode and decode, and the
// errors for a character it lacks and an id it does not have. Expected values are written out
// by hand ("hello") or computed here from code points the test chose itself (tokenization_testing.h
// writes UTF-8 out again). Every value from the module passes through observe(); text crosses as
// its bytes.
#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "kiln/testing.h"
#include "kiln/tokenization.h"
#include "tokenization_testing.h"

KILN_OBSERVABLE_ERROR(kiln::TokenizerError, std::runtime_error);

namespace kiln {
namespace {

using testing::observe;
using namespace tokenization_testing;

// The characters a vocabulary of the run is drawn from: ASCII, Latin-1, Cyrillic, a snowman, an
// emoji (4 bytes), a combining acute accent and NUL.
const std::vector<char32_t> kPool = {U'a', U'b', U' ', U'z', U'\u00e9', U'\u00f6', U'\u0416', U'\u2603',
                                     U'\U0001F600', U'\u0301', U'\0', U'~'};

std::string hex_name(char32_t c) { return fmt::format("U+{:04X}", static_cast<std::uint32_t>(c)); }

}  // namespace

TEST(Tokenization, CharVocab) {
  struct Case {
    std::string what;
    std::vector<char32_t> text;
    std::vector<char32_t> expected_characters;  // empty: computed by sorting
  };
  // A text of the run: 33 characters drawn from the pool.
  std::vector<char32_t> run_text;
  for (const std::int64_t k : testing::random_ints(33, static_cast<std::int64_t>(kPool.size()), 1001)) {
    run_text.push_back(kPool[static_cast<std::size_t>(k)]);
  }
  const std::vector<Case> cases = {
      {"\"hello\"", {U'h', U'e', U'l', U'l', U'o'}, KILN_JUDGE_ONLY({U'e', U'h', U'l', U'o'})},
      {"one character", {U'x'}, KILN_JUDGE_ONLY({U'x'})},
      // é (U+00E9, 2 bytes), ö, Ж (U+0416), ☃ (U+2603, 3 bytes), 😀 (U+1F600, 4 bytes): sorted by
      // code point, not by their first bytes, and each one id however many bytes it has.
      {"\"Жé ☃ wörld 😀\"",
       {U'\u0416', U'\u00e9', U' ', U'\u2603', U' ', U'w', U'\u00f6', U'r', U'l', U'd', U' ', U'\U0001F600'},
       KILN_JUDGE_ONLY({U' ', U'd', U'l', U'r', U'w', U'\u00e9', U'\u00f6', U'\u0416', U'\u2603', U'\U0001F600'})},
      // "é" written as e and a combining acute accent (U+0301): two code points, two ids.
      {"\"cafe\\u0301\" (e and a combining accent)", {U'c', U'a', U'f', U'e', U'\u0301'},
       KILN_JUDGE_ONLY({U'a', U'c', U'e', U'f', U'\u0301'})},
      {"\"a\\0b\" (a NUL inside)", {U'a', U'\0', U'b'}, KILN_JUDGE_ONLY({U'\0', U'a', U'b'})},
      {"33 characters of the run", run_text, {}},
  };
  for (const Case& c : cases) {
    const std::string text = utf8(c.text);
    const testing::Params params = {{"text", c.what}};
    const auto got = observe(fmt::format("CharVocab(<{}>): characters(), encode and decode of the text", c.what), [&] {
      const CharVocab vocab(text);
      std::vector<std::int64_t> characters(vocab.characters().begin(), vocab.characters().end());
      const TokenIds ids = vocab.encode(text);
      return std::tuple(vocab.size(), characters, ids, bytes_of(vocab.decode(ids)));
    });
    if (!KILN_EXPECT_OK(got, "char_vocab_wrong", params)) return;
    KILN_JUDGE {
      std::vector<char32_t> expected = c.expected_characters;
      if (expected.empty()) {
        expected = c.text;
        std::sort(expected.begin(), expected.end());
        expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
      }
      std::vector<std::int64_t> expected_ids;
      for (const char32_t ch : c.text) {
        expected_ids.push_back(std::find(expected.begin(), expected.end(), ch) - expected.begin());
      }
      const auto& [size, characters, ids, decoded] = *got;
      const Ids expected_characters(expected.begin(), expected.end());
      if (characters != expected_characters || size != static_cast<std::int64_t>(expected.size())) {
        KILN_FAIL("char_vocab_wrong", params,
                  fmt::format("{}: size() {} and characters {}, expected {} and {}", got.call(), size,
                              list_of(characters), expected.size(), list_of(expected_characters)));
        return;
      }
      if (ids != expected_ids) {
        KILN_FAIL("char_round_trip_wrong", params,
                  fmt::format("{}: encode gave {}, expected {}", got.call(), list_of(ids), list_of(expected_ids)));
        return;
      }
      if (decoded != bytes_of(text)) {
        KILN_FAIL("char_round_trip_wrong", params,
                  fmt::format("{}: decode(encode(text)) gave {}, expected {}", got.call(),
                              shown(from_bytes(decoded)), shown(text)));
        return;
      }
    }
  }

  // Another text in the vocabulary of "hello": ids of the vocabulary, not of the new text.
  const auto other = observe("CharVocab(\"hello\"): encode(\"oleh\") and decode({3, 3, 1, 0})", [] {
    const CharVocab vocab("hello");
    return std::pair(vocab.encode("oleh"), bytes_of(vocab.decode({3, 3, 1, 0})));
  });
  if (!KILN_EXPECT_OK(other, "char_round_trip_wrong", {{"text", "\"oleh\""}})) return;
  KILN_JUDGE {
    if (other->first != Ids{3, 2, 0, 1} || other->second != bytes_of("oohe")) {
      KILN_FAIL("char_round_trip_wrong", {{"text", "\"oleh\""}},
                fmt::format("{} gave {} and {}, expected [3, 2, 0, 1] and \"oohe\"", other.call(),
                            list_of(other->first), shown(from_bytes(other->second))));
    }
  }
}

TEST(Tokenization, CharErrors) {
  // Unknown characters. Positions count characters: in "wörld héllo!" the '!' is character 11
  // but byte 13, since ö and é take two bytes each.
  struct Unknown {
    std::string vocabulary;
    std::string text;
    char32_t character;
    std::int64_t position;
  };
  std::vector<Unknown> unknowns = {
      {utf8({U'w', U'\u00f6', U'r', U'l', U'd', U' ', U'h', U'\u00e9', U'l', U'o'}),
       utf8({U'w', U'\u00f6', U'r', U'l', U'd', U' ', U'h', U'\u00e9', U'l', U'l', U'o', U'!'}), U'!', 11},
      {"hello", "help", U'p', 3},
      {utf8({U'h', U'\u00e9'}), utf8({U'h', U'\u00e9', U'\u2603'}), U'\u2603', 2},
      {"abc", "", U'\0', -1},  // (placeholder replaced below)
  };
  // A text of the run: 31 characters of a vocabulary of five, with one character it lacks
  // (from the pool, outside the five) at a place of the run.
  const std::vector<char32_t> five = {U'a', U'b', U'\u00e9', U'\u2603', U'\U0001F600'};
  std::vector<char32_t> run_text;
  for (const std::int64_t k : testing::random_ints(31, 5, 1002)) run_text.push_back(five[static_cast<std::size_t>(k)]);
  const std::int64_t place = testing::random_ints(1, 31, 1003)[0];
  const std::vector<char32_t> strangers = {U'z', U'\u0416', U'\u00f6', U'~'};
  const char32_t stranger = strangers[static_cast<std::size_t>(testing::random_ints(1, 4, 1004)[0])];
  run_text[static_cast<std::size_t>(place)] = stranger;
  unknowns.back() = {utf8(five), utf8(run_text), stranger, place};

  for (const Unknown& u : unknowns) {
    const auto got = observe(fmt::format("CharVocab({}).encode({})", shown(u.vocabulary), shown(u.text)),
                             [&] { return CharVocab(u.vocabulary).encode(u.text); });
    KILN_JUDGE {
      const testing::Params params = {{"text", shown(u.text)},
                                      {"character", hex_name(u.character)},
                                      {"position", std::to_string(u.position)}};
      if (!expect_error(__FILE__, __LINE__, got, "kiln::TokenizerError", {hex_name(u.character)},
                        {{"position ", u.position}}, "unknown_character_not_reported", params))
        return;
    }
  }

  // Ids outside [0, size()): size() itself, -1, and an id of the run above it.
  const std::int64_t run_id = 4 + testing::random_ints(1, 1000, 1005)[0];
  for (const Ids& ids : {Ids{0, 4}, Ids{-1}, Ids{1, 2, run_id}}) {
    const std::int64_t bad = ids.back();
    const auto got = observe(fmt::format("CharVocab(\"hello\").decode({})", list_of(ids)),
                             [&] { return bytes_of(CharVocab("hello").decode(ids)); });
    KILN_JUDGE {
      const testing::Params params = {{"id", std::to_string(bad)}, {"size", "4"}};
      if (!expect_error(__FILE__, __LINE__, got, "kiln::IndexError", {std::to_string(bad)}, {{"", 4}},
                        "char_bad_id_not_reported", params))
        return;
    }
  }
  // An id is an std::int64_t: 2^32 + 1 is far outside [0, 4) (in 32 bits it would be 1, 'h').
  const auto wide = observe("CharVocab(\"hello\").decode([4294967297])",
                            [&] { return bytes_of(CharVocab("hello").decode({4294967297})); });
  KILN_JUDGE {
    expect_error(__FILE__, __LINE__, wide, "kiln::IndexError", {"4294967297"}, {{"", 4}}, "char_id_narrowed", {});
  }
}

}  // namespace kiln
