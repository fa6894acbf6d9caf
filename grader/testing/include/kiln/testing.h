// Test support for module tests: observing student code (kiln/observe.h), inputs no submission
// can predict, and judging what was observed.
//
// Every check reports its failures by the id of a failure catalogued in its module.yaml. The
// message text lives only there: the test names the id and passes the values that fill the
// message's {placeholders}; the grader renders message and hint. Include this header in tests
// only; it pulls in GoogleTest.
//
// A check in three steps:
//   const Tensor x = random_tensor({2, 3}, 1);                    // inputs: trusted code
//   const auto y = KILN_OBSERVE(x.reshape({3, 2}));                // student code: observed
//   KILN_EXPECT_CLOSE(y, data_of({3, 2}, x_values), 0, "reshape_wrong_values");  // judged
//
// The observed program and the judge. Every check source is compiled twice:
//   * as the judge (and for `grader check`, which observes and judges in one process), whole;
//   * as the observed program that `grader grade` runs sandboxed on a submission, with
//     KILN_OBSERVER defined: every judging step is compiled out, so that program holds no expected
//     value, no trusted reference and no comparison. It only draws the inputs and streams what
//     student code returned; the judge, outside, draws the same inputs from the seed and decides.
// So whatever computes an expected value or compares goes inside KILN_JUDGE { ... } (or in a
// KILN_EXPECT_* macro, which is judging by itself), and a value the observed program must not hold
// is never computed outside it. A trusted lambda a check hands on (a speed check's judge) is
// wrapped in KILN_JUDGE_ONLY(...). `grader verify` lists the observed program's symbols and fails
// on any trusted helper; its link fails on any judging function of this library.
#pragma once

#include <gtest/gtest.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "kiln/observe.h"
#include "kiln/tensor.h"

namespace kiln::testing {

// Whether this translation unit judges (false in the observed program: KILN_OBSERVER).
#ifdef KILN_OBSERVER
inline constexpr bool kJudging = false;
#else
inline constexpr bool kJudging = true;
#endif

// ---------------------------------------------------------------------------------------------
// Inputs

// The run's seed: fixed for `grader check` (a failure is reproducible), secret and fresh for each
// `grader grade` (KILN_SEED), so that no submission can know its inputs before it runs.
std::uint64_t run_seed();

// A trusted generator (SplitMix64), independent of the student's WichmannHill, whose stream is
// decided by the run's seed and `stream`.
class Generator {
 public:
  explicit Generator(std::uint64_t stream);
  std::uint64_t next();
  double uniform();                         // in [0, 1)
  float uniform(float low, float high);     // in [low, high)
  std::int64_t below(std::int64_t bound);   // in [0, bound)

 private:
  std::uint64_t state_;
};

// Values uniform in [low, high), in row-major order, from Generator(stream).
Tensor random_tensor(const Shape& shape, std::uint64_t stream, float low = -1.0f, float high = 1.0f);
// Values uniform in [low, high) to 24 bits, each one a hash of the run's seed, `stream` and its
// index rather than the next value of a chain, so drawing them vectorizes: several times cheaper
// than random_tensor, for a speed check's large inputs, which every timed and empty run draws
// again (their cost is what the empty run subtracts, and its noise the ratio's).
Tensor hashed_random_tensor(const Shape& shape, std::uint64_t stream, float low = -1.0f, float high = 1.0f);
// count integers in [0, bound), or in [low, high), from Generator(stream).
std::vector<std::int64_t> random_ints(std::size_t count, std::int64_t bound, std::uint64_t stream);
std::vector<std::int64_t> random_ints(std::size_t count, std::int64_t low, std::int64_t high, std::uint64_t stream);

// `values` as a contiguous view at an offset, built by trusted code: one storage holds `before`
// floats drawn from Generator(stream) in [-8, 8), then the values in row-major order, then 3 more
// such floats; the view has the values' shape, contiguous strides and offset `before`. Its
// contiguous() is the view itself, so code that reads it from storage_data() (the floats before
// it) or ignores offset() reads other numbers: the input for "a tensor may be a view at an offset".
Tensor at_offset(const TensorData& values, std::uint64_t stream, std::int64_t before = 5);

// ---------------------------------------------------------------------------------------------
// Names: how a call's name and a message write numbers (both the observed program and the judge)

// A number as the catalogue shows it: three significant digits.
std::string format_number(double value);
// Two numbers that differ by `difference`, with enough digits that they visibly differ.
std::pair<std::string, std::string> format_pair(double a, double b);

// A list of numbers, "[1, 2.5, 3]", at most `limit` of them.
std::string list(const std::vector<float>& values, std::size_t limit = 12);

// A count with its noun, read right for 1: counted(1, "step") is "1 step", counted(3, "step")
// "3 steps"; `nouns` is the plural where it is not the noun + "s" (counted(2, "entry", "entries")).
// Any integer type; a negative count (one a student's code returned) is written as it is,
// "-8 bytes", never wrapped round to a huge unsigned number.
std::string counted_text(const std::string& number, bool one, const std::string& noun,
                         const std::string& nouns);
template <std::integral Count>
  requires(!std::same_as<Count, bool>)
std::string counted(Count count, const std::string& noun, const std::string& nouns = "") {
  return counted_text(std::to_string(count), count == 1, noun, nouns);
}

// ---------------------------------------------------------------------------------------------
// Trusted references

// Σ y ⊙ weights, accumulated in double.
double weighted_sum(const TensorData& y, const TensorData& weights);

// The product of (n, k) and (k, m) matrices by three plain loops summed in double.
TensorData reference_matmul(const TensorData& a, const TensorData& b);
TensorData reference_matmul(const Tensor& a, const Tensor& b);

// d/d(values[i]) of Σ weights ⊙ f(values), by central differences with step eps, each side summed
// in double. f is trusted code (never the student's).
TensorData numeric_gradient(const std::function<TensorData(const std::vector<TensorData>&)>& f,
                            const std::vector<TensorData>& values, std::size_t i, const TensorData& weights,
                            float eps = 1e-2f);

// ---------------------------------------------------------------------------------------------
// Judging

// Values for a catalogued message's {placeholders}, e.g. {{"difference", "0.5"}}.
using Params = std::vector<std::pair<std::string, std::string>>;

// Records a failure of the running check under the catalogued failure_id. `detail` is shown
// beneath the catalogued message (what was expected, what came back).
void report_failure(const char* file, int line, std::string_view failure_id, const Params& params = {},
                    std::string_view detail = {});

// Result of comparing two tensors element by element.
struct Comparison {
  bool shapes_match = true;
  bool close = true;
  double max_abs_diff = 0.0;  // the largest |actual - expected|
  Shape where;                // the index where it occurred
  float actual_value = 0.0f;
  float expected_value = 0.0f;
  // "largest difference 0.5 at [1, 2]: got 3, expected 2.5", or the two shapes.
  std::string describe() const;
};

// Compares with the tolerance atol + rtol·|expected| per element. NaN never counts as close.
Comparison compare(const TensorData& actual, const TensorData& expected, double atol, double rtol = 0.0);

// A message's {difference} and {where} when no element could be compared: the call threw ("by up
// to an unknown amount (the call threw) at any element"), or the shapes differ ("by up to inf at
// every element: the shape is (2, 3), expected (3, 2)").
inline constexpr const char* kThrewDifference = "an unknown amount (the call threw)";
inline constexpr const char* kThrewWhere = "any element";
std::string shapes_where(const Shape& got, const Shape& expected);


// Reports failure_id (params: difference, where) unless the observation is a tensor within
// tolerance of expected. An error the call threw is reported under the same id, naming the call.
// `extra` fills the message's other placeholders ({function}, {spec}, ...).
bool expect_close(const char* file, int line, const Observed<TensorData>& actual, const TensorData& expected,
                  double atol, std::string_view failure_id, double rtol = 0.0, const Params& extra = {});
bool expect_close(const char* file, int line, const Observed<TensorData>& actual, const Tensor& expected,
                  double atol, std::string_view failure_id, double rtol = 0.0, const Params& extra = {});

// A view at an offset: an offset failure only for a result that depends on the offset.
//
// `viewed` is a call on inputs that are views at an offset (at_offset), `fresh` the same call on
// fresh contiguous tensors holding the same values. offset_changes says whether the result depends
// on where the inputs sit: only one of the two threw, or `same` says their results differ.
template <class T, class Same>
bool offset_changes(const Observed<T>& viewed, const Observed<T>& fresh, Same same) {
  if (viewed.ok() != fresh.ok()) return true;
  return viewed.ok() && !same(*viewed, *fresh);
}
// The detail of an offset failure whose result is not a tensor: "<the views' call> gave
// <show(value)>, where <the fresh call> gave <show(value)>", "threw <kind>: <message>" for a call
// that threw. The two may be of different types where `show` takes both.
template <class V, class F, class Show>
std::string offset_detail(const Observed<V>& viewed, const Observed<F>& fresh, Show show) {
  const auto told = [&](const auto& o) { return o.ok() ? o.call() + " gave " + show(*o) : o.describe_error(); };
  return told(viewed) + ", where " + told(fresh);
}
// Judges such a pair of tensors so that a mistake that has nothing to do with offsets is named as
// what it is. Where both are within tolerance of `expected`: right. Otherwise, where the two
// differ by more than atol + rtol·|fresh| (NaN in both at one element is agreement), or only one
// threw: offset_id (the views' result shown against the trusted values, or against the fresh
// result where the views' is right). Where they agree: the fresh result judged against
// `expected` under general_id, the function's wrong-value failure (both threw: general_id,
// quoting the error), or not judged at all when general_id is empty (a value another check owns). Returns false where it reported a
// failure or a call threw; true where the results agree and are right (or, with general_id
// empty, simply agree).
bool expect_same_at_offset(const char* file, int line, const Observed<TensorData>& fresh,
                           const Observed<TensorData>& viewed, const TensorData& expected, double atol, double rtol,
                           std::string_view general_id, std::string_view offset_id, const Params& extra = {});

// Reports failure_id, naming the call and its error, when the call threw. Returns whether it
// returned a value.
template <class T>
bool expect_ok(const char* file, int line, const Observed<T>& observed, std::string_view failure_id,
               const Params& params = {}) {
  if (observed.ok()) return true;
  // A message that quotes a difference has none to quote: the call threw instead.
  Params filled = params;
  for (const auto& [key, value] : {std::pair<const char*, const char*>{"difference", kThrewDifference},
                                   {"where", kThrewWhere}}) {
    bool given = false;
    for (const auto& p : params) given = given || p.first == key;
    if (!given) filled.emplace_back(key, value);
  }
  report_failure(file, line, failure_id, filled, "unexpected error: " + observed.describe_error());
  return false;
}

// The call must have thrown E (or a class derived from it). An unwritten stub never gets here:
// its NotImplemented ends the check as "not written yet". Every string in must_mention has to
// appear in the error message (for example both shapes).
void expect_error(const char* file, int line, const ErrorData* error, const std::string& call,
                  const std::string& expected_kind, std::string_view failure_id,
                  const std::vector<std::string>& must_mention, const Params& extra = {});
template <class E, class T>
void expect_throws(const char* file, int line, const Observed<T>& observed, std::string_view failure_id,
                   const std::vector<std::string>& must_mention = {}, const Params& extra = {}) {
  expect_error(file, line, observed.ok() ? nullptr : &observed.error(), observed.call(), error_kind_name<E>(),
               failure_id, must_mention, extra);
}

// ---------------------------------------------------------------------------------------------
// A result of its own

// An input of a call whose result must be a tensor of its own: its name in the report ("x", "g")
// and its values.
struct NamedInput {
  std::string name;
  TensorData values;
};

// Observes `call` on fresh contiguous tensors built from `inputs` (for a contiguous tensor,
// contiguous() is the tensor itself, so a result computed in its data() is computed in the
// caller's input), then each input as it is after the call, and whether the result shares the
// storage of one of them. Reports failure_id unless every input kept its values and the result
// has storage of its own; returns whether it did. `call` is "sigmoid_backward(y, g)", say.
template <class Call>
bool check_new_tensor(const char* file, int line, const std::string& call, const std::vector<NamedInput>& inputs,
                      Call compute, const std::string& failure_id) {
  const auto run = [&] {
    std::vector<Tensor> given;
    for (const NamedInput& in : inputs) given.push_back(in.values.tensor());
    const Tensor result = compute(given);
    bool shared = false;
    for (const Tensor& t : given) shared = shared || result.storage_data() == t.storage_data();
    return std::tuple<std::vector<Tensor>, bool>{given, shared};
  };
  const auto seen =
      observe(call + " on contiguous inputs, then its inputs, and whether the result shares their storage", run);
  if constexpr (!kJudging) {
    return seen.ok();  // the observed program stops where the judge does
  } else {
    if (!expect_ok(file, line, seen, failure_id)) return false;
    const auto& [after, shared] = *seen;
    std::string what;
    for (std::size_t i = 0; i < inputs.size() && i < after.size(); ++i) {
      if (after[i].shape == inputs[i].values.shape && after[i].values == inputs[i].values.values) continue;
      what += (what.empty() ? "" : ", ") + inputs[i].name + " became " + list(after[i].values);
    }
    if (after.size() != inputs.size()) what = "the inputs could not be read back";
    if (shared) what += std::string(what.empty() ? "" : ", and ") + "the result shares the storage of an input";
    if (!what.empty()) {
      report_failure(file, line, failure_id, {}, call + ": " + what);
      return false;
    }
    return true;
  }
}

// ---------------------------------------------------------------------------------------------
// Speed-graded checks
//
// A check whose points also depend on speed (`speed:` in module.yaml) names its kernel with three
// pieces of trusted code: fresh inputs for a stream number (drawn from the run's seed), the call
// of the student's kernel on them, and a judge that says what is wrong with a result ("" when it
// is right). In a check run the kernel is observed three times and every result judged:
//   1. on fresh inputs;
//   2. on the same tensors after their values were overwritten in place: a kernel that keeps its
//      last result for inputs it has seen before (by address, by shape) returns a stale answer;
//   3. on new tensors with new values.
// A wrong result reports failure_id, filling {which} (which of the three) and {problem} (what the
// judge found, which should begin with the size: "for (67 × 45) · (45 × 83): element [0, 0] is
// ..."; "it threw" when the call threw, and the reason in a timed run). One speed check a test. The observed calls may use smaller inputs than the timed ones (check_inputs). Its speed is measured afterwards by the grader, out of process: the same test
// program, run with KILN_SPEED_CALLS=K, calls the kernel on K fresh inputs of the round
// KILN_SPEED_ROUND and writes the results, unjudged, to standard output; run with
// KILN_SPEED_VERIFY=FILE, the judge's program reads those results back and judges each.
struct SpeedKernel {
  std::string name;  // the call as the report names it: "tiled_matmul(a, b, 64) of (512 × 512) · (512 × 512)"
  std::function<std::vector<Tensor>(std::uint64_t stream)> inputs;  // the timed size
  // Inputs for the three observed calls, when they should be smaller than the timed ones (the
  // check run is built with the sanitizers, and judged twice); empty: `inputs`.
  std::function<std::vector<Tensor>(std::uint64_t stream)> check_inputs;
  std::function<Tensor(const std::vector<Tensor>& inputs)> call;  // student code: the kernel
  std::function<std::string(const std::vector<Tensor>& inputs, const TensorData& result)> judge;
  // Optional: what the submission's kernel works from besides its inputs (the capstone's model,
  // as its bytes), named for the report. It is observed once in a check run and once in every
  // timed run, and the judge gets it as its last input. A timed run whose context differs from
  // the checked run's does not count: the grader compares the two.
  std::function<Tensor()> context;
  std::string context_name;  // "capstone_model_bytes()"
};

void speed_check(const char* file, int line, const SpeedKernel& kernel, std::string_view failure_id);
// The observed program's side of speed_check: the same calls observed (or a timed run), nothing judged.
void speed_observe(const SpeedKernel& kernel);

// Records that this check judged `context` (observed from student code, such as a model's bytes).
// Every check of a module that notes a context, and every speed check's context, must be the
// same: the grader fails the speed checks otherwise, so that one thing is judged and timed.
void note_context(const TensorData& context);

// A figure the check measured with trusted code (a model's accuracy, its size), for the report
// and for Gradescope's leaderboard. In `grade` only the judge's figures count.
void report_figure(std::string_view name, double value, std::string_view unit, bool higher_is_better);

}  // namespace kiln::testing

// check_new_tensor(call, inputs, compute, failure_id) at the caller's file and line.
#define KILN_CHECK_NEW_TENSOR(...) ::kiln::testing::check_new_tensor(__FILE__, __LINE__, __VA_ARGS__)

// KILN_JUDGE { ... }: the judging part of a check (expected values, comparisons, failures). It is
// compiled out of the observed program; control flow must not depend on it except by returning.
#define KILN_JUDGE if constexpr (::kiln::testing::kJudging)
// KILN_JUDGE_ONLY(expression): the expression in the judge, an empty value ({}) in the observed
// program. For trusted code a check hands on, such as a SpeedKernel's judge lambda.
#ifdef KILN_OBSERVER
#define KILN_JUDGE_ONLY(...) \
  {}
#else
#define KILN_JUDGE_ONLY(...) __VA_ARGS__
#endif

// Records catalogued failure `id`; optional Params, then optional detail text.
#define KILN_FAIL(id, ...)                                                           \
  do {                                                                               \
    KILN_JUDGE ::kiln::testing::report_failure(__FILE__, __LINE__, id, ##__VA_ARGS__); \
  } while (0)

// Records catalogued failure `id` unless cond holds. cond is computed from observations.
#define KILN_EXPECT(cond, id, ...)                                                       \
  do {                                                                                   \
    KILN_JUDGE if (!(cond)) ::kiln::testing::report_failure(__FILE__, __LINE__, id, ##__VA_ARGS__); \
  } while (0)

// A speed-graded check (speed_check); in the observed program, speed_observe.
#ifdef KILN_OBSERVER
#define KILN_SPEED_CHECK(kernel, failure_id) ::kiln::testing::speed_observe(kernel)
#else
#define KILN_SPEED_CHECK(kernel, failure_id) ::kiln::testing::speed_check(__FILE__, __LINE__, kernel, failure_id)
#endif

// Records `id` with {difference} and {where} unless the observed tensor is within tolerance of
// expected (a TensorData or a trusted Tensor). In the observed program: whether the call returned.
#ifdef KILN_OBSERVER
#define KILN_EXPECT_CLOSE(observed, expected, tolerance, id) (observed).ok()
#define KILN_EXPECT_CLOSE_REL(observed, expected, atol, rtol, id, ...) (observed).ok()
#else
#define KILN_EXPECT_CLOSE(observed, expected, tolerance, id) \
  ::kiln::testing::expect_close(__FILE__, __LINE__, (observed), (expected), (tolerance), id)
// The same with the tolerance atol + rtol·|expected| per element, and optional Params.
#define KILN_EXPECT_CLOSE_REL(observed, expected, atol, rtol, id, ...) \
  ::kiln::testing::expect_close(__FILE__, __LINE__, (observed), (expected), (atol), id, (rtol), ##__VA_ARGS__)
#endif

// expect_same_at_offset at the caller's file and line, with optional Params. In the observed
// program: whether both calls returned.
#ifdef KILN_OBSERVER
#define KILN_EXPECT_SAME_AT_OFFSET(fresh, viewed, expected, atol, rtol, general_id, offset_id, ...) \
  ((fresh).ok() && (viewed).ok())
#else
#define KILN_EXPECT_SAME_AT_OFFSET(fresh, viewed, expected, atol, rtol, general_id, offset_id, ...)          \
  ::kiln::testing::expect_same_at_offset(__FILE__, __LINE__, (fresh), (viewed), (expected), (atol), (rtol), \
                                         general_id, offset_id, ##__VA_ARGS__)
#endif

// Records `id` (naming the call and its error) when the observed call threw; true otherwise. In
// the observed program it only answers, so that both stop at the same place.
#ifdef KILN_OBSERVER
#define KILN_EXPECT_OK(observed, id, ...) (observed).ok()
#else
#define KILN_EXPECT_OK(observed, id, ...) ::kiln::testing::expect_ok(__FILE__, __LINE__, (observed), id, ##__VA_ARGS__)
#endif

// Observes statement, and records `id` unless it threw exception_type; optional list of strings
// the message must contain. A stub's NotImplemented ends the check as "not written yet".
#ifdef KILN_OBSERVER
#define KILN_EXPECT_THROWS(statement, exception_type, id, ...) \
  (void)::kiln::testing::observe(#statement, [&] { (void)(statement); })
#else
#define KILN_EXPECT_THROWS(statement, exception_type, id, ...)                                             \
  ::kiln::testing::expect_throws<exception_type>(                                                          \
      __FILE__, __LINE__, ::kiln::testing::observe(#statement, [&] { (void)(statement); }), id, ##__VA_ARGS__)
#endif
