// Checkpoints in the safetensors format: written by hand, read back with every byte checked.
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

namespace {

// `name` as a JSON string, quotes included.
std::string json_string(const std::string& name) {
  std::string out = "\"";
  for (const char ch : name) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '"') {
      out += "\\\"";
    } else if (ch == '\\') {
      out += "\\\\";
    } else if (byte < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string shape_json(const Shape& shape) {
  std::string out = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) out += (d ? "," : "") + std::to_string(shape[d]);
  return out + "]";
}

[[noreturn]] void damaged(const std::string& path, std::uint64_t byte, const std::string& what) {
  throw FormatError(path + ": byte " + std::to_string(byte) + ": " + what);
}

// The little-endian u64 at bytes[0 .. 7].
std::uint64_t little_endian_u64(const std::vector<unsigned char>& bytes) {
  std::uint64_t value = 0;
  for (int b = 7; b >= 0; --b) value = (value << 8) | bytes[static_cast<std::size_t>(b)];
  return value;
}

// A checked file: its bytes, where its data starts, and its entries sorted by begin.
struct Checked {
  std::vector<unsigned char> bytes;
  std::uint64_t data_start = 0;
  std::vector<TensorEntry> entries;
};

Checked read_checked(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  Checked file;
  file.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const std::uint64_t size = file.bytes.size();
  if (size < 8) damaged(path, size, "the file ends inside the 8-byte header length");
  const std::uint64_t header_length = little_endian_u64(file.bytes);
  if (header_length > size - 8) {
    damaged(path, 0, "the header length " + std::to_string(header_length) + " runs past the end of the file (" +
                         std::to_string(size) + " bytes)");
  }
  file.data_start = 8 + header_length;
  const std::string json(file.bytes.begin() + 8, file.bytes.begin() + static_cast<std::ptrdiff_t>(file.data_start));
  file.entries = parse_safetensors_header(json, path);

  for (const TensorEntry& e : file.entries) {
    const std::string which = "tensor \"" + e.name + "\"";
    if (e.dtype != "F32") damaged(path, 8, which + " has dtype " + e.dtype + ", expected F32");
    const std::uint64_t expected = 4 * static_cast<std::uint64_t>(numel(e.shape));
    if (e.end < e.begin || e.end - e.begin != expected) {
      damaged(path, 8, which + " of shape " + to_string(e.shape) + " needs " + std::to_string(expected) +
                           " bytes, its data_offsets are [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                           "]");
    }
  }
  std::stable_sort(file.entries.begin(), file.entries.end(),
                   [](const TensorEntry& a, const TensorEntry& b) { return a.begin < b.begin; });
  const std::uint64_t data_size = size - file.data_start;
  std::uint64_t expected_begin = 0;
  for (const TensorEntry& e : file.entries) {
    if (e.begin != expected_begin || e.end > data_size) {
      damaged(path, file.data_start + expected_begin,
              "tensor \"" + e.name + "\" has data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                  "], expected it to begin at " + std::to_string(expected_begin) + " and end by " +
                  std::to_string(data_size) + " (a gap, an overlap or a range past the end)");
    }
    expected_begin = e.end;
  }
  if (expected_begin != data_size) {
    const std::string after = file.entries.empty() ? "the header, which holds no tensor"
                                                   : "tensor \"" + file.entries.back().name + "\", the last,";
    damaged(path, file.data_start + expected_begin,
            std::to_string(data_size - expected_begin) + " bytes follow " + after + " where the file should end");
  }
  return file;
}

// The float32 values of entry e, read little-endian from the file's data.
std::vector<float> values_of(const Checked& file, const TensorEntry& e) {
  std::vector<float> values(static_cast<std::size_t>((e.end - e.begin) / 4));
  if (!values.empty()) std::memcpy(values.data(), file.bytes.data() + file.data_start + e.begin, values.size() * 4);
  return values;
}

}  // namespace

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::string header = "{";
  std::vector<float> data;  // every tensor's elements, in order
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const auto& [name, tensor] = tensors[k];
    if (name.empty() || name == "__metadata__") throw std::invalid_argument("cannot save a tensor named \"" + name + "\"");
    for (std::size_t j = 0; j < k; ++j) {
      if (tensors[j].first == name) throw std::invalid_argument("two tensors are named \"" + name + "\"");
    }
    const std::vector<float> values = tensor.to_vector();
    const std::uint64_t begin = 4 * data.size(), end = begin + 4 * values.size();
    header += (k ? "," : "") + json_string(name) + ":{\"dtype\":\"F32\",\"shape\":" + shape_json(tensor.shape()) +
              ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
    data.insert(data.end(), values.begin(), values.end());
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';

  std::vector<unsigned char> bytes(8);
  std::uint64_t header_length = header.size();
  for (int b = 0; b < 8; ++b) bytes[static_cast<std::size_t>(b)] = static_cast<unsigned char>(header_length >> (8 * b));
  bytes.insert(bytes.end(), header.begin(), header.end());
  const std::size_t data_start = bytes.size();
  bytes.resize(data_start + 4 * data.size());
  if (!data.empty()) std::memcpy(bytes.data() + data_start, data.data(), 4 * data.size());

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + path);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.flush();  // a small file waits in the stream's buffer: only the flush finds a full disk
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<std::pair<std::string, Tensor>> load_safetensors(const std::string& path) {
  const Checked file = read_checked(path);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const TensorEntry& e : file.entries) tensors.emplace_back(e.name, Tensor(e.shape, values_of(file, e)));
  return tensors;
}

void load_parameters(Module& model, const std::string& path) {
  const Checked file = read_checked(path);
  const auto parameters = model.named_parameters();
  // Check everything first: each parameter has exactly one tensor of its shape in the file...
  std::vector<const TensorEntry*> sources;
  for (const auto& [name, parameter] : parameters) {
    const auto found = std::find_if(file.entries.begin(), file.entries.end(),
                                    [&](const TensorEntry& e) { return e.name == name; });
    if (found == file.entries.end()) throw FormatError(path + ": the model's parameter \"" + name + "\" is not in the file");
    if (found->shape != parameter.shape()) {
      throw FormatError(path + ": tensor \"" + name + "\" has shape " + to_string(found->shape) +
                        ", the model's parameter has shape " + to_string(parameter.shape()));
    }
    sources.push_back(&*found);
  }
  // ...and the file holds nothing else.
  for (const TensorEntry& e : file.entries) {
    const bool known = std::any_of(parameters.begin(), parameters.end(), [&](const auto& p) { return p.first == e.name; });
    if (!known) throw FormatError(path + ": tensor \"" + e.name + "\" is not a parameter of the model");
  }
  // Then write, in place.
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    Tensor parameter = parameters[k].second;
    const std::vector<float> values = values_of(file, *sources[k]);
    std::copy(values.begin(), values.end(), parameter.data());
  }
}

}  // namespace kiln::nn
