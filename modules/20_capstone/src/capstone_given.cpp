// Given: writing a KCAP file (the format is described in kiln/capstone.h) and embedding one in a
// source file.
#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "kiln/capstone.h"

namespace kiln::capstone {

namespace {

template <class T>
void put(std::vector<std::uint8_t>& out, T value) {
  // Little-endian whatever the machine: byte k of the value's bits goes out k-th.
  std::uint8_t raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  std::uint64_t bits = 0;
  for (std::size_t k = 0; k < sizeof(T); ++k) bits |= std::uint64_t{raw[k]} << (8 * k);
  if constexpr (std::endian::native == std::endian::big) {
    std::uint64_t swapped = 0;
    for (std::size_t k = 0; k < sizeof(T); ++k) swapped |= ((bits >> (8 * (sizeof(T) - 1 - k))) & 0xff) << (8 * k);
    bits = swapped;
  }
  for (std::size_t k = 0; k < sizeof(T); ++k) out.push_back(static_cast<std::uint8_t>(bits >> (8 * k)));
}

template <class T>
void put_all(std::vector<std::uint8_t>& out, const std::vector<T>& values) {
  for (const T v : values) put(out, v);
}

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::vector<std::uint8_t> save_model(const Model& model) {
  std::vector<std::uint8_t> out = {'K', 'C', 'A', 'P'};
  put<std::uint32_t>(out, 1);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(model.layers.size()));
  for (const Layer& layer : model.layers) {
    put<std::uint32_t>(out, static_cast<std::uint32_t>(layer.kind));
    if (layer.kind == LayerKind::relu) continue;
    put<std::uint32_t>(out, static_cast<std::uint32_t>(layer.in));
    put<std::uint32_t>(out, static_cast<std::uint32_t>(layer.out));
    switch (layer.kind) {
      case LayerKind::dense:
        put_all(out, layer.weight);
        break;
      case LayerKind::dense_int8:
        put_all(out, layer.scale);
        put_all(out, layer.code);
        break;
      case LayerKind::sparse_int8:
        put<std::uint32_t>(out, static_cast<std::uint32_t>(layer.code.size()));
        put_all(out, layer.scale);
        put_all(out, layer.row_start);
        put_all(out, layer.column);
        put_all(out, layer.code);
        break;
      case LayerKind::relu: break;
    }
    put_all(out, layer.bias);
  }
  return out;
}

std::string model_source(std::span<const std::uint8_t> bytes) {
  std::string text;
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t group = std::uint32_t{bytes[i]} << 16;
    if (n > 1) group |= std::uint32_t{bytes[i + 1]} << 8;
    if (n > 2) group |= bytes[i + 2];
    text += kAlphabet[(group >> 18) & 63];
    text += kAlphabet[(group >> 12) & 63];
    text += n > 1 ? kAlphabet[(group >> 6) & 63] : '=';
    text += n > 2 ? kAlphabet[group & 63] : '=';
  }
  std::string out =
      "// Your capstone model, " + std::to_string(bytes.size()) +
      " bytes of KCAP (kiln/capstone.h) in base64. Written by `grader milestone capstone_fashion`;\n"
      "// run it again rather than editing this file.\n"
      "#include \"kiln/capstone.h\"\n\n"
      "namespace kiln::capstone {\n\n"
      "namespace {\n"
      "constexpr char kModel[] =\n";
  constexpr std::size_t kLine = 96;
  for (std::size_t i = 0; i < text.size(); i += kLine) out += "    \"" + text.substr(i, kLine) + "\"\n";
  if (text.empty()) out += "    \"\"\n";
  out +=
      "    ;\n"
      "}  // namespace\n\n"
      "std::span<const std::uint8_t> capstone_model_bytes() {\n"
      "  static const std::vector<std::uint8_t> bytes = decode_base64(kModel);\n"
      "  return bytes;\n"
      "}\n\n"
      "}  // namespace kiln::capstone\n";
  return out;
}

std::vector<std::uint8_t> decode_base64(std::string_view text) {
  if (text.size() % 4 != 0)
    throw FormatError("base64 text of " + std::to_string(text.size()) + " characters; expected a multiple of 4");
  std::vector<std::uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    std::uint32_t group = 0;
    int padding = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const char* at = c == '=' ? nullptr : std::strchr(kAlphabet, c);
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++padding;
      } else if (at == nullptr || c == '\0' || padding > 0) {
        throw FormatError("base64 character " + std::to_string(i + k) + " is not one of A-Z, a-z, 0-9, + and /");
      }
      group = (group << 6) | static_cast<std::uint32_t>(at ? at - kAlphabet : 0);
    }
    out.push_back(static_cast<std::uint8_t>(group >> 16));
    if (padding < 2) out.push_back(static_cast<std::uint8_t>(group >> 8));
    if (padding < 1) out.push_back(static_cast<std::uint8_t>(group));
  }
  return out;
}

}  // namespace kiln::capstone
