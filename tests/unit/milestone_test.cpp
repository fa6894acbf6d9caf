#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "kiln/grader/bench.h"
#include "kiln/grader/milestone.h"
#include <unistd.h>

namespace kiln::grader {
namespace {

void write(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }

// A fresh folder, removed afterwards.
struct Scratch {
  explicit Scratch(const std::string& what)
      : dir(fs::temp_directory_path() / ("kiln-unit-" + what + "-" + std::to_string(::getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  fs::path dir;
};

TEST(FortunesHeldOut, EveryTenthFortuneOverTheWholeCorpusInTheCorpusVocabulary) {
  Scratch scratch("fortunes");
  // Twelve fortunes over two files: the tenth (in the second file) is held out. "é" is one
  // character of two bytes; the last fortune has no "%" after it and no final newline.
  std::string first, second;
  for (int i = 1; i <= 7; ++i) first += "f" + std::to_string(i) + "\n%\n";
  for (int i = 8; i <= 11; ++i) second += (i == 10 ? std::string("é b\n") : "g\n") + "%\n";
  second += "last";
  write(scratch.dir / "one", first);
  write(scratch.dir / "two", second);
  const auto [ids, size] = read_fortunes_held_out(scratch.dir, {"one", "two"});
  // The corpus's characters, ascending: '\n' 0, ' ' 1, '%' 2, '1' to '7' 3 to 9, then a b f g l s t
  // 10 to 16, and 'é' 17.
  EXPECT_EQ(size, 18);
  EXPECT_EQ(ids, (std::vector<std::int64_t>{17, 1, 11, 0, 2, 0}));  // "é b\n%\n"
}

TEST(FortunesHeldOut, TextThatIsNotUtf8IsAnErrorNamingTheFile) {
  Scratch scratch("fortunes-bad");
  write(scratch.dir / "bad", "caf\xe9\n%\n");
  EXPECT_THROW(read_fortunes_held_out(scratch.dir, {"bad"}), CourseError);
}

// A malformed datasets.yaml is refused with its file, the line and the field named.
TEST(DataSets, AMalformedFileIsRefusedNamingTheFileTheLineAndTheField) {
  Scratch scratch("datasets");
  const fs::path file = scratch.dir / "datasets.yaml";
  struct Case {
    std::string yaml, line, said;
  };
  const Case cases[] = {
      {"- name: digits\n  package: python3-sklearn\n  format: digits-csv\n  test_labels: d.csv.gz\n", ":1:", "needs 'dir'"},
      {"- name: digits\n  package: p\n  dir: /d\n  format: csv\n  test_labels: d.csv.gz\n", ":4:", "'format' is 'csv'"},
      {"- name: fortunes\n  package: fortunes\n  dir: /f\n  format: text\n", ":1:", "needs 'corpus'"},
      {"- name: digits\n  package: p\n  dir: data\n  format: idx\n  test_labels: l\n", ":3:", "'dir' should be an absolute path"},
      {"- name: digits\n  package: p\n  dir: /d\n  format: idx\n  labels: l\n", ":5:", "unknown field 'labels'"},
      {"- name: a\n  package: p\n  dir: /d\n  format: idx\n  test_labels: l\n- name: a\n  package: p\n  dir: /d\n  "
       "format: idx\n  test_labels: l\n",
       ":6:", "'a' is described twice"},
      {"name: digits\n", ":1:", "should be a list of data sets"},
  };
  for (const Case& c : cases) {
    write(file, c.yaml);
    try {
      load_data_sources(file);
      ADD_FAILURE() << "accepted:\n" << c.yaml;
    } catch (const CourseError& e) {
      const std::string error = e.what();
      EXPECT_NE(error.find(file.string() + c.line), std::string::npos) << error;
      EXPECT_NE(error.find(c.said), std::string::npos) << error;
    }
  }
}

// The course's data sets: each installed by a package of bin/packages.txt, with its labels in dir;
// the text's corpus is the files the trainers read (corpus_files() in milestones/support/text.h), in
// the same order, so that the grader holds out the fortunes the trainers hold out.
TEST(DataSets, TheCoursesAgreeWithItsPackagesAndTheTrainersCorpus) {
  const fs::path home = fs::path(KILN_TEST_DATA).parent_path();
  const std::vector<DataSource> sets = load_data_sources(home / "milestones" / "datasets.yaml");
  ASSERT_FALSE(sets.empty());
  const std::string packages = read_file(home / "bin" / "packages.txt");
  const std::string text_h = read_file(home / "milestones" / "support" / "text.h");
  std::vector<std::string> trainers;  // the quoted names of corpus_files()'s list
  const std::size_t begin = text_h.find("files = {"), end = text_h.find("};", begin);
  ASSERT_NE(begin, std::string::npos) << "text.h no longer lists its files as `files = {...}`";
  for (std::size_t at = text_h.find('"', begin); at < end; at = text_h.find('"', at + 1)) {
    const std::size_t close = text_h.find('"', at + 1);
    trainers.push_back(text_h.substr(at + 1, close - at - 1));
    at = close;
  }
  for (const DataSource& d : sets) {
    EXPECT_NE(packages.find("\n" + d.package + "\n"), std::string::npos) << d.name << ": " << d.package;
    if (d.format == LabelFormat::text) EXPECT_EQ(d.corpus, trainers) << d.name;
    else EXPECT_EQ(d.test_labels.parent_path(), d.dir) << d.name;
  }
}

TEST(MilestoneJudging, AccuracyAndLossOfHandWorkedLogits) {
  // Two rows of two classes: the first right with equal logits (ties go to class 0), the second
  // wrong. Loss: log 2, then log(1 + e^2) - 0.
  const auto [accuracy, loss] = accuracy_and_loss({1, 1, 2, 0}, 2, 2, {0, 1});
  EXPECT_DOUBLE_EQ(accuracy, 0.5);
  EXPECT_NEAR(loss, (std::log(2.0) + std::log(1 + std::exp(2.0))) / 2, 1e-12);
}

TEST(EmulatorCounts, ParsedAndDrawnWithTheSegmentsTheLanesTouched) {
  const std::string lines =
      "{\"group\": \"mm 4\", \"name\": \"matmul_naive\", \"role\": 1, \"error\": \"\", \"figures\": "
      "[{\"name\": \"load transactions\", \"value\": 32}], \"accesses\": [{\"buffer\": \"a\", \"rows\": 64, \"cols\": "
      "64, \"first_request\": [0, 64, 128, -1]}]}\n"
      "not json\n"
      "{\"group\": \"mm 4\", \"name\": \"blocktile_1d\", \"role\": 0, \"error\": \"not written yet: x\", \"figures\": [], "
      "\"accesses\": []}\n";
  BenchReport report;
  report.emulator = true;
  report.counted = parse_counted(lines);
  // A line that is not a kernel's counts is reported, not dropped.
  ASSERT_EQ(report.counted.size(), 3u);
  EXPECT_EQ(report.counted[0].figures.at(0).second, 32);
  EXPECT_EQ(report.counted[0].accesses.at(0).first_request, (std::vector<std::int64_t>{0, 64, 128, -1}));
  EXPECT_NE(report.counted[1].error.find("not a kernel's counts: not json"), std::string::npos);
  EXPECT_EQ(report.counted[2].error, "not written yet: x");
  const std::string svg = warp_access_svg(report);
  // Elements 0, 64 and 128 lie in rows 0, 1 and 2: three segments of 32 floats.
  EXPECT_NE(svg.find("a: 3 elements in 3 segments"), std::string::npos) << svg;
  EXPECT_NE(svg.find("not counted"), std::string::npos);
  const std::string text = render_bench_text(report);
  EXPECT_NE(text.find("load transactions"), std::string::npos) << text;
  EXPECT_NE(text.find("not written yet: x"), std::string::npos) << text;
}

// The loss axis of a milestone's plot: gridlines at round values up to the first one above the
// highest loss, and a legend that does not say "test" twice.
TEST(LossCurve, GridlinesAtRoundValuesAndTheTestLossNamedOnce) {
  auto labels_of = [](const std::string& svg) {
    std::vector<std::string> labels;
    for (std::size_t at = svg.find("text-anchor=\"end\">"); at != std::string::npos;
         at = svg.find("text-anchor=\"end\">", at + 1)) {
      const std::size_t begin = at + 18;
      labels.push_back(svg.substr(begin, svg.find('<', begin) - begin));
    }
    return labels;
  };
  MilestoneResult r;
  r.title = "An MLP learns handwritten digits";
  r.run = "quick";
  for (int step = 0; step <= 100; ++step) r.curve.emplace_back(step / 20.0, 2.3274620 * std::exp(-step / 30.0));
  r.judged.push_back({.output = "test", .rows = 359, .accuracy = 0.9, .loss = 0.41});
  std::string svg = loss_curve_svg(r);
  std::vector<std::string> labels = labels_of(svg);
  ASSERT_GE(labels.size(), 6u) << svg;
  EXPECT_EQ(std::vector<std::string>(labels.begin(), labels.begin() + 6),
            (std::vector<std::string>{"0", "0.5", "1", "1.5", "2", "2.5"}));
  EXPECT_EQ(svg.find("0.58"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">test loss 0.410, accuracy"), std::string::npos) << svg;
  EXPECT_EQ(svg.find("test: test loss"), std::string::npos) << svg;

  // Small losses, and outputs with names of their own.
  r.curve = {{0.5, 0.0031}, {1, 0.0007}};
  r.judged = {{.output = "mlp", .loss = 0.0004}, {.output = "linear", .loss = 0.0069}};
  svg = loss_curve_svg(r);
  labels = labels_of(svg);
  EXPECT_EQ(std::vector<std::string>(labels.begin(), labels.begin() + 5),
            (std::vector<std::string>{"0", "0.002", "0.004", "0.006", "0.008"}));
  EXPECT_NE(svg.find(">mlp: test loss 0.000"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">linear: test loss 0.007"), std::string::npos) << svg;
}

}  // namespace
}  // namespace kiln::grader
