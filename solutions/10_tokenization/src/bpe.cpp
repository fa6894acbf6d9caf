// Byte-pair encoding: counting and merging pairs, learning the merges, encoding and decoding.
#include <cstdint>
#include <map>
#include <queue>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tokenization.h"

namespace kiln {
namespace {

// The ids of the bytes of `text`, each byte read as unsigned (0 .. 255).
TokenIds byte_ids(const std::string& text) {
  TokenIds ids;
  ids.reserve(text.size());
  for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

// The text cut at the special tokens, left to right: (stretch, -1) for ordinary text, (special,
// its index) for a special; where several specials start, the longest.
std::vector<std::pair<std::string, std::int64_t>> split_at_specials(const std::string& text,
                                                                    const std::vector<std::string>& specials) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  std::size_t start = 0;  // where the ordinary text not yet cut off begins
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t found = specials.size();
    for (std::size_t s = 0; s < specials.size(); ++s) {
      if (text.compare(at, specials[s].size(), specials[s]) == 0 &&
          (found == specials.size() || specials[s].size() > specials[found].size())) {
        found = s;
      }
    }
    if (found == specials.size()) {
      ++at;
      continue;
    }
    if (at > start) out.emplace_back(text.substr(start, at - start), -1);
    out.emplace_back(specials[found], static_cast<std::int64_t>(found));
    at += specials[found].size();
    start = at;
  }
  if (text.size() > start) out.emplace_back(text.substr(start), -1);
  return out;
}

}  // namespace

PairCounts count_pairs(const TokenIds& ids) {
  PairCounts counts;
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) ++counts[{ids[i], ids[i + 1]}];
  return counts;
}

TokenIds merge_pair(const TokenIds& ids, std::pair<std::int64_t, std::int64_t> pair, std::int64_t new_id) {
  TokenIds merged;
  merged.reserve(ids.size());
  std::size_t i = 0;
  while (i < ids.size()) {
    if (i + 1 < ids.size() && ids[i] == pair.first && ids[i + 1] == pair.second) {
      merged.push_back(new_id);
      i += 2;
    } else {
      merged.push_back(ids[i]);
      i += 1;
    }
  }
  return merged;
}

std::vector<Merge> train_bpe(const std::string& corpus, std::int64_t vocab_size) {
  if (vocab_size < 256) {
    throw std::invalid_argument("train_bpe: vocab_size " + std::to_string(vocab_size) +
                                " is below the 256 byte tokens");
  }
  TokenIds ids = byte_ids(corpus);
  std::vector<Merge> merges;
  while (256 + static_cast<std::int64_t>(merges.size()) < vocab_size) {
    // The map runs through the pairs in ascending order, so a strictly greater count is needed
    // to replace the best: among equal counts the smallest pair stays.
    std::pair<std::int64_t, std::int64_t> best{};
    std::int64_t best_count = 0;
    for (const auto& [pair, count] : count_pairs(ids)) {
      if (count > best_count) {
        best = pair;
        best_count = count;
      }
    }
    if (best_count < 2) break;
    const std::int64_t new_id = 256 + static_cast<std::int64_t>(merges.size());
    ids = merge_pair(ids, best, new_id);
    merges.push_back({best.first, best.second});
  }
  return merges;
}

std::vector<Merge> train_bpe_incremental(const std::string& corpus, std::int64_t vocab_size) {
  if (vocab_size < 256) {
    throw std::invalid_argument("train_bpe_incremental: vocab_size " + std::to_string(vocab_size) +
                                " is below the 256 byte tokens");
  }
  using Pair = std::pair<std::int64_t, std::int64_t>;
  constexpr std::int64_t kNone = -1;

  // The sequence as a linked list over the byte positions: position p holds ids[p] until it is
  // merged into the position on its left; next[p] and previous[p] link the positions still in the
  // sequence (kNone at the ends). A pair is named by the position of its first id.
  TokenIds ids = byte_ids(corpus);
  const auto length = static_cast<std::int64_t>(ids.size());
  std::vector<std::int64_t> next(ids.size()), previous(ids.size());
  std::vector<bool> removed(ids.size(), false);
  for (std::int64_t p = 0; p < length; ++p) {
    next[p] = p + 1 < length ? p + 1 : kNone;
    previous[p] = p - 1;
  }

  // The count of every pair, and where it may occur: the positions where it was counted. A
  // position stays listed after a merge changed it, so it is checked before it is used.
  std::map<Pair, std::int64_t> counts;
  std::map<Pair, std::vector<std::int64_t>> positions;
  for (std::int64_t p = 0; p + 1 < length; ++p) {
    ++counts[{ids[p], ids[p + 1]}];
    positions[{ids[p], ids[p + 1]}].push_back(p);
  }

  // The pairs by count, the largest on top and among equal counts the smallest pair. An entry is
  // pushed whenever a count changes, so an entry whose count is no longer the pair's is stale.
  struct Entry {
    std::int64_t count;
    Pair pair;
  };
  const auto below = [](const Entry& a, const Entry& b) {
    return a.count != b.count ? a.count < b.count : a.pair > b.pair;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(below)> queue(below);
  for (const auto& [pair, count] : counts) queue.push({count, pair});
  const auto count_of = [&counts](const Pair& pair) {
    const auto found = counts.find(pair);
    return found == counts.end() ? std::int64_t{0} : found->second;
  };

  std::vector<Merge> merges;
  for (std::int64_t new_id = 256; new_id < vocab_size; ++new_id) {
    while (!queue.empty() && queue.top().count != count_of(queue.top().pair)) queue.pop();
    if (queue.empty() || queue.top().count < 2) break;
    const Pair best = queue.top().pair;

    // Only the pairs around each occurrence change: (left, first) and (second, right) are
    // destroyed, (left, new_id) and (new_id, right) are made.
    std::set<Pair> changed;
    const auto add = [&](const Pair& pair, std::int64_t delta, std::int64_t at) {
      counts[pair] += delta;
      if (delta > 0) positions[pair].push_back(at);
      changed.insert(pair);
    };
    // The positions, left to right as merge_pair replaces: a pair's positions are all listed in
    // one pass (the first count, or the merge that made its new id), each pass going left to right.
    const std::vector<std::int64_t> where = std::move(positions[best]);
    for (const std::int64_t p : where) {
      // An earlier occurrence of this round may have used this one up: in "aaa", merging (a, a)
      // at 0 takes the a at 1, and (a, a) at 1 is gone.
      if (removed[p] || ids[p] != best.first) continue;
      const std::int64_t q = next[p];
      if (q == kNone || ids[q] != best.second) continue;
      const std::int64_t left = previous[p], right = next[q];
      if (left != kNone) {
        add({ids[left], ids[p]}, -1, left);
        add({ids[left], new_id}, +1, left);
      }
      if (right != kNone) {
        add({ids[q], ids[right]}, -1, q);
        add({new_id, ids[right]}, +1, p);
      }
      ids[p] = new_id;
      removed[q] = true;
      next[p] = right;
      if (right != kNone) previous[right] = p;
    }
    // Every occurrence was merged: the pair is gone from the sequence.
    counts.erase(best);
    for (const Pair& pair : changed) queue.push({count_of(pair), pair});
    merges.push_back({best.first, best.second});
  }
  return merges;
}

std::vector<Merge> train_bpe_pretokenized(const std::string& corpus, std::int64_t vocab_size,
                                          const std::vector<std::string>& specials, TieRule tie) {
  const auto special_count = static_cast<std::int64_t>(specials.size());
  if (vocab_size < 256 + special_count) {
    throw std::invalid_argument("train_bpe_pretokenized: vocab_size " + std::to_string(vocab_size) +
                                " is below the 256 byte tokens and the " + std::to_string(special_count) + " specials");
  }
  for (std::size_t s = 0; s < specials.size(); ++s) {
    // The empty text occurs at every position: cutting the corpus at it would never move on.
    if (specials[s].empty()) {
      throw std::invalid_argument("train_bpe_pretokenized: special token " + std::to_string(s) +
                                  " is empty (as add_special, it needs at least one byte)");
    }
  }
  // Every distinct pre-token once, with how often it occurs: the pairs of a pre-token that occurs
  // n times count n times. Specials cut the corpus and are left out.
  std::map<std::string, std::int64_t> frequency;
  for (const auto& [stretch, special] : split_at_specials(corpus, specials)) {
    if (special >= 0) continue;
    for (const std::string& piece : gpt2_pretokenize(stretch)) ++frequency[piece];
  }
  std::vector<TokenIds> words;
  std::vector<std::int64_t> occurrences;
  for (const auto& [piece, count] : frequency) {
    words.push_back(byte_ids(piece));
    occurrences.push_back(count);
  }
  // The bytes of every token, which the greatest_bytes rule compares.
  std::vector<std::string> token_bytes;
  for (int b = 0; b < 256; ++b) token_bytes.emplace_back(1, static_cast<char>(b));
  // Whether `candidate` beats `best` of the same count. The map runs from the smallest pair up,
  // so for smallest_ids the first of equal counts stays.
  const auto wins_tie = [&](const std::pair<std::int64_t, std::int64_t>& candidate,
                            const std::pair<std::int64_t, std::int64_t>& best) {
    if (tie == TieRule::smallest_ids) return false;
    const auto bytes = [&](const std::pair<std::int64_t, std::int64_t>& pair) {
      return std::pair(token_bytes[static_cast<std::size_t>(pair.first)],
                       token_bytes[static_cast<std::size_t>(pair.second)]);
    };
    return bytes(candidate) > bytes(best);
  };

  std::vector<Merge> merges;
  for (std::int64_t new_id = 256; new_id + special_count < vocab_size; ++new_id) {
    PairCounts counts;
    for (std::size_t w = 0; w < words.size(); ++w) {
      for (std::size_t i = 0; i + 1 < words[w].size(); ++i) counts[{words[w][i], words[w][i + 1]}] += occurrences[w];
    }
    std::pair<std::int64_t, std::int64_t> best{};
    std::int64_t best_count = 0;
    for (const auto& [pair, count] : counts) {
      if (count > best_count || (count == best_count && wins_tie(pair, best))) {
        best = pair;
        best_count = count;
      }
    }
    if (best_count <= 1) break;  // a pair that occurs once saves nothing
    for (TokenIds& word : words) word = merge_pair(word, best, new_id);
    merges.push_back({best.first, best.second});
    token_bytes.push_back(token_bytes[static_cast<std::size_t>(best.first)] + token_bytes[static_cast<std::size_t>(best.second)]);
  }
  return merges;
}

TokenIds BpeTokenizer::encode(const std::string& text, bool allow_special) const {
  // Encodes one stretch of ordinary text: bytes, then the merges by rank.
  auto encode_ordinary = [this](const std::string& piece, TokenIds& out) {
    TokenIds ids = byte_ids(piece);
    while (ids.size() >= 2) {
      std::int64_t best_rank = -1;
      std::pair<std::int64_t, std::int64_t> best{};
      for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
        const std::int64_t rank = rank_of(ids[i], ids[i + 1]);
        if (rank >= 0 && (best_rank < 0 || rank < best_rank)) {
          best_rank = rank;
          best = {ids[i], ids[i + 1]};
        }
      }
      if (best_rank < 0) break;
      ids = merge_pair(ids, best, 256 + best_rank);
    }
    out.insert(out.end(), ids.begin(), ids.end());
  };

  TokenIds out;
  if (!allow_special || specials_.empty()) {
    encode_ordinary(text, out);
    return out;
  }
  const std::int64_t first_special = 256 + static_cast<std::int64_t>(merges_.size());
  std::size_t start = 0;  // where the ordinary text not yet encoded begins
  std::size_t at = 0;
  while (at < text.size()) {
    std::int64_t found = -1;  // the longest special that starts at `at`
    for (std::size_t s = 0; s < specials_.size(); ++s) {
      if (text.compare(at, specials_[s].size(), specials_[s]) == 0 &&
          (found < 0 || specials_[s].size() > specials_[static_cast<std::size_t>(found)].size())) {
        found = static_cast<std::int64_t>(s);
      }
    }
    if (found < 0) {
      ++at;
      continue;
    }
    encode_ordinary(text.substr(start, at - start), out);
    out.push_back(first_special + found);
    at += specials_[static_cast<std::size_t>(found)].size();
    start = at;
  }
  encode_ordinary(text.substr(start), out);
  return out;
}

TokenIds BpeTokenizer::encode_pretokenized(const std::string& text, bool allow_special) const {
  const std::int64_t first_special = 256 + static_cast<std::int64_t>(merges_.size());
  TokenIds out;
  for (const auto& [stretch, special] : split_at_specials(text, allow_special ? specials_ : std::vector<std::string>{})) {
    if (special >= 0) {
      out.push_back(first_special + special);
      continue;
    }
    for (const std::string& piece : gpt2_pretokenize(stretch)) {
      const TokenIds ids = encode(piece);
      out.insert(out.end(), ids.begin(), ids.end());
    }
  }
  return out;
}

std::string BpeTokenizer::decode(const TokenIds& ids) const {
  const std::int64_t first_special = 256 + static_cast<std::int64_t>(merges_.size());
  std::string text;
  for (const std::int64_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw IndexError("BpeTokenizer::decode: id " + std::to_string(id) + " is not in the vocabulary of " +
                       std::to_string(vocab_size()) + " tokens");
    }
    if (id < first_special) {
      text += token_bytes(id);
    } else {
      text += specials_[static_cast<std::size_t>(id - first_special)];
    }
  }
  return text;
}

}  // namespace kiln
