// End-to-end: the grader CLI on a copy of the fixture course, whose student file the tests
// replace with code that crashes, hangs, exits or does not compile.
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/grader/build.h"
#include "kiln/grader/process.h"

namespace kiln::grader {
namespace {

const char* kHostile = R"(#include <cstdlib>
#include "kiln/probe.h"
namespace kiln {
int add(int a, int b) { return a + b; }
int crash() { volatile int* p = nullptr; return *p; }
int spin() { volatile int x = 0; for (;;) ++x; }
int quit() { std::exit(0); }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
)";

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("kiln-cli-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::copy(fs::path(KILN_FIXTURES) / "probe", root_, fs::copy_options::recursive);
    stub_ = read_file(student_file());
  }
  static void TearDownTestSuite() { fs::remove_all(root_); }

  static fs::path student_file() { return root_ / "modules" / "01_probe" / "src" / "probe.cpp"; }
  static void write_student(const std::string& text) { std::ofstream(student_file()) << text; }

  static ProcessResult grader(std::vector<std::string> args) {
    args.insert(args.begin(), {KILN_GRADER, "--root", root_.string()});
    return run_process({.argv = args, .env = {{"KILN_HOME", KILN_HOME_DIR}, {"NO_COLOR", "1"}}, .output_cap = 4 << 20});
  }

  // Runs the grader with `from` replaced by `to` in the course's `file` (relative to its root),
  // then puts the file back as it was.
  static ProcessResult grader_with_edit(const fs::path& file, const std::string& from, const std::string& to,
                                        std::vector<std::string> args) {
    const fs::path path = root_ / file;
    const std::string original = read_file(path);
    std::string edited = original;
    EXPECT_NE(edited.find(from), std::string::npos) << from;
    if (edited.find(from) != std::string::npos) edited.replace(edited.find(from), from.size(), to);
    std::ofstream(path) << edited;
    const ProcessResult r = grader(std::move(args));
    std::ofstream(path) << original;
    return r;
  }

  static nlohmann::json check_json() {
    const ProcessResult r = grader({"check", "1", "--format", "json"});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    return j;
  }

  static std::map<std::string, std::string> statuses(const nlohmann::json& report) {
    std::map<std::string, std::string> out;
    for (const auto& c : report["checks"]) out[c["id"]] = c["status"];
    return out;
  }

  static inline fs::path root_;
  static inline std::string stub_;
};

TEST_F(Cli, UntouchedStubsReadNotWrittenYetAndExitNonZero) {
  write_student(stub_);
  const ProcessResult r = grader({"check", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("0/6 points · 0 of 5 checks pass"), std::string::npos) << r.out;
  for (const auto& [id, status] : statuses(check_json())) EXPECT_EQ(status, "not_written") << id;
}

TEST_F(Cli, TheSolutionPassesAndExitsZero) {
  const ProcessResult r = grader({"check", "1", "--solution"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("6/6 points"), std::string::npos) << r.out;
}

TEST_F(Cli, ACrashAHangAndAnExitEachLoseOnlyTheirOwnCheck) {
  write_student(kHostile);
  const auto report = check_json();
  const auto s = statuses(report);
  EXPECT_EQ(s.at("adds"), "passed");
  EXPECT_EQ(s.at("survives_segfault"), "crashed");
  EXPECT_EQ(s.at("survives_hang"), "timed_out");
  EXPECT_EQ(s.at("survives_exit"), "exited_early");
  EXPECT_EQ(s.at("multiplies"), "passed") << "the check after the exit still runs";
  EXPECT_EQ(report["score"], 2);
  // The crash is described in words and placed at the line of the student's code that crashed.
  const std::string crash = report["checks"][1]["summary"];
  EXPECT_NE(crash.find("null pointer"), std::string::npos) << crash;
  EXPECT_NE(crash.find("probe.cpp:5"), std::string::npos) << crash;
  const std::string hang = report["checks"][2]["summary"];
  EXPECT_NE(hang.find("probe.cpp:6"), std::string::npos) << "a hang names where it was: " << hang;
  // Each names the call it stopped in, as the judge found it on replaying the check.
  EXPECT_NE(crash.find(", while running crash()"), std::string::npos) << crash;
  EXPECT_NE(hang.find(", while running spin()"), std::string::npos) << hang;
  const std::string exited = report["checks"][3]["summary"];
  EXPECT_NE(exited.find(", while running quit()"), std::string::npos) << exited;
  EXPECT_EQ(std::string(report["checks"][0]["summary"]).find("while running"), std::string::npos);
}

// A loop in a helper of an anonymous namespace, which -O1 inlines into its one caller: the hang is
// placed in the helper, at the loop, and a later check stuck in the same helper says so after a
// short wait, while a check that is only slow elsewhere runs again with its own time.
const char* kStuckInAHelper = R"(#include <chrono>
#include "kiln/probe.h"
namespace kiln {
namespace {
int spin_forever(int start) {
  volatile int x = start;
  for (;;) ++x;
}
int wait_a_while() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < until) {}
  return 3;
}
}  // namespace
int add(int a, int b) { return a + b; }
int crash() { return 1; }
int spin() { return spin_forever(0); }
int quit() { return wait_a_while(); }
int mul(int a, int b) { return a * b + spin_forever(a); }
}  // namespace kiln
)";

TEST_F(Cli, AHangIsPlacedInTheInlinedHelperAndLaterChecksStuckThereSaySoSoon) {
  write_student(kStuckInAHelper);
  const auto report = check_json();
  const auto s = statuses(report);
  EXPECT_EQ(s.at("survives_hang"), "timed_out");
  EXPECT_EQ(s.at("survives_exit"), "passed") << "slow elsewhere: run again with its own time";
  EXPECT_EQ(s.at("multiplies"), "timed_out");
  const std::string hang = report["checks"][2]["summary"];
  EXPECT_NE(hang.find("it was in spin_forever (probe.cpp:7), called from spin (probe.cpp:17)"), std::string::npos)
      << hang;
  const std::string later = report["checks"][4]["summary"];
  EXPECT_NE(later.find("stopped after 2 s in spin_forever, where survives_hang was stuck for 2 s: fix survives_hang "
                       "first; it was in spin_forever (probe.cpp:7), called from mul (probe.cpp:19)"),
            std::string::npos)
      << later;
}

TEST_F(Cli, JunitOutputParsesAsXml) {
  write_student(kHostile);
  const fs::path out = root_ / "report.xml";
  const ProcessResult r = grader({"check", "1", "--format", "junit", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  const ProcessResult lint = run_process({.argv = {KILN_XMLLINT, "--noout", out.string()}});
  EXPECT_TRUE(lint.ok()) << lint.err << read_file(out);
  EXPECT_NE(read_file(out).find("<testsuites"), std::string::npos);
}

TEST_F(Cli, ACompileErrorNamesTheFileAndLineAndLeavesTheFileAlone) {
  std::string broken = kHostile;
  broken.replace(broken.find("return a + b;"), 13, "return a + c;");
  write_student(broken);
  const ProcessResult r = grader({"check", "1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("Did not compile"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("modules/01_probe/src/probe.cpp:4:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("return a + c;"), std::string::npos) << "the offending line is shown";
  EXPECT_EQ(read_file(student_file()), broken) << "the student's file is never touched";
  for (const auto& [id, status] : statuses(check_json())) EXPECT_EQ(status, "did_not_compile") << id;
}

TEST_F(Cli, AMalformedModuleYamlIsReportedWithFileAndLine) {
  const fs::path yaml = root_ / "modules" / "01_probe" / "module.yaml";
  const std::string good = read_file(yaml);
  std::ofstream(yaml) << good << "  - id: [broken\n";
  const ProcessResult r = grader({"list"});
  std::ofstream(yaml) << good;
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("modules/01_probe/module.yaml:"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

TEST_F(Cli, HintShowsTheCataloguedMessageAndHint) {
  const ProcessResult r = grader({"hint", "probe", "adds"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("add(2, 3) should be 5, got {got}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Add the two numbers."), std::string::npos) << r.out;
  EXPECT_EQ(grader({"hint", "probe", "nonsense"}).exit_code, 2);
}

// After a check, `hint` shows each failure as it read, its placeholders filled, and after a crash
// it points to the crash, not to the catalogue's usual causes.
TEST_F(Cli, HintAfterACheckFillsTheMessageAndPointsToACrash) {
  std::string wrong = kHostile;
  wrong.replace(wrong.find("return a + b;"), 13, "return a - b;");
  write_student(wrong);
  grader({"check", "1"});
  const ProcessResult adds = grader({"hint", "1", "adds"});
  EXPECT_NE(adds.out.find("Last time: add(2, 3) should be 5, got -1"), std::string::npos) << adds.out;
  EXPECT_EQ(adds.out.find("{got}"), std::string::npos) << adds.out;
  const ProcessResult crash = grader({"hint", "1", "survives_segfault"});
  EXPECT_NE(crash.out.find("Last time it crashed"), std::string::npos) << crash.out;
  EXPECT_NE(crash.out.find("probe.cpp:5"), std::string::npos) << crash.out;
  EXPECT_NE(crash.out.find("fix that first"), std::string::npos) << crash.out;
  // Without a hint asked for by name, the checks that failed come first.
  const ProcessResult all = grader({"hint", "1"});
  EXPECT_LT(all.out.find("adds"), all.out.find("multiplies")) << all.out;
  EXPECT_NE(all.out.find("did not pass last time"), std::string::npos) << all.out;
}

TEST_F(Cli, VerifyProvesTheFixtureAndNoticesAMessageThatStoppedFiring) {
  write_student(stub_);  // verify proves that no check passes on the stubs in modules/
  const ProcessResult good = grader({"verify", "--all"});
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
  EXPECT_NE(good.out.find("5 promises of the 5 functions the student writes"), std::string::npos) << good.out;
  const ProcessResult bad =
      grader_with_edit(fs::path("solutions") / "01_probe" / "mutants" / "wrong_sum.yaml", "a - b", "b + a", {"verify", "1"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("mutant wrong_sum should fail adds"), std::string::npos) << bad.out;
  // A function without a promise is named.
  const fs::path yaml = root_ / "modules" / "01_probe" / "module.yaml";
  const std::string listed = read_file(yaml);
  std::string unlisted = listed;
  unlisted.erase(unlisted.find("  - function: mul"));
  std::ofstream(yaml) << unlisted;
  const ProcessResult unpromised = grader({"verify", "1"});
  std::ofstream(yaml) << listed;
  EXPECT_EQ(unpromised.exit_code, 1) << unpromised.out;
  EXPECT_NE(unpromised.out.find("lists no promise of mul"), std::string::npos) << unpromised.out;
  // Trusted code left outside KILN_JUDGE is named in the observed program, as a person writes it.
  const ProcessResult leak = grader_with_edit(
      fs::path("modules") / "01_probe" / "tests" / "probe_test.cpp", "TEST(Probe, Multiplies) {",
      "std::vector<std::string> trusted_products(const std::vector<std::string>& v) { return v; }\n"
      "TEST(Probe, Multiplies) {\n  EXPECT_EQ(trusted_products({\"6\"}).size(), 1u);",
      {"verify", "1"});
  EXPECT_EQ(leak.exit_code, 1) << leak.out;
  EXPECT_NE(leak.out.find("the observed program holds 1 trusted symbol"), std::string::npos) << leak.out;
  EXPECT_NE(leak.out.find("kiln::trusted_products(std::vector<std::string> const&)"), std::string::npos) << leak.out;
}

// verify --seeds: the reference through its checks at fresh seeds. A reference that fails a check
// at every seed fails it not by chance, and says where to look.
TEST_F(Cli, VerifySeedsRunsTheReferenceAtFreshSeedsAndNamesACheckItFails) {
  const ProcessResult good = grader({"verify", "--seeds", "3", "1"});
  EXPECT_EQ(good.exit_code, 0) << good.out << good.err;
  EXPECT_NE(good.out.find("the reference passes all"), std::string::npos) << good.out;
  EXPECT_NE(good.out.find("at each of 3 seeds"), std::string::npos) << good.out;
  const ProcessResult bad = grader_with_edit(fs::path("solutions") / "01_probe" / "src" / "probe.cpp", "return a + b;",
                                            "return a - b;", {"verify", "--seeds", "2", "1"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("check adds fails at all 2 seeds, not by chance"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("grader verify 01"), std::string::npos) << bad.out;
  // Nothing to draw, or a score asked of it, is refused before anything is built.
  EXPECT_NE(grader({"verify", "--seeds", "0", "1"}).exit_code, 0);
  EXPECT_NE(grader({"verify", "--seeds", "2", "--mutation", "1"}).exit_code, 0);
}

TEST_F(Cli, StartListsTheFunctionsToWrite) {
  write_student(stub_);
  const ProcessResult r = grader({"start", "1"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("5 functions to write"), std::string::npos) << r.out;
}

TEST_F(Cli, StatusShowsProgressRecordedByCheck) {
  write_student(kHostile);
  grader({"check", "1"});
  const ProcessResult r = grader({"status"});
  EXPECT_NE(r.out.find("2/6"), std::string::npos) << r.out;
}

// In a student's repository (a release: no solutions/), students commit their own work, so the
// stub is the version of the commit that added the file.
TEST_F(Cli, ResetBacksUpTheStudentFileAndRestoresTheStub) {
  const fs::path release = root_.string() + "-release";
  fs::remove_all(release);
  fs::copy(root_, release, fs::copy_options::recursive);
  fs::remove_all(release / "solutions");
  fs::remove_all(release / ".grader");
  const fs::path file = release / "modules" / "01_probe" / "src" / "probe.cpp";
  const auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", release.string(), "-c", "user.name=k", "-c", "user.email=k@k"});
    return run_process({.argv = args});
  };
  ASSERT_TRUE(git({"init", "-q"}).ok());
  std::ofstream(file) << stub_;
  ASSERT_TRUE(git({"add", "-A"}).ok());
  ASSERT_TRUE(git({"commit", "-q", "-m", "course"}).ok());
  std::ofstream(file) << kHostile;
  ASSERT_TRUE(git({"commit", "-q", "-am", "my work"}).ok());
  const ProcessResult r = run_process({.argv = {KILN_GRADER, "--root", release.string(), "reset", "1", "--yes"},
                                       .env = {{"KILN_HOME", KILN_HOME_DIR}, {"NO_COLOR", "1"}}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_file(file), stub_);
  bool backed_up = false;
  for (const auto& e : fs::recursive_directory_iterator(release / ".grader" / "backups"))
    backed_up |= e.is_regular_file() && read_file(e.path()) == kHostile;
  EXPECT_TRUE(backed_up) << "the student's version is kept in .grader/backups";
  fs::remove_all(release);
}

// In the instructors' repository (it has solutions/) stubs change with the course: reset puts back
// the stub as committed now, the one verify and release use, not the first one ever committed.
TEST_F(Cli, ResetInTheInstructorsRepositoryRestoresTheCurrentStub) {
  const auto git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", root_.string(), "-c", "user.name=k", "-c", "user.email=k@k"});
    return run_process({.argv = args});
  };
  ASSERT_TRUE(git({"init", "-q"}).ok());
  write_student("// an old stub\n" + stub_);
  ASSERT_TRUE(git({"add", "-A"}).ok());
  ASSERT_TRUE(git({"commit", "-q", "-m", "course"}).ok());
  write_student(stub_);
  ASSERT_TRUE(git({"commit", "-q", "-am", "the stub, revised"}).ok());
  write_student(kHostile);
  const ProcessResult r = grader({"reset", "1", "--yes"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_file(student_file()), stub_);
  fs::remove_all(root_ / ".git");
}

}  // namespace
}  // namespace kiln::grader

namespace kiln::grader {
namespace {

// The fields Gradescope documents for results.json, at the top and for each test.
const std::set<std::string> kGradescopeTop = {"score", "execution_time", "output", "output_format",
                                              "test_output_format", "test_name_format", "visibility",
                                              "stdout_visibility", "extra_data", "tests", "leaderboard"};
const std::set<std::string> kGradescopeTest = {"score", "max_score", "status", "name", "name_format", "number",
                                               "output", "output_format", "tags", "visibility", "extra_data"};
const std::set<std::string> kVisibilities = {"visible", "hidden", "after_due_date", "after_published"};

TEST_F(Cli, GradescopeResultsUseOnlyDocumentedFieldsAndHideHiddenChecks) {
  const fs::path submission = root_ / "submission";
  fs::create_directories(submission);
  std::string wrong_product = kHostile;
  wrong_product.replace(wrong_product.find("a * b"), 5, "a + b");
  std::ofstream(submission / "probe.cpp") << wrong_product;
  const fs::path out = root_ / "results.json";
  const ProcessResult r = grader({"grade", submission.string(), "--module", "1", "--format", "gradescope", "--out",
                                  out.string(), "--no-sandbox"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(read_file(out));
  for (const auto& [key, value] : j.items()) EXPECT_TRUE(kGradescopeTop.count(key)) << "undocumented field " << key;
  EXPECT_TRUE(j["score"].is_number());
  EXPECT_EQ(j["score"], 1) << "only adds passes: the others crash, hang, exit or multiply wrongly";
  ASSERT_TRUE(j["tests"].is_array());
  EXPECT_EQ(j["tests"].size(), 5u);
  for (const auto& t : j["tests"]) {
    for (const auto& [key, value] : t.items()) EXPECT_TRUE(kGradescopeTest.count(key)) << "undocumented field " << key;
    EXPECT_TRUE(t["score"].is_number() && t["max_score"].is_number() && t["name"].is_string());
    EXPECT_TRUE(t["status"] == "passed" || t["status"] == "failed") << t;
    EXPECT_TRUE(kVisibilities.count(t["visibility"].get<std::string>())) << t;
    if (t["visibility"] == "hidden") {
      const std::string text = t.dump();
      for (const char* secret : {"mul", "Multiplies", "multiplies", "wrong_product", "Multiply"})
        EXPECT_EQ(text.find(secret), std::string::npos) << "a hidden check reveals '" << secret << "': " << text;
    }
  }
}

// An error that escapes the student's code is placed where it was thrown, in `check` (one process)
// and in `grade` (the observed program, sandboxed): the function and its line.
TEST_F(Cli, AnUnexpectedErrorNamesWhereItWasThrown) {
  // The fixture's solution, with add() throwing from line 7 of the file.
  std::string thrower = "#include <stdexcept>\n" + read_file(root_ / "solutions" / "01_probe" / "src" / "probe.cpp");
  const std::string add = "int add(int a, int b) { return a + b; }";
  ASSERT_NE(thrower.find(add), std::string::npos);
  thrower.replace(thrower.find(add), add.size(),
                  "int add(int a, int b) {\n  if (a < b) throw std::invalid_argument(\"a must not be smaller than b\");\n"
                  "  return a + b;\n}");
  write_student(thrower);
  const std::string checked = check_json().dump();
  EXPECT_NE(checked.find("add(2, 3) threw std::invalid_argument"), std::string::npos) << checked;
  EXPECT_NE(checked.find("thrown in add (probe.cpp:7)"), std::string::npos) << checked;
  const fs::path submission = root_ / "thrower";
  fs::create_directories(submission);
  std::ofstream(submission / "probe.cpp") << thrower;
  const fs::path out = root_ / "thrower.json";
  const ProcessResult r = grader({"grade", submission.string(), "--module", "1", "--format", "json", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string graded = read_file(out);
  EXPECT_NE(graded.find("thrown in add (probe.cpp:7)"), std::string::npos) << graded;
  write_student(stub_);
}

TEST_F(Cli, GradeAlwaysWritesAResultEvenWhenTheSubmissionDoesNotCompile) {
  const fs::path submission = root_ / "broken";
  fs::create_directories(submission);
  std::ofstream(submission / "probe.cpp") << "this is not C++\n";
  const fs::path out = root_ / "broken.xml";
  const ProcessResult r =
      grader({"grade", submission.string(), "--module", "1", "--format", "junit", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const ProcessResult lint = run_process({.argv = {KILN_XMLLINT, "--noout", out.string()}});
  EXPECT_TRUE(lint.ok()) << lint.err;
  EXPECT_NE(read_file(out).find("did_not_compile"), std::string::npos);
}

TEST_F(Cli, BundleWritesAGradescopeAutograder) {
  const fs::path zip = root_ / "autograder.zip";
  const ProcessResult r = grader({"bundle", "gradescope", zip.string(), "--module", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const ProcessResult list = run_process({.argv = {"unzip", "-l", zip.string()}, .output_cap = 1 << 20});
  ASSERT_TRUE(list.ok()) << list.err;
  for (const char* entry : {" setup.sh", " run_autograder", "kiln/modules/01_probe/module.yaml",
                            "kiln/solutions/01_probe/src/probe.cpp"})
    EXPECT_NE(list.out.find(entry), std::string::npos) << entry << " missing from\n" << list.out;
  const ProcessResult script = run_process({.argv = {"unzip", "-p", zip.string(), "run_autograder"}});
  EXPECT_NE(script.out.find("grade \"$root/submission\" --module 01 --format gradescope"), std::string::npos)
      << script.out;
}

}  // namespace
}  // namespace kiln::grader
