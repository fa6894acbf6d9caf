// Module 10 checks for byte-pair encoding GPT-2's way: training within the pieces of GPT-2's
// pre-tokenizer, with special tokens cut out and either tie rule, and encoding piece by piece.
// Expected values come from the plain implementation in tokenization_testing.h, which recounts
// everything for every merge and takes its pieces from the given gpt2_pretokenize.
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/testing.h"
#include "kiln/tokenization.h"
#include "tokenization_testing.h"

namespace kiln {
namespace {

using testing::observe;
using namespace tokenization_testing;

const char* tie_name(TieRule tie) { return tie == TieRule::smallest_ids ? "smallest_ids" : "greatest_bytes"; }

// Text of the run: words of a few letters, digits, punctuation, a contraction, runs of spaces and
// newlines, an accented word, and (when `specials` is not empty) the specials among them.
std::string run_text(std::size_t words, const std::vector<std::string>& specials, std::uint64_t stream) {
  const std::vector<std::string> pieces = {"the",  " the", " cat", "at",   " a",   "aa",   "'s",   " 42", "7",
                                           "!",    ", ",   "\n",   "\n\n", "   ",  " caf\xC3\xA9", " \xC3\xA9t\xC3\xA9",
                                           " --",  "ab",   " ab",  "ba"};
  const std::vector<std::int64_t> picks = testing::random_ints(words, 0, static_cast<std::int64_t>(pieces.size() + specials.size()), stream);
  std::string text;
  for (const std::int64_t p : picks) {
    const auto index = static_cast<std::size_t>(p);
    text += index < pieces.size() ? pieces[index] : specials[index - pieces.size()];
  }
  return text;
}

}  // namespace

TEST(Tokenization, BpePretokenized) {
  // vocab_size counts the specials: below 256 + their number it is refused.
  const std::vector<std::string> one_special = {"<|endoftext|>"};
  for (const std::int64_t vocab_size : {std::int64_t{256}, std::int64_t{255}}) {
    if (!expect_vocab_size_refused(
            __FILE__, __LINE__, fmt::format("train_bpe_pretokenized(\"a a a\", {}, {{\"<|endoftext|>\"}})", vocab_size),
            vocab_size, [&] { return train_bpe_pretokenized("a a a", vocab_size, one_special); },
            "pretokenized_vocab_size_not_checked"))
      return;
  }

  struct Case {
    std::string what;
    std::string corpus;
    std::int64_t vocab_size;
    std::vector<std::string> specials;
    TieRule tie;
    std::string failure_id;
  };
  const std::vector<std::string> specials = {"<|endoftext|>", "<|pad|>"};
  std::vector<Case> cases = {
      // Within pre-tokens: "the cat" never merges (e, space) or (space, c) across the words.
      {"\"the cat the hat the mat\"", "the cat the hat the mat", 1000, {}, TieRule::smallest_ids, "pretokenized_merges_wrong"},
      {"\"aaa aaa aaa\"", "aaa aaa aaa", 1000, {}, TieRule::smallest_ids, "pretokenized_merges_wrong"},
      {"\"it's 2024's 42 42!!\\n\\n  x\"", "it's 2024's 42 42!!\n\n  x", 1000, {}, TieRule::smallest_ids,
       "pretokenized_merges_wrong"},
      // A pre-token that occurs 3 times counts its pairs 3 times: " cd" makes (32, 99) and (99, 100)
      // three times each, where the distinct pre-tokens hold every pair once.
      {"\"ab cd cd cd\"", "ab cd cd cd", 257, {}, TieRule::smallest_ids, "pretokenized_merges_wrong"},
      // Specials are cut out and count in vocab_size: one merge for 258 with two specials.
      {"\"ab<|endoftext|>ab<|pad|>ab\"", "ab<|endoftext|>ab<|pad|>ab", 1000, specials, TieRule::smallest_ids,
       "pretokenized_specials_wrong"},
      {"\"x<|endoftext|><|endoftext|>x\"", "x<|endoftext|><|endoftext|>x", 1000, specials, TieRule::smallest_ids,
       "pretokenized_specials_wrong"},
      {"\"<|endoftext|>ab<|pad|>ab\"", "<|endoftext|>ab<|pad|>ab", 1000, specials, TieRule::smallest_ids,
       "pretokenized_specials_wrong"},  // a special first
      {"\"aaaa bbbb aaaa\"", "aaaa bbbb aaaa", 258, specials, TieRule::smallest_ids, "pretokenized_specials_wrong"},
      // greatest_bytes: among ab and cd (twice each), cd. The bytes decide, not the ids: in
      // "zzbbzzbbb", once bb is 256, (z, z) and (z, 256) tie, and ("z", "z") beats ("z", "bb")
      // though the id 256 is above 122.
      {"\"cdcdabab\"", "cdcdabab", 257, {}, TieRule::greatest_bytes, "bytes_tie_wrong"},
      {"\"zzbbzzbbb\"", "zzbbzzbbb", 1000, {}, TieRule::greatest_bytes, "bytes_tie_wrong"},
      {"\"abzabzab \"", "abzabzab ", 1000, {}, TieRule::greatest_bytes, "bytes_tie_wrong"},
  };
  // Corpora of the run, with and without specials, by either rule.
  std::uint64_t stream = 1901;
  for (const std::size_t words : {12, 60, 400}) {
    for (const TieRule tie : {TieRule::smallest_ids, TieRule::greatest_bytes}) {
      const std::string corpus = run_text(words, specials, stream++);
      const std::int64_t vocab_size = 256 + 2 + testing::random_ints(1, 1, 60, stream++)[0];
      cases.push_back({fmt::format("{} pieces of the run", words), corpus, vocab_size, specials, tie,
                       tie == TieRule::smallest_ids ? "pretokenized_merges_wrong" : "bytes_tie_wrong"});
      cases.push_back({fmt::format("{} pieces of the run", words), corpus, 1000000, {}, tie,
                       tie == TieRule::smallest_ids ? "pretokenized_merges_wrong" : "bytes_tie_wrong"});
    }
  }
  for (const Case& c : cases) {
    const std::string call = fmt::format("train_bpe_pretokenized(<{}>, {}, {} specials, TieRule::{})", c.what,
                                         c.vocab_size, c.specials.size(), tie_name(c.tie));
    const auto got = observe(call, [&] { return pairs_of(train_bpe_pretokenized(c.corpus, c.vocab_size, c.specials, c.tie)); });
    const testing::Params params = {{"corpus", c.what}, {"vocab_size", std::to_string(c.vocab_size)}};
    if (!KILN_EXPECT_OK(got, c.failure_id, params)) return;
    KILN_JUDGE {
      const Pairs expected = trusted_train_pretokenized(c.corpus, c.vocab_size, c.specials, c.tie);
      if (*got != expected) {
        std::size_t r = 0;
        while (r < got->size() && r < expected.size() && (*got)[r] == expected[r]) ++r;
        KILN_FAIL(c.failure_id, params,
                  fmt::format("{} learned {} merges {}, expected {} {}; they first differ at merge {}", got.call(),
                              got->size(), pairs_shown(*got), expected.size(), pairs_shown(expected), r));
        return;
      }
    }
  }
}

TEST(Tokenization, BpePretokenizedEncode) {
  // Merges learned from one sequence (train_bpe's way), so that some cross spaces: encoding within
  // pieces must not use them there.
  const std::string corpus = "the cat the hat the mat at the sea";
  const Pairs merges = trusted_train(corpus, 256 + 30);
  const std::vector<std::string> specials = {"<|endoftext|>", "<|endoftext|>x"};
  struct Case {
    std::string text;
    bool allow_special;
  };
  std::vector<Case> cases = {
      {"the cat", false},
      {"the   hat\n\nthe", false},
      {"it's the cat's hat", false},
      {"caf\xC3\xA9 \xC3\xA9t\xC3\xA9 42", false},
      {"", false},
      {"the<|endoftext|>the cat", true},
      {"<|endoftext|>the<|endoftext|>", true},  // a special first and last
      {"the<|endoftext|>xthe", true},
      {"the<|endoftext|>the", false},
  };
  std::uint64_t stream = 1951;
  for (const std::size_t words : {7, 40}) cases.push_back({run_text(words, specials, stream++), words == 40});
  for (const Case& c : cases) {
    const testing::Params params = {{"text", shown(c.text)}};
    const auto got = observe(fmt::format("encode_pretokenized({}, {})", shown(c.text), c.allow_special), [&] {
      BpeTokenizer tokenizer(merges_of(merges));
      for (const std::string& s : specials) tokenizer.add_special(s);
      return tokenizer.encode_pretokenized(c.text, c.allow_special);
    });
    if (!KILN_EXPECT_OK(got, "pretokenized_encode_wrong", params)) return;
    KILN_JUDGE {
      const Ids expected = trusted_encode_pretokenized(merges, specials, c.text, c.allow_special);
      if (*got != expected) {
        KILN_FAIL("pretokenized_encode_wrong", params,
                  fmt::format("{} gave {}, expected {}", got.call(), list_of(*got), list_of(expected)));
        return;
      }
    }
  }
}

}  // namespace kiln
