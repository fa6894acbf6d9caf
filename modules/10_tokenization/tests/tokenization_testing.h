// Trusted helpers shared by module 10's checks: UTF-8 written out again, byte-pair encoding done
// the plainest way (recount every pair for every merge; encode by applying the merges one after
// another in rank order), a scratch folder, and the pieces of the failure reports. None of them
// calls the module's code but the given gpt2_pretokenize (PCRE2), which no student file holds.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/testing.h"
#include "kiln/trusted.h"
#include "kiln/tokenization.h"

namespace kiln::tokenization_testing {

using testing::ScratchDir;

namespace fs = std::filesystem;
using Ids = std::vector<std::int64_t>;
using Pair = std::pair<std::int64_t, std::int64_t>;
using Pairs = std::vector<Pair>;

// ---------------------------------------------------------------------------------------------
// UTF-8, by the table of RFC 3629

inline std::string utf8(const std::vector<char32_t>& code_points) {
  std::string out;
  for (const char32_t c : code_points) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
    } else if (c < 0x10000) {
      out += {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
              static_cast<char>(0x80 | (c & 0x3F))};
    } else {
      out += {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3F)),
              static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
    }
  }
  return out;
}

// The code points of valid UTF-8 text (the tests only decode text they built themselves).
inline std::vector<char32_t> code_points(const std::string& text) {
  std::vector<char32_t> out;
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int extra = lead < 0x80 ? 0 : lead < 0xE0 ? 1 : lead < 0xF0 ? 2 : 3;
    char32_t value = extra == 0 ? lead : extra == 1 ? (lead & 0x1F) : extra == 2 ? (lead & 0x0F) : (lead & 0x07);
    for (int k = 1; k <= extra; ++k) value = (value << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    out.push_back(value);
    i += 1 + static_cast<std::size_t>(extra);
  }
  return out;
}

// The bytes of a string as unsigned numbers, so that any byte string crosses as plain data.
inline Ids bytes_of(const std::string& text) {
  Ids out;
  for (const char c : text) out.push_back(static_cast<unsigned char>(c));
  return out;
}

inline std::string from_bytes(const Ids& bytes) {
  std::string out;
  for (const std::int64_t b : bytes) out += static_cast<char>(b);
  return out;
}

// count bytes of the run, each in [0, 256), or drawn from `alphabet`.
inline std::string random_bytes(std::size_t count, std::uint64_t stream) {
  std::string out;
  for (const std::int64_t v : testing::random_ints(count, 256, stream)) out += static_cast<char>(v);
  return out;
}
inline std::string random_text(std::size_t count, const std::string& alphabet, std::uint64_t stream) {
  std::string out;
  for (const std::int64_t v : testing::random_ints(count, static_cast<std::int64_t>(alphabet.size()), stream)) {
    out += alphabet[static_cast<std::size_t>(v)];
  }
  return out;
}

// Whether `text` is valid UTF-8 with no control characters, so that a report can show it as is.
inline bool printable_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    int extra = 0;
    if (lead < 0x80) {
      if (lead < 0x20 || lead == 0x7F) return false;
    } else if ((lead & 0xE0) == 0xC0 && lead >= 0xC2) {
      extra = 1;
    } else if ((lead & 0xF0) == 0xE0) {
      extra = 2;
    } else if ((lead & 0xF8) == 0xF0 && lead <= 0xF4) {
      extra = 3;
    } else {
      return false;
    }
    if (i + static_cast<std::size_t>(extra) >= text.size() && extra > 0) return false;
    for (int k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    }
    if (extra == 2) {
      const char32_t value = code_points(text.substr(i, 3))[0];
      if (value < 0x800 || (value >= 0xD800 && value <= 0xDFFF)) return false;
    }
    i += 1 + static_cast<std::size_t>(extra);
  }
  return true;
}

// A string as a report shows it: quoted, as is when it is printable UTF-8, else with every byte
// outside printable ASCII as \xNN; at most `limit` bytes of it.
inline std::string shown(const std::string& text, std::size_t limit = 48) {
  const std::string part = text.substr(0, limit);
  std::string out = "\"";
  if (printable_utf8(part)) {
    for (const char c : part) out += c == '"' ? std::string("\\\"") : std::string(1, c);
  } else {
    for (const char c : part) {
      const auto b = static_cast<unsigned char>(c);
      if (b >= 0x20 && b < 0x7F && b != '"' && b != '\\') {
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += fmt::format("\\x{:02X}", b);
      }
    }
  }
  out += "\"";
  if (text.size() > limit) out += fmt::format(" (... {} bytes in all)", text.size());
  return out;
}

// "[1, 6, 2]".
inline std::string list_of(const Ids& values, std::size_t limit = 24) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size() && i < limit; ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  if (values.size() > limit) out += fmt::format(", ... ({} in all)", values.size());
  return out + "]";
}

// "[(97, 97), (97, 98)]".
inline std::string pairs_shown(const Pairs& pairs, std::size_t limit = 16) {
  std::string out = "[";
  for (std::size_t i = 0; i < pairs.size() && i < limit; ++i) {
    out += fmt::format("{}({}, {})", i ? ", " : "", pairs[i].first, pairs[i].second);
  }
  if (pairs.size() > limit) out += fmt::format(", ... ({} in all)", pairs.size());
  return out + "]";
}

// ---------------------------------------------------------------------------------------------
// Byte-pair encoding, the plainest way

inline std::map<Pair, std::int64_t> trusted_pairs(const Ids& ids) {
  std::map<Pair, std::int64_t> counts;
  for (std::size_t i = 1; i < ids.size(); ++i) counts[{ids[i - 1], ids[i]}] += 1;
  return counts;
}

inline Ids trusted_merge(const Ids& ids, const Pair& pair, std::int64_t new_id) {
  Ids out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == pair.first && ids[i + 1] == pair.second) {
      out.push_back(new_id);
      ++i;
    } else {
      out.push_back(ids[i]);
    }
  }
  return out;
}

// The merges kiln/tokenization.h's rules learn from `corpus`.
inline Pairs trusted_train(const std::string& corpus, std::int64_t vocab_size) {
  Ids ids = bytes_of(corpus);
  Pairs merges;
  while (256 + static_cast<std::int64_t>(merges.size()) < vocab_size) {
    Pair best{-1, -1};
    std::int64_t best_count = 0;
    for (const auto& [pair, count] : trusted_pairs(ids)) {
      const bool better = count > best_count || (count == best_count && pair < best);
      if (better) best = pair, best_count = count;
    }
    if (best_count < 2) break;
    ids = trusted_merge(ids, best, 256 + static_cast<std::int64_t>(merges.size()));
    merges.push_back(best);
  }
  return merges;
}

// Ordinary text: the merges applied one after another, each to the whole sequence, in rank order.
// (A merge can only create pairs that hold its own new id, which only later merges name, so this
// equals "merge the pair of lowest rank, then look again".)
inline Ids trusted_encode(const Pairs& merges, const std::string& text) {
  Ids ids = bytes_of(text);
  for (std::size_t r = 0; r < merges.size(); ++r) ids = trusted_merge(ids, merges[r], 256 + static_cast<std::int64_t>(r));
  return ids;
}

// The text cut at the specials, the longest at the leftmost place: (stretch, -1) for ordinary
// text, (special, its index) for a special.
inline std::vector<std::pair<std::string, std::int64_t>> trusted_split(const std::string& text,
                                                                       const std::vector<std::string>& specials) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  std::string pending;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t best = specials.size();
    for (std::size_t s = 0; s < specials.size(); ++s) {
      if (text.compare(at, specials[s].size(), specials[s]) == 0 &&
          (best == specials.size() || specials[s].size() > specials[best].size())) {
        best = s;
      }
    }
    if (best == specials.size()) {
      pending += text[at++];
      continue;
    }
    if (!pending.empty()) out.emplace_back(pending, -1);
    pending.clear();
    out.emplace_back(specials[best], static_cast<std::int64_t>(best));
    at += specials[best].size();
  }
  if (!pending.empty()) out.emplace_back(pending, -1);
  return out;
}

// With special tokens recognised: the longest special at the leftmost place, the text between
// encoded on its own.
inline Ids trusted_encode(const Pairs& merges, const std::vector<std::string>& specials, const std::string& text) {
  Ids out;
  for (const auto& [part, special] : trusted_split(text, specials)) {
    if (special >= 0) {
      out.push_back(256 + static_cast<std::int64_t>(merges.size()) + special);
      continue;
    }
    const Ids ids = trusted_encode(merges, part);
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

// The module's merges as plain pairs (called inside observations).
inline Pairs pairs_of(const std::vector<Merge>& merges) {
  Pairs out;
  for (const Merge& m : merges) out.emplace_back(m.first, m.second);
  return out;
}
inline std::vector<Merge> merges_of(const Pairs& pairs) {
  std::vector<Merge> out;
  for (const auto& [first, second] : pairs) out.push_back({first, second});
  return out;
}

// ---------------------------------------------------------------------------------------------
// Byte-pair encoding within GPT-2 pre-tokens, the plainest way. The pre-tokens come from the
// module's given gpt2_pretokenize (PCRE2 and GPT-2's pattern; no student code).

// The merges of train_bpe_pretokenized's rules: every pre-token of every stretch between specials
// a sequence of its own, all pairs recounted for every merge, ties by `tie`.
inline Pairs trusted_train_pretokenized(const std::string& corpus, std::int64_t vocab_size,
                                        const std::vector<std::string>& specials, TieRule tie) {
  std::vector<Ids> words;
  for (const auto& [stretch, special] : trusted_split(corpus, specials)) {
    if (special < 0) {
      for (const std::string& piece : gpt2_pretokenize(stretch)) words.push_back(bytes_of(piece));
    }
  }
  std::vector<std::string> bytes;
  for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
  Pairs merges;
  while (256 + static_cast<std::int64_t>(merges.size() + specials.size()) < vocab_size) {
    std::map<Pair, std::int64_t> counts;
    for (const Ids& word : words) {
      for (const auto& [pair, count] : trusted_pairs(word)) counts[pair] += count;
    }
    Pair best{-1, -1};
    std::int64_t best_count = 0;
    for (const auto& [pair, count] : counts) {
      bool better = count > best_count;
      if (count == best_count && tie == TieRule::smallest_ids) better = pair < best;
      if (count == best_count && tie == TieRule::greatest_bytes) {
        const auto key = [&](const Pair& p) {
          return std::pair(bytes[static_cast<std::size_t>(p.first)], bytes[static_cast<std::size_t>(p.second)]);
        };
        better = key(pair) > key(best);
      }
      if (better) best = pair, best_count = count;
    }
    if (best_count < 2) break;
    const std::int64_t new_id = 256 + static_cast<std::int64_t>(merges.size());
    for (Ids& word : words) word = trusted_merge(word, best, new_id);
    merges.push_back(best);
    bytes.push_back(bytes[static_cast<std::size_t>(best.first)] + bytes[static_cast<std::size_t>(best.second)]);
  }
  return merges;
}

// encode_pretokenized's ids: specials (when recognised) by id, every pre-token of the text between
// them encoded on its own.
inline Ids trusted_encode_pretokenized(const Pairs& merges, const std::vector<std::string>& specials,
                                       const std::string& text, bool allow_special) {
  Ids out;
  for (const auto& [stretch, special] : trusted_split(text, allow_special ? specials : std::vector<std::string>{})) {
    if (special >= 0) {
      out.push_back(256 + static_cast<std::int64_t>(merges.size()) + special);
      continue;
    }
    for (const std::string& piece : gpt2_pretokenize(stretch)) {
      const Ids ids = trusted_encode(merges, piece);
      out.insert(out.end(), ids.begin(), ids.end());
    }
  }
  return out;
}

// The Wikipedia example: "aaabdaaabac" gives Z = aa, Y = ab, X = ZY.
inline const Pairs kWikipediaMerges = {{97, 97}, {97, 98}, {256, 257}};

// ---------------------------------------------------------------------------------------------
// Files and messages


inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Whether `message` holds `label` followed by the number (not by a longer number): "line 4",
// "position 11".
inline bool names_number(const std::string& message, const std::string& label, std::int64_t number) {
  const std::string needle = label + std::to_string(number);
  for (std::size_t at = message.find(needle); at != std::string::npos; at = message.find(needle, at + 1)) {
    const std::size_t after = at + needle.size();
    const bool starts_clean = at == 0 || !std::isdigit(static_cast<unsigned char>(message[at - 1])) ||
                              !std::isdigit(static_cast<unsigned char>(needle[0]));
    if (starts_clean && (after >= message.size() || !std::isdigit(static_cast<unsigned char>(message[after])))) {
      return true;
    }
  }
  return false;
}

// Reports failure_id unless the observed call threw `kind` whose message contains every string of
// `mentions` and names every (label, number) of `numbers`. Returns whether it did.
template <class T>
bool expect_error(const char* file, int line, const testing::Observed<T>& observed, const std::string& kind,
                  const std::vector<std::string>& mentions, const std::vector<std::pair<std::string, std::int64_t>>& numbers,
                  std::string_view failure_id, const testing::Params& params) {
  std::string problem;
  if (observed.ok()) {
    problem = observed.call() + " did not throw (expected " + kind + ")";
  } else if (!observed.error().is(kind)) {
    problem = fmt::format("{} threw {} ({}), expected {}", observed.call(), observed.error().kind(),
                          observed.error().message, kind);
  } else {
    const std::string& message = observed.error().message;
    std::vector<std::string> missing;
    for (const std::string& m : mentions) {
      if (message.find(m) == std::string::npos) missing.push_back("\"" + m + "\"");
    }
    for (const auto& [label, number] : numbers) {
      if (!names_number(message, label, number)) missing.push_back("\"" + label + std::to_string(number) + "\"");
    }
    if (missing.empty()) return true;
    std::string names;
    for (std::size_t i = 0; i < missing.size(); ++i) names += (i ? ", " : "") + missing[i];
    problem = fmt::format("{}: the message should name {}, but it says: {}", observed.call(), names, message);
  }
  testing::report_failure(file, line, failure_id, params, problem);
  return false;
}

// A trainer called with a vocab_size below what it can hold (`call` names the call, `train` makes
// it): it must throw std::invalid_argument naming the size. Judged in the judge; the observed
// program only makes the call. Returns false once a failure is reported.
template <class Train>
bool expect_vocab_size_refused(const char* file, int line, const std::string& call, std::int64_t vocab_size,
                               const Train& train, std::string_view failure_id) {
  const auto got = testing::observe(call, [&] { return pairs_of(train()); });
  KILN_JUDGE {
    const testing::Params params = {{"vocab_size", std::to_string(vocab_size)}};
    return expect_error(file, line, got, "std::invalid_argument", {std::to_string(vocab_size)}, {}, failure_id,
                        params);
  }
  return true;
}

}  // namespace kiln::tokenization_testing
