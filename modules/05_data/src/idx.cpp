// Reading IDX files: the header, the data, and the file itself, compressed or not.
//
// kiln/data.h lays out the format byte by byte and lists the errors. Every error is a
// kiln::FormatError whose message starts with the file's name and names the byte offset as
// "byte N", then says what was expected there, e.g.
//   "images.idx: the file ends at byte 10, expected the sizes of 3 dimensions in bytes 4 to 15"
// A small helper that builds such a message keeps the four functions short.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/data.h"

namespace kiln {

std::uint32_t big_endian_u32(const std::vector<std::uint8_t>& bytes, std::size_t offset) {
  // The most significant byte comes first: (b0 << 24) | (b1 << 16) | (b2 << 8) | b3. Widen each
  // byte to std::uint32_t before shifting it. 00 00 EA 60 is 60000.
  throw kiln::NotImplemented();
}

IdxHeader parse_idx_header(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  // In this order, each failure a FormatError naming `name` and the offset ("byte N"):
  //   fewer than 4 bytes (name the file's end); bytes 0 and 1 not zero (byte 0); byte 2 not 0x08
  //   (byte 2); byte 3, the dimension count n, zero (byte 3); fewer than 4 + 4n bytes (name the
  //   file's end, bytes.size()). Only then read dimension d with big_endian_u32(bytes, 4 + 4d).
  // type = byte 2, data_offset = 4 + 4n.
  // Sizes are unsigned 32-bit and kept whole: 4294967295 stays 4294967295 (an int would make it -1).
  throw kiln::NotImplemented();
}

IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& name) {
  // The header first (parse_idx_header), then the data: numel(dims) bytes from data_offset on.
  // Check the length before copying: a file that ends early names its end, "byte bytes.size()";
  // a file with bytes after the data names where it should have ended, "byte data_offset + numel".
  // The sizes may multiply past 64 bits (65,536 four times is 2^64): count without overflowing,
  // e.g. stop multiplying once the product passes the bytes left after the header (but a size
  // of 0 anywhere makes the product 0).
  throw kiln::NotImplemented();
}

IdxArray read_idx(const std::string& path) {
  // Open with std::ios::binary and read every byte: std::istreambuf_iterator<char> does that;
  // std::istream_iterator<char> and >> skip bytes that look like spaces (0x09-0x0D, 0x20).
  // Throw std::runtime_error naming the path when the file does not open. When the first two
  // bytes are 0x1f 0x8b the file is gzip: gunzip(bytes, path) (given). Then parse_idx(bytes, path).
  throw kiln::NotImplemented();
}

}  // namespace kiln
