// The grading pipeline's last steps: speed verdicts become part of the verdicts before the report
// is made, so that everything the report says (status, points, summary, next step) agrees.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/grader/grading.h"
#include "kiln/grader/judge.h"
#include "kiln/grader/process.h"
#include "kiln/grader/workspace.h"

namespace kiln::grader {
namespace {

struct SpeedModule {
  Course course;
  Module module;
  SpeedModule() {
    course.root = "/course";
    module.number = 17;
    module.slug = "acceleration";
    module.title = "Acceleration";
    Check plain{.id = "tiled_matmul", .test = "Acceleration.TiledMatmul", .points = 2};
    Check timed{.id = "tiled_matmul_speed", .test = "Acceleration.TiledMatmulSpeed", .points = 3};
    timed.speed = Speed{};
    timed.failures = {Failure{.id = "speed_wrong", .message = "tiled_matmul {which}: {problem}", .hint = "keep nothing"}};
    module.checks = {plain, timed};
  }
  // Both checks passed their checked run.
  Verdicts passed() const {
    Verdicts v;
    v.module = &module;
    v.checks = {&module.checks[0], &module.checks[1]};
    v.build.ok = true;
    v.run = RunResult{};
    for (const Check* c : v.checks) v.run->checks.push_back(CheckResult{.check = c, .status = Status::passed});
    return v;
  }
};

class FixedTiming : public SpeedTiming {
 public:
  explicit FixedTiming(SpeedResult result) : result_(std::move(result)) {}
  bool prepare(std::string&) override { return true; }
  SpeedResult time(const Check&, const std::string&) override { return result_; }

 private:
  SpeedResult result_;
};

// Two grader runs that use one build folder (two `verify`s, `watch` and `check`) take turns: the
// second waits until the first has finished, and says what it is waiting for.
TEST(BuildLock, ASecondRunWaitsForTheFirstAndSaysSo) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln-lock-test-" + std::to_string(::getpid()));
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t first = ::fork();
  ASSERT_GE(first, 0);
  if (first == 0) {  // the first run: holds the lock until told to finish
    const auto lock = lock_build_dir(dir);
    char c = 'r';
    if (::write(ready[1], &c, 1) != 1 || ::read(go[0], &c, 1) != 1) ::_exit(2);
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  std::atomic<bool> finished{false};
  std::thread finish([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    finished = true;
    char g = 'g';
    EXPECT_EQ(::write(go[1], &g, 1), 1);
  });
  ::testing::internal::CaptureStderr();
  { const auto lock = lock_build_dir(dir); EXPECT_TRUE(finished) << "the second run did not wait for the first"; }
  const std::string said = ::testing::internal::GetCapturedStderr();
  finish.join();
  int status = 0;
  ASSERT_EQ(::waitpid(first, &status, 0), first);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_NE(said.find("another grader run is using " + dir.string() + "; waiting for it to finish"), std::string::npos)
      << said;
  std::filesystem::remove_all(dir);
}

TEST(PipelineSpeed, AFailedTimedRunFailsTheCheckAndTheNextStepSaysSo) {
  const SpeedModule s;
  Verdicts v = s.passed();
  FixedTiming timing(SpeedResult{.problem = "result 2 differs from the reference's", .wrong = true});
  time_speed_checks(v, &timing);
  const Report r = report_of(s.course, v, "student");
  const CheckReport& c = r.checks[1];
  EXPECT_EQ(c.status, Status::failed);
  EXPECT_EQ(c.points, 0);
  EXPECT_EQ(c.summary, "tiled_matmul in a timed run: result 2 differs from the reference's");
  EXPECT_EQ(c.failure_ids, std::vector<std::string>{"speed_wrong"});
  EXPECT_EQ(r.score, 2);
  EXPECT_FALSE(r.all_passed());
  // The next step names the failed check, never "all checks pass".
  EXPECT_EQ(r.next_step.find("all checks pass"), std::string::npos) << r.next_step;
  EXPECT_NE(r.next_step.find("tiled_matmul_speed"), std::string::npos) << r.next_step;
  EXPECT_NE(render_text(r, {}).find("2/5 points · 1 of 2 checks pass"), std::string::npos) << render_text(r, {});
}

TEST(PipelineSpeed, AMeasuredRatioEarnsItsShareOfThePoints) {
  const SpeedModule s;
  Verdicts v = s.passed();
  FixedTiming timing(SpeedResult{.measured = true, .student_ms = 3, .reference_ms = 1, .ratio = 3,
                                 .fraction = speed_fraction(Speed{}, 3), .rounds = 5});
  time_speed_checks(v, &timing);
  const Report r = report_of(s.course, v, "student");
  const int expected = static_cast<int>(std::lround(3 * speed_fraction(Speed{}, 3)));
  EXPECT_EQ(r.checks[1].status, Status::passed);
  EXPECT_EQ(r.checks[1].points, expected);
  EXPECT_EQ(r.score, 2 + expected);
  EXPECT_DOUBLE_EQ(r.checks[1].speed_ratio, 3);
  EXPECT_NE(r.checks[1].speed.find("3.00× the reference's time"), std::string::npos) << r.checks[1].speed;
}

TEST(PipelineSpeed, WithoutAReferenceTheSpeedCheckIsSkippedAndSaysWhere) {
  const SpeedModule s;
  Verdicts v = s.passed();
  time_speed_checks(v, nullptr);
  const Report r = report_of(s.course, v, "student");
  EXPECT_EQ(r.checks[1].status, Status::skipped);
  EXPECT_EQ(r.checks[1].points, 0);
  EXPECT_NE(r.checks[1].summary.find("grader grade"), std::string::npos);
}

TEST(PipelineSpeed, ChecksThatJudgedDifferentContextsEarnNoSpeedPoints) {
  const SpeedModule s;
  Verdicts v = s.passed();
  v.run->checks[0].speed_context = "aaaa";
  v.run->checks[1].speed_context = "bbbb";
  FixedTiming timing(SpeedResult{.measured = true, .ratio = 1, .fraction = 1});
  time_speed_checks(v, &timing);
  const Report r = report_of(s.course, v, "student");
  EXPECT_EQ(r.checks[1].status, Status::failed);
  EXPECT_NE(r.checks[1].summary.find("different contexts"), std::string::npos) << r.checks[1].summary;
}

TEST(PipelineChecks, AnUnknownCheckIsNamedWithTheModulesChecks) {
  const SpeedModule s;
  try {
    chosen_checks(s.module, {"tiled"});
    FAIL() << "no error";
  } catch (const CourseError& e) {
    EXPECT_NE(std::string(e.what()).find("tiled_matmul tiled_matmul_speed"), std::string::npos) << e.what();
  }
}

// An observed program has its judging compiled out: used as the judge, it would pass every check
// it replays. Nothing is run; the call is refused.
TEST(PipelineJudge, AnObservedProgramIsRefusedAsTheJudge) {
  const SpeedModule s;
  BuildResult judge;
  judge.ok = true;
  judge.binary = "/course/.grader/build/verify/t_17_acceleration__stub__observed";
  judge.observed = true;
  RunResult observed;
  observed.checks.resize(s.module.checks.size());
  const std::vector<const Check*> checks = {&s.module.checks[0], &s.module.checks[1]};
  EXPECT_THROW(judge_built_checks(judge, observed, checks, RunOptions{}, "/nonexistent/judge.json"), std::logic_error);
}

TEST(PipelineNeeds, ACheckWhosePrerequisiteFailsWaitsForItAndTheNextStepNamesThePrerequisite) {
  Course course;
  course.root = "/course";
  Module m;
  m.number = 10;
  m.slug = "tokenization";
  Check stop{.id = "bpe_stop", .test = "T.Stop"}, ties{.id = "bpe_ties", .test = "T.Ties"},
      train{.id = "bpe_train", .test = "T.Train"}, encode{.id = "bpe_encode", .test = "T.Encode"};
  ties.needs = {"bpe_stop"};
  train.needs = {"bpe_stop", "bpe_ties"};
  encode.needs = {"bpe_train"};
  for (Check* c : {&stop, &ties, &train, &encode})
    c->failures = {Failure{.id = c->id + "_wrong", .message = c->id + " is wrong", .hint = "the usual cause"}};
  m.checks = {stop, ties, train, encode};
  Verdicts v;
  v.module = &m;
  v.checks = {&m.checks[0], &m.checks[1], &m.checks[2], &m.checks[3]};
  v.build.ok = true;
  v.run = RunResult{};
  // A wrong tie rule: the stop check passes, ties and train fail; encode crashes on its own.
  const std::vector<Status> seen = {Status::passed, Status::failed, Status::failed, Status::crashed};
  for (std::size_t i = 0; i < 4; ++i) {
    CheckResult r{.check = v.checks[i], .status = seen[i], .reason = "segmentation fault"};
    if (seen[i] == Status::failed) r.failures = {ReportedFailure{.id = v.checks[i]->id + "_wrong"}};
    v.run->checks.push_back(r);
  }
  mark_waiting(*v.run, v.checks);
  const Report r = report_of(course, v, "student");
  EXPECT_EQ(r.checks[1].summary, "bpe_ties is wrong");
  EXPECT_EQ(r.checks[2].summary, "skipped: fix bpe_ties first (this check builds on it)");
  EXPECT_TRUE(r.checks[2].hints.empty()) << "a waiting check gives no hint of its own";
  EXPECT_EQ(r.checks[3].status, Status::crashed) << "a crash is its own news";
  EXPECT_EQ(r.next_step, "fix 'bpe_ties' first; `grader hint 10 bpe_ties` explains the usual cause");
}

// A real link, by g++ and GNU ld (and gold, which the course builds use), of a student file whose
// definition's parameter differs from the header's and of a helper defined in two files.
struct Linked {
  fs::path dir;
  std::vector<fs::path> files, objects;
  std::string log_bfd, log_gold;
  explicit Linked(const std::map<std::string, std::string>& sources) {
    dir = fs::temp_directory_path() / ("kiln-link-" + std::to_string(::getpid()) + "-" + std::to_string(sources.size()));
    fs::remove_all(dir);
    fs::create_directories(dir / "include" / "kiln");
    write_if_changed(dir / "include" / "kiln" / "act.h",
                     "#pragma once\n#include <cstdint>\nnamespace kiln {\nstruct Tensor {};\n"
                     "Tensor softmax(const Tensor& x, std::int64_t dim);\n}  // namespace kiln\n");
    for (const auto& [name, text] : sources) {
      files.push_back(dir / name);
      write_if_changed(files.back(), text);
      objects.push_back(dir / (name + ".o"));
      EXPECT_TRUE(run_process({.argv = {"g++", "-std=c++20", "-I", (dir / "include").string(), "-c",
                                        files.back().string(), "-o", objects.back().string()}})
                      .ok());
    }
    std::vector<std::string> link = {"g++", "-o", (dir / "t").string()};
    for (const auto& o : objects) link.push_back(o.string());
    const ProcessResult bfd = run_process({.argv = link});
    link.push_back("-fuse-ld=gold");
    const ProcessResult gold = run_process({.argv = link});
    log_bfd = bfd.out + bfd.err;
    log_gold = gold.out + gold.err;
  }
  ~Linked() { fs::remove_all(dir); }
};

TEST(LinkErrors, AParameterThatDiffersFromTheHeaderIsNamed) {
  const Linked l({{"act.cpp", "#include \"kiln/act.h\"\nnamespace kiln {\nTensor softmax(const Tensor& x, int dim) {\n"
                              "  return x;\n}\n}  // namespace kiln\n"},
                  {"main.cpp", "#include \"kiln/act.h\"\nint main() { kiln::Tensor t; kiln::softmax(t, 1); }\n"}});
  for (const std::string& log : {l.log_bfd, l.log_gold}) {
    SCOPED_TRACE(log);
    const auto d = link_error(log, {l.files[0]}, {l.dir / "include" / "kiln" / "act.h"}, l.objects);
    ASSERT_TRUE(d);
    EXPECT_NE(d->message.find("kiln::softmax(kiln::Tensor const&, long)"), std::string::npos) << d->message;
    EXPECT_NE(d->message.find("parameter 2 is int in your definition and long in the header"), std::string::npos)
        << d->message;
    EXPECT_EQ(d->file, l.files[0]);
    EXPECT_EQ(d->line, 3);
    ASSERT_FALSE(d->notes.empty());
    EXPECT_NE(d->notes[0].find("Tensor softmax(const Tensor& x, std::int64_t dim);"), std::string::npos) << d->notes[0];
  }
}

TEST(LinkErrors, AFunctionDefinedInTwoFilesNamesBothAndTheFix) {
  const Linked l({{"a.cpp", "int helper(int a) { return a; }\n"},
                  {"b.cpp", "int helper(int a) { return a + 1; }\nint main() { return helper(1); }\n"}});
  for (const std::string& log : {l.log_bfd, l.log_gold}) {
    SCOPED_TRACE(log);
    const auto d = link_error(log, l.files, {}, l.objects);
    ASSERT_TRUE(d);
    EXPECT_NE(d->message.find("helper(int) is defined more than once: in " + l.files[0].string() + " and in " +
                              l.files[1].string()),
              std::string::npos)
        << d->message;
    EXPECT_NE(d->explanation.find("anonymous namespace"), std::string::npos);
  }
}

TEST(LinkErrors, NothingToExplainInACompileError) {
  EXPECT_FALSE(link_error("a.cpp:3:5: error: expected ';' before '}' token", {}, {}, {}));
}

}  // namespace
}  // namespace kiln::grader
