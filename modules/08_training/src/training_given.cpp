// Given: the small parts of Module, the NoGradGuard, and the JSON reader of a safetensors header.
// This is the only file of the module that includes nlohmann::json; you write the header's JSON
// by hand in save_safetensors, and read it back through parse_safetensors_header.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/training.h"

namespace kiln::nn {

Module::~Module() = default;

Tensor Module::operator()(const Tensor& x) { return forward(x); }

void Module::eval() { train(false); }

NoGradGuard::NoGradGuard(const Module& model) : parameters_(model.parameters()) {
  for (Tensor& parameter : parameters_) {
    required_.push_back(parameter.requires_grad());
    // The handle shares the parameter's bookkeeping, so this switches the model's own parameter.
    if (parameter.autograd()) parameter.autograd()->requires_grad = false;
  }
}

NoGradGuard::~NoGradGuard() {
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    if (parameters_[k].autograd()) parameters_[k].autograd()->requires_grad = required_[k];
  }
}

namespace {

[[noreturn]] void header_error(const std::string& path, std::uint64_t byte, const std::string& what) {
  throw FormatError(path + ": byte " + std::to_string(byte) + ": " + what);
}

// A JSON number that is a whole number ≥ 0.
bool is_count(const nlohmann::ordered_json& value) { return value.is_number_unsigned(); }

}  // namespace

std::vector<TensorEntry> parse_safetensors_header(const std::string& json, const std::string& path) {
  constexpr std::uint64_t kHeaderStart = 8;  // the header's first byte in the file
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(json);
  } catch (const nlohmann::json::parse_error& error) {
    // error.byte counts from 1 and points at the character where the parser gave up.
    const std::uint64_t at = error.byte > 0 ? error.byte - 1 : 0;
    header_error(path, kHeaderStart + at, "the header is not valid JSON (" + std::string(error.what()) + ")");
  }
  if (!header.is_object()) header_error(path, kHeaderStart, "the header should be a JSON object");

  std::vector<TensorEntry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      bool strings = value.is_object();
      if (strings) {
        for (const auto& [key, text] : value.items()) strings = strings && text.is_string();
      }
      if (!strings) header_error(path, kHeaderStart, "\"__metadata__\" should map strings to strings");
      continue;
    }
    const std::string which = "tensor \"" + name + "\"";
    if (!value.is_object()) header_error(path, kHeaderStart, which + " should be an object");
    TensorEntry entry;
    entry.name = name;
    if (!value.contains("dtype") || !value["dtype"].is_string()) {
      header_error(path, kHeaderStart, which + " should have a string \"dtype\"");
    }
    entry.dtype = value["dtype"].get<std::string>();
    if (!value.contains("shape") || !value["shape"].is_array()) {
      header_error(path, kHeaderStart, which + " should have a \"shape\" array");
    }
    for (const auto& size : value["shape"]) {
      if (!is_count(size)) header_error(path, kHeaderStart, which + ": every size of \"shape\" should be an integer >= 0");
      if (size.get<std::uint64_t>() > (std::uint64_t{1} << 40)) header_error(path, kHeaderStart, which + ": a size above 2^40");
      entry.shape.push_back(static_cast<std::int64_t>(size.get<std::uint64_t>()));
    }
    // A bound on the element count keeps 4·numel(shape) far from overflowing.
    double elements = 1.0;
    for (const std::int64_t size : entry.shape) elements *= static_cast<double>(size);
    if (elements > 1e12) header_error(path, kHeaderStart, which + ": a shape of more than 10^12 elements");
    if (!value.contains("data_offsets") || !value["data_offsets"].is_array() || value["data_offsets"].size() != 2 ||
        !is_count(value["data_offsets"][0]) || !is_count(value["data_offsets"][1])) {
      header_error(path, kHeaderStart, which + " should have \"data_offsets\" [begin, end] of two integers >= 0");
    }
    entry.begin = value["data_offsets"][0].get<std::uint64_t>();
    entry.end = value["data_offsets"][1].get<std::uint64_t>();
    entries.push_back(std::move(entry));
  }
  return entries;
}

}  // namespace kiln::nn
