// Module 08 checks for checkpoints in the safetensors format.
//
// Byte compatibility is judged by a reader written here with nlohmann::json, independent of the
// module's code: it takes the bytes save_safetensors wrote (read back inside the observation, so
// that the program that wrote the file is the one that reads it) and checks every rule of the
// published format. The files load_safetensors and load_parameters read are written here too,
// by a writer that lays them out differently from the module's (keys sorted, "__metadata__",
// the data in another order than the header's), in a scratch folder, inside an observation.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kiln/testing.h"
#include "kiln/training.h"
#include "training_testing.h"

KILN_OBSERVABLE_ERROR(kiln::FormatError, std::runtime_error);

namespace kiln {
namespace {

namespace tt = training_testing;
using Bytes = tt::Bytes;
using testing::data_of;
using testing::observe;
using testing::random_tensor;
using testing::TensorData;

// ---------------------------------------------------------------------------------------------
// The test's own writer

struct Stored {
  std::string name;
  std::string dtype = "F32";
  Shape shape;
  std::uint64_t begin = 0, end = 0;
};

// A safetensors file: the header `header` (dumped, then padded with spaces to a multiple of 8),
// then `data`.
Bytes file_bytes(const std::string& header_text, const Bytes& data, std::optional<std::uint64_t> length = std::nullopt) {
  std::string header = header_text;
  while (header.size() % 8 != 0) header += ' ';
  const std::uint64_t n = length.value_or(header.size());
  Bytes out;
  for (int b = 0; b < 8; ++b) out.push_back(static_cast<std::uint8_t>(n >> (8 * b)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string header_of(const std::vector<Stored>& entries, bool metadata) {
  nlohmann::json header = nlohmann::json::object();  // std::map inside: the keys come out sorted
  if (metadata) header["__metadata__"] = {{"format", "pt"}};
  for (const Stored& e : entries) {
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  }
  return header.dump();
}

Bytes float_bytes(const std::vector<float>& values) {
  Bytes out(values.size() * 4);
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], 4);
    for (int b = 0; b < 4; ++b) out[4 * i + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(bits >> (8 * b));
  }
  return out;
}

// Tensors laid out in the data in the order given, the header listing them sorted by name.
std::pair<std::vector<Stored>, Bytes> layout(const std::vector<std::pair<std::string, TensorData>>& tensors) {
  std::vector<Stored> entries;
  Bytes data;
  for (const auto& [name, t] : tensors) {
    const Bytes b = float_bytes(t.values);
    entries.push_back({name, "F32", t.shape, data.size(), data.size() + b.size()});
    data.insert(data.end(), b.begin(), b.end());
  }
  return {entries, data};
}

// ---------------------------------------------------------------------------------------------
// The independent reader

struct Verdict {
  std::string failure;  // empty when the file is right
  std::string what;
  std::string name;
};

// Checks every rule of the format on `bytes`, which should hold `tensors` in that order.
Verdict read_independently(const std::vector<std::int64_t>& file, const std::vector<std::pair<std::string, TensorData>>& tensors) {
  Bytes bytes;
  for (const std::int64_t b : file) bytes.push_back(static_cast<std::uint8_t>(b));
  if (bytes.size() < 8) return {"write_layout_wrong", fmt::format("the file has {}, fewer than the 8 of the header length", testing::counted(bytes.size(), "byte"))};
  std::uint64_t n = 0;
  for (int b = 7; b >= 0; --b) n = (n << 8) | bytes[static_cast<std::size_t>(b)];
  if (n > bytes.size() - 8) {
    return {"write_layout_wrong", fmt::format("the header length {} (bytes 0 to 7, little-endian) runs past the end of the {}-byte file", n, bytes.size())};
  }
  if (n % 8 != 0) return {"write_layout_wrong", fmt::format("the header length {} is not a multiple of 8: pad the header with spaces", n)};
  const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  const std::size_t last = header.find_last_not_of(' ');
  if (last == std::string::npos || header[last] != '}') {
    return {"write_layout_wrong", "the header does not end with '}' followed only by spaces"};
  }
  nlohmann::ordered_json json;
  try {
    json = nlohmann::ordered_json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    return {"write_header_wrong", fmt::format("is not valid JSON ({}): {}", e.what(), header.substr(0, 200))};
  }
  if (!json.is_object()) return {"write_header_wrong", "is not a JSON object"};
  json.erase("__metadata__");
  std::vector<std::string> names;
  for (const auto& [name, value] : json.items()) names.push_back(name);
  std::vector<std::string> expected_names;
  for (const auto& [name, t] : tensors) expected_names.push_back(name);
  if (names != expected_names) {
    return {"write_header_wrong", fmt::format("lists the tensors {}, expected {} in that order", nlohmann::json(names).dump(),
                                              nlohmann::json(expected_names).dump())};
  }
  std::uint64_t begin = 0;
  for (const auto& [name, t] : tensors) {
    const nlohmann::ordered_json expected = {{"dtype", "F32"},
                                             {"shape", t.shape},
                                             {"data_offsets", {begin, begin + 4 * t.values.size()}}};
    const auto& entry = json[name];
    const bool same = entry.is_object() && entry.size() == 3 && entry.contains("dtype") && entry["dtype"] == expected["dtype"] &&
                      entry.contains("shape") && entry["shape"] == expected["shape"] && entry.contains("data_offsets") &&
                      entry["data_offsets"] == expected["data_offsets"];
    if (!same) {
      return {"write_header_wrong", fmt::format("has {} for tensor \"{}\", expected {}", entry.dump(), name, expected.dump())};
    }
    begin += 4 * t.values.size();
  }
  if (bytes.size() != 8 + n + begin) {
    return {"write_layout_wrong", fmt::format("the file has {} bytes, expected 8 + {} + {} = {}", bytes.size(), n, begin, 8 + n + begin)};
  }
  std::size_t at = 8 + n;
  for (const auto& [name, t] : tensors) {
    const Bytes expected = float_bytes(t.values);
    if (!std::equal(expected.begin(), expected.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at))) {
      return {"write_data_wrong", "", name};
    }
    at += expected.size();
  }
  return {};
}

std::vector<std::int64_t> as_ints(const Bytes& bytes) { return std::vector<std::int64_t>(bytes.begin(), bytes.end()); }

// The transpose of a contiguous matrix as a view (strides (1, rows)), built with the given make_view.
Tensor transposed(const Tensor& m) { return make_view(m, {m.shape()[1], m.shape()[0]}, {1, m.shape()[1]}, 0); }

// Reports `failure_id` unless the observed list of named tensors equals `expected` exactly.
bool expect_tensors(const char* file, int line, const testing::Observed<std::vector<std::pair<std::string, TensorData>>>& got,
                    const std::vector<std::pair<std::string, TensorData>>& expected, const std::string& failure_id,
                    const std::string& what) {
  const auto report = [&](const std::string& detail) {
    testing::report_failure(file, line, failure_id, {{"case", what}, {"what", detail}}, got.call());
    return false;
  };
  if (!got.ok()) return report("an error: " + got.describe_error());
  std::vector<std::string> names, expected_names;
  for (const auto& [name, t] : *got) names.push_back(name);
  for (const auto& [name, t] : expected) expected_names.push_back(name);
  if (names != expected_names) {
    return report(fmt::format("the tensors {}, expected {} in that order", nlohmann::json(names).dump(),
                              nlohmann::json(expected_names).dump()));
  }
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const TensorData& a = (*got)[k].second;
    const TensorData& e = expected[k].second;
    if (a.shape != e.shape) {
      return report(fmt::format("tensor \"{}\" of shape {}, expected {}", names[k], to_string(a.shape), to_string(e.shape)));
    }
    if (std::memcmp(a.values.data(), e.values.data(), 4 * e.values.size()) != 0) {
      return report(fmt::format("tensor \"{}\" with other values: {}, expected {}", names[k], testing::list(a.values),
                                testing::list(e.values)));
    }
  }
  return true;
}

// A module of one parameter "w": the tensor it is given (a contiguous view at an offset, say).
struct OneParameter : nn::Module {
  explicit OneParameter(Tensor w) { register_parameter("w", std::move(w)); }
  Tensor forward(const Tensor& x) override { return x; }
};

// A named list of trusted tensors.
std::vector<std::pair<std::string, TensorData>> plain(const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::vector<std::pair<std::string, TensorData>> out;
  for (const auto& [name, t] : tensors) out.emplace_back(name, data_of(t));
  return out;
}

}  // namespace

TEST(Training, SafetensorsWrite) {
  const Tensor base = random_tensor({5, 3}, 911);
  struct Case {
    std::string what;
    std::vector<std::pair<std::string, Tensor>> tensors;
  };
  const std::vector<Case> cases = {
      {"a 2-8-2 model's parameters",
       {{"0.weight", random_tensor({2, 8}, 912)}, {"0.bias", random_tensor({8}, 913)},
        {"2.weight", random_tensor({8, 2}, 914)}, {"2.bias", random_tensor({2}, 915)}}},
      {"a scalar, an empty (2, 0), a (3, 5) transposed view, names with '\"', '\\' and a tab",
       {{"scalar", Tensor::scalar(-1.5f)},
        {"empty", Tensor(Shape{2, 0}, {})},
        {"view", transposed(base)},
        {"say \"hi\"\\now", random_tensor({3}, 916)},
        {"tab\there", random_tensor({1, 1}, 917)}}},
      {"names in UTF-8 (\"poids_é\", \"层.weight\", \"🔥\": 2, 3 and 4 bytes a character) and one ending in DEL (0x7f)",
       {{"poids_é", random_tensor({2}, 919)},
        {"层.weight", random_tensor({1, 2}, 920)},
        {"🔥", random_tensor({1}, 921)},
        {"del\x7f", random_tensor({1}, 922)}}},
      {"no tensors", {}},
      {"eight tensors with long names, a header of more than 256 bytes (its length needs two bytes)",
       [] {
         std::vector<std::pair<std::string, Tensor>> many;
         for (int layer = 0; layer < 8; ++layer)
           many.emplace_back(fmt::format("transformer.blocks.{}.attention.query.weight", layer),
                             random_tensor({2, 2}, 930 + static_cast<std::uint64_t>(layer)));
         return many;
       }()},
  };
  std::optional<tt::ScratchDir> scratch;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const auto file = observe("save_safetensors(path, tensors) with " + c.what + ", then the file's bytes", [&] {
      if (!scratch) scratch.emplace("write");
      const std::string path = scratch->path_of("case" + std::to_string(k) + ".safetensors");
      nn::save_safetensors(path, c.tensors);
      return as_ints(tt::read_bytes(path));
    });
    if (!KILN_EXPECT_OK(file, "write_layout_wrong", {{"case", c.what}, {"what", "it threw"}})) return;
    KILN_JUDGE {
      const Verdict v = read_independently(*file, plain(c.tensors));
      if (!v.failure.empty()) {
        KILN_FAIL(v.failure, {{"case", c.what}, {"what", v.what}, {"name", v.name}});
        return;
      }
    }
  }

  // What cannot be saved: names a reader could not tell apart or would skip, and a path that
  // cannot be written.
  const Tensor w = random_tensor({2}, 918);
  struct Refusal {
    std::string what, file;
    std::vector<std::pair<std::string, Tensor>> tensors;
    bool name_error;  // std::invalid_argument; otherwise std::runtime_error naming the path
  };
  const std::vector<Refusal> refusals = {
      {"a tensor named \"\"", "empty-name.safetensors", {{"a", w}, {"", w}}, true},
      {"a tensor named \"__metadata__\"", "metadata.safetensors", {{"__metadata__", w}}, true},
      {"two tensors named \"w\"", "twice.safetensors", {{"w", w}, {"v", w}, {"w", w}}, true},
      {"a path in a folder that does not exist", "no-such-folder/x.safetensors", {{"w", w}}, false},
      {"/dev/full, which opens but takes no byte", "/dev/full", {{"w", w}}, false}};
  // A refused name is found before anything is written: a checkpoint already at the path (the
  // last good save) must come out of the refused call as it went in.
  const std::string previous = "the last good checkpoint";
  for (const Refusal& r : refusals) {
    const auto error = observe("save_safetensors(\"" + r.file + "\", tensors) with " + r.what, [&] {
      if (!scratch) scratch.emplace("write");
      if (r.name_error) scratch->write(r.file, previous);
      nn::save_safetensors(r.file.front() == '/' ? r.file : scratch->path_of(r.file), r.tensors);
    });
    KILN_JUDGE {
      if (r.name_error) {
        testing::expect_throws<std::invalid_argument>(__FILE__, __LINE__, error, "save_not_refused", {},
                                                      {{"case", r.what}, {"error", "std::invalid_argument"}});
      } else {
        testing::expect_throws<std::runtime_error>(__FILE__, __LINE__, error, "save_not_refused", {r.file},
                                                   {{"case", r.what}, {"error", "std::runtime_error naming the path"}});
      }
    }
    if (error.ok()) return;
    if (!r.name_error) continue;
    const auto left = observe("the file that was at the path before the refused save_safetensors with " + r.what,
                              [&] { return as_ints(tt::read_bytes(scratch->path_of(r.file))); });
    KILN_JUDGE {
      const std::vector<std::int64_t> expected(previous.begin(), previous.end());
      if (!left.ok() || *left != expected) {
        KILN_FAIL("refused_save_wrote", {{"case", r.what}},
                  fmt::format("{}: {}", left.call(), left.ok() ? fmt::format("{}, not the {} it held", testing::counted(left->size(), "byte"), expected.size())
                                                              : "it can no longer be read"));
        return;
      }
    }
  }

  KILN_JUDGE {
    if (::testing::Test::HasFailure()) return;  // one failure per check: the first
  }
  // A tensor that is a contiguous view at an offset (a slice of a flat block of parameters), 5
  // floats into a storage whose other floats are random numbers: its contiguous() is the view
  // itself, and its elements start at data(), not at storage_data().
  const std::string shifted_case = "\"w\", a (2, 3) tensor that is a view at offset 5 of a larger storage, and \"b\" (3)";
  const std::vector<std::pair<std::string, Tensor>> shifted = {
      {"w", testing::at_offset(data_of(random_tensor({2, 3}, 940)), 941)}, {"b", random_tensor({3}, 942)}};
  // The same tensors with "w" a fresh tensor of the same values: a file wrong for both is
  // save_safetensors's own mistake (write_layout_wrong, write_data_wrong, ...), not the offset's.
  const std::string fresh_case = "\"w\", a fresh (2, 3) tensor of the same values, and \"b\" (3)";
  const std::vector<std::pair<std::string, Tensor>> fresh = {{"w", data_of(shifted[0].second).tensor()}, shifted[1]};
  const auto bytes_of = [&](const std::string& name, const std::vector<std::pair<std::string, Tensor>>& tensors) {
    if (!scratch) scratch.emplace("write");
    const std::string path = scratch->path_of(name);
    nn::save_safetensors(path, tensors);
    return as_ints(tt::read_bytes(path));
  };
  const auto fresh_file = observe("save_safetensors(path, tensors) with " + fresh_case + ", then the file's bytes",
                                  [&] { return bytes_of("fresh.safetensors", fresh); });
  const auto shifted_file = observe("save_safetensors(path, tensors) with " + shifted_case + ", then the file's bytes",
                                    [&] { return bytes_of("shifted.safetensors", shifted); });
  KILN_JUDGE {
    if (!testing::offset_changes(shifted_file, fresh_file, std::equal_to<>())) {
      if (!KILN_EXPECT_OK(fresh_file, "write_layout_wrong", {{"case", fresh_case}, {"what", "it threw"}})) return;
      const Verdict v = read_independently(*fresh_file, plain(fresh));
      if (!v.failure.empty()) KILN_FAIL(v.failure, {{"case", fresh_case}, {"what", v.what}, {"name", v.name}});
      return;
    }
    if (!KILN_EXPECT_OK(shifted_file, "write_offset_ignored", {{"case", shifted_case}, {"name", "w"}})) return;
    const Verdict v = read_independently(*shifted_file, plain(shifted));
    KILN_FAIL(v.failure.empty() || v.failure == "write_data_wrong" ? "write_offset_ignored" : v.failure,
              {{"case", shifted_case}, {"what", v.what}, {"name", v.failure.empty() ? "w" : v.name}},
              v.failure.empty() ? (fresh_file.ok() ? shifted_file.call() + " and " + fresh_file.call() +
                                                         " wrote different bytes"
                                                   : fresh_file.describe_error() + ", but " + shifted_file.call() +
                                                         " wrote a file")
                                : std::string());
  }
}

TEST(Training, SafetensorsRead) {
  // A file of the test's writer: keys sorted, "__metadata__" first, the data in the order c,
  // b.weight, a.bias (not the header's a.bias, b.weight, c).
  const std::vector<std::pair<std::string, TensorData>> independent = {
      {"c", data_of({}, {data_of(random_tensor({1}, 921)).values[0]})},
      {"b.weight", data_of(random_tensor({2, 3}, 922))},
      {"a.bias", data_of(random_tensor({3}, 923))},
  };
  // A model's parameters in a file listing them backwards.
  const std::vector<TensorData> values = tt::random_mlp_values({3, 4, 2}, 924);
  const std::vector<std::pair<std::string, TensorData>> backwards = {
      {"2.bias", values[3]}, {"2.weight", values[2]}, {"0.bias", values[1]}, {"0.weight", values[0]}};
  std::optional<tt::ScratchDir> scratch;
  const auto folder = observe("writing the test's files to a scratch folder", [&] {
    scratch.emplace("read");
    const auto [entries, data] = layout(independent);
    scratch->write("independent.safetensors", file_bytes(header_of(entries, true), data));
    const auto [model_entries, model_data] = layout(backwards);
    scratch->write("model.safetensors", file_bytes(header_of(model_entries, false), model_data));
    // Damaged: 2.bias of shape (3) over its 8 bytes; 2.bias's data_offsets reversed.
    std::vector<Stored> damaged = model_entries;
    damaged[0].shape = {3};
    scratch->write("size.safetensors", file_bytes(header_of(damaged, false), model_data));
    damaged = model_entries;
    std::swap(damaged[0].begin, damaged[0].end);
    scratch->write("reversed.safetensors", file_bytes(header_of(damaged, false), model_data));
    return scratch->path_of("");
  });
  ASSERT_TRUE(folder.ok()) << folder.describe_error();

  const std::string independent_path = *folder + "independent.safetensors";
  const auto read = observe("load_safetensors(\"" + independent_path + "\")",
                            [&] { return nn::load_safetensors(independent_path); });
  KILN_JUDGE {
    if (!expect_tensors(__FILE__, __LINE__, read, independent, "read_wrong",
                        "a file of an independent writer, with \"__metadata__\" and the keys sorted by name, not in "
                        "the order of their data"))
      return;
  }

  // Round trip of the module's own writer, views and empty tensors included.
  const Tensor base = random_tensor({4, 3}, 925);
  const std::vector<std::pair<std::string, Tensor>> own = {
      {"w", random_tensor({3, 5}, 926)}, {"empty", Tensor(Shape{0}, {})}, {"s", Tensor::scalar(2.5f)}, {"t", transposed(base)}};
  const std::string own_path = *folder + "own.safetensors";
  const auto round_trip = observe("save_safetensors(\"" + own_path + "\", tensors), then load_safetensors of it", [&] {
    nn::save_safetensors(own_path, own);
    return nn::load_safetensors(own_path);
  });
  KILN_JUDGE {
    if (!expect_tensors(__FILE__, __LINE__, round_trip, plain(own), "read_wrong", "save_safetensors then load_safetensors"))
      return;
  }

  // A file of no tensors: the header "{}" padded to 8 bytes, and no data.
  const std::string none_path = *folder + "none.safetensors";
  const auto none = observe("load_safetensors(\"" + none_path + "\") of a file holding no tensors", [&] {
    scratch->write("none.safetensors", file_bytes("{}", {}));
    return nn::load_safetensors(none_path);
  });
  KILN_JUDGE {
    if (!expect_tensors(__FILE__, __LINE__, none, {}, "read_wrong", "a file of no tensors: \"{}\" padded, no data"))
      return;
  }

  // Damaged files and a missing one, read by load_safetensors itself.
  const std::vector<std::tuple<std::string, std::string, std::vector<std::string>>> damaged = {
      {"size.safetensors", "a file whose 2.bias has shape (3) and data_offsets [0, 8]", {"byte 8", "2.bias"}},
      {"reversed.safetensors", "a file whose 2.bias has data_offsets [8, 0]", {"byte ", "2.bias"}},
      {"missing.safetensors", "a file that does not exist", {}}};
  for (const auto& [file, what, mention] : damaged) {
    const std::string path = *folder + file;
    const auto error = observe("load_safetensors(\"" + path + "\")", [&] { return nn::load_safetensors(path); });
    KILN_JUDGE {
      std::vector<std::string> all = {path};
      all.insert(all.end(), mention.begin(), mention.end());
      const bool missing = mention.empty();
      // A file that cannot be opened is not a damaged one: std::runtime_error, not FormatError
      // (which is one too).
      bool refused = !error.ok() && error.error().is(missing ? "std::runtime_error" : "kiln::FormatError") &&
                     !(missing && error.error().is("kiln::FormatError"));
      for (const std::string& m : all) refused = refused && error.error().message.find(m) != std::string::npos;
      if (!refused) {
        std::string detail;
        for (const std::string& m : all) detail += (detail.empty() ? "" : ", ") + ("\"" + m + "\"");
        KILN_FAIL("read_wrong", {{"case", what}, {"what", fmt::format("{}; expected {} naming {}",
                                                                    error.ok() ? "no error" : "the error " + error.error().message,
                                                                    missing ? "a std::runtime_error" : "a kiln::FormatError", detail)}});
        return;
      }
    }
  }

  // load_parameters: by name, in place, seen by an optimizer built before.
  const std::string model_path = *folder + "model.safetensors";
  const auto loaded = observe(
      "load_parameters(model, \"" + model_path + "\") on Sequential(Linear(3, 4), ReLU, Linear(4, 2)), the file listing "
      "the parameters backwards; then named_parameters() and the values an SGD built before holds",
      [&] {
        auto model = tt::make_mlp({3, 4, 2}, {});
        optim::SGD sgd(model->parameters(), 0.1f);
        nn::load_parameters(*model, model_path);
        std::vector<std::pair<std::string, Tensor>> seen;
        for (const auto& [name, p] : model->named_parameters()) seen.emplace_back(name, autograd::detach(p).clone());
        const std::vector<std::string> names = {"0.weight", "0.bias", "2.weight", "2.bias"};
        for (std::size_t k = 0; k < sgd.parameters().size() && k < names.size(); ++k)
          seen.emplace_back("the optimizer's " + names[k], autograd::detach(sgd.parameters()[k]).clone());
        return seen;
      });
  KILN_JUDGE {
    std::vector<std::pair<std::string, TensorData>> expected = {
        {"0.weight", values[0]}, {"0.bias", values[1]}, {"2.weight", values[2]}, {"2.bias", values[3]}};
    for (std::size_t k = 0; k < 4; ++k) expected.emplace_back("the optimizer's " + expected[k].first, expected[k].second);
    expect_tensors(__FILE__, __LINE__, loaded, expected, "load_parameters_wrong", "a file listing the parameters backwards");
    if (::testing::Test::HasFailure()) return;  // one failure per check: the first
  }

  // A parameter that is a contiguous view at an offset (a model that keeps its parameters in one
  // flat buffer), 5 floats into a storage whose other floats are random numbers: its values are
  // written from parameter.data(), at the offset; storage_data() would write the floats before it.
  const TensorData w_values = data_of(random_tensor({2, 3}, 925));
  const TensorData zeros = data_of({2, 3}, std::vector<float>(6, 0.0f));
  const auto loaded_into = [&](const Tensor& parameter) {
    const auto [entries, data] = layout({{"w", w_values}});
    scratch->write("offset.safetensors", file_bytes(header_of(entries, false), data));
    OneParameter model(parameter);
    nn::load_parameters(model, scratch->path_of("offset.safetensors"));
    std::vector<std::pair<std::string, Tensor>> seen;
    for (const auto& [name, p] : model.named_parameters()) seen.emplace_back(name, autograd::detach(p).clone());
    return seen;
  };
  // The same call with "w" a fresh tensor: values wrong for both are load_parameters's own mistake
  // (load_parameters_wrong), not the offset's.
  const auto fresh = observe(
      "load_parameters(model, path) on a model whose one parameter \"w\" (2, 3) is a fresh tensor, from a file "
      "holding \"w\"; then named_parameters()",
      [&] { return loaded_into(zeros.tensor()); });
  const auto shifted = observe(
      "load_parameters(model, path) on a model whose one parameter \"w\" (2, 3) is a view at offset 5 of a larger "
      "storage, from a file holding \"w\"; then named_parameters()",
      [&] { return loaded_into(testing::at_offset(zeros, 926)); });
  KILN_JUDGE {
    // The same parameters: the same names in the same order, each with the same values.
    const auto same = [](const auto& a, const auto& b) {
      if (a.size() != b.size()) return false;
      for (std::size_t k = 0; k < a.size(); ++k)
        if (a[k].first != b[k].first || !testing::compare(a[k].second, b[k].second, 0.0).close) return false;
      return true;
    };
    if (!testing::offset_changes(shifted, fresh, same)) {
      expect_tensors(__FILE__, __LINE__, fresh, {{"w", w_values}}, "load_parameters_wrong", "a parameter that is a fresh tensor");
      return;
    }
    if (!expect_tensors(__FILE__, __LINE__, shifted, {{"w", w_values}}, "load_offset_ignored",
                        "a parameter that is a view at offset 5 of a larger storage"))
      return;
    KILN_FAIL("load_offset_ignored",
              {{"case", "a parameter that is a view at offset 5 of a larger storage"},
               {"what", fresh.ok() ? "a fresh parameter got other values" : "the same load into a fresh parameter threw"}},
              fresh.ok() ? shifted.call() : fresh.describe_error());
  }
}

TEST(Training, SafetensorsDamaged) {
  // The model: Sequential(Linear(3, 4), ReLU, Linear(4, 2)); a good file for it holds 0.weight
  // (3, 4), 0.bias (4), 2.weight (4, 2), 2.bias (2) with values of the run; each damaged file
  // changes one thing.
  const std::vector<TensorData> values = tt::random_mlp_values({3, 4, 2}, 931);
  const std::vector<std::pair<std::string, TensorData>> good = {
      {"0.weight", values[0]}, {"0.bias", values[1]}, {"2.weight", values[2]}, {"2.bias", values[3]}};
  const auto [entries, data] = layout(good);  // byte ranges [0, 48), [48, 64), [64, 96), [96, 104)

  struct Damage {
    std::string file, what;
    Bytes bytes;
    std::vector<std::string> mention;  // besides the path
  };
  std::vector<Damage> damages;
  const Bytes whole = file_bytes(header_of(entries, false), data);
  // "byte 8 + N + offset": where the data of a damaged file was expected, N its header length (the
  // damages of the data below name it).
  const auto data_byte = [](const Bytes& file, std::uint64_t offset) {
    std::uint64_t n = 0;
    for (int b = 7; b >= 0; --b) n = (n << 8) | file[static_cast<std::size_t>(b)];
    return fmt::format("byte {}", 8 + n + offset);
  };
  damages.push_back({"truncated.safetensors", "a 5-byte file", Bytes(whole.begin(), whole.begin() + 5), {"byte 5"}});
  damages.push_back({"long-header.safetensors", "a header length of 4096 in a shorter file",
                     file_bytes(header_of(entries, false), data, 4096), {"byte 0"}});
  // The largest header length the file allows is its size - 8; one more runs past the end. The
  // header length's 8th byte counts too (2^56 + N), and a file of the 8 bytes alone holds an
  // empty header, which is not JSON.
  damages.push_back({"one-past.safetensors", "a header length one byte past the end of the file",
                     file_bytes(header_of(entries, false), data, whole.size() - 8 + 1), {"byte 0"}});
  {
    Bytes high = whole;
    high[7] = 1;
    damages.push_back({"high-byte.safetensors", "a header length of 2^56 + N (its 8th byte 1)", high, {"byte 0"}});
  }
  // The largest lengths of all, where 8 + N wraps around to 7 and to 0 in 64 bits: compare N with
  // the size - 8, never 8 + N with the size.
  for (const auto& [name, low_byte, text] : {std::tuple{"wrap-7.safetensors", 0xFF, "2^64 - 1 (8 + N wraps to 7)"},
                                             std::tuple{"wrap-0.safetensors", 0xF8, "2^64 - 8 (8 + N wraps to 0)"}}) {
    Bytes wrapping = whole;
    std::fill(wrapping.begin(), wrapping.begin() + 8, std::uint8_t{0xFF});
    wrapping[0] = static_cast<std::uint8_t>(low_byte);
    damages.push_back({name, std::string("a header length of ") + text, wrapping, {"byte 0"}});
  }
  damages.push_back({"length-only.safetensors", "a file of the 8 bytes of a header length 0 and nothing else",
                     Bytes(8, 0), {"byte "}});
  damages.push_back({"bad-json.safetensors", "a header that is not JSON",
                     file_bytes("{\"0.weight\": {\"dtype\": \"F32\", \"shape\": [3, 4]", data), {"byte "}});
  auto with = [&](const std::function<void(std::vector<Stored>&)>& change) {
    std::vector<Stored> e = entries;
    change(e);
    return file_bytes(header_of(e, false), data);
  };
  damages.push_back({"dtype.safetensors", "0.bias stored as dtype I32 (4 bytes an element too)",
                     with([](std::vector<Stored>& e) { e[1].dtype = "I32"; }), {"byte 8", "0.bias", "I32"}});
  damages.push_back({"past-end.safetensors", "2.bias with data_offsets [96, 112] in 104 bytes of data",
                     with([](std::vector<Stored>& e) {
                       e[3].end = 112;
                       e[3].shape = {4};
                     }),
                     {}});
  damages.back().mention = {data_byte(damages.back().bytes, 96), "2.bias"};
  damages.push_back({"overlap.safetensors", "0.bias at [32, 48], inside 0.weight's [0, 48]",
                     with([](std::vector<Stored>& e) {
                       e[1].begin = 32;
                       e[1].end = 48;
                     }),
                     {}});
  damages.back().mention = {data_byte(damages.back().bytes, 48), "0.bias"};
  damages.push_back({"gap.safetensors", "2.weight and 2.bias 8 bytes later than 0.bias ends",
                     [&] {
                       std::vector<Stored> e = entries;
                       Bytes d = data;
                       d.insert(d.begin() + 64, 8, 0);
                       for (std::size_t k = 2; k < 4; ++k) {
                         e[k].begin += 8;
                         e[k].end += 8;
                       }
                       return file_bytes(header_of(e, false), d);
                     }(),
                     {}});
  damages.back().mention = {data_byte(damages.back().bytes, 64), "2.weight"};
  damages.push_back({"trailing.safetensors", "8 bytes after 2.bias, the last tensor, ends",
                     [&] {
                       Bytes d = data;
                       d.insert(d.end(), 8, 0);
                       return file_bytes(header_of(entries, false), d);
                     }(),
                     {}});
  damages.back().mention = {data_byte(damages.back().bytes, 104), "2.bias"};
  damages.push_back({"empty.safetensors", "a well-formed file holding no tensors", file_bytes("{}", {}), {"0.weight"}});
  const auto [short_entries, short_data] = layout({good[0], good[1], good[2]});
  damages.push_back({"missing.safetensors", "a file without 2.bias", file_bytes(header_of(short_entries, false), short_data),
                     {"2.bias"}});
  const auto [extra_entries, extra_data] = layout({good[0], good[1], good[2], good[3], {"4.weight", values[3]}});
  damages.push_back({"unknown.safetensors", "a file with a tensor 4.weight the model does not have",
                     file_bytes(header_of(extra_entries, false), extra_data), {"4.weight"}});
  damages.push_back({"shape.safetensors", "2.weight of shape (2, 4) for the model's (4, 2)",
                     with([](std::vector<Stored>& e) { e[2].shape = {2, 4}; }), {"2.weight", "(2, 4)", "(4, 2)"}});

  std::optional<tt::ScratchDir> scratch;
  const auto folder = observe("writing the test's damaged files to a scratch folder", [&] {
    scratch.emplace("damaged");
    for (const Damage& d : damages) scratch->write(d.file, d.bytes);
    return scratch->path_of("");
  });
  ASSERT_TRUE(folder.ok()) << folder.describe_error();

  std::shared_ptr<nn::Sequential> model;
  const auto before = observe("the parameters of Sequential(Linear(3, 4), ReLU, Linear(4, 2)) from WichmannHill(11)", [&] {
    model = tt::make_mlp({3, 4, 2}, {}, 11);
    return tt::parameter_values(*model);
  });
  ASSERT_TRUE(before.ok()) << before.describe_error();
  for (const Damage& d : damages) {
    const std::string path = *folder + d.file;
    const auto error = observe("load_parameters(model, \"" + path + "\")", [&] { nn::load_parameters(*model, path); });
    KILN_JUDGE {
      std::vector<std::string> mention = {path};
      mention.insert(mention.end(), d.mention.begin(), d.mention.end());
      std::string detail;
      for (const std::string& m : d.mention) detail += (detail.empty() ? "" : ", ") + ("\"" + m + "\"");
      bool rejected = !error.ok() && error.error().is("kiln::FormatError");
      for (const std::string& m : mention) rejected = rejected && error.error().message.find(m) != std::string::npos;
      if (!rejected) {
        testing::expect_throws<FormatError>(__FILE__, __LINE__, error, "damaged_not_rejected", mention,
                                            {{"case", d.what}, {"detail", detail}});
        return;
      }
    }
    const auto after = observe("the model's parameters after load_parameters(model, \"" + path + "\") threw",
                               [&] { return tt::parameter_values(*model); });
    KILN_JUDGE {
      bool same = after.ok() && after->size() == before->size();
      for (std::size_t k = 0; same && k < after->size(); ++k) same = (*after)[k].values == (*before)[k].values;
      KILN_EXPECT(same, "damaged_model_changed", {{"case", d.what}});
      if (!same) return;
    }
  }
}

}  // namespace kiln
