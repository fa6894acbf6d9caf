// Module 10 checks for byte-pair encoding: counting and merging pairs, training (the Wikipedia
// example worked by hand, ties, the stop condition), encoding by rank, round trips of any bytes,
// and special tokens. Expected values are hand-worked (the chapter works them too) or computed by
// the plain implementation in tokenization_testing.h. Every value from the module passes through
// observe(); a tokenizer is built and used inside one call, and text crosses as its bytes.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/testing.h"
#include "kiln/tokenization.h"
#include "tokenization_testing.h"

namespace kiln {
namespace {

using testing::observe;
using namespace tokenization_testing;

using Counts = std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>;

// A PairCounts map as plain data: (first, second, count) in the map's order.
Counts counts_of(const PairCounts& counts) {
  Counts out;
  for (const auto& [pair, count] : counts) out.emplace_back(pair.first, pair.second, count);
  return out;
}
Counts expected_counts(const Ids& ids) {
  Counts out;
  for (const auto& [pair, count] : trusted_pairs(ids)) out.emplace_back(pair.first, pair.second, count);
  return out;
}
std::string counts_shown(const Counts& counts) {
  std::string out = "{";
  for (std::size_t i = 0; i < counts.size() && i < 12; ++i) {
    const auto& [a, b, n] = counts[i];
    out += fmt::format("{}({}, {}): {}", i ? ", " : "", a, b, n);
  }
  if (counts.size() > 12) out += fmt::format(", ... ({} in all)", counts.size());
  return out + "}";
}

// The module's two trainers, by name.
struct Trainer {
  const char* name;
  std::vector<Merge> (*train)(const std::string&, std::int64_t);
};
const Trainer kTrainBpe{"train_bpe", train_bpe};
const Trainer kTrainIncremental{"train_bpe_incremental", train_bpe_incremental};

// Observes trainer(corpus, vocab_size) and reports failure_id unless it learns `expected`
// (given as KILN_JUDGE_ONLY(...): the observed program receives no merges there). `count_only`:
// judges when training stops (the number of merges), not which pairs it merged, which bpe_train
// and bpe_ties judge. In the observed program: whether the call returned.
bool expect_training(const char* file, int line, const std::string& what, const std::string& corpus,
                     std::int64_t vocab_size, const Pairs& expected, const std::string& failure_id,
                     testing::Params params = {}, bool count_only = false, const Trainer& trainer = kTrainBpe) {
  const auto got = observe(fmt::format("{}(<{}>, {})", trainer.name, what, vocab_size),
                           [&] { return pairs_of(trainer.train(corpus, vocab_size)); });
  KILN_JUDGE {
    params.emplace_back("corpus", what);
    params.emplace_back("vocab_size", std::to_string(vocab_size));
    params.emplace_back("expected", fmt::format("{} merge{}", expected.size(), expected.size() == 1 ? "" : "s"));
    if (!testing::expect_ok(file, line, got, failure_id, params)) return false;
    if (*got == expected || (count_only && got->size() == expected.size())) return true;
    std::size_t first_difference = 0;
    while (first_difference < got->size() && first_difference < expected.size() &&
           (*got)[first_difference] == expected[first_difference]) {
      ++first_difference;
    }
    const auto merges = [](std::size_t n) { return fmt::format("{} merge{}", n, n == 1 ? "" : "s"); };
    // The incremental trainer merging a pair that occurs as often as the expected one, neither
    // of them made or changed by the merge before (so no count kept since could be stale), breaks
    // a tie the wrong way, whichever case shows it.
    std::string id = failure_id;
    if (trainer.train == kTrainIncremental.train && !count_only && first_difference < got->size() &&
        first_difference < expected.size()) {
      std::vector<std::map<Pair, std::int64_t>> counts;  // before merge first_difference - 1, and now
      Ids ids = bytes_of(corpus);
      for (std::size_t m = 0; m < first_difference; ++m) {
        if (m + 1 == first_difference) counts.push_back(trusted_pairs(ids));
        ids = trusted_merge(ids, expected[m], 256 + static_cast<std::int64_t>(m));
      }
      counts.push_back(trusted_pairs(ids));
      const auto count_of = [](const std::map<Pair, std::int64_t>& table, const Pair& pair) {
        const auto found = table.find(pair);
        return found == table.end() ? std::int64_t{0} : found->second;
      };
      const Pair& chosen = (*got)[first_difference];
      const Pair& wanted = expected[first_difference];
      bool tie = count_of(counts.back(), chosen) >= 2 && count_of(counts.back(), chosen) == count_of(counts.back(), wanted);
      for (const Pair& pair : {chosen, wanted}) tie = tie && count_of(counts.front(), pair) == count_of(counts.back(), pair);
      if (tie) id = "incremental_tie_wrong";
    }
    if (count_only) {
      testing::report_failure(file, line, failure_id, params,
                              fmt::format("{} learned {} {}, where training stops after {}", got.call(),
                                          merges(got->size()), pairs_shown(*got), merges(expected.size())));
      return false;
    }
    testing::report_failure(file, line, id, params,
                            fmt::format("{} learned {} {}, expected {} {}; they first differ at merge {} (id {})",
                                        got.call(), merges(got->size()), pairs_shown(*got), merges(expected.size()),
                                        pairs_shown(expected), first_difference, 256 + first_difference));
    return false;
  }
  return got.ok();
}

}  // namespace

TEST(Tokenization, Pairs) {
  // count_pairs: nothing, one id, the overlapping "aaa", the Wikipedia text, 33 ids of the run.
  const Ids wikipedia = bytes_of("aaabdaaabac");
  const Ids run = testing::random_ints(33, 4, 1101);
  for (const Ids& ids : {Ids{}, Ids{5}, Ids{97, 97, 97}, Ids{300, -1, 300, -1}, wikipedia, run}) {
    const testing::Params params = {{"ids", list_of(ids, 12)}};
    const auto got = observe(fmt::format("count_pairs({})", list_of(ids, 12)), [&] { return counts_of(count_pairs(ids)); });
    if (!KILN_EXPECT_OK(got, "count_pairs_wrong", params)) return;
    KILN_JUDGE {
      const Counts expected = expected_counts(ids);
      if (*got != expected) {
        KILN_FAIL("count_pairs_wrong", params,
                  fmt::format("{} gave {}, expected {}", got.call(), counts_shown(*got), counts_shown(expected)));
        return;
      }
    }
  }
  // The hand-worked counts of "aaabdaaabac": aa 4, ab 2, and ac, ba, bd, da once each.
  const auto hand = observe("count_pairs(the bytes of \"aaabdaaabac\")", [&] { return counts_of(count_pairs(wikipedia)); });
  if (!KILN_EXPECT_OK(hand, "count_pairs_wrong", {{"ids", "the bytes of \"aaabdaaabac\""}})) return;
  KILN_JUDGE {
    const Counts hand_expected = {{97, 97, 4}, {97, 98, 2}, {97, 99, 1}, {98, 97, 1}, {98, 100, 1}, {100, 97, 1}};
    if (*hand != hand_expected) {
      KILN_FAIL("count_pairs_wrong", {{"ids", "the bytes of \"aaabdaaabac\""}},
                fmt::format("{} gave {}, expected {}", hand.call(), counts_shown(*hand), counts_shown(hand_expected)));
      return;
    }
  }

  // merge_pair: left to right, never reusing a merged id: "aaa" -> [256, 97], "aaaa" -> [256, 256];
  // a pair that is not there; nothing; one id; 31 ids of the run with a pair of the run.
  const Ids run_ids = testing::random_ints(31, 3, 1102);
  const Pair run_pair = {run_ids[0], run_ids[1]};
  struct Case {
    Ids ids;
    Pair pair;
    std::int64_t new_id;
    Ids expected;
  };
  const std::vector<Case> cases = {
      {{97, 97, 97}, {97, 97}, 256, KILN_JUDGE_ONLY({256, 97})},
      {{97, 97, 97, 97}, {97, 97}, 256, KILN_JUDGE_ONLY({256, 256})},
      {{1, 2, 1, 2, 1}, {1, 2}, 9, KILN_JUDGE_ONLY({9, 9, 1})},
      {{2, 1, 2, 1}, {1, 2}, 9, KILN_JUDGE_ONLY({2, 9, 1})},
      {{1, 2, 3}, {3, 1}, 9, KILN_JUDGE_ONLY({1, 2, 3})},
      {{}, {1, 2}, 9, {}},
      {{7}, {7, 7}, 9, KILN_JUDGE_ONLY({7})},
      {run_ids, run_pair, 300, KILN_JUDGE_ONLY(trusted_merge(run_ids, run_pair, 300))},
  };
  for (const Case& c : cases) {
    const std::string pair = fmt::format("({}, {})", c.pair.first, c.pair.second);
    const testing::Params params = {{"ids", list_of(c.ids, 12)}, {"pair", pair}};
    const auto got = observe(fmt::format("merge_pair({}, {{{}, {}}}, {})", list_of(c.ids, 12), c.pair.first,
                                         c.pair.second, c.new_id),
                             [&] { return merge_pair(c.ids, c.pair, c.new_id); });
    if (!KILN_EXPECT_OK(got, "merge_pair_wrong", params)) return;
    KILN_JUDGE {
      if (*got != c.expected) {
        KILN_FAIL("merge_pair_wrong", params,
                  fmt::format("{} gave {}, expected {}", got.call(), list_of(*got), list_of(c.expected)));
        return;
      }
    }
  }
}

TEST(Tokenization, BpeTrain) {
  // Wikipedia's example, worked by hand in the chapter: aa -> 256 (4 times), then ab -> 257 (a tie
  // with (256, 97), both twice), then (256, 257) -> 258; after that every pair occurs once.
  if (!expect_training(__FILE__, __LINE__, "\"aaabdaaabac\"", "aaabdaaabac", 1000,
                       KILN_JUDGE_ONLY(kWikipediaMerges), "train_merges_wrong"))
    return;
  // UTF-8 text: bytes above 127 (é is C3 A9, 195 169) merge like any other.
  const std::string french = utf8({U'\u00e9', U't', U'\u00e9', U' ', U'\u00e9', U't', U'\u00e9', U' ', U'\u00e9',
                                   U't', U'\u00e9', U'\u00e9'});
  if (!expect_training(__FILE__, __LINE__, shown(french), french, 300, KILN_JUDGE_ONLY(trusted_train(french, 300)),
                       "train_merges_wrong"))
    return;
  // Corpora of the run: 7, 31, 33 and 200 bytes over five bytes (NUL and two above 127 among
  // them), and 64 bytes of any value.
  const std::string alphabet = {'a', 'b', '\0', static_cast<char>(0xC3), static_cast<char>(0xA9)};
  std::uint64_t stream = 1201;
  for (const std::size_t length : {7, 31, 33, 200}) {
    const std::string corpus = random_text(length, alphabet, stream++);
    const std::int64_t vocab_size = 256 + 12;
    if (!expect_training(__FILE__, __LINE__, fmt::format("{} bytes of the run", length), corpus, vocab_size,
                         KILN_JUDGE_ONLY(trusted_train(corpus, vocab_size)), "train_merges_wrong"))
      return;
  }
  const std::string any = random_bytes(64, stream++);
  expect_training(__FILE__, __LINE__, "64 random bytes of the run", any, 1000,
                  KILN_JUDGE_ONLY(trusted_train(any, 1000)), "train_merges_wrong");
}

TEST(Tokenization, BpeTies) {
  // "cdcdabab": cd and ab both occur twice; (97, 98) is the smaller pair, though cd comes first.
  if (!expect_training(__FILE__, __LINE__, "\"cdcdabab\"", "cdcdabab", 257, KILN_JUDGE_ONLY({{97, 98}}),
                       "tie_not_smallest_pair"))
    return;
  // "acacabab": ac, ca and ab twice each: (97, 98) again, then among the rest (97, 99) before (99, 97).
  if (!expect_training(__FILE__, __LINE__, "\"acacabab\"", "acacabab", 1000,
                       KILN_JUDGE_ONLY(trusted_train("acacabab", 1000)), "tie_not_smallest_pair"))
    return;
  // The Wikipedia example's second merge: (97, 98) ties with (256, 97), and wins.
  if (!expect_training(__FILE__, __LINE__, "\"aaabdaaabac\"", "aaabdaaabac", 258,
                       KILN_JUDGE_ONLY({{97, 97}, {97, 98}}), "tie_not_smallest_pair"))
    return;
  // Ties of the run: three pairs of distinct letters, each written twice and separated by a letter
  // of its own, so that all three occur exactly twice.
  std::string corpus;
  const Ids letters = testing::random_ints(6, 0, 20, 1301);
  for (int round = 0; round < 2; ++round) {
    for (int p = 0; p < 3; ++p) {
      corpus += static_cast<char>('a' + letters[2 * p]);
      corpus += static_cast<char>('a' + 20 + letters[2 * p + 1] % 6);
      corpus += static_cast<char>('0' + 3 * round + p);
    }
  }
  expect_training(__FILE__, __LINE__, shown(corpus), corpus, 1000, KILN_JUDGE_ONLY(trusted_train(corpus, 1000)),
                  "tie_not_smallest_pair");
}

TEST(Tokenization, BpeStop) {
  struct Case {
    std::string what;
    std::string corpus;
    std::int64_t vocab_size;
    Pairs expected;
  };
  const std::string run = random_text(33, "ab", 1401);
  const std::int64_t run_vocab = 256 + 1 + testing::random_ints(1, 3, 1402)[0];
  const std::vector<Case> cases = {
      {"\"aaabdaaabac\"", "aaabdaaabac", 1000, KILN_JUDGE_ONLY(kWikipediaMerges)},  // stops: every pair occurs once
      {"\"aaabdaaabac\"", "aaabdaaabac", 259, KILN_JUDGE_ONLY(kWikipediaMerges)},
      {"\"aaabdaaabac\"", "aaabdaaabac", 257, KILN_JUDGE_ONLY({{97, 97}})},  // stops: the vocabulary is full
      {"\"aaabdaaabac\"", "aaabdaaabac", 256, {}},
      {"\"\" (no text)", "", 300, {}},
      {"\"a\"", "a", 300, {}},
      {"\"ab\"", "ab", 300, {}},                                // one pair, once: nothing to gain
      {"\"abab\"", "abab", 300, KILN_JUDGE_ONLY({{97, 98}})},   // then (256, 256) once
      {"\"aaaa\"", "aaaa", 300, KILN_JUDGE_ONLY({{97, 97}})},   // aa three times (overlapping), then (256, 256) once
      {"33 letters of the run", run, run_vocab, KILN_JUDGE_ONLY(trusted_train(run, run_vocab))},
  };
  for (const Case& c : cases) {
    if (!expect_training(__FILE__, __LINE__, c.what, c.corpus, c.vocab_size, c.expected, "stop_wrong", {},
                         /*count_only=*/true))
      return;
  }
  // A vocabulary smaller than the 256 bytes cannot be.
  const std::int64_t run_small = testing::random_ints(1, 0, 256, 1403)[0];
  for (const std::int64_t vocab_size : {std::int64_t{255}, std::int64_t{0}, std::int64_t{-1}, run_small}) {
    if (!expect_vocab_size_refused(__FILE__, __LINE__, fmt::format("train_bpe(\"aaabdaaabac\", {})", vocab_size),
                                   vocab_size, [&] { return train_bpe("aaabdaaabac", vocab_size); },
                                   "vocab_size_not_checked"))
      return;
  }
  // vocab_size is an std::int64_t: 2^32 + 257 leaves room for every merge, so "aaabdaaabac" learns
  // its 3 and stops, where its low 32 bits, 257, would allow only 1.
  expect_training(__FILE__, __LINE__, "\"aaabdaaabac\"", "aaabdaaabac", 4294967553, KILN_JUDGE_ONLY(kWikipediaMerges),
                  "vocab_size_narrowed", {}, /*count_only=*/true);
}

TEST(Tokenization, BpeIncremental) {
  // The same std::invalid_argument as train_bpe below the 256 byte tokens.
  const std::int64_t run_small = testing::random_ints(1, 0, 256, 1451)[0];
  for (const std::int64_t vocab_size : {std::int64_t{255}, std::int64_t{-1}, run_small}) {
    if (!expect_vocab_size_refused(__FILE__, __LINE__,
                                   fmt::format("train_bpe_incremental(\"aaabdaaabac\", {})", vocab_size), vocab_size,
                                   [&] { return train_bpe_incremental("aaabdaaabac", vocab_size); },
                                   "incremental_vocab_size_not_checked"))
      return;
  }

  // Every case is judged against the merges of the plain trainer (tokenization_testing.h). The
  // cases come in the order of the mistakes they expose, so that a mistake is named by the first
  // case it fails: when training stops; a pair merged again after its count fell to zero; ties;
  // the pairs beside a merge not losing their count; overlapping occurrences; a position whose id
  // changed since it was listed; corpora of the run.
  struct Case {
    std::string what;
    std::string corpus;
    std::int64_t vocab_size;
    std::string failure_id;
  };
  const std::string e_acute = utf8({U'\u00e9'}), e_grave = utf8({U'\u00e8'});
  std::vector<Case> cases = {
      {"\"\" (no text)", "", 300, "incremental_merges_wrong"},
      {"\"a\" (one byte)", "a", 300, "incremental_merges_wrong"},
      {"\"ab\"", "ab", 300, "incremental_merges_wrong"},  // one pair, once: nothing to merge
      {"\"aaabdaaabac\"", "aaabdaaabac", 256, "incremental_merges_wrong"},
      {"\"aaabdaaabac\"", "aaabdaaabac", 257, "incremental_merges_wrong"},
      // After a merge the pair's count is 0: it must not be merged again.
      {"\"abab\"", "abab", 300, "incremental_zero_count_chosen"},
      {"\"aaa\"", "aaa", 300, "incremental_zero_count_chosen"},
      {"\"cdcdabab\"", "cdcdabab", 1000, "incremental_zero_count_chosen"},
      // Pairs of equal count: the smallest first, whatever order they were counted or pushed in.
      {"\"ab1ab2cd3cd4ef5ef6\"", "ab1ab2cd3cd4ef5ef6", 1000, "incremental_tie_wrong"},
      {"\"gh1gh2ef3ef4cd5cd6ab7ab8\"", "gh1gh2ef3ef4cd5cd6ab7ab8", 1000, "incremental_tie_wrong"},
      // Merging (a, b) in "x a b y" destroys (x, a) and (b, y); in "x a b a b y" the second merge's left
      // neighbour is the first merge's new token.
      {"\"xababyxababz\"", "xababyxababz", 300, "incremental_destroyed_not_decremented"},
      {"\"acacabab\"", "acacabab", 1000, "incremental_destroyed_not_decremented"},
      {"\"é é è é\"", utf8({U'\u00e9', U' ', U'\u00e9', U' ', U'\u00e8', U' ', U'\u00e9'}), 300,
       "incremental_destroyed_not_decremented"},
      // Overlapping occurrences: merging (a, a) in "aaa" uses up the one at 1.
      {"\"aaaa\"", "aaaa", 300, "incremental_overlap_wrong"},
      {"\"aaaaa\"", "aaaaa", 300, "incremental_overlap_wrong"},
      {"\"aaaaaaa\"", "aaaaaaa", 300, "incremental_overlap_wrong"},
      {"\"ababab\"", "ababab", 300, "incremental_overlap_wrong"},  // the last occurrence ends the text
      {"\"abababab\"", "abababab", 300, "incremental_overlap_wrong"},
      {"\"aaabdaaabac\"", "aaabdaaabac", 259, "incremental_overlap_wrong"},  // where no pair repeats
      {"\"aaabdaaabac\"", "aaabdaaabac", 260, "incremental_overlap_wrong"},  // and past it
      {"\"aaabdaaabac\"", "aaabdaaabac", 1000, "incremental_overlap_wrong"},
      // A listed position whose own id an earlier merge changed: (b, a) was counted at the second b of
      // "aabaabaaab...", which merging (b, 256) turned into 257, now followed by the a at 8; that is
      // no (b, a). The shortest such corpus of two letters, then one of 26 bytes.
      {"\"aabaabaaabaababa\"", "aabaabaaabaababa", 1000, "incremental_changed_id_merged"},
      {"\"abbbbabbabaababbbabbbababb\"", "abbbbabbabaababbbabbbababb", 262, "incremental_changed_id_merged"},
  };
  // Ties of the run: four pairs of letters of the run, each written twice.
  std::string tied;
  const Ids letters = testing::random_ints(8, 0, 26, 1452);
  for (int round = 0; round < 2; ++round) {
    for (int p = 0; p < 4; ++p) {
      tied += static_cast<char>('a' + letters[2 * p]);
      tied += static_cast<char>('a' + letters[2 * p + 1]);
      tied += static_cast<char>('0' + 4 * round + p);
    }
  }
  cases.push_back({shown(tied), tied, 1000, "incremental_tie_wrong"});
  // Corpora of the run: runs of one letter, non-ASCII and NUL bytes, any bytes, and a longer text,
  // each to the end of training and to a vocab_size of the run.
  const std::string alphabet = {'a', 'a', 'a', 'b', ' ', '\0', e_acute[0], e_acute[1], e_grave[1]};
  std::uint64_t stream = 1453;
  for (const std::size_t length : {7, 33, 200, 2000}) {
    const std::string corpus = random_text(length, alphabet, stream++);
    const std::int64_t run_vocab = 256 + testing::random_ints(1, 1, 40, stream++)[0];
    cases.push_back({fmt::format("{} bytes of the run", length), corpus, 1000000, "incremental_merges_wrong"});
    cases.push_back({fmt::format("{} bytes of the run", length), corpus, run_vocab, "incremental_merges_wrong"});
  }
  const std::string any = random_bytes(300, stream++);
  cases.push_back({"300 random bytes of the run", any, 1000000, "incremental_merges_wrong"});
  // vocab_size is an std::int64_t: 2^32 + 257 leaves room for every merge (its low 32 bits, 257,
  // for one).
  cases.push_back({"\"aaabdaaabac\"", "aaabdaaabac", 4294967553, "incremental_vocab_size_narrowed"});
  for (const Case& c : cases) {
    if (!expect_training(__FILE__, __LINE__, c.what, c.corpus, c.vocab_size,
                         KILN_JUDGE_ONLY(trusted_train(c.corpus, c.vocab_size)), c.failure_id, {}, false,
                         kTrainIncremental))
      return;
  }
}

TEST(Tokenization, BpeEncode) {
  struct Case {
    Pairs merges;
    std::string text;
    Ids expected;
  };
  const std::string run_corpus = random_text(200, "abc ", 1501);
  const Pairs run_merges = trusted_train(run_corpus, 256 + 20);
  const std::string run_text = random_text(31, "abc ", 1502);
  const std::vector<Case> cases = {
      // By rank, not greedily from the left: bc (rank 0) before ab (rank 1).
      {{{98, 99}, {97, 98}}, "abc", KILN_JUDGE_ONLY({97, 256})},
      {{{98, 99}, {97, 98}}, "ababc", KILN_JUDGE_ONLY({257, 97, 256})},
      // bc of rank 0 between two ab of rank 1: whichever is met last, the lowest rank goes first.
      {{{98, 99}, {97, 98}}, "abcab", KILN_JUDGE_ONLY({97, 256, 257})},
      {{{97, 97}}, "aaa", KILN_JUDGE_ONLY({256, 97})},
      {{{97, 97}}, "aaaaa", KILN_JUDGE_ONLY({256, 256, 97})},
      {kWikipediaMerges, "aaabdaaabac", KILN_JUDGE_ONLY({258, 100, 258, 97, 99})},
      {kWikipediaMerges, "aaab", KILN_JUDGE_ONLY({258})},
      {kWikipediaMerges, "abaa", KILN_JUDGE_ONLY({257, 256})},
      {kWikipediaMerges, "", {}},
      {kWikipediaMerges, "c", KILN_JUDGE_ONLY({99})},
      {run_merges, run_text, KILN_JUDGE_ONLY(trusted_encode(run_merges, run_text))},
      {run_merges, run_corpus, KILN_JUDGE_ONLY(trusted_encode(run_merges, run_corpus))},
  };
  for (const Case& c : cases) {
    const testing::Params params = {{"text", shown(c.text)}};
    const auto got = observe(fmt::format("BpeTokenizer(merges {}).encode({})", pairs_shown(c.merges, 4), shown(c.text)),
                             [&] { return BpeTokenizer(merges_of(c.merges)).encode(c.text); });
    if (!KILN_EXPECT_OK(got, "encode_wrong", params)) return;
    KILN_JUDGE {
      if (*got != c.expected) {
        KILN_FAIL("encode_wrong", params,
                  fmt::format("{} gave {}, expected {}", got.call(), list_of(*got), list_of(c.expected)));
        return;
      }
    }
  }
}

TEST(Tokenization, RoundTrip) {
  // Merges learned (by the plain implementation) from UTF-8 text, so that they cut some characters
  // apart: é is C3 A9, and the corpus makes " \xC3" the first merge, leaving A9 to the next token.
  const std::string corpus = utf8({U' ', U'\u00e9', U' ', U'\u00e8', U' ', U'\u00e9', U' ', U'\u00ea', U' ', U'\u00e9',
                                   U'\U0001F600', U'\U0001F600', U'\U0001F601', U'\u65e5', U'\u672c', U'\u65e5'});
  struct Case {
    std::string what;
    std::string text;
  };
  std::vector<Case> cases = {
      {"the empty string", ""},
      {"NUL", std::string(1, '\0')},
      {"\"a\\0b\"", std::string("a\0b", 3)},
      {"é, è and ê after spaces", utf8({U'x', U' ', U'\u00e9', U' ', U'\u00e8', U' ', U'\u00ea', U'!'})},
      {"emoji 😀😁", utf8({U'\U0001F600', U'\U0001F601'})},
      {"a family emoji joined by U+200D", utf8({U'\U0001F469', U'\u200d', U'\U0001F469', U'\u200d', U'\U0001F467'})},
      {"e and a combining acute accent", utf8({U'e', U'\u0301', U' ', U'e', U'\u0301'})},
      {"日本語", utf8({U'\u65e5', U'\u672c', U'\u8a9e'})},
      {"invalid UTF-8: FF FE", "\xff\xfe"},
      {"invalid UTF-8: a character cut short (C3 at the end)", "caf\xc3"},
      {"invalid UTF-8: a surrogate (ED A0 80)", "\xed\xa0\x80"},
  };
  std::uint64_t stream = 1601;
  for (const std::size_t length : {1, 3, 7, 31, 33, 200}) {
    cases.push_back({fmt::format("{} of the run", testing::counted(length, "random byte")), random_bytes(length, stream++)});
  }
  const Pairs utf8_merges = trusted_train(corpus, 256 + 24);
  for (const Case& c : cases) {
    const testing::Params params = {{"text", c.what}};
    const auto got = observe(fmt::format("decode(encode({})) with merges trained on UTF-8 text", shown(c.text)), [&] {
      const BpeTokenizer tokenizer(merges_of(utf8_merges));
      return bytes_of(tokenizer.decode(tokenizer.encode(c.text)));
    });
    if (!KILN_EXPECT_OK(got, "round_trip_wrong", params)) return;
    KILN_JUDGE {
      if (*got != bytes_of(c.text)) {
        KILN_FAIL("round_trip_wrong", params,
                  fmt::format("{} gave {}, expected {}", got.call(), shown(from_bytes(*got)), shown(c.text)));
        return;
      }
    }
  }
  // A tokenizer trained on 300 random bytes of the run, then 33 others through it; and decode of
  // hand-picked ids: 258 is "aaab", 99 is "c".
  const std::string random_corpus = random_bytes(300, stream++);
  const std::string random_text = random_bytes(33, stream++);
  const Pairs random_merges = trusted_train(random_corpus, 1000);
  const auto random = observe("decode(encode(33 random bytes)) with merges trained on 300 random bytes", [&] {
    const BpeTokenizer tokenizer(merges_of(random_merges));
    return bytes_of(tokenizer.decode(tokenizer.encode(random_text)));
  });
  if (!KILN_EXPECT_OK(random, "round_trip_wrong", {{"text", "33 random bytes of the run"}})) return;
  KILN_JUDGE {
    if (*random != bytes_of(random_text)) {
      KILN_FAIL("round_trip_wrong", {{"text", "33 random bytes of the run"}},
                fmt::format("{} gave {}, expected {}", random.call(), shown(from_bytes(*random)), shown(random_text)));
      return;
    }
  }
  const auto ids = observe("BpeTokenizer(Wikipedia's merges).decode({258, 100, 258, 97, 99})", [] {
    return bytes_of(BpeTokenizer(merges_of(kWikipediaMerges)).decode({258, 100, 258, 97, 99}));
  });
  if (!KILN_EXPECT_OK(ids, "round_trip_wrong", {{"text", "\"aaabdaaabac\""}})) return;
  KILN_JUDGE {
    if (*ids != bytes_of("aaabdaaabac")) {
      KILN_FAIL("round_trip_wrong", {{"text", "\"aaabdaaabac\""}},
                fmt::format("{} gave {}, expected \"aaabdaaabac\"", ids.call(), shown(from_bytes(*ids))));
      return;
    }
  }

  // Ids outside [0, vocab_size()) of a tokenizer of 3 merges and 2 specials (vocab_size 261).
  const std::int64_t run_id = 261 + testing::random_ints(1, 1000, stream++)[0];
  for (const Ids& bad : {Ids{261}, Ids{97, -1}, Ids{97, 258, 300}, Ids{run_id}}) {
    const auto got = observe(fmt::format("decode({}) with 3 merges and 2 special tokens", list_of(bad)), [&] {
      BpeTokenizer tokenizer(merges_of(kWikipediaMerges));
      tokenizer.add_special("<|endoftext|>");
      tokenizer.add_special("<|pad|>");
      return bytes_of(tokenizer.decode(bad));
    });
    KILN_JUDGE {
      const testing::Params params = {{"id", std::to_string(bad.back())}, {"size", "261"}};
      if (!expect_error(__FILE__, __LINE__, got, "kiln::IndexError", {std::to_string(bad.back())}, {{"", 261}},
                        "decode_bad_id_not_reported", params))
        return;
    }
  }
  // An id is an std::int64_t: 2^32 + 97 is far outside [0, 261) (in 32 bits it would be 97, "a").
  const auto wide = observe("decode([4294967393]) with 3 merges and 2 special tokens", [&] {
    BpeTokenizer tokenizer(merges_of(kWikipediaMerges));
    tokenizer.add_special("<|endoftext|>");
    tokenizer.add_special("<|pad|>");
    return bytes_of(tokenizer.decode({4294967393}));
  });
  KILN_JUDGE {
    expect_error(__FILE__, __LINE__, wide, "kiln::IndexError", {"4294967393"}, {{"", 261}}, "decode_id_narrowed", {});
  }
}

TEST(Tokenization, SpecialTokens) {
  // Wikipedia's merges (ids up to 258), then three specials: 259, 260, 261. "<|im_start|>" is a
  // prefix of "<|im_start|>assistant": where both start, the longer is taken.
  const std::vector<std::string> specials = {"<|endoftext|>", "<|im_start|>", "<|im_start|>assistant"};
  auto make = [&specials] {
    BpeTokenizer tokenizer(merges_of(kWikipediaMerges));
    Ids ids;
    for (const std::string& s : specials) ids.push_back(tokenizer.add_special(s));
    return std::pair(tokenizer, ids);
  };
  const auto registered = observe("the ids add_special gives three specials after 3 merges", [&] { return make().second; });
  if (!KILN_EXPECT_OK(registered, "special_not_recognised", {{"text", "(registering them)"}})) return;
  KILN_JUDGE {
    if (*registered != Ids{259, 260, 261}) {
      KILN_FAIL("special_not_recognised", {{"text", "(registering them)"}},
                fmt::format("{} are {}, expected [259, 260, 261]", registered.call(), list_of(*registered)));
      return;
    }
  }

  // Texts of the run: the letters a, b, c and the specials at places of the run.
  std::string run;
  const Ids pieces = testing::random_ints(24, 7, 1701);
  for (const std::int64_t p : pieces) run += p < 4 ? std::string(1, "aabc"[p]) : specials[static_cast<std::size_t>(p - 4)];
  struct Case {
    std::string text;
    Ids expected;
  };
  const std::vector<Case> recognised = {
      {"aaab<|endoftext|>aaab", KILN_JUDGE_ONLY({258, 259, 258})},
      {"<|endoftext|>", KILN_JUDGE_ONLY({259})},
      {"<|endoftext|><|endoftext|>", KILN_JUDGE_ONLY({259, 259})},
      {"aa<|endoftext|>ab", KILN_JUDGE_ONLY({256, 259, 257})},
      {"<|im_start|>assistant\naaab", KILN_JUDGE_ONLY({261, 10, 258})},
      {"<|im_start|>user", KILN_JUDGE_ONLY({260, 117, 115, 101, 114})},
      {"<|endoftext", KILN_JUDGE_ONLY({60, 124, 101, 110, 100, 111, 102, 116, 101, 120, 116})},  // not a special: bytes
      {run, KILN_JUDGE_ONLY(trusted_encode(kWikipediaMerges, specials, run))},
  };
  for (const Case& c : recognised) {
    const testing::Params params = {{"text", shown(c.text)}};
    const auto got = observe(fmt::format("encode({}, true)", shown(c.text)), [&] { return make().first.encode(c.text, true); });
    if (!KILN_EXPECT_OK(got, "special_not_recognised", params)) return;
    KILN_JUDGE {
      if (*got != c.expected) {
        KILN_FAIL("special_not_recognised", params,
                  fmt::format("{} gave {}, expected {}", got.call(), list_of(*got), list_of(c.expected)));
        return;
      }
    }
  }

  // The longest special wins whichever was registered first: here the longer one is.
  {
    const std::string text = "<|im_start|>assistant<|im_start|>";
    const testing::Params params = {{"text", shown(text)}};
    const auto got = observe(fmt::format("encode({}, true) with \"<|im_start|>assistant\" registered before \"<|im_start|>\"",
                                         shown(text)),
                             [&] {
                               BpeTokenizer tokenizer(merges_of(kWikipediaMerges));
                               tokenizer.add_special("<|im_start|>assistant");
                               tokenizer.add_special("<|im_start|>");
                               return tokenizer.encode(text, true);
                             });
    if (!KILN_EXPECT_OK(got, "special_not_recognised", params)) return;
    KILN_JUDGE {
      if (*got != Ids{259, 260}) {
        KILN_FAIL("special_not_recognised", params,
                  fmt::format("{} gave {}, expected [259, 260]", got.call(), list_of(*got)));
        return;
      }
    }
  }

  // Without allow_special the same texts are ordinary bytes and merges.
  for (const std::string& text : {std::string("aaab<|endoftext|>aaab"), std::string("<|im_start|>assistant"), run}) {
    const testing::Params params = {{"text", shown(text)}};
    const auto got = observe(fmt::format("encode({}) (allow_special false)", shown(text)), [&] { return make().first.encode(text); });
    if (!KILN_EXPECT_OK(got, "special_matched_when_not_allowed", params)) return;
    KILN_JUDGE {
      const Ids expected = trusted_encode(kWikipediaMerges, text);
      if (*got != expected) {
        KILN_FAIL("special_matched_when_not_allowed", params,
                  fmt::format("{} gave {}, expected {}", got.call(), list_of(*got), list_of(expected)));
        return;
      }
    }
  }

  // decode gives a special's text for its id.
  for (const Ids& ids : {Ids{258, 259, 97}, Ids{261}, Ids{260, 260}}) {
    const testing::Params params = {{"ids", list_of(ids)}};
    const auto got = observe(fmt::format("decode({}) with the three specials", list_of(ids)),
                             [&] { return bytes_of(make().first.decode(ids)); });
    if (!KILN_EXPECT_OK(got, "special_decode_wrong", params)) return;
    KILN_JUDGE {
      std::string expected;
      for (const std::int64_t id : ids) expected += id < 256 ? std::string(1, static_cast<char>(id)) : id == 258 ? "aaab" : specials[static_cast<std::size_t>(id - 259)];
      if (*got != bytes_of(expected)) {
        KILN_FAIL("special_decode_wrong", params,
                  fmt::format("{} gave {}, expected {}", got.call(), shown(from_bytes(*got)), shown(expected)));
        return;
      }
    }
  }
}

}  // namespace kiln
