// A module's results as plain data, and its renderings: the terminal, JSON, JUnit XML.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/grader/build.h"
#include "kiln/grader/course.h"
#include "kiln/grader/runner.h"

namespace kiln::grader {

struct CheckReport {
  std::string id;
  std::string test;
  std::string description;
  Visibility visibility = Visibility::visible;
  bool device = false;  // runs on a CUDA device (skipped without one)
  Status status = Status::missing;
  int points = 0;
  int max_points = 0;
  std::string summary;              // one line: "not written yet: Tensor::reshape (src/tensor.cpp:42)"
  std::vector<std::string> messages;  // catalogued messages, rendered
  std::vector<std::string> failure_ids;
  std::map<std::string, std::string> rendered;  // each catalogued failure reported, as its message read
  // "failure_id: {name}" for each placeholder of a catalogued message that the test reported no
  // value for, so that the student read it as written: an authoring defect, which verify reports.
  std::vector<std::string> unfilled;
  std::vector<std::string> hints;
  std::vector<std::string> details;   // what was expected and what came back
  std::string waits_for;  // the check it needs that did not pass ("skipped: fix X first")
  std::string speed;  // a speed-graded check: how its time compared with the reference's, and the points it earned
  double speed_ratio = 0;  // its time over the reference's, when it was measured (a leaderboard's figure)
  std::string speed_context;  // the digest of a speed check's context in the checked run
  std::vector<Figure> figures;  // what the check measured: a model's accuracy, its size
  double ms = 0;

  // An optional challenge: a check worth no points that is not a device check. It never stands
  // between a module and "done".
  bool optional() const { return max_points == 0 && !device; }
};

struct Report {
  std::string module;   // "17_acceleration"
  std::string number;   // "17"
  std::string title;
  std::string variant;  // "student", "solution", ...
  std::vector<CheckReport> checks;
  int score = 0;
  int max_score = 0;
  std::optional<Diagnostic> build_error;
  std::string build_log;  // for did-not-compile, trimmed
  std::vector<std::string> notes;      // prerequisites that fail, shown first
  std::vector<std::string> commands;   // for -v
  std::string output;                  // what the checks printed
  std::string next_step;

  // Every check that counts passed: skipped device checks and optional challenges aside.
  bool all_passed() const;
  // Every check that ran passed, optional challenges included (what verify asks of a reference).
  bool every_check_passed() const;
  int passed_count() const;
};

// Fills a catalogued message's {placeholders}; unknown names are left as they are.
std::string render_message(const std::string& message, const std::map<std::string, std::string>& params);
// The {placeholders} of a catalogued message that params leaves unfilled.
std::vector<std::string> unfilled_placeholders(const std::string& message, const std::map<std::string, std::string>& params);

// Text made safe for XML, SVG and HTML: the five special characters as entities, and the control
// characters XML 1.0 forbids as spaces.
std::string xml_escape(const std::string& text);

// Paths inside the course are shown relative to its root.
std::string relative_to(const fs::path& root, const std::string& path);

// The Report of a module's verdicts (grading.h's report_of makes it from a pipeline's Verdicts).
// Paths inside the course, and inside `work` (a folder a submission was graded in), read
// relative to them.
Report make_report(const Course& course, const Module& module, const std::vector<const Check*>& checks,
                   const BuildResult& build, const RunResult* run, const std::string& variant,
                   const fs::path& work = {});

// Cuts every text a submission can influence (summaries, details, build log, output) to at most
// per_text bytes (the log and output to four times that): what a result file quotes stays small.
void bound_report(Report& report, std::size_t per_text = 1024);

struct TextStyle {
  bool color = false;
  bool verbose = false;
  std::size_t width = 100;  // columns to wrap to (terminal_width())
};

// Whether to colour what goes to standard output: a terminal, and NO_COLOR unset.
bool use_color();

// The terminal's width in columns (COLUMNS, else the terminal on stdout), 100 when unknown;
// never below 60 nor above 120, so that long lines stay readable.
std::size_t terminal_width();

// Wraps text at `width` columns, every line after the first indented by `indent`. A word longer
// than a line is split rather than left to overflow.
std::string wrap(const std::string& text, std::size_t width, const std::string& indent);

std::string render_text(const Report& report, const TextStyle& style);
// The JSON results carry "version": the version of their format, raised when a field changes
// meaning or goes away (a new field does not raise it).
inline constexpr int kResultsVersion = 1;
std::string render_json(const Report& report);
std::string render_junit(const std::vector<Report>& reports);
// Gradescope's results.json: one test per check, hidden checks saying nothing about their test.
std::string render_gradescope(const std::vector<Report>& reports, double execution_s);

}  // namespace kiln::grader
