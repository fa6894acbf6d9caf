// What a milestone's trainer program reports to `grader milestone`.
//
// A trainer is given code: it builds a model only from the student's modules, trains it, and
// reports what happened. It decides nothing. The grader computes every figure it judges (accuracy
// and loss from the logits the trainer writes, the labels read by the grader itself, whether the
// parameters moved) and draws the loss curve.
//
// The run's settings come on the command line (`--epochs 3 --train 6000 --test 1000 --steps 100
// --seed 5 --data DIR --out DIR`); events go as JSON lines to the descriptor named by KILN_MILESTONE_FD, and
// to standard error as plain text when it is not set, so that a trainer also runs by hand.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::milestone {

struct Settings {
  int epochs = 1;
  std::int64_t train_count = -1;  // examples of the training set used; -1: all
  std::int64_t test_count = -1;   // examples of the test set evaluated; -1: all
  std::int64_t steps = -1;        // optimizer steps per epoch, for trainers that sample their batches
  std::uint64_t seed = 1;
  std::string data_dir;           // where the data set's files are
  std::string out_dir = ".";      // where logits and parameters are written
};

// Reads the settings; unknown options are an error that names them.
Settings parse(int argc, char** argv);

// Once, before training: how many epochs and optimizer steps per epoch there will be.
void begin(int epochs, std::int64_t steps_per_epoch);
// After each optimizer step: the batch's mean loss as the model computed it.
void step(int epoch, std::int64_t step, double loss);
// After each epoch, with its wall-clock seconds.
void epoch_done(int epoch, double mean_train_loss, double seconds);
// A set of parameters by name, "initial" before training and "final" after: written as raw
// float32 (row-major, in the order given) to OUT/parameters-<which>.f32.
void parameters(const std::string& which, const std::vector<std::pair<std::string, Tensor>>& named);
// A model's outputs for the evaluated examples, one row of logits each, in the data set's order:
// written as raw float32 to OUT/logits-<name>.f32. The grader judges them.
void logits(const std::string& name, const Tensor& rows);
// The bytes an output's model keeps its weights in (a quantized or pruned model's are fewer),
// shown beside its accuracy.
void size(const std::string& output, std::int64_t bytes);
// A line for the person watching, shown under the progress bar (a sample, a note).
void note(const std::string& text);
// For a trainer that trains several models one after the other: the steps and epochs reported
// after this belong to the model named (its own curve in the plot, its name on each epoch's line).
// Its epochs count from 1 again.
void model(const std::string& name);

}  // namespace kiln::milestone
