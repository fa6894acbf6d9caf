// The character vocabulary: one id per distinct code point of a text, in code point order.
//
// Work on code points, never on bytes: "é" is two bytes in UTF-8 (0xC3 0xA9) but one character.
// The given utf8_decode turns a std::string into its code points and utf8_encode turns one code
// point back into bytes. The members are characters_ (id -> code point) and ids_ (code point ->
// id); kiln/tokenization.h describes them.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/tokenization.h"

namespace kiln {

CharVocab::CharVocab(const std::string& text) {
  // characters_ = the distinct code points of utf8_decode(text), sorted ascending (std::sort, then
  // std::unique and erase). Then ids_[characters_[id]] = id for every id. "hello" gives
  // characters_ = {'e', 'h', 'l', 'o'}: e -> 0, h -> 1, l -> 2, o -> 3.
  throw kiln::NotImplemented();
}

TokenIds CharVocab::encode(const std::string& text) const {
  // Decode the text to code points and look each one up in ids_. A code point that is missing
  // throws TokenizerError("unknown character " + code_point_name(c) + " at position " + position),
  // where position counts CHARACTERS from 0 (the index into the decoded code points), not bytes.
  throw kiln::NotImplemented();
}

std::string CharVocab::decode(const TokenIds& ids) const {
  // Append utf8_encode(characters_[id]) for every id. Check each id first: outside [0, size())
  // throw kiln::IndexError with the id and size() in the message.
  throw kiln::NotImplemented();
}

}  // namespace kiln
