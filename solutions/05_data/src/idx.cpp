// Reading IDX files: the header, the data, and the file itself, compressed or not.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/data.h"

namespace kiln {

namespace {

[[noreturn]] void format_error(const std::string& name, const std::string& what) {
  throw FormatError(name + ": " + what);
}

std::string hex_byte(int value) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[(value >> 4) & 0xf] + digits[value & 0xf];
}

// The number of data bytes `dims` promise when it is at most `limit`, else limit + 1. A damaged
// header's sizes can multiply past what 64 bits hold (four sizes of 65,536 make 2^64), so the
// product stops as soon as it passes the limit: numel(dims) would overflow.
std::size_t data_length(const Shape& dims, std::size_t limit) {
  for (const std::int64_t size : dims)
    if (size == 0) return 0;
  std::size_t length = 1;
  for (const std::int64_t size : dims) {
    const auto count = static_cast<std::size_t>(size);
    if (length > limit / count) return limit + 1;
    length *= count;
  }
  return length;
}

}  // namespace

std::uint32_t big_endian_u32(const std::vector<std::uint8_t>& bytes, std::size_t offset) {
  return static_cast<std::uint32_t>(bytes[offset]) << 24 | static_cast<std::uint32_t>(bytes[offset + 1]) << 16 |
         static_cast<std::uint32_t>(bytes[offset + 2]) << 8 | static_cast<std::uint32_t>(bytes[offset + 3]);
}

IdxHeader parse_idx_header(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  const std::size_t size = bytes.size();
  if (size < 4) {
    format_error(name, "the file ends at byte " + std::to_string(size) + ", expected a 4-byte magic number at byte 0");
  }
  if (bytes[0] != 0 || bytes[1] != 0) {
    format_error(name, "byte 0: expected the magic number 0x0000TTNN of an IDX file (two zero bytes), got " +
                           hex_byte(bytes[0]) + " " + hex_byte(bytes[1]));
  }
  if (bytes[2] != 0x08) {
    format_error(name, "byte 2: expected the element type 0x08 (unsigned byte), got " + hex_byte(bytes[2]));
  }
  const int n = bytes[3];
  if (n == 0) format_error(name, "byte 3: expected at least one dimension, got 0");
  IdxHeader header;
  header.type = bytes[2];
  header.data_offset = 4 + 4 * static_cast<std::int64_t>(n);
  if (size < static_cast<std::size_t>(header.data_offset)) {
    format_error(name, "the file ends at byte " + std::to_string(size) + ", expected the sizes of " +
                           std::to_string(n) + " dimensions in bytes 4 to " + std::to_string(header.data_offset - 1));
  }
  for (int d = 0; d < n; ++d) header.dims.push_back(big_endian_u32(bytes, 4 + 4 * static_cast<std::size_t>(d)));
  return header;
}

IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  const IdxHeader header = parse_idx_header(bytes, name);
  const std::size_t begin = static_cast<std::size_t>(header.data_offset);
  const std::size_t left = bytes.size() - begin;  // parse_idx_header made sure the sizes are there
  const std::size_t length = data_length(header.dims, left);
  if (length > left) {
    format_error(name, "the file ends at byte " + std::to_string(bytes.size()) + ", expected the data " +
                           to_string(header.dims) + " from byte " + std::to_string(begin) + ", more than the " +
                           std::to_string(left) + " bytes left");
  }
  const std::size_t end = begin + length;
  if (bytes.size() > end) {
    format_error(name, "expected the end of the file at byte " + std::to_string(end) + ", after the data " +
                           to_string(header.dims) + ", but " + std::to_string(bytes.size() - end) +
                           " more bytes follow");
  }
  IdxArray array;
  array.dims = header.dims;
  array.values.assign(bytes.begin() + static_cast<std::ptrdiff_t>(begin),
                      bytes.begin() + static_cast<std::ptrdiff_t>(end));
  return array;
}

IdxArray read_idx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) bytes = gunzip(bytes, path);
  return parse_idx(bytes, path);
}

}  // namespace kiln
