// Byte-pair encoding: counting and merging pairs, learning the merges, encoding and decoding.
//
// kiln/tokenization.h states the rules; the ones that decide the numbers are: bytes are ids
// 0 .. 255 read as unsigned char; merge r makes id 256 + r; the corpus is one sequence; the most
// frequent pair is merged next, ties going to the smallest (first, second); encode merges by rank.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tokenization.h"

namespace kiln {

PairCounts count_pairs(const TokenIds& ids) {
  // One count per adjacent position i, i + 1: ++counts[{ids[i], ids[i + 1]}]. Every position
  // counts, overlapping ones too: [97, 97, 97] gives {(97, 97): 2}. Mind i + 1 < size with an
  // unsigned size: for an empty vector, size() - 1 is huge.
  throw kiln::NotImplemented();
}

TokenIds merge_pair(const TokenIds& ids, std::pair<std::int64_t, std::int64_t> pair, std::int64_t new_id) {
  // Walk i from the left. Where ids[i], ids[i + 1] is the pair, emit new_id and step past BOTH;
  // otherwise emit ids[i] and step one. [97, 97, 97] with (97, 97) gives [256, 97].
  throw kiln::NotImplemented();
}

std::vector<Merge> train_bpe(const std::string& corpus, std::int64_t vocab_size) {
  // vocab_size below 256: throw std::invalid_argument naming it. It is only a bound, maybe far
  // past what the corpus allows: reserve and size nothing by it.
  // ids = the bytes of corpus as unsigned values (static_cast<unsigned char>(c): a plain char is
  // signed here, and the byte 0xC3 would become -61). Then, while 256 + merges < vocab_size:
  //   count the pairs; the best is the largest count, the smallest pair among equal counts (a
  //   PairCounts map runs from the smallest pair up: replace the best only on a LARGER count);
  //   stop when no pair occurs twice; otherwise new id = 256 + merges.size(), merge the pair in
  //   ids, and append {first, second} to the merges.
  throw kiln::NotImplemented();
}

std::vector<Merge> train_bpe_incremental(const std::string& corpus, std::int64_t vocab_size) {
  // The merges of train_bpe, without recounting every pair for every merge. vocab_size below 256:
  // throw std::invalid_argument naming it, as train_bpe does (only a bound: reserve and size
  // nothing by it). Then keep, from merge to merge:
  //   * the sequence as a linked list over the byte positions (next and previous position, and
  //     which positions a merge removed), so that a merge changes two links, not the whole vector;
  //   * the count of every pair, and the positions where each pair was counted;
  //   * the pairs ordered by count, largest first and among equal counts the smallest pair (a
  //     std::priority_queue of (count, pair) entries, or a std::set): the tie rule of train_bpe.
  // Each round: take the best pair (skip a queue entry whose count is no longer the pair's: it
  // was pushed before the count changed); stop when its count is below 2. Visit its positions
  // from left to right, skipping one an earlier merge of this round used up ("aaa": merging at 0
  // takes the a at 1) and one that no longer holds the pair: its own id, not only its right
  // neighbour's, may have changed since it was listed (a later merge made it a new token whose
  // neighbour happens to be the pair's second id). At each occurrence (left, first, second,
  // right) the pairs (left, first) and (second, right) lose one, and (left, new_id) and
  // (new_id, right) gain one. After the round the pair itself is gone (count 0); push the new
  // counts of the pairs that changed.
  throw kiln::NotImplemented();
}

std::vector<Merge> train_bpe_pretokenized(const std::string& corpus, std::int64_t vocab_size,
                                          const std::vector<std::string>& specials, TieRule tie) {
  // vocab_size below 256 + specials.size(): throw std::invalid_argument naming it (only a bound,
  // as in train_bpe: reserve and size nothing by it). An empty
  // special: throw std::invalid_argument too, before any work (the empty text occurs at every
  // position, so cutting the corpus at it would never move on; add_special refuses it as well).
  // The words: cut the corpus at the specials (the longest where several start) and leave them
  // out, gpt2_pretokenize each stretch between them, and count how often each pre-token occurs
  // (a std::map<std::string, std::int64_t>); each distinct pre-token becomes a sequence of byte
  // ids. Then, while 256 + merges.size() + specials.size() < vocab_size:
  //   count the pairs within each word, each count times how often the word occurs; the best is
  //   the largest count, and among equal counts: smallest_ids, the smallest pair (train_bpe's
  //   rule); greatest_bytes, the greatest (bytes of first, bytes of second) compared as
  //   std::strings (keep the bytes of every token, one push_back of bytes[first] + bytes[second]
  //   per merge); stop when the best count is below 2; merge the pair in every word with
  //   merge_pair.
  throw kiln::NotImplemented();
}

TokenIds BpeTokenizer::encode(const std::string& text, bool allow_special) const {
  // Ordinary text: ids = its bytes (unsigned). Then repeat: among all adjacent pairs find the one
  // with the lowest rank (rank_of(a, b), -1 for no merge); none left: done; else
  // ids = merge_pair(ids, that pair, 256 + rank).
  // With allow_special (and some specials_): scan the text from the left; where specials start,
  // take the longest, encode the ordinary text before it as above, append its id
  // 256 + merges_.size() + its index in specials_, and carry on after it. Encode what is left at
  // the end. Without allow_special the whole text is ordinary.
  throw kiln::NotImplemented();
}

TokenIds BpeTokenizer::encode_pretokenized(const std::string& text, bool allow_special) const {
  // As encode: with allow_special, every special (the longest where several start) becomes its
  // id. Each stretch of ordinary text: gpt2_pretokenize it and append encode(piece) for every
  // piece, so that merges stay within pieces.
  throw kiln::NotImplemented();
}

std::string BpeTokenizer::decode(const TokenIds& ids) const {
  // For every id: outside [0, vocab_size()) throw kiln::IndexError naming the id and
  // vocab_size(); below 256 + merges_.size() append token_bytes(id); otherwise append the special
  // token's text, specials_[id - (256 + merges_.size())].
  throw kiln::NotImplemented();
}

}  // namespace kiln
