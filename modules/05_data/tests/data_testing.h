// Trusted helpers shared by module 05's checks: IDX files written byte by byte, gzip files
// written with stored blocks, a scratch folder, the Wichmann-Hill generator and Fisher-Yates
// written out again. None of them calls the module's code.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "kiln/data.h"
#include "kiln/testing.h"
#include "kiln/trusted.h"

namespace kiln::data_testing {

using testing::ScratchDir;
using testing::TrustedWichmannHill;

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;

// An IDX file: the magic 00 00 type n, the n sizes big-endian, then the data.
inline Bytes idx_bytes(const Shape& dims, const Bytes& data, std::uint8_t type = 0x08) {
  Bytes out = {0x00, 0x00, type, static_cast<std::uint8_t>(dims.size())};
  for (const std::int64_t size : dims) {
    const auto s = static_cast<std::uint32_t>(size);
    out.insert(out.end(), {static_cast<std::uint8_t>(s >> 24), static_cast<std::uint8_t>(s >> 16),
                           static_cast<std::uint8_t>(s >> 8), static_cast<std::uint8_t>(s)});
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// The hand-made file: 2 images of 3 × 3, with pixels above 127 and pixels whose values are those
// of white-space characters (9, 10, 13, 32). 16 bytes of header, 18 of data: 34 bytes.
inline const Bytes kHandPixels = {0, 128, 255, 10, 32, 9, 64, 200, 1, 255, 254, 13, 20, 30, 40, 100, 150, 250};
inline const Shape kHandDims = {2, 3, 3};
inline Bytes hand_file() { return idx_bytes(kHandDims, kHandPixels); }

// hand_file() compressed by Python's gzip.compress(data, mtime=0): a fixed-Huffman DEFLATE block.
inline const Bytes kHandGzip = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x63, 0x60, 0xe0,
                                0x60, 0x66, 0x60, 0x60, 0x60, 0x02, 0x62, 0x66, 0x30, 0x6e, 0xf8, 0xcf, 0xa5,
                                0xc0, 0xe9, 0x70, 0x82, 0xf1, 0xff, 0x3f, 0x5e, 0x11, 0x39, 0x8d, 0x94, 0x69,
                                0xbf, 0x00, 0xd7, 0xd4, 0xeb, 0x32, 0x22, 0x00, 0x00, 0x00};

inline Bytes prefix(const Bytes& bytes, std::size_t n) {
  return Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
}

// count bytes of the run, from random_ints(stream).
inline Bytes random_bytes(std::size_t count, std::uint64_t stream) {
  Bytes out;
  for (const std::int64_t v : testing::random_ints(count, 256, stream)) out.push_back(static_cast<std::uint8_t>(v));
  return out;
}

inline std::uint32_t crc32(const Bytes& data) {
  std::uint32_t c = 0xffffffffu;
  for (const std::uint8_t byte : data) {
    c ^= byte;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}

// A gzip file holding `data` in stored (uncompressed) DEFLATE blocks: exactly RFC 1952's layout.
inline Bytes gzip_stored(const Bytes& data) {
  Bytes out = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff};
  std::size_t at = 0;
  do {
    const std::size_t length = std::min<std::size_t>(65535, data.size() - at);
    const bool last = at + length == data.size();
    out.push_back(last ? 0x01 : 0x00);
    out.insert(out.end(), {static_cast<std::uint8_t>(length), static_cast<std::uint8_t>(length >> 8),
                           static_cast<std::uint8_t>(~length), static_cast<std::uint8_t>(~length >> 8)});
    out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(at),
               data.begin() + static_cast<std::ptrdiff_t>(at + length));
    at += length;
  } while (at < data.size());
  for (const std::uint32_t word : {crc32(data), static_cast<std::uint32_t>(data.size())}) {
    for (int k = 0; k < 4; ++k) out.push_back(static_cast<std::uint8_t>(word >> (8 * k)));
  }
  return out;
}



// Fisher-Yates as kiln/data.h states it.
inline std::vector<std::int64_t> trusted_shuffle(std::int64_t n, TrustedWichmannHill& generator) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  for (std::int64_t i = n - 1; i >= 1; --i) {
    const auto j = static_cast<std::int64_t>(std::floor(generator.next() * static_cast<double>(i + 1)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

// "[1, 6, 2]" for a detail line.
inline std::string list_of(const std::vector<std::int64_t>& values, std::size_t limit = 16) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size() && i < limit; ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  if (values.size() > limit) out += fmt::format(", ... ({} in all)", values.size());
  return out + "]";
}

inline std::string batches_of(const std::vector<std::vector<std::int64_t>>& batches) {
  std::string out = "[";
  for (std::size_t i = 0; i < batches.size(); ++i) out += (i ? ", " : "") + list_of(batches[i], 8);
  return out + "]";
}

// "00 00 08 03": the first bytes of a file, for naming a case.
inline std::string hex_prefix(const Bytes& bytes, std::size_t n = 4) {
  std::string out;
  for (std::size_t i = 0; i < n && i < bytes.size(); ++i) out += fmt::format("{}{:02x}", i ? " " : "", bytes[i]);
  return out;
}

// Whether `message` names the offset as "byte N" (not as the start of a longer number).
inline bool names_byte(const std::string& message, std::int64_t offset) {
  const std::string needle = "byte " + std::to_string(offset);
  for (std::size_t at = message.find(needle); at != std::string::npos; at = message.find(needle, at + 1)) {
    const std::size_t after = at + needle.size();
    if (after >= message.size() || !std::isdigit(static_cast<unsigned char>(message[after]))) return true;
  }
  return false;
}

// Reports failure_id unless the observed call threw a kiln::FormatError whose message contains
// `name` and names `offset` as "byte N". Returns whether it did.
template <class T>
bool expect_format_error(const char* file, int line, const testing::Observed<T>& observed, const std::string& name,
                         std::int64_t offset, std::string_view failure_id, const testing::Params& params) {
  if (observed.ok()) {
    testing::report_failure(file, line, failure_id, params,
                            observed.call() + " did not throw (expected kiln::FormatError)");
    return false;
  }
  const testing::ErrorData& error = observed.error();
  if (!error.is("kiln::FormatError")) {
    testing::report_failure(
        file, line, failure_id, params,
        fmt::format("{} threw {} ({}), expected kiln::FormatError", observed.call(), error.kind(), error.message));
    return false;
  }
  if (error.message.find(name) == std::string::npos || !names_byte(error.message, offset)) {
    testing::report_failure(file, line, failure_id, params,
                            fmt::format("{}: the message should name {} and byte {}, but it says: {}", observed.call(),
                                        name, offset, error.message));
    return false;
  }
  return true;
}

}  // namespace kiln::data_testing
