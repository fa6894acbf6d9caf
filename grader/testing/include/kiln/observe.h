// The boundary between student code and the checks.
//
// A check takes every value from student code through observe(): the call runs, and what it
// returned, or the error it threw, comes back as plain data (a TensorData, a number, a string, a
// list of those, or an ErrorData). The rest of the check (its inputs, the trusted expected values,
// the comparisons, the catalogued failures) works on that plain data and on trusted code only.
//
// One check source runs in three ways:
//   * `grader check`: observe() calls the student's code and the check judges in the same process;
//   * `grader grade`: the observed program (the checks built with KILN_OBSERVER, their judging
//     compiled out: kiln/testing.h), sandboxed, makes the same calls and streams each observation
//     to the grader; it computes no expected value, and nothing else it says is believed;
//   * the judge: the same checks linked with the untouched stubs and trusted code only. Here
//     observe() calls nothing: it returns the submission's next observation, in order, and this
//     run's verdict is the one that counts. A missing, extra, out-of-order or malformed
//     observation ends the check as "did not produce its result".
// So a check never reads a student object outside observe(): in the judge there is none. Inputs
// that a call may change are built inside its lambda, and nothing is read from them afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::testing {

// A tensor as plain data: its shape, strides and offset as the student's code left them, and its
// elements read through them in row-major order.
struct TensorData {
  Shape shape;
  Shape strides;
  std::int64_t offset = 0;
  std::vector<float> values;

  std::int64_t numel() const { return static_cast<std::int64_t>(values.size()); }
  // The element at a row-major index; throws std::out_of_range outside the shape.
  float at(const Shape& index) const;
  // A new contiguous tensor holding these values (for trusted code computing expected values).
  Tensor tensor() const;
};

// A trusted tensor (an input or an expected value) as plain data. Reads only through the shape,
// strides and offset, never through student code.
TensorData data_of(const Tensor& t);
// Plain data of a contiguous tensor: shape and row-major values.
TensorData data_of(Shape shape, std::vector<float> values);

// An error that student code threw, as plain data.
struct ErrorData {
  std::vector<std::string> kinds;  // its class and every base the grader knows, most derived first
  std::string message;

  bool is(std::string_view kind) const;
  // "kiln::ShapeError" (or "an unknown exception").
  std::string kind() const;
};

// What a call that returns nothing returns.
struct Nothing {
  bool operator==(const Nothing&) const = default;
};

// The one format every observation crosses the boundary in.
struct Value {
  enum class Kind { nothing, boolean, integer, real, text, tensor, list };
  Kind kind = Kind::nothing;
  bool boolean = false;
  std::int64_t integer = 0;
  double real = 0;
  std::string text;
  TensorData tensor;
  std::vector<Value> list;
};

// A result that student code produced but that is not plain data: a view that reads outside its
// own storage, a tensor too large to observe.
class InvalidResult : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

// Thrown while decoding an observation that has the wrong form for the type the check expects.
struct Malformed {
  std::string what;
};
[[noreturn]] void malformed(const std::string& what);
void expect_kind(const Value& v, Value::Kind kind, const char* name);

}  // namespace detail

// How a C++ type crosses the boundary: Plain<T>::type is the plain data a check receives for a
// call returning T; from() converts (in the process that ran the call), encode() and decode()
// carry it to the judge. A type without a Plain specialisation cannot be observed: convert it
// inside the lambda (to a tuple, a vector, a TensorData).
template <class T, class Enable = void>
struct Plain;

template <>
struct Plain<Nothing> {
  using type = Nothing;
  static Nothing from(Nothing v) { return v; }
  static Value encode(Nothing) { return {}; }
  static Nothing decode(const Value& v) {
    detail::expect_kind(v, Value::Kind::nothing, "nothing");
    return {};
  }
};

template <>
struct Plain<bool> {
  using type = bool;
  static bool from(bool v) { return v; }
  static Value encode(bool b) {
    Value v;
    v.kind = Value::Kind::boolean;
    v.boolean = b;
    return v;
  }
  static bool decode(const Value& v) {
    detail::expect_kind(v, Value::Kind::boolean, "true or false");
    return v.boolean;
  }
};

template <class T>
struct Plain<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  using type = std::int64_t;
  static std::int64_t from(T v) { return static_cast<std::int64_t>(v); }
  static Value encode(std::int64_t i) {
    Value v;
    v.kind = Value::Kind::integer;
    v.integer = i;
    return v;
  }
  static std::int64_t decode(const Value& v) {
    detail::expect_kind(v, Value::Kind::integer, "an integer");
    return v.integer;
  }
};

// Floating-point numbers keep their type: a float crosses as the float it was, bit for bit.
template <class T>
struct Plain<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  using type = T;
  static T from(T v) { return v; }
  static Value encode(T r) {
    Value v;
    v.kind = Value::Kind::real;
    v.real = static_cast<double>(r);
    return v;
  }
  static T decode(const Value& v) {
    detail::expect_kind(v, Value::Kind::real, "a number");
    return static_cast<T>(v.real);
  }
};

template <>
struct Plain<std::string> {
  using type = std::string;
  static std::string from(std::string v) { return v; }
  static Value encode(const std::string& s) {
    Value v;
    v.kind = Value::Kind::text;
    v.text = s;
    return v;
  }
  static std::string decode(const Value& v) {
    detail::expect_kind(v, Value::Kind::text, "a string");
    return v.text;
  }
};

template <>
struct Plain<TensorData> {
  using type = TensorData;
  static TensorData from(TensorData v) { return v; }
  static Value encode(const TensorData& t) {
    Value v;
    v.kind = Value::Kind::tensor;
    v.tensor = t;
    return v;
  }
  static TensorData decode(const Value& v) {
    detail::expect_kind(v, Value::Kind::tensor, "a tensor");
    return v.tensor;
  }
};

// A Tensor from student code: read through its own shape, strides and offset, with every position
// checked against its storage (InvalidResult otherwise).
template <>
struct Plain<Tensor> {
  using type = TensorData;
  static TensorData from(const Tensor& t);
  static Value encode(const TensorData& t) { return Plain<TensorData>::encode(t); }
  static TensorData decode(const Value& v) { return Plain<TensorData>::decode(v); }
};

// A list of floats crosses packed, as a one-dimensional tensor.
template <>
struct Plain<std::vector<float>> {
  using type = std::vector<float>;
  static std::vector<float> from(std::vector<float> v) { return v; }
  static Value encode(const std::vector<float>& values) {
    return Plain<TensorData>::encode(data_of({static_cast<std::int64_t>(values.size())}, values));
  }
  static std::vector<float> decode(const Value& v) {
    TensorData t = Plain<TensorData>::decode(v);
    if (t.shape.size() != 1) detail::malformed("a list of floats");
    return std::move(t.values);
  }
};

template <class T>
struct Plain<std::vector<T>, std::enable_if_t<!std::is_same_v<T, float>>> {
  using type = std::vector<typename Plain<T>::type>;
  static type from(const std::vector<T>& items) {
    type out;
    out.reserve(items.size());
    for (const auto& item : items) out.push_back(Plain<T>::from(item));
    return out;
  }
  static Value encode(const type& items) {
    Value v;
    v.kind = Value::Kind::list;
    for (const auto& item : items) v.list.push_back(Plain<T>::encode(item));
    return v;
  }
  static type decode(const Value& v) {
    detail::expect_kind(v, Value::Kind::list, "a list");
    type out;
    for (const auto& item : v.list) out.push_back(Plain<T>::decode(item));
    return out;
  }
};

template <class... T>
struct Plain<std::tuple<T...>> {
  using type = std::tuple<typename Plain<T>::type...>;
  static type from(const std::tuple<T...>& t) {
    return std::apply([](const auto&... item) { return type(Plain<std::decay_t<decltype(item)>>::from(item)...); }, t);
  }
  static Value encode(const type& t) {
    Value v;
    v.kind = Value::Kind::list;
    std::apply([&](const auto&... item) { (v.list.push_back(Plain<T>::encode(item)), ...); }, t);
    return v;
  }
  static type decode(const Value& v) {
    detail::expect_kind(v, Value::Kind::list, "a list");
    if (v.list.size() != sizeof...(T)) detail::malformed("a list of " + std::to_string(sizeof...(T)) + " values");
    return decode_items(v, std::index_sequence_for<T...>{});
  }

 private:
  template <std::size_t... I>
  static type decode_items(const Value& v, std::index_sequence<I...>) {
    return type(Plain<T>::decode(v.list[I])...);
  }
};

template <class A, class B>
struct Plain<std::pair<A, B>> {
  using type = std::pair<typename Plain<A>::type, typename Plain<B>::type>;
  static type from(const std::pair<A, B>& p) { return {Plain<A>::from(p.first), Plain<B>::from(p.second)}; }
  static Value encode(const type& p) {
    Value v;
    v.kind = Value::Kind::list;
    v.list = {Plain<A>::encode(p.first), Plain<B>::encode(p.second)};
    return v;
  }
  static type decode(const Value& v) {
    detail::expect_kind(v, Value::Kind::list, "a pair");
    if (v.list.size() != 2) detail::malformed("a pair");
    return {Plain<A>::decode(v.list[0]), Plain<B>::decode(v.list[1])};
  }
};

// One observation: the call (as the report names it), and its value or its error.
template <class T>
class Observed {
 public:
  Observed(std::string call, T value) : call_(std::move(call)), value_(std::move(value)) {}
  Observed(std::string call, ErrorData error) : call_(std::move(call)), error_(std::move(error)) {}

  const std::string& call() const { return call_; }
  // Whether the call returned (rather than threw).
  bool ok() const { return value_.has_value(); }
  // The value; a check looks at ok() first (a logic_error otherwise, which fails the check).
  const T& value() const {
    if (!value_) throw std::logic_error("the check read the value of " + call_ + ", which threw");
    return *value_;
  }
  const T& operator*() const { return value(); }
  const T* operator->() const { return &value(); }
  const ErrorData& error() const { return error_; }
  // "x.reshape({4}) threw kiln::ShapeError: ..." for a report's detail line.
  std::string describe_error() const { return call_ + " threw " + error_.kind() + ": " + error_.message; }

 private:
  std::string call_;
  std::optional<T> value_;
  ErrorData error_;
};

namespace detail {

bool recording();
bool judging();
// The process that ran the call: sends the observation to the grader when it listens.
void record(const std::string& call, const Value* value, const ErrorData* error);
// Records an unwritten stub's NotImplemented (then rethrown: the check reads "not written yet").
void record_not_written(const std::string& call, const std::exception& stub);
// The judge: the next observation, which must be of `call`. Throws a stub's NotImplemented for a
// "not written yet" observation, and ends the check as "did not produce its result" otherwise.
struct Replayed {
  std::optional<Value> value;
  std::optional<ErrorData> error;
};
Replayed replay(const std::string& call);
[[noreturn]] void unobserved(const std::string& why);
// Says which call is about to run, when the grader listens: a crash, hang or exit before its
// result then names it in `grader check`'s report (the judge names it itself when it replays).
void calling(const std::string& call);
// Forgets where earlier exceptions were thrown, before a call is observed: an exception that
// does not pass through this program's throws (one libstdc++ throws itself) may reuse an earlier
// one's memory, and must not be placed where that one was thrown.
void forget_throws();
// The error being handled, as plain data.
ErrorData current_error();
bool is_stub(const std::exception& error);

}  // namespace detail

// Runs `call` (a lambda around one use of student code) and returns what it produced as plain
// data. `what` names the call in reports: "x.reshape({3, 2})".
template <class F>
auto observe(std::string what, F&& call) {
  using R = std::decay_t<std::invoke_result_t<F&>>;
  using P = Plain<std::conditional_t<std::is_void_v<R>, Nothing, R>>;
  using T = typename P::type;
  if (detail::judging()) {
    detail::Replayed r = detail::replay(what);
    if (r.error) return Observed<T>(std::move(what), std::move(*r.error));
    try {
      return Observed<T>(std::move(what), P::decode(*r.value));
    } catch (const detail::Malformed& m) {
      detail::unobserved("the result of " + what + " is not " + m.what);
    }
  }
  std::optional<T> value;
  ErrorData error;
  detail::calling(what);
  detail::forget_throws();
  try {
    if constexpr (std::is_void_v<R>) {
      call();
      value = Nothing{};
    } else {
      value = P::from(call());
    }
  } catch (const std::exception& e) {
    if (detail::is_stub(e)) {
      detail::record_not_written(what, e);
      throw;
    }
    error = detail::current_error();
  } catch (...) {
    error = detail::current_error();
  }
  if (detail::recording()) {
    if (value) {
      const Value encoded = P::encode(*value);
      detail::record(what, &encoded, nullptr);
    } else {
      detail::record(what, nullptr, &error);
    }
  }
  if (value) return Observed<T>(std::move(what), std::move(*value));
  return Observed<T>(std::move(what), std::move(error));
}

// The error kinds an observation can name. kiln::ShapeError, kiln::IndexError, InvalidResult and
// the standard exceptions are known; a module whose code throws its own error class registers it
// (KILN_OBSERVABLE_ERROR in its tests) so that checks can expect it by type.
void register_error_kind(std::string name, std::string parent, std::type_index type,
                         bool (*matches)(const std::exception_ptr&));
// The registered name of E ("kiln::ShapeError"); a logic_error names E when it is unknown.
std::string error_kind_name(std::type_index type);
template <class E>
std::string error_kind_name() {
  return error_kind_name(std::type_index(typeid(E)));
}

namespace detail {
template <class E>
bool matches(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const E&) {
    return true;
  } catch (...) {
    return false;
  }
}
template <class E>
struct ErrorKindRegistration {
  ErrorKindRegistration(const char* name, const char* parent) {
    register_error_kind(name, parent, std::type_index(typeid(E)), &matches<E>);
  }
};
}  // namespace detail

}  // namespace kiln::testing

// observe() with the expression itself as the call's name: KILN_OBSERVE(x.reshape({3, 2})).
#define KILN_OBSERVE(...) ::kiln::testing::observe(#__VA_ARGS__, [&] { return (__VA_ARGS__); })

// Makes a module's own error class observable by type: KILN_OBSERVABLE_ERROR(kiln::FormatError,
// std::runtime_error) at namespace scope in the module's tests.
#define KILN_OBSERVABLE_ERROR_CAT2(a, b) a##b
#define KILN_OBSERVABLE_ERROR_CAT(a, b) KILN_OBSERVABLE_ERROR_CAT2(a, b)
#define KILN_OBSERVABLE_ERROR(type, parent)                                                              \
  static const ::kiln::testing::detail::ErrorKindRegistration<type> KILN_OBSERVABLE_ERROR_CAT(          \
      kiln_error_kind_, __LINE__)(#type, #parent)
