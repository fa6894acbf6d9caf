// The character vocabulary: one id per distinct code point, in code point order.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/tokenization.h"

namespace kiln {

CharVocab::CharVocab(const std::string& text) {
  characters_ = utf8_decode(text);
  std::sort(characters_.begin(), characters_.end());
  characters_.erase(std::unique(characters_.begin(), characters_.end()), characters_.end());
  for (std::size_t id = 0; id < characters_.size(); ++id) ids_[characters_[id]] = static_cast<std::int64_t>(id);
}

TokenIds CharVocab::encode(const std::string& text) const {
  const std::vector<char32_t> characters = utf8_decode(text);
  TokenIds ids;
  ids.reserve(characters.size());
  for (std::size_t position = 0; position < characters.size(); ++position) {
    const auto found = ids_.find(characters[position]);
    if (found == ids_.end()) {
      throw TokenizerError("unknown character " + code_point_name(characters[position]) + " at position " +
                           std::to_string(position));
    }
    ids.push_back(found->second);
  }
  return ids;
}

std::string CharVocab::decode(const TokenIds& ids) const {
  std::string text;
  for (const std::int64_t id : ids) {
    if (id < 0 || id >= size()) {
      throw IndexError("CharVocab::decode: id " + std::to_string(id) + " is not in the vocabulary of " +
                       std::to_string(size()) + " characters");
    }
    text += utf8_encode(characters_[static_cast<std::size_t>(id)]);
  }
  return text;
}

}  // namespace kiln
