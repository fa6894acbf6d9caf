#include <cmath>
#include <sstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/report.h"
#include "kiln/grader/speed.h"

namespace kiln::grader {
namespace {

TEST(RenderMessage, FillsKnownPlaceholdersAndKeepsUnknownOnes) {
  EXPECT_EQ(render_message("Differs from Conv2d by up to {difference}", {{"difference", "0.5"}}),
            "Differs from Conv2d by up to 0.5");
  EXPECT_EQ(render_message("{a} and {b}", {{"a", "1"}}), "1 and {b}");
  EXPECT_EQ(render_message("no placeholders", {}), "no placeholders");
}

// What a report left as written: a placeholder the failure gave no value for (verify reports
// each); braces around anything but a name are text, not placeholders.
TEST(UnfilledPlaceholders, NamesEachPlaceholderWithoutAValue) {
  EXPECT_EQ(unfilled_placeholders("differs by up to {difference} at {where}", {{"where", "(0, 1)"}}),
            std::vector<std::string>{"{difference}"});
  EXPECT_TRUE(unfilled_placeholders("differs by up to {difference}", {{"difference", "0.5"}}).empty());
  EXPECT_TRUE(unfilled_placeholders("a set {1, 2} and an empty {} and {A B}", {}).empty());
  EXPECT_EQ(unfilled_placeholders("{size}: {size_2}", {}), (std::vector<std::string>{"{size}", "{size_2}"}));
}

TEST(RelativeTo, ShowsCoursePathsRelativeToTheRoot) {
  EXPECT_EQ(relative_to("/c", "at /c/modules/x.cpp:3 and /c/y"), "at modules/x.cpp:3 and y");
}

Report sample_report() {
  Report r;
  r.module = "01_probe";
  r.number = "01";
  r.title = "Probe <&>";
  r.variant = "student";
  CheckReport passed{.id = "adds", .status = Status::passed, .points = 1, .max_points = 1};
  CheckReport failed{.id = "muls", .status = Status::failed, .max_points = 2, .summary = "bad \"quote\" & <tag>",
                     .messages = {"bad \"quote\" & <tag>"}, .failure_ids = {"wrong"}, .hints = {"hint\x01"}};
  CheckReport crashed{.id = "crash", .status = Status::crashed, .max_points = 1, .summary = "segfault"};
  r.checks = {passed, failed, crashed};
  r.score = 1;
  r.max_score = 4;
  return r;
}

TEST(RenderJson, CarriesScoresStatusesAndMessages) {
  const auto j = nlohmann::json::parse(render_json(sample_report()));
  EXPECT_EQ(j["score"], 1);
  EXPECT_EQ(j["max_score"], 4);
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["checks"][1]["status"], "failed");
  EXPECT_EQ(j["checks"][1]["failure_ids"][0], "wrong");
  EXPECT_EQ(j["checks"][2]["status"], "crashed");
}

TEST(RenderJunit, CountsFailuresAndErrorsAndEscapesText) {
  const std::string xml = render_junit({sample_report()});
  EXPECT_NE(xml.find("tests=\"3\" failures=\"1\" errors=\"1\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("bad &quot;quote&quot; &amp; &lt;tag&gt;"), std::string::npos) << xml;
  EXPECT_EQ(xml.find('\x01'), std::string::npos) << "control characters are not allowed in XML";
}

TEST(RenderText, SaysWhatToDoNext) {
  Report r = sample_report();
  r.next_step = "fix 'muls' first";
  const std::string text = render_text(r, {});
  EXPECT_NE(text.find("1/4 points · 1 of 3 checks pass"), std::string::npos) << text;
  EXPECT_NE(text.find("Next: fix 'muls' first"), std::string::npos) << text;
  EXPECT_NE(text.find("crashed: segfault"), std::string::npos) << text;
}

TEST(RenderSkipped, CountsNeitherPassedNorFailedAndSaysWhy) {
  Report r = sample_report();
  r.checks.push_back(CheckReport{.id = "on_gpu", .device = true, .status = Status::skipped,
                                 .summary = "no CUDA device: the CUDA runtime found no GPU on this machine"});
  const std::string text = render_text(r, {});
  EXPECT_NE(text.find("1/4 points · 1 of 3 checks pass · 1 skipped"), std::string::npos) << text;
  EXPECT_NE(text.find("skipped: no CUDA device: the CUDA runtime found no GPU"), std::string::npos) << text;

  const auto gradescope = nlohmann::json::parse(render_gradescope({r}, 1.0));
  const auto& test = gradescope["tests"][3];
  EXPECT_FALSE(test.contains("status")) << test;  // neither passed nor failed
  EXPECT_EQ(test["max_score"], 0);
  EXPECT_EQ(test["output"], "Skipped: no CUDA device: the CUDA runtime found no GPU on this machine");
  EXPECT_EQ(gradescope["tests"][1]["status"], "failed");

  const std::string xml = render_junit({r});
  EXPECT_NE(xml.find("skipped=\"1\""), std::string::npos) << xml;
  EXPECT_EQ(nlohmann::json::parse(render_json(r))["checks"][3]["device"], true);
}

// Every line of a wrapped text fits the terminal, counted in columns (colour codes and UTF-8
// take none), and no word is broken.
TEST(Wrap, FitsEightyColumnsWithoutBreakingWords) {
  const std::string hint =
      "Each tile product overwrote the output block instead of adding to it: \x1b[1mc[i, j] += a[i, k]·b[k, j]\x1b[0m "
      "collects every tile along the inner dimension, and the output starts from zeros once, before the loops.";
  const std::string indent(14, ' ');
  const std::string wrapped = wrap(hint, 80, indent);
  std::istringstream lines(wrapped);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    std::size_t columns = 0;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\x1b') {
        i = line.find('m', i);
        continue;
      }
      columns += (static_cast<unsigned char>(line[i]) & 0xc0) != 0x80;
    }
    EXPECT_LE(columns + (count ? 0 : indent.size()), 80u) << line;
  }
  EXPECT_GE(count, 3);
  for (const char* word : {"overwrote", "dimension,", "c[i,", "loops."})
    EXPECT_NE(wrapped.find(word), std::string::npos) << word << " was broken";
}

TEST(Wrap, NeverBreaksAGraderCommand) {
  const std::string next = "Next: write contiguous_strides (modules/01_tensor/src/tensor.cpp:23), then run grader check 01";
  for (std::size_t width = 60; width <= 100; ++width) {
    const std::string text = wrap(next, width, "        ");
    EXPECT_NE(text.find("grader check 01"), std::string::npos) << width << ":\n" << text;
  }
  const std::string hint = "Next: fix 'bpe_ties' first; `grader hint 10 bpe_ties` explains the usual cause of it";
  for (std::size_t width = 60; width <= 100; ++width)
    EXPECT_NE(wrap(hint, width, "  ").find("`grader hint 10 bpe_ties`"), std::string::npos) << width;
}

TEST(RenderText, SaysWhereTheStudentsOwnPrintsAre) {
  Report r = sample_report();
  r.output = "Note: Google Test filter = Probe.Adds\n[ RUN      ] Probe.Adds\nsum is 5\n[       OK ] Probe.Adds\n";
  EXPECT_NE(render_text(r, {}).find("Your code printed 1 line while the checks ran: `grader check 01 -v` shows them."),
            std::string::npos) << render_text(r, {});
  r.output = "[ RUN      ] Probe.Adds\n[       OK ] Probe.Adds\n";
  EXPECT_EQ(render_text(r, {}).find("Your code printed"), std::string::npos);
  // GoogleTest's own failure reports are not the student's prints.
  r.output = "[ RUN      ] Tensor.Strides\nunknown file: Failure\nC++ exception with description \"not written yet: "
             "contiguous_strides (tensor.cpp:23)\" thrown in the test body.\n[  FAILED  ] Tensor.Strides (0 ms)\n\n"
             " 1 FAILED TEST\n";
  EXPECT_EQ(render_text(r, {}).find("Your code printed"), std::string::npos) << render_text(r, {});
}

TEST(RenderOptional, AnOpenChallengeIsNamedAndDoesNotStandBetweenAModuleAndDone) {
  Report r = sample_report();
  r.checks = {r.checks[0], CheckReport{.id = "challenge", .status = Status::not_written, .max_points = 0,
                                       .summary = "not written yet: blocked_matmul (src/acceleration.cpp:90)"}};
  EXPECT_TRUE(r.all_passed()) << "an optional challenge is not required";
  EXPECT_FALSE(r.every_check_passed());
  const std::string text = render_text(r, {});
  EXPECT_NE(text.find("(optional challenge, no points)"), std::string::npos) << text;
  EXPECT_NE(text.find("1 of 2 checks pass"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::grader

namespace kiln::grader {
namespace {

TEST(ReferenceTimes, OneTimingServesAFixedNumberOfSubmissionsThenTheDriftIsMeasured) {
  ReferenceTimes times(3);
  EXPECT_FALSE(times.take("speed"));  // nothing timed yet: the first submission times it
  times.put("speed", {.reference_ms = 10, .empty_s = 0.02});  // and uses it once
  ASSERT_TRUE(times.take("speed"));
  EXPECT_EQ(times.take("speed")->reference_ms, 10);
  EXPECT_FALSE(times.take("speed"));  // three uses: timed again
  EXPECT_FALSE(times.take("other"));  // each check its own
  times.put("speed", {.reference_ms = 11, .empty_s = 0.02});
  EXPECT_EQ(times.retimed(), 1);
  EXPECT_NEAR(times.largest_drift(), 0.1, 1e-12);
  EXPECT_EQ(times.take("speed")->reference_ms, 11);
}

TEST(SpeedPoints, FullAtTheFirstRatioNoneAtTheSecondAndALogarithmicCurveBetween) {
  const Speed speed{.full_at = 1.2, .zero_at = 10};
  EXPECT_EQ(speed_fraction(speed, 0.5), 1);
  EXPECT_EQ(speed_fraction(speed, 1.2), 1);
  EXPECT_EQ(speed_fraction(speed, 10), 0);
  EXPECT_EQ(speed_fraction(speed, 40), 0);
  EXPECT_EQ(speed_fraction(speed, 0), 0);  // no measurement earns nothing
  // Halfway on the log scale: √(1.2·10) earns half.
  EXPECT_NEAR(speed_fraction(speed, std::sqrt(12.0)), 0.5, 1e-12);
  // The plain i-j-k loop of the chapter: 3.09 times the reference's time, 0.554 of the points.
  EXPECT_NEAR(speed_fraction(speed, 3.09), 1 - std::log(3.09 / 1.2) / std::log(10 / 1.2), 1e-12);
}

TEST(RenderGradescope, TimedSpeedChecksGoOnTheLeaderboardLowerIsBetter) {
  Report r;
  r.number = "17";
  r.checks.push_back(CheckReport{.id = "tiled_matmul_speed", .status = Status::passed, .points = 2, .max_points = 3,
                                 .speed = "3.09× the reference's time", .speed_ratio = 3.0912});
  r.checks.push_back(CheckReport{.id = "plain", .status = Status::passed, .points = 1, .max_points = 1});
  const auto j = nlohmann::json::parse(render_gradescope({r}, 1.0));
  ASSERT_EQ(j["leaderboard"].size(), 1u) << j;
  EXPECT_EQ(j["leaderboard"][0]["name"], "17 tiled_matmul_speed (× reference)");
  EXPECT_DOUBLE_EQ(j["leaderboard"][0]["value"].get<double>(), 3.091);
  EXPECT_EQ(j["leaderboard"][0]["order"], "asc");
  EXPECT_EQ(j["tests"][0]["output"], "Speed: 3.09× the reference's time");
  // Without a timed check there is no leaderboard at all.
  r.checks.erase(r.checks.begin());
  EXPECT_FALSE(nlohmann::json::parse(render_gradescope({r}, 1.0)).contains("leaderboard"));
}

TEST(RenderGradescope, FiguresOfPassedChecksGoOnTheLeaderboardWithTheirOrder) {
  Report r;
  r.number = "20";
  const std::vector<Figure> figures = {{.name = "accuracy", .value = 88.7312, .unit = "%", .higher_is_better = true},
                                       {.name = "size", .value = 102776, .unit = "bytes", .higher_is_better = false}};
  r.checks.push_back(CheckReport{.id = "model", .status = Status::passed, .points = 4, .max_points = 4, .figures = figures});
  const auto j = nlohmann::json::parse(render_gradescope({r}, 1.0));
  ASSERT_EQ(j["leaderboard"].size(), 2u) << j;
  EXPECT_EQ(j["leaderboard"][0]["name"], "20 accuracy (%)");
  EXPECT_DOUBLE_EQ(j["leaderboard"][0]["value"].get<double>(), 88.731);
  EXPECT_EQ(j["leaderboard"][0]["order"], "desc");
  EXPECT_EQ(j["leaderboard"][1]["name"], "20 size (bytes)");
  EXPECT_EQ(j["leaderboard"][1]["order"], "asc");
  EXPECT_EQ(j["tests"][0]["output"], "Measured: accuracy 88.73%, size 102,776 bytes");
  // A check that failed shows its figures but puts none on the leaderboard; a hidden one neither.
  r.checks[0].status = Status::failed;
  r.checks[0].points = 0;
  EXPECT_FALSE(nlohmann::json::parse(render_gradescope({r}, 1.0)).contains("leaderboard"));
  r.checks[0].status = Status::passed;
  r.checks[0].visibility = Visibility::hidden;
  EXPECT_FALSE(nlohmann::json::parse(render_gradescope({r}, 1.0)).contains("leaderboard"));
}

}  // namespace
}  // namespace kiln::grader
