// Given: gunzip, through zlib (the library behind gzip itself). inflateInit2 with 16 + MAX_WBITS
// reads the gzip wrapper (RFC 1952) around the DEFLATE data (RFC 1951) and checks its CRC-32 and
// length; a file of several gzip members (what `cat a.gz b.gz` makes) is read member by member.
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/data.h"

namespace kiln {

std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& compressed, const std::string& name) {
  auto corrupt = [&](std::size_t offset, const std::string& what) {
    return FormatError(name + ": not a valid gzip file: " + what + " at byte " + std::to_string(offset));
  };
  if (compressed.size() < 2 || compressed[0] != 0x1f || compressed[1] != 0x8b)
    throw corrupt(0, "expected the gzip magic bytes 1f 8b");
  std::vector<std::uint8_t> out;
  std::size_t at = 0;  // where the current member starts
  while (at < compressed.size()) {
    z_stream stream{};
    if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw corrupt(at, "zlib could not start");
    stream.next_in = const_cast<Bytef*>(compressed.data() + at);
    stream.avail_in = static_cast<uInt>(compressed.size() - at);
    int status = Z_OK;
    std::uint8_t chunk[1 << 16];
    while (status == Z_OK) {
      stream.next_out = chunk;
      stream.avail_out = sizeof chunk;
      status = inflate(&stream, Z_NO_FLUSH);
      out.insert(out.end(), chunk, chunk + (sizeof chunk - stream.avail_out));
      if (status == Z_BUF_ERROR && stream.avail_in == 0) break;  // the input ended inside the member
    }
    const std::size_t reached = at + stream.total_in;
    const std::string message = stream.msg ? stream.msg : "";
    inflateEnd(&stream);
    if (status != Z_STREAM_END) {
      if (reached >= compressed.size()) throw corrupt(compressed.size(), "the file ends inside the compressed data");
      throw corrupt(reached, message.empty() ? "the compressed data is damaged" : message);
    }
    at = reached;
  }
  return out;
}

}  // namespace kiln
