// Module 10 checks for byte-pair encoding GPT-2's way: training within the pieces of GPT-2's
// pre-tokenizer, with special tokens cut out and either tie rule, and encoding piece by piece.
// Expected values come from the plain implementation in tokenization_testing.h, which recounts
// everything for every merge and takes its pieces from the given gpt2_pretokenize; GPT-2's own
// ids on eight texts were written down once from its reference encoder (gpt2_reference.h).
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/testing.h"
#include "kiln/tokenization.h"
#include "gpt2_reference.h"
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

// GPT-2's vocabulary as the module numbers it: a byte's id is the byte, GPT-2's merge of rank r
// makes 256 + r as in GPT-2, and <|endoftext|> is 50256 in both. The ranks that gpt2_reference.h
// leaves out are filled with pairs that hold a byte none of the texts contains, so they never
// apply and the encoding is GPT-2's. to_gpt2[id] is GPT-2's id of the module's token `id`;
// bytes[GPT-2 id] is a token's bytes, for the reports.
struct Gpt2Vocabulary {
  Pairs merges;
  Ids to_gpt2;
  std::map<std::int64_t, std::string> bytes;
};

Gpt2Vocabulary gpt2_vocabulary() {
  Gpt2Vocabulary v;
  std::int64_t byte_of[256];  // GPT-2's id of a byte token -> the byte (both number 256 tokens)
  for (std::int64_t b = 0; b < 256; ++b) {
    const std::int64_t gpt2 = kGpt2ByteIds[static_cast<std::size_t>(b)];
    byte_of[gpt2] = b;
    v.to_gpt2.push_back(gpt2);
    v.bytes[gpt2] = std::string(1, static_cast<char>(b));
  }
  const auto to_module = [&](std::int64_t gpt2) { return gpt2 < 256 ? byte_of[gpt2] : gpt2; };
  std::vector<bool> in_texts(256, false);
  for (const Gpt2Text& t : kGpt2Texts) {
    for (const char c : std::string(t.text) + "<|endoftext|>") in_texts[static_cast<unsigned char>(c)] = true;
  }
  std::int64_t filler = 0;  // the next pair (filler / 256, filler % 256) to try
  const auto next_filler = [&] {
    while (filler < 256 * 256) {
      const Pair pair{filler / 256, filler % 256};
      ++filler;
      if (!in_texts[static_cast<std::size_t>(pair.first)] || !in_texts[static_cast<std::size_t>(pair.second)]) return pair;
    }
    throw std::logic_error("gpt2_vocabulary: not enough byte pairs absent from the texts to fill GPT-2's ranks");
  };
  std::size_t next_real = 0;
  for (std::int64_t id = 256; id < kGpt2EndOfText; ++id) {  // the merge of rank id - 256
    if (next_real < kGpt2Merges.size() && kGpt2Merges[next_real][0] == id - 256) {
      const auto& [_, first, second] = kGpt2Merges[next_real++];
      v.merges.emplace_back(to_module(first), to_module(second));
      v.bytes[id] = v.bytes.at(first) + v.bytes.at(second);
    } else {
      v.merges.push_back(next_filler());
    }
    v.to_gpt2.push_back(id);
  }
  v.to_gpt2.push_back(kGpt2EndOfText);
  v.bytes[kGpt2EndOfText] = "<|endoftext|>";
  return v;
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

  // An empty special occurs at every position: refused before any work. First with an empty
  // corpus, where a trainer without the refusal returns at once (and the check stops there),
  // then with text, where the refusal must come before the corpus is cut.
  const auto empty_special_refused = [&](const std::string& call, const std::string& corpus,
                                         const std::vector<std::string>& with_empty) {
    const auto got = observe(call, [&] { return pairs_of(train_bpe_pretokenized(corpus, 1000, with_empty)); });
    KILN_JUDGE {
      if (!expect_error(__FILE__, __LINE__, got, "std::invalid_argument", {}, {}, "empty_special_accepted", {}))
        return false;
    }
    return !got.ok();
  };
  if (!empty_special_refused("train_bpe_pretokenized(\"\", 1000, {\"<|endoftext|>\", \"\"})", "",
                             {"<|endoftext|>", ""}))
    return;
  if (!empty_special_refused("train_bpe_pretokenized(\"ab ab ab\", 1000, {\"\"})", "ab ab ab", {""})) return;

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
  // vocab_size is an std::int64_t: 2^32 + 257 leaves room for every merge ("aaa aaa aaa" learns
  // 3 and stops), where its low 32 bits, 257, would allow 1.
  cases.push_back({"\"aaa aaa aaa\"", "aaa aaa aaa", 4294967553, {}, TieRule::smallest_ids,
                   "pretokenized_vocab_size_narrowed"});
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
                  fmt::format("{} learned {} {}, expected {} {}; they first differ at merge {}", got.call(),
                              testing::counted(got->size(), "merge"), pairs_shown(*got), expected.size(),
                              pairs_shown(expected), r));
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
      // Specials found where they are text, or read as text where they are allowed: the ids the
      // other value of allow_special gives.
      if (*got != expected && *got == trusted_encode_pretokenized(merges, specials, c.text, !c.allow_special)) {
        KILN_FAIL("pretokenized_encode_specials_wrong",
                  {{"text", shown(c.text)}, {"allow", c.allow_special ? "true" : "false"}},
                  fmt::format("{} gave {}, expected {}", got.call(), list_of(*got), list_of(expected)));
        return;
      }
      if (*got != expected) {
        KILN_FAIL("pretokenized_encode_wrong", params,
                  fmt::format("{} gave {}, expected {}", got.call(), list_of(*got), list_of(expected)));
        return;
      }
    }
  }
}

TEST(Tokenization, BpeGpt2Ids) {
  // GPT-2's 50,000 merges (those the texts use, the rest never applying) and <|endoftext|>; the
  // ids compared are GPT-2's.
  const Gpt2Vocabulary gpt2 = gpt2_vocabulary();
  struct Case {
    std::string text;
    bool allow_special;
    Ids expected;
  };
  std::vector<Case> cases;
  for (const Gpt2Text& t : kGpt2Texts) cases.push_back({t.text, false, t.ids});
  // With allow_special, the special between two texts is GPT-2's 50256 and the texts encode alone.
  const Gpt2Text& first = kGpt2Texts.front();
  const Gpt2Text& second = kGpt2Texts[1];
  Ids joined = first.ids;
  joined.push_back(kGpt2EndOfText);
  joined.insert(joined.end(), second.ids.begin(), second.ids.end());
  cases.push_back({std::string(first.text) + "<|endoftext|>" + second.text, true, joined});

  auto token_shown = [&](std::int64_t id) {
    const auto it = gpt2.bytes.find(id);
    return it == gpt2.bytes.end() ? fmt::format("{}", id) : fmt::format("{} {}", id, shown(it->second));
  };
  for (const Case& c : cases) {
    const testing::Params params = {{"text", shown(c.text)}};
    const auto got = observe(fmt::format("encode_pretokenized({}, {})", shown(c.text), c.allow_special), [&] {
      BpeTokenizer tokenizer(merges_of(gpt2.merges));
      tokenizer.add_special("<|endoftext|>");
      return tokenizer.encode_pretokenized(c.text, c.allow_special);
    });
    if (!KILN_EXPECT_OK(got, "gpt2_ids_wrong", params)) return;
    KILN_JUDGE {
      Ids as_gpt2;  // the module's ids in GPT-2's numbering; -1 for an id outside the vocabulary
      for (const std::int64_t id : *got) {
        const bool known = id >= 0 && id < static_cast<std::int64_t>(gpt2.to_gpt2.size());
        as_gpt2.push_back(known ? gpt2.to_gpt2[static_cast<std::size_t>(id)] : -1);
      }
      if (as_gpt2 != c.expected) {
        std::size_t k = 0;
        while (k < as_gpt2.size() && k < c.expected.size() && as_gpt2[k] == c.expected[k]) ++k;
        const std::string got_k = k >= as_gpt2.size() ? "nothing"
                                  : as_gpt2[k] < 0  ? fmt::format("the id {} (outside the vocabulary)", (*got)[k])
                                                    : token_shown(as_gpt2[k]);
        const std::string expected_k = k < c.expected.size() ? token_shown(c.expected[k]) : "nothing";
        KILN_FAIL("gpt2_ids_wrong", params,
                  fmt::format("{} gave {}, GPT-2's encoder {}; in GPT-2's ids they first differ at token {}: "
                              "{}, where GPT-2 has {} (GPT-2's ids: {})",
                              got.call(), testing::counted(got->size(), "token"), c.expected.size(), k, got_k, expected_k, list_of(c.expected)));
        return;
      }
    }
  }
}

}  // namespace kiln
