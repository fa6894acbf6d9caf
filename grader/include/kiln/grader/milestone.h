// Milestones: a model built only from the student's modules trains on real data, and the grader
// judges what it did.
//
//   milestones/NN_slug/milestone.yaml   what to build and run, and what counts as success
//   milestones/NN_slug/*.cpp            the trainer (given code; see milestones/support/milestone.h)
//
// The trainer reports; the grader decides. Accuracy and loss are computed here from the logits
// the trainer wrote and labels the grader reads itself; every parameter must have moved; a seeded
// run's first steps must follow the golden trajectory.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/grader/course.h"
#include "kiln/grader/workspace.h"

namespace kiln::grader {

// How the grader reads a data set's labels (datasets.yaml's `format`).
enum class LabelFormat {
  none,        // no data set: the milestone lists its labels
  idx,         // test_labels is an IDX label file, gzip allowed (Fashion-MNIST)
  digits_csv,  // "digits-csv": the last column of every fifth line of a gzipped CSV (scikit-learn's digits)
  text,        // the characters of every tenth fortune of the corpus (read_fortunes_held_out)
};

// Where a data set's files are (installed by a Debian package), and how its labels are read: an
// entry of milestones/datasets.yaml.
struct DataSource {
  std::string name;             // "fashion-mnist", "digits", "fortunes", "none"
  std::string package;          // the Debian package that installs it (bin/packages.txt)
  fs::path dir;                 // handed to the trainer as --data
  fs::path test_labels;         // the labels the logits are judged against, in dir (idx, digits-csv)
  LabelFormat format = LabelFormat::none;
  std::vector<std::string> corpus;  // a text's files, in dir, in order (fortunes)
};

struct MilestoneRun {
  std::vector<std::string> args;  // the trainer's settings (--epochs 3 ...)
  std::int64_t test_count = 0;    // rows of logits expected (0: as many labels as there are)
  double timeout_s = 600;
  std::vector<double> golden;     // the first steps' losses of a correct library, in order
  double golden_tolerance = 1e-4;
};

// A judgement on one set of logits.
struct LogitsTarget {
  std::string output;            // the trainer's logits name
  std::optional<double> min_accuracy, max_accuracy;
  std::optional<double> max_loss;    // mean cross-entropy, nats per example (per character for a text)
  // At most this much accuracy lost against another output (a compressed model against its
  // original): accuracy(output) >= accuracy(drop_from) - max_drop.
  std::string drop_from;
  std::optional<double> max_drop;
};

// A judgement on how a model behaves, from logits the trainer wrote for probes.
struct BehaviourCheck {
  std::string kind;              // "causal" | "positional"
  std::string output;            // causal: the window's logits; positional: a repeated token's
  std::string changed;           // causal: the logits of the same window, one token changed
  std::int64_t position = 0;     // causal: the changed token's position
  double tolerance = 1e-6;       // causal: the largest change allowed before `position`
};

struct Milestone {
  std::string id;                // "mlp_fashion" (from the folder name NN_id)
  int order = 0;                 // NN
  std::string title;
  std::string summary;
  std::vector<int> modules;      // the modules whose libraries it trains (with their prerequisites)
  std::vector<fs::path> sources;
  DataSource data;
  std::vector<std::int64_t> labels;  // for a data set of its own (XOR): the labels, in order
  std::map<std::string, MilestoneRun> runs;  // "full", "quick"
  std::vector<LogitsTarget> targets;
  // A quick run's targets, where they differ (fewer epochs on fewer examples).
  std::vector<LogitsTarget> quick_targets;
  std::vector<BehaviourCheck> behaviour;
  // Files a passing full run puts into a module for the student (the capstone's model source):
  // OUT/file goes to modules/<module>/to, the file it replaces backed up first.
  struct Install {
    std::string file;
    int module = 0;
    std::string to;
  };
  std::vector<Install> installs;
  fs::path dir;
};

// The course's milestones, in order, with the data sets of milestones/datasets.yaml; a malformed
// file is a CourseError that names it, the line and the field.
std::vector<Milestone> load_milestones(const Course& course);
// The data sets a datasets.yaml describes, in its order (none when the file does not exist).
std::vector<DataSource> load_data_sources(const fs::path& yaml);

struct MilestoneCommand {
  std::vector<std::string> names;  // empty: every milestone whose module exists
  bool solution = false;
  bool quick = false;
  bool verbose = false;
  std::string format = "text";     // text | json
  std::string out;
};

// What the grader measured of one run.
struct MilestoneResult {
  std::string id, title, run;
  bool passed = false;
  std::string problem;             // why it did not pass (first reason), or why it could not run
  double seconds = 0;
  struct Judged {
    std::string output;
    std::int64_t rows = 0;
    double accuracy = 0, loss = 0;
    std::string target;            // "at least 88%"
    bool met = false;
    std::int64_t bytes = -1;       // the model's weight bytes, as the trainer counted them (-1: none)
  };
  std::vector<Judged> judged;
  struct Behaved {
    std::string what, detail;
    bool met = false;
  };
  std::vector<Behaved> behaved;
  std::vector<std::pair<std::string, double>> moved;  // parameter, largest change
  std::vector<double> first_losses;                   // the run's first steps
  std::vector<double> golden;
  std::vector<std::pair<double, double>> curve;       // (epoch as a fraction, loss) per step
  // A trainer of several models: where in `curve` each model's steps start, and its name.
  std::vector<std::pair<std::size_t, std::string>> models;
  std::vector<std::pair<int, double>> epoch_losses;
  std::vector<std::string> notes;
  fs::path plot;
  fs::path tradeoff;  // accuracy against weight bytes, when two or more outputs have a size
};

// Builds the chosen milestones' trainers, optimised, against the student's modules or (solution)
// the reference solutions; returns their paths, in order.
std::vector<fs::path> build_trainers(const Workspace& ws, const std::vector<const Milestone*>& chosen, bool solution,
                                    bool verbose);
// Runs one trainer (the command's run: full or quick) and judges it.
MilestoneResult run_milestone(const Workspace& ws, const Milestone& m, const MilestoneCommand& cmd, const fs::path& binary);
int run_milestone_command(const Workspace& ws, const MilestoneCommand& cmd);

// Reads the labels of an IDX file (magic 0x00000801), gzip-compressed or not.
std::vector<std::int64_t> read_idx_labels(const fs::path& file);
// The labels of scikit-learn's digits.csv.gz (gzip) on its held-out lines: every fifth, 4, 9, 14, ...
std::vector<std::int64_t> read_digits_held_out_labels(const fs::path& file);
// The held-out text of a corpus of fortunes, as the trainers split it (milestones/support/text.h):
// fortunes are the text between lines holding only "%"; every tenth is held out, each followed by
// "%\n". Returns the held-out text's characters as ids of the whole corpus's vocabulary (its
// distinct code points, ascending) and the vocabulary's size.
std::pair<std::vector<std::int64_t>, std::int64_t> read_fortunes_held_out(const fs::path& dir,
                                                                          const std::vector<std::string>& files);
// Accuracy (argmax, ties to the lowest index) and mean cross-entropy of logits against labels.
std::pair<double, double> accuracy_and_loss(const std::vector<float>& logits, std::int64_t rows, std::int64_t classes,
                                            const std::vector<std::int64_t>& labels);
std::string loss_curve_svg(const MilestoneResult& r);
std::string tradeoff_svg(const MilestoneResult& r);

}  // namespace kiln::grader
