// Byte-pair encoding: counting and merging pairs, learning the merges, encoding and decoding.
#include <cstdint>
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
