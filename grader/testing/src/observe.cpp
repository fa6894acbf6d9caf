// observe() underneath: plain data from tensors and errors, the encoding that carries it to the
// judge, and the judge's replay of it.
#include "kiln/observe.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "session.h"
#include "thrown.h"

namespace kiln::testing {

namespace {

using nlohmann::json;

// Larger results are not observed: no check needs them, and the channel must stay bounded.
constexpr std::int64_t kMaxElements = std::int64_t(1) << 24;
constexpr std::size_t kMaxMessage = 2000;

std::string clip(std::string text) {
  if (text.size() > kMaxMessage) text = text.substr(0, kMaxMessage) + "...";
  return text;
}

// "(2, 3)". Written here, not taken from kiln::to_string: this file must not need module 01's code.
std::string to_string(const Shape& shape) {
  std::string text = "(";
  for (std::size_t d = 0; d < shape.size(); ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + ")";
}

// Row-major strides, for tensors the checks build themselves.
Shape row_major(const Shape& shape) {
  Shape strides(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

// Reads the elements of a shape/strides/offset view of storage[0, size) in row-major order;
// throws InvalidResult when the view is not well-formed or reaches outside the storage.
std::vector<float> read_view(const float* storage, std::size_t size, const Shape& shape, const Shape& strides,
                             std::int64_t offset) {
  if (strides.size() != shape.size())
    throw InvalidResult(fmt::format("a tensor of shape {} has {} strides, {}", to_string(shape), strides.size(),
                                    to_string(strides)));
  std::int64_t count = 1;
  for (std::int64_t s : shape) {
    if (s < 0) throw InvalidResult("a tensor has a negative size: shape " + to_string(shape));
    if (s > 0 && count > kMaxElements / s)
      throw InvalidResult(fmt::format("a tensor of shape {} is too large to observe", to_string(shape)));
    count *= s;
  }
  std::vector<float> values(static_cast<std::size_t>(count));
  if (count == 0) return values;
  // The lowest and highest positions the view reaches decide whether it stays inside storage.
  std::int64_t low = offset, high = offset;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    const std::int64_t reach = (shape[d] - 1) * strides[d];
    (reach < 0 ? low : high) += reach;
  }
  if (storage == nullptr || low < 0 || high >= static_cast<std::int64_t>(size))
    throw InvalidResult(fmt::format("a view of shape {}, strides {} and offset {} reads positions {} to {} of a "
                                    "storage of {} floats",
                                    to_string(shape), to_string(strides), offset, low, high, size));
  Shape index(shape.size(), 0);
  std::int64_t position = offset;
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = storage[position];
    for (std::size_t d = shape.size(); d-- > 0;) {  // the odometer: the last index moves fastest
      if (++index[d] < shape[d]) {
        position += strides[d];
        break;
      }
      position -= (shape[d] - 1) * strides[d];
      index[d] = 0;
    }
  }
  return values;
}

// ---------------------------------------------------------------------------------------------
// The encoding: JSON, with tensors' floats as base64 of their little-endian bytes (exact, NaN
// and infinities included).

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::vector<float>& values) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  const std::size_t n = values.size() * sizeof(float);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (std::size_t i = 0; i < n; i += 3) {
    const unsigned v = bytes[i] << 16 | (i + 1 < n ? bytes[i + 1] << 8 : 0) | (i + 2 < n ? bytes[i + 2] : 0);
    out += kBase64[v >> 18 & 63];
    out += kBase64[v >> 12 & 63];
    out += i + 1 < n ? kBase64[v >> 6 & 63] : '=';
    out += i + 2 < n ? kBase64[v & 63] : '=';
  }
  return out;
}

std::vector<float> unbase64(const std::string& text, std::size_t count) {
  if (text.size() != (count * sizeof(float) + 2) / 3 * 4) detail::malformed("a tensor whose values fit its shape");
  std::vector<unsigned char> bytes;
  bytes.reserve(count * sizeof(float));
  unsigned v = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const char* at = std::strchr(kBase64, c);
    if (at == nullptr || c == '\0') detail::malformed("a tensor (bad base64)");
    v = v << 6 | static_cast<unsigned>(at - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<unsigned char>(v >> bits & 0xff));
    }
  }
  if (bytes.size() != count * sizeof(float)) detail::malformed("a tensor whose values fit its shape");
  std::vector<float> values(count);
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

json encode(const Value& v) {
  switch (v.kind) {
    case Value::Kind::nothing: return nullptr;
    case Value::Kind::boolean: return v.boolean;
    case Value::Kind::integer: return v.integer;
    case Value::Kind::real:
      if (std::isnan(v.real)) return json{{"real", "nan"}};
      if (std::isinf(v.real)) return json{{"real", v.real > 0 ? "inf" : "-inf"}};
      return v.real;
    case Value::Kind::text: return v.text;
    case Value::Kind::tensor:
      return json{{"shape", v.tensor.shape}, {"strides", v.tensor.strides}, {"offset", v.tensor.offset},
                  {"f32", base64(v.tensor.values)}};
    case Value::Kind::list: {
      json items = json::array();
      for (const auto& item : v.list) items.push_back(encode(item));
      return items;
    }
  }
  return nullptr;
}

Shape decode_shape(const json& j) {
  if (!j.is_array()) detail::malformed("a tensor (its shape is not a list)");
  Shape out;
  for (const auto& s : j) {
    if (!s.is_number_integer()) detail::malformed("a tensor (a size is not an integer)");
    out.push_back(s.get<std::int64_t>());
  }
  return out;
}

Value decode(const json& j, int depth = 0) {
  if (depth > 16) detail::malformed("a value (nested too deeply)");
  Value v;
  if (j.is_null()) return v;
  if (j.is_boolean()) {
    v.kind = Value::Kind::boolean;
    v.boolean = j.get<bool>();
  } else if (j.is_number_integer()) {
    v.kind = Value::Kind::integer;
    if (j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
      detail::malformed("an integer in range");
    v.integer = j.get<std::int64_t>();
  } else if (j.is_number_float()) {
    v.kind = Value::Kind::real;
    v.real = j.get<double>();
  } else if (j.is_string()) {
    v.kind = Value::Kind::text;
    v.text = j.get<std::string>();
  } else if (j.is_array()) {
    v.kind = Value::Kind::list;
    for (const auto& item : j) v.list.push_back(decode(item, depth + 1));
  } else if (j.is_object() && j.contains("real") && j.size() == 1 && j["real"].is_string()) {
    const std::string r = j["real"];
    v.kind = Value::Kind::real;
    if (r == "nan") v.real = std::numeric_limits<double>::quiet_NaN();
    else if (r == "inf") v.real = std::numeric_limits<double>::infinity();
    else if (r == "-inf") v.real = -std::numeric_limits<double>::infinity();
    else detail::malformed("a number");
  } else if (j.is_object() && j.contains("shape") && j.contains("strides") && j.contains("offset") &&
             j.contains("f32") && j.size() == 4) {
    v.kind = Value::Kind::tensor;
    v.tensor.shape = decode_shape(j["shape"]);
    v.tensor.strides = decode_shape(j["strides"]);
    if (!j["offset"].is_number_integer() || !j["f32"].is_string()) detail::malformed("a tensor");
    v.tensor.offset = j["offset"].get<std::int64_t>();
    if (v.tensor.strides.size() != v.tensor.shape.size()) detail::malformed("a tensor (strides do not fit its shape)");
    std::int64_t count = 1;
    for (std::int64_t s : v.tensor.shape) {
      if (s < 0 || (s > 0 && count > kMaxElements / s)) detail::malformed("a tensor of a possible shape");
      count *= s;
    }
    v.tensor.values = unbase64(j["f32"].get<std::string>(), static_cast<std::size_t>(count));
  } else {
    detail::malformed("a value of a known form");
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Error kinds

struct ErrorKind {
  std::string name;
  std::string parent;
  std::type_index type;
  bool (*matches)(const std::exception_ptr&);
};

struct ErrorKinds {
  std::vector<ErrorKind> registered;  // modules' own, tried first, newest first
  std::vector<ErrorKind> known;       // the library's: most derived first
  ErrorKinds() {
    using namespace kiln::testing::detail;
    known = {
        {"kiln::ShapeError", "std::invalid_argument", typeid(ShapeError), &matches<ShapeError>},
        {"kiln::IndexError", "std::out_of_range", typeid(IndexError), &matches<IndexError>},
        {"kiln::testing::InvalidResult", "std::runtime_error", typeid(InvalidResult), &matches<InvalidResult>},
        {"std::invalid_argument", "std::logic_error", typeid(std::invalid_argument), &matches<std::invalid_argument>},
        {"std::domain_error", "std::logic_error", typeid(std::domain_error), &matches<std::domain_error>},
        {"std::length_error", "std::logic_error", typeid(std::length_error), &matches<std::length_error>},
        {"std::out_of_range", "std::logic_error", typeid(std::out_of_range), &matches<std::out_of_range>},
        {"std::logic_error", "std::exception", typeid(std::logic_error), &matches<std::logic_error>},
        {"std::range_error", "std::runtime_error", typeid(std::range_error), &matches<std::range_error>},
        {"std::overflow_error", "std::runtime_error", typeid(std::overflow_error), &matches<std::overflow_error>},
        {"std::underflow_error", "std::runtime_error", typeid(std::underflow_error), &matches<std::underflow_error>},
        {"std::runtime_error", "std::exception", typeid(std::runtime_error), &matches<std::runtime_error>},
        {"std::bad_alloc", "std::exception", typeid(std::bad_alloc), &matches<std::bad_alloc>},
        {"std::exception", "", typeid(std::exception), &matches<std::exception>},
    };
  }
  const ErrorKind* by_name(const std::string& name) const {
    for (const auto* list : {&registered, &known})
      for (const auto& k : *list)
        if (k.name == name) return &k;
    return nullptr;
  }
};

ErrorKinds& error_kinds() {
  static ErrorKinds kinds;
  return kinds;
}

// ---------------------------------------------------------------------------------------------
// The session

struct Session {
  int fd = -1;
  std::mutex write;
  bool judging = false;
  std::string test;  // the running check's
  std::map<std::string, std::vector<json>> observations;  // the judge's, by test
  const std::vector<json>* current = nullptr;
  std::size_t next = 0;
  session::CheckEnd end;
};

Session& state() {
  static Session s;
  return s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

float TensorData::at(const Shape& index) const {
  if (index.size() != shape.size()) throw std::out_of_range("index " + to_string(index) + " for shape " + to_string(shape));
  std::int64_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (index[d] < 0 || index[d] >= shape[d])
      throw std::out_of_range("index " + to_string(index) + " for shape " + to_string(shape));
    flat = flat * shape[d] + index[d];
  }
  return values.at(static_cast<std::size_t>(flat));
}

TensorData data_of(const Tensor& t) {
  TensorData d;
  d.shape = t.shape();
  d.strides = t.strides();
  d.offset = t.offset();
  d.values = read_view(t.storage_size() ? t.storage_data() : nullptr, t.storage_size(), d.shape, d.strides, d.offset);
  return d;
}

TensorData data_of(Shape shape, std::vector<float> values) {
  TensorData d;
  d.strides = row_major(shape);
  d.shape = std::move(shape);
  d.values = std::move(values);
  return d;
}

TensorData Plain<Tensor>::from(const Tensor& t) { return data_of(t); }

bool ErrorData::is(std::string_view kind) const {
  return std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
}

std::string ErrorData::kind() const { return kinds.empty() ? "an unknown exception" : kinds.front(); }

void register_error_kind(std::string name, std::string parent, std::type_index type,
                         bool (*matches)(const std::exception_ptr&)) {
  auto& r = error_kinds().registered;
  r.insert(r.begin(), ErrorKind{std::move(name), std::move(parent), type, matches});
}

std::string error_kind_name(std::type_index type) {
  for (const auto* list : {&error_kinds().registered, &error_kinds().known})
    for (const auto& k : *list)
      if (k.type == type) return k.name;
  throw std::logic_error(std::string("the error class ") + type.name() +
                         " is not observable: register it with KILN_OBSERVABLE_ERROR in the module's tests");
}

namespace detail {

void malformed(const std::string& what) { throw Malformed{what}; }

void expect_kind(const Value& v, Value::Kind kind, const char* name) {
  if (v.kind != kind) malformed(name);
}

bool recording() { return state().fd >= 0 && !state().judging; }
bool judging() { return state().judging; }

namespace {
thread_local std::vector<std::string> last_thrown_at;  // of the error current_error() last read
}  // namespace

ErrorData current_error() {
  last_thrown_at = thrown_at();
  ErrorData e;
  const std::exception_ptr error = std::current_exception();
  const auto& kinds = error_kinds();
  const ErrorKind* found = nullptr;
  for (const auto* list : {&kinds.registered, &kinds.known}) {
    for (const auto& k : *list) {
      if (k.matches(error)) {
        found = &k;
        break;
      }
    }
    if (found) break;
  }
  for (const ErrorKind* k = found; k != nullptr; k = k->parent.empty() ? nullptr : kinds.by_name(k->parent))
    e.kinds.push_back(k->name);
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& x) {
    e.message = clip(x.what());
  } catch (...) {
    e.message = "(an exception that is not a std::exception)";
  }
  return e;
}

bool is_stub(const std::exception& error) {
  return std::string_view(error.what()).substr(0, 17) == "not written yet: ";
}

void record(const std::string& call, const Value* value, const ErrorData* error) {
  json record = {{"call", call}};
  if (value) record["value"] = encode(*value);
  if (error) record["error"] = {{"kinds", error->kinds}, {"message", error->message}};
  session::emit_observation(record);
  // Where it was thrown: for the report only (the judge never reads it).
  if (error && !last_thrown_at.empty())
    session::emit({{"event", "thrown"}, {"test", state().test}, {"call", call}, {"at", last_thrown_at}});
}

void calling(const std::string& call) {
  if (recording()) session::emit({{"event", "calling"}, {"test", state().test}, {"call", call}});
}

void record_not_written(const std::string& call, const std::exception& stub) {
  state().end.stub = clip(stub.what());
  if (recording()) session::emit_observation({{"call", call}, {"not_written", state().end.stub}});
}

namespace {

// What a replayed "not written yet" throws: the same message as the stub's NotImplemented.
class ReplayedStub : public std::exception {
 public:
  explicit ReplayedStub(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// Ends a check in the judge; deliberately not a std::exception, so no check's catch can hold it.
struct Unobserved {};

}  // namespace

void unobserved(const std::string& why) {
  if (state().end.unobserved.empty()) state().end.unobserved = why;
  throw Unobserved{};
}

Replayed replay(const std::string& call) {
  Session& s = state();
  if (!s.end.unobserved.empty()) throw Unobserved{};
  if (s.current == nullptr || s.next >= s.current->size()) {
    if (s.end.stopped_during.empty()) s.end.stopped_during = call;
    unobserved("the check needed the result of " + call + ", and the program under test produced no more");
  }
  const json& record = (*s.current)[s.next++];
  if (!record.is_object() || !record.contains("call") || !record["call"].is_string())
    unobserved("a result of the program under test is malformed");
  if (record["call"].get<std::string>() != call)
    unobserved("the check needed the result of " + call + ", and the program under test produced one of " +
               clip(record["call"].get<std::string>()) + " instead");
  Replayed r;
  if (record.contains("not_written")) {
    const json& stub = record["not_written"];
    if (!stub.is_string() || stub.get<std::string>().rfind("not written yet: ", 0) != 0)
      unobserved("the result of " + call + " is malformed");
    s.end.stub = clip(stub.get<std::string>());
    s.end.stub_replayed = true;
    throw ReplayedStub(s.end.stub);
  }
  if (record.contains("error")) {
    const json& e = record["error"];
    if (!e.is_object() || !e.contains("kinds") || !e["kinds"].is_array() || !e.contains("message") ||
        !e["message"].is_string())
      unobserved("the error thrown by " + call + " is malformed");
    ErrorData error;
    for (const auto& k : e["kinds"]) {
      if (!k.is_string()) unobserved("the error thrown by " + call + " is malformed");
      error.kinds.push_back(k.get<std::string>());
    }
    error.message = clip(e["message"].get<std::string>());
    r.error = std::move(error);
    return r;
  }
  if (!record.contains("value")) unobserved("the result of " + call + " is malformed");
  try {
    r.value = decode(record["value"]);
  } catch (const Malformed& m) {
    unobserved("the result of " + call + " is not " + m.what);
  }
  return r;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------

namespace session {

namespace {
int speed_results = 1;
}  // namespace

void keep_speed_results_fd(int fd) { speed_results = fd; }
int speed_results_fd() { return speed_results; }

void open_channel(int fd) { state().fd = fd; }
bool channel_open() { return state().fd >= 0; }

namespace {

void write_line(const std::string& line) {
  Session& s = state();
  if (s.fd < 0) return;
  std::lock_guard lock(s.write);
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(s.fd, line.data() + written, line.size() - written);
    if (n <= 0) return;
    written += static_cast<std::size_t>(n);
  }
}

}  // namespace

void emit(nlohmann::json event) {
  write_line(event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void emit_observation(const nlohmann::json& record) {
  // A fixed prefix, so that the grader recognises an observation without parsing it.
  const std::string body = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  write_line(std::string(kObservationPrefix) + body.substr(1) + "\n");
}

std::optional<std::string> load_observations(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read " + path;
  const json j = json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("tests") || !j["tests"].is_object()) return path + " is not an observations file";
  Session& s = state();
  for (const auto& [test, records] : j["tests"].items()) {
    if (!records.is_array()) return path + ": the observations of " + test + " are not a list";
    s.observations[test] = records.get<std::vector<json>>();
  }
  s.judging = true;
  return std::nullopt;
}

void begin_check(const std::string& test) {
  Session& s = state();
  s.test = test;
  s.end = {};
  s.next = 0;
  s.current = nullptr;
  if (s.judging) {
    const auto found = s.observations.find(test);
    if (found != s.observations.end()) s.current = &found->second;
  }
}

void add_figure(nlohmann::json figure) { state().end.figures.push_back(std::move(figure)); }
void set_speed_context(std::string digest) { state().end.speed_context = std::move(digest); }

CheckEnd end_check(bool failed) {
  Session& s = state();
  // Results left over after a failure are the observed program going on past it (it cannot tell
  // a wrong result); after a pass they are results the check never asked for.
  if (s.judging && !failed && s.end.unobserved.empty() && s.end.stub.empty() && s.current &&
      s.next < s.current->size()) {
    s.end.unobserved = fmt::format("the program under test produced {} more result{} than the check asked for",
                                   s.current->size() - s.next, s.current->size() - s.next == 1 ? "" : "s");
  }
  CheckEnd end = s.end;
  s.end = {};
  s.current = nullptr;
  return end;
}

}  // namespace session

}  // namespace kiln::testing
