// Checkpoints in the safetensors format: written by hand, read back with every byte checked.
//
// kiln/training.h lays out the format byte by byte and lists every error. One way to write it:
//   save: build the header string, pad it with spaces, then write the 8 length bytes, the header
//         and the data (one std::vector<unsigned char> written at once with std::ofstream in
//         binary mode).
//   load: read all the bytes (std::ifstream in binary mode, std::istreambuf_iterator), check the
//         length, hand the header text to the given parse_safetensors_header, check every entry
//         and the tiling of the data, and only then build tensors. load_safetensors and
//         load_parameters share that checked reading: write it once, in a helper.
// FormatError (module 05, kiln/data.h) takes the message: name the path, "byte N" and what was
// expected, e.g. "model.safetensors: byte 5: the file ends inside the 8-byte header length".
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/training.h"

namespace kiln::nn {

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  // Reject an empty name, "__metadata__" and a name used twice (std::invalid_argument), before
  // opening the file: opening it for writing empties it.
  // The header, built by hand, compact:
  //   {"0.weight":{"dtype":"F32","shape":[2,8],"data_offsets":[0,64]},"0.bias":{...}}
  //   each name quoted and escaped (" -> \", \ -> \\, a byte below 0x20 -> \u00XX with
  //   std::snprintf(buffer, size, "\\u%04x", byte)); begin/end in BYTES (4 per float), each
  //   tensor beginning where the last ended; then spaces until header.size() % 8 == 0.
  // The file: the header's length as 8 bytes, least significant first (byte b = length >> 8·b),
  // the header, then every tensor's to_vector() floats, 4 bytes each (std::memcpy). A view at an
  // offset is written by its own elements, from its offset, never from storage_data().
  throw kiln::NotImplemented();
}

std::vector<std::pair<std::string, Tensor>> load_safetensors(const std::string& path) {
  // The checks, in the order of the header's list, each a FormatError naming path and the byte:
  //   size < 8; N (bytes 0..7, little-endian: byte b counts 256^b) with N > size - 8 (write it
  //   that way round: 8 + N can overflow); parse_safetensors_header(bytes 8 .. 8+N-1, path);
  //   every entry's dtype and end - begin = 4·numel(shape) (end >= begin first); then the entries
  //   sorted by begin (std::stable_sort) must tile the data: begin = where the last ended, end
  //   within the data, the last ending exactly at the end of the file.
  // Then each tensor: Tensor(shape, its (end - begin)/4 floats from byte 8 + N + begin).
  throw kiln::NotImplemented();
}

void load_parameters(Module& model, const std::string& path) {
  // The file, checked as load_safetensors checks it. Then, before writing anything: every name of
  // model.named_parameters() is in the file with the parameter's shape, and every tensor of the
  // file is a parameter (FormatError naming path and the tensor; for a shape both shapes).
  // Only then copy each tensor's values into its parameter's storage (parameter.data()), so that
  // the model, and an optimizer holding the same handles, see them.
  // A parameter may be a contiguous view at an offset: its values are written from
  // parameter.data(), never from storage_data().
  throw kiln::NotImplemented();
}

}  // namespace kiln::nn
