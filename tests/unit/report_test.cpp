#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/report.h"

namespace kiln::grader {
namespace {

TEST(RenderMessage, FillsKnownPlaceholdersAndKeepsUnknownOnes) {
  EXPECT_EQ(render_message("Differs from Conv2d by up to {difference}", {{"difference", "0.5"}}),
            "Differs from Conv2d by up to 0.5");
  EXPECT_EQ(render_message("{a} and {b}", {{"a", "1"}}), "1 and {b}");
  EXPECT_EQ(render_message("no placeholders", {}), "no placeholders");
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

}  // namespace
}  // namespace kiln::grader
