// The test program's side of a run, shared by the test main and observe(): where observations go
// (the grader's channel), where they come from (the judge's file), and what each check ended with.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kiln::testing::session {

// Observations and events are written, one JSON line each, to this descriptor.
void open_channel(int fd);
bool channel_open();
void emit(nlohmann::json event);
// An observation: {"event":"observe", ...the record's fields}.
inline constexpr const char* kObservationPrefix = "{\"event\":\"observe\",";
void emit_observation(const nlohmann::json& record);

// The judge: the observations of every check, from the file the grader wrote. Returns an error
// message when the file cannot be used.
std::optional<std::string> load_observations(const std::string& path);

// What the grader needs to know about a check, besides GoogleTest's own result.
struct CheckEnd {
  std::string unobserved;  // judge: why the observations did not fit the check ("" when they did)
  // judge: the call whose result the program under test never produced, when its results ran out
  // there (it crashed, hung or exited during that call)
  std::string stopped_during;
  std::string stub;        // "not written yet: F (file:line)" when a stub ended the check
  bool stub_replayed = false;  // judge: that stub came from an observation
  nlohmann::json figures = nlohmann::json::array();  // report_figure's, in order
  std::string speed_context;  // a speed check's context, as its digest
};
void add_figure(nlohmann::json figure);
void set_speed_context(std::string digest);
void begin_check(const std::string& test);
// failed: the check reported a failure (results left over after one are not held against it).
CheckEnd end_check(bool failed);

// Where a speed check's timed run writes its results (kiln/testing.h): standard output as the
// program started, which the test main keeps for them alone.
void keep_speed_results_fd(int fd);
int speed_results_fd();

}  // namespace kiln::testing::session
