// The boundary (kiln/observe.h): what a test program records is exactly what the judge replays,
// and anything that does not fit the check ends it as "did not produce its result".
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <locale>
#include <string>
#include <vector>

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../../grader/testing/src/session.h"
#include "kiln/protocol.h"
#include "kiln/testing.h"

namespace kiln::testing {
namespace {

// Every event written to the channel, one JSON object a line.
std::vector<nlohmann::json> events_of(int fd) {
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  std::vector<nlohmann::json> out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(nlohmann::json::parse(text.substr(start, nl - start)));
  return out;
}

// Everything recorded through the channel, one JSON object per observation.
std::vector<nlohmann::json> drain(int fd) {
  std::vector<nlohmann::json> out;
  for (auto& j : events_of(fd)) {
    if (j.value("event", "") != "observe") continue;
    j.erase("event");
    out.push_back(j);
  }
  return out;
}

// Every "thrown" event on the channel: the call and the frames it names.
std::vector<nlohmann::json> thrown_events(int fd) {
  std::vector<nlohmann::json> out;
  for (auto& j : events_of(fd))
    if (j.value("event", "") == "thrown") out.push_back(j);
  return out;
}

// Every throw is placed where it was thrown, also an error libstdc++ throws from its std::__throw_*
// functions (vector::at's out_of_range), which the program passes through its own throws; one
// thrown inside libstdc++.so itself (a locale that does not exist) has no place, and never takes
// that of a throw before it, whose memory it may reuse. (First in the file: the test below
// leaves the session judging.)
TEST(Observe, AThrowIsPlacedWhereItWasThrownAlsoInTheStandardLibrary) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  session::open_channel(pipe_fds[1]);
  session::begin_check("T.Thrown");
  const auto ours = observe("ours", []() -> int { throw ShapeError("shapes (2) and (3)"); });
  const auto library = observe("library", [] {
    const std::vector<int> none;
    return none.at(3);
  });
  // Thrown inside libstdc++.so itself, where nothing notes it: no place, never an earlier throw's.
  const auto inside = observe("inside", [] { return std::locale("no-such-locale").name(); });
  session::end_check(false);
  session::open_channel(-1);
  close(pipe_fds[1]);
  ASSERT_FALSE(ours.ok());
  ASSERT_FALSE(library.ok());
  ASSERT_FALSE(inside.ok());
  // The same exception and message as libstdc++'s own.
  EXPECT_EQ(library.error().kind(), "std::out_of_range");
  EXPECT_NE(library.error().message.find("(which is 3) >= this->size() (which is 0)"), std::string::npos)
      << library.error().message;
  const auto events = thrown_events(pipe_fds[0]);
  close(pipe_fds[0]);
  ASSERT_EQ(events.size(), 2u) << nlohmann::json(events).dump();
  EXPECT_EQ(events[0]["call"], "ours");
  EXPECT_EQ(events[1]["call"], "library");
  EXPECT_FALSE(events[0]["at"].empty());
  EXPECT_FALSE(events[1]["at"].empty());
  EXPECT_NE(events[0]["at"], events[1]["at"]);
}

// One process records, then judges: session state is global, so the order is fixed.
TEST(Observe, WhatIsRecordedIsWhatTheJudgeReplaysAndNothingElseIsAccepted) {
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  session::open_channel(pipe_fds[1]);
  session::begin_check("T.Recorded");

  const Tensor storage({2, 3}, {1, std::numeric_limits<float>::quiet_NaN(), 3, -0.0f, 5, 6});
  const auto view = observe("transpose", [&] { return make_view(storage, {3, 2}, {1, 3}, 0); });
  const auto number = observe("inf", [] { return -std::numeric_limits<double>::infinity(); });
  const auto count = observe("count", [] { return std::int64_t{-7}; });
  const auto words = observe("words", [] { return std::string("a \"quoted\"\nline"); });
  const auto many = observe("pair", [&] { return std::make_tuple(storage, std::vector<float>{0.1f}, true); });
  const auto thrown = observe("throws", []() -> int { throw ShapeError("shapes (2) and (3)"); });
  const auto outside = observe("outside", [&] { return make_view(storage, {4}, {2}, 0); });
  session::end_check(false);
  close(pipe_fds[1]);

  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->shape, Shape({3, 2}));
  EXPECT_EQ(view->strides, Shape({1, 3}));
  EXPECT_EQ(view->values[0], 1.0f);
  EXPECT_TRUE(std::isnan(view->values[2]));
  ASSERT_FALSE(thrown.ok());
  EXPECT_EQ(thrown.error().kinds,
            (std::vector<std::string>{"kiln::ShapeError", "std::invalid_argument", "std::logic_error", "std::exception"}));
  ASSERT_FALSE(outside.ok()) << "a view past its storage is not plain data";
  EXPECT_TRUE(outside.error().is("kiln::testing::InvalidResult")) << outside.error().message;

  const auto records = drain(pipe_fds[0]);
  ASSERT_EQ(records.size(), 7u);
  const std::string file = ::testing::TempDir() + "observations.json";
  nlohmann::json tests = {{"T.Replayed", records}, {"T.Short", {records[0]}},
                          {"T.Renamed", {records[0]}}, {"T.Broken", {records[0]}}};
  tests["T.Broken"][0]["value"]["f32"] = "AAAA";  // 3 bytes for 6 floats
  std::ofstream(file) << nlohmann::json{{"tests", tests}}.dump();
  ASSERT_FALSE(session::load_observations(file).has_value());

  // Replayed: the same values, bit for bit, and no lambda runs.
  session::begin_check("T.Replayed");
  auto never = [] {
    ADD_FAILURE() << "the judge must not call anything";
    return 0;
  };
  const auto v2 = observe("transpose", [&] { return never(), Tensor(); });
  const auto n2 = observe("inf", [&] { return never(), 0.0; });
  const auto c2 = observe("count", [&] { return never(), std::int64_t{0}; });
  const auto w2 = observe("words", [&] { return never(), std::string(); });
  const auto m2 = observe("pair", [&] { return never(), std::make_tuple(Tensor(), std::vector<float>{}, false); });
  const auto t2 = observe("throws", [&] { return never(); });
  const auto o2 = observe("outside", [&] { return never(), Tensor(); });
  EXPECT_TRUE(session::end_check(false).unobserved.empty());
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->shape, view->shape);
  EXPECT_EQ(v2->strides, view->strides);
  EXPECT_EQ(std::memcmp(v2->values.data(), view->values.data(), 6 * sizeof(float)), 0);
  EXPECT_EQ(*n2, *number);
  EXPECT_EQ(*c2, *count);
  EXPECT_EQ(*w2, *words);
  EXPECT_EQ(std::get<1>(*m2), std::vector<float>{0.1f});
  EXPECT_TRUE(std::get<2>(*m2));
  EXPECT_EQ(t2.error().kinds, thrown.error().kinds);
  EXPECT_EQ(t2.error().message, "shapes (2) and (3)");
  EXPECT_FALSE(o2.ok());

  // Fewer observations than the check needs, a different call, a malformed value, one too many.
  for (const char* test : {"T.Short", "T.Renamed", "T.Broken"}) {
    session::begin_check(test);
    bool ended = false;
    try {
      if (std::string(test) == "T.Renamed") observe("something else", [] { return 0; });
      else observe("transpose", [] { return Tensor(); }), observe("transpose", [] { return Tensor(); });
    } catch (...) {
      ended = true;  // not a std::exception: no check's catch holds it
    }
    EXPECT_TRUE(ended) << test;
    EXPECT_FALSE(session::end_check(false).unobserved.empty()) << test;
  }
  session::begin_check("T.Replayed");
  observe("transpose", [] { return Tensor(); });
  const auto extra = session::end_check(false);
  EXPECT_NE(extra.unobserved.find("6 more results"), std::string::npos) << extra.unobserved;
  // After a failure, results left over are the observed program going on past it: not held against it.
  session::begin_check("T.Replayed");
  observe("transpose", [] { return Tensor(); });
  EXPECT_TRUE(session::end_check(true).unobserved.empty());
}

// check -v: a failing comparison shows the whole tensors, small ones inline as numpy prints them,
// larger ones in files it names.
TEST(ExpectClose, UnderVerboseShowsTheWholeTensors) {
  const std::string folder = ::testing::TempDir() + "kiln-tensors-" + std::to_string(::getpid());
  ::setenv(kiln::protocol::kTensors, folder.c_str(), 1);
  auto failure_of = [](const Observed<TensorData>& got, const TensorData& expected) {
    ::testing::TestPartResultArray failures;
    {
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      expect_close("f.cpp", 1, got, expected, 1e-6, "wrong");
    }
    return failures.size() == 1 ? std::string(failures.GetTestPartResult(0).message()) : std::string();
  };
  const std::string small = failure_of(Observed<TensorData>("f(x)", data_of({2, 2}, {1, 2, 3, 4.5f})),
                                       data_of({2, 2}, {1, 2, 3, 4}));
  EXPECT_NE(small.find("got = [[1, 2], [3, 4.5]], expected = [[1, 2], [3, 4]]"), std::string::npos) << small;
  const std::string large = failure_of(Observed<TensorData>("f(x)", data_of({10, 10}, std::vector<float>(100, 1))),
                                       data_of({10, 10}, std::vector<float>(100, 2)));
  const auto at = large.find("the whole tensors: ");
  ASSERT_NE(at, std::string::npos) << large;
  std::ifstream got(large.substr(at + 19, large.find(" and ", at) - at - 19));
  std::string header, first_row;
  std::getline(got, header);
  std::getline(got, first_row);
  EXPECT_EQ(header, "# shape (10, 10)");
  EXPECT_EQ(first_row, "[[1, 1, 1, 1, 1, 1, 1, 1, 1, 1],");
  ::unsetenv(kiln::protocol::kTensors);
  // Without -v, nothing of the kind.
  EXPECT_EQ(failure_of(Observed<TensorData>("f(x)", data_of({1}, {1})), data_of({1}, {2})).find("got ="),
            std::string::npos);
  std::filesystem::remove_all(folder);
}

// A view at an offset is blamed only for a result that depends on the offset: a result the same
// call gives on fresh tensors too is reported under the function's own failure, or not at all
// when another check owns it.
TEST(ExpectSameAtOffset, BlamesTheOffsetOnlyForAResultThatDependsOnIt) {
  const TensorData right = data_of({2}, {1, 2}), wrong = data_of({2}, {1, 3});
  const ErrorData error{{"kiln::ShapeError"}, "no"};
  // The failure ids reported, in order, and whether the judge said both were right.
  auto judged = [&](const Observed<TensorData>& fresh, const Observed<TensorData>& viewed, const char* general) {
    ::testing::TestPartResultArray failures;
    bool ok = false;
    {
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      ok = expect_same_at_offset("f.cpp", 1, fresh, viewed, right, 1e-6, 0.0, general, "offset_ignored");
    }
    std::string ids;
    for (int i = 0; i < failures.size(); ++i) {
      const std::string text = failures.GetTestPartResult(i).message();
      const auto at = text.find("[kiln-failure] ") + 15;
      ids += (ids.empty() ? "" : ",") + text.substr(at, text.find('\n', at) - at);
    }
    return std::pair(ok, ids);
  };
  using Result = std::pair<bool, std::string>;
  const Observed<TensorData> fresh_right("f(x)", right), fresh_wrong("f(x)", wrong), fresh_threw("f(x)", error);
  const Observed<TensorData> view_right("f(v)", right), view_wrong("f(v)", wrong), view_threw("f(v)", error);
  EXPECT_EQ(judged(fresh_right, view_right, "wrong"), Result(true, ""));
  EXPECT_EQ(judged(fresh_right, view_wrong, "wrong"), Result(false, "offset_ignored"));
  EXPECT_EQ(judged(fresh_right, view_threw, "wrong"), Result(false, "offset_ignored"));
  EXPECT_EQ(judged(fresh_wrong, view_right, "wrong"), Result(false, "offset_ignored"));
  EXPECT_EQ(judged(fresh_wrong, view_wrong, "wrong"), Result(false, "wrong"));  // not the offset's doing
  EXPECT_EQ(judged(fresh_threw, view_threw, "wrong"), Result(false, "wrong"));
  EXPECT_EQ(judged(fresh_wrong, view_wrong, ""), Result(true, ""));  // another check owns the value
  EXPECT_EQ(judged(fresh_wrong, view_right, ""), Result(false, "offset_ignored"));
  // NaN where both give NaN is a result they agree on: the function's own mistake.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Observed<TensorData> fresh_nan("f(x)", data_of({2}, {1, nan})), view_nan("f(v)", data_of({2}, {1, nan}));
  EXPECT_EQ(judged(fresh_nan, view_nan, "wrong"), Result(false, "wrong"));
  EXPECT_EQ(judged(fresh_right, view_nan, "wrong"), Result(false, "offset_ignored"));
  // Two results each within tolerance of the trusted values, if not of each other, are both right.
  const Observed<TensorData> fresh_low("f(x)", data_of({2}, {1, 2 - 8e-7f})), view_high("f(v)", data_of({2}, {1, 2 + 8e-7f}));
  EXPECT_EQ(judged(fresh_low, view_high, "wrong"), Result(true, ""));
}

TEST(Compare, EqualInfinitiesAreCloseAndNaNIsNeverClose) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(compare(data_of({2}, {-inf, inf}), data_of({2}, {-inf, inf}), 0.0, 0.0).close);
  EXPECT_TRUE(compare(data_of({1}, {-inf}), data_of({1}, {-inf}), 1e-6, 1e-5).close);
  EXPECT_FALSE(compare(data_of({1}, {inf}), data_of({1}, {-inf}), 1e-6, 1e-5).close);
  EXPECT_FALSE(compare(data_of({1}, {-3.4e38f}), data_of({1}, {-inf}), 1e-6, 1e-5).close);
  EXPECT_FALSE(compare(data_of({1}, {-inf}), data_of({1}, {-3.4e38f}), 1e-6, 1e-5).close);
  EXPECT_FALSE(compare(data_of({1}, {nan}), data_of({1}, {nan}), 1e-6, 1e-5).close);
}

TEST(FormatPair, ShowsDigitsEnoughToReadTheDifference) {
  // A GELU constant off in its fourth digit: the two values must show a difference near 0.00167.
  const auto [got, expected] = format_pair(1.96167, 1.96);
  EXPECT_EQ(got, "1.9617");
  EXPECT_EQ(expected, "1.96");
  EXPECT_EQ(format_pair(2.0, 3.0), (std::pair<std::string, std::string>{"2", "3"}));
  EXPECT_EQ(format_pair(100.0, 100.5), (std::pair<std::string, std::string>{"100", "100.5"}));
}

}  // namespace
}  // namespace kiln::testing
