// Module 08, Training: models built from modules, a loss the graph can walk, the training loop,
// and checkpoints in the safetensors format.
//
// The pieces, and where each comes from:
//   Module, Linear, ReLU,   a model is a tree of modules; each registers its parameters (module 06
//   Flatten, Sequential     leaves) and its children, and computes forward() with module 06's
//                           recorded operations, so that loss.backward() reaches every parameter
//   cross_entropy_loss      module 04's cross-entropy as a module 06 graph node
//   train_epoch, evaluate,  the loop: module 05's DataLoader serves the batches, module 07's
//   predict                 optimizer turns the gradients into updates
//   save_safetensors,       a model's parameters written to, and read back from, a file that
//   load_safetensors,       Hugging Face's safetensors library (and PyTorch through it) reads
//   load_parameters
//
// Layouts, all row-major float32:
//   x         (N, features): row n is example n; Flatten turns (N, d1, d2, ...) into (N, d1·d2·...)
//   Linear    weight (in, out), bias (out); y (*, out) = x·weight + bias for x (*, in), applied to
//             x's last dimension, the bias added to every row (kiln keeps the weight (in, out) so
//             that y = x·W reads like the math; PyTorch stores the transpose, (out, in))
//   logits    (N, C): row n holds the C class scores of example n; targets are N class ids in [0, C)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/data.h"
#include "kiln/optimizers.h"
#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln::nn {

// ---------------------------------------------------------------------------------------------
// Modules (yours: src/modules.cpp, except what is marked given)

// The base of every layer and every model: its own parameters and its child modules, each under a
// name, in the order they were registered, and whether it is in training or evaluation mode.
class Module {
 public:
  virtual ~Module();  // given

  // The module's computation, through module 06's recorded operations (autograd::matmul, ...),
  // so that backward() reaches the parameters.
  virtual Tensor forward(const Tensor& x) = 0;

  // Given: forward(x), so that a model reads like a function: logits = model(x).
  Tensor operator()(const Tensor& x);

  // Every parameter of this module and of its descendants, with its full name:
  //   first this module's own parameters, in the order they were registered ("weight", "bias"),
  //   then each child's named_parameters(), in the order the children were registered, every
  //   name prefixed with the child's name and a dot ("0.weight", "0.bias", "2.weight", ...;
  //   a grandchild's give "body.1.weight").
  // This is PyTorch's order and naming (Module.named_parameters, state_dict). The tensors are the
  // registered handles: they share values and gradient bookkeeping with the model's own.
  virtual std::vector<std::pair<std::string, Tensor>> named_parameters() const;

  // The tensors of named_parameters(), in the same order (what an optimizer is built from).
  std::vector<Tensor> parameters() const;

  // Sets training mode (on = true) or evaluation mode (on = false) on this module and on every
  // descendant. A module starts in training mode.
  void train(bool on = true);
  // Given: train(false).
  void eval();
  // Given: the mode this module is in.
  bool training() const { return training_; }

  // Given: the children, in registration order.
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const { return children_; }

 protected:
  // Registers `parameter` under `name`: marks it as a leaf that requires grad
  // (set_requires_grad()), stores the handle, and returns the stored handle. Keep the returned
  // handle (weight = register_parameter("weight", ...)): it shares values AND gradient
  // bookkeeping with the registered one, whereas a handle copied before set_requires_grad() does
  // not share the bookkeeping created then. The tensor must be contiguous (an optimizer writes
  // into it).
  // Throws std::invalid_argument, naming the name, when it is empty, contains a '.', or is already
  // the name of a parameter or a child of this module.
  Tensor register_parameter(const std::string& name, Tensor parameter);

  // Registers `module` as a child under `name`. Throws std::invalid_argument, naming the name,
  // when it is empty, contains a '.', is already taken (by a parameter or a child), or module is
  // null. A refused call registers nothing (the name stays free).
  void register_module(const std::string& name, std::shared_ptr<Module> module);

 private:
  bool training_ = true;
  std::vector<std::pair<std::string, Tensor>> parameters_;                    // own, registration order
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;  // registration order
};

// A fully connected layer, y = x·weight + bias.
class Linear : public Module {
 public:
  // PyTorch's default initialisation of nn.Linear, drawn from `generator`:
  //   bound = 1/√in_features, computed in double
  //   weight (in_features, out_features): float(bound·(2u - 1)) for the next u = generator.next(),
  //            drawn first, in row-major order (i = 0 .. in-1 outside, o = 0 .. out-1 inside)
  //   bias (out_features): float(bound·(2u - 1)), drawn after all the weights, o = 0 .. out-1
  // in·out + out draws in all. Both are registered, "weight" then "bias", as leaves that require
  // grad. Throws std::invalid_argument when in_features or out_features is less than 1, before
  // drawing anything: a refused layer leaves the generator as it was.
  Linear(std::int64_t in_features, std::int64_t out_features, WichmannHill& generator);

  // x (*, in) -> y (*, out), like PyTorch's nn.Linear: the layer acts on x's last dimension, and
  // * is any number of leading dimensions, none included (x (in) gives (out); x (B, T, in) gives
  // (B, T, out)). Every row x[..., :] of in values gives y[..., :] = x[..., :]·weight + bias.
  // Through module 06's recorded operations, so that backward() reaches x, weight and bias (their
  // gradients summed over all the leading dimensions): autograd::reshape x to (R, in), R the
  // product of the leading sizes (1 for a 1-D x), autograd::matmul by weight, autograd::add the
  // bias (broadcast over the R rows), autograd::reshape back to (*, out).
  // Throws ShapeError, naming x's shape and the weight's shape (in, out), when x is 0-D or its
  // last dimension is not in_features.
  Tensor forward(const Tensor& x) override;

  std::int64_t in_features = 0;
  std::int64_t out_features = 0;
  Tensor weight;  // (in_features, out_features), the registered handle
  Tensor bias;    // (out_features), the registered handle
};

// max(x, 0) elementwise, through autograd::relu. No parameters.
class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
};

// (N, d1, d2, ...) -> (N, d1·d2·...) through autograd::reshape; (N) becomes (N, 1). No
// parameters. Throws ShapeError naming the shape for a scalar (shape ()).
class Flatten : public Module {
 public:
  Tensor forward(const Tensor& x) override;
};

// Children applied one after the other: forward(x) = layers[k-1](...layers[1](layers[0](x))).
// The children are registered under "0", "1", "2", ..., so a Sequential of Linear, ReLU, Linear
// has the parameters "0.weight", "0.bias", "2.weight", "2.bias".
class Sequential : public Module {
 public:
  // Throws std::invalid_argument naming the position of a null layer. No layers: forward(x) = x.
  explicit Sequential(std::vector<std::shared_ptr<Module>> layers);
  Tensor forward(const Tensor& x) override;
};

// Given (src/training_given.cpp): while it lives, no operation on the model's parameters is
// recorded. It turns requires_grad off on every parameter (through the shared bookkeeping, so
// each keeps whatever gradient it has) and turns it back on when it goes out of scope, even when
// an exception leaves the scope. Module 06 records a node only when an input requires grad, so
// a forward pass under the guard builds no graph, as under PyTorch's torch.no_grad().
class NoGradGuard {
 public:
  explicit NoGradGuard(const Module& model);
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  std::vector<Tensor> parameters_;
  std::vector<bool> required_;
};

// ---------------------------------------------------------------------------------------------
// The loss as a graph node (yours: src/loss.cpp)

// Module 04's cross-entropy, recorded as a module 06 node.
//   forward()                  kiln::cross_entropy(inputs[0], targets): the mean over the N rows,
//                              a scalar (shape ())
//   backward(grad_output)      { grad_output · kiln::cross_entropy_backward(inputs[0], targets) }:
//                              grad_output is dL/d(loss), shape (), usually 1 but not always
//                              (a loss scaled by 3 passes 3 down)
struct CrossEntropyFunction : autograd::Function {
  std::vector<std::int64_t> targets;
  Tensor forward() override;
  std::vector<Tensor> backward(const Tensor& grad_output) override;
};

// The loss a training step backpropagates: the mean cross-entropy of logits (N, C) against N class
// ids, as a scalar (shape ()) recorded as a CrossEntropyFunction node when the logits require
// grad. Module 04's errors come through: ShapeError (not 2-D, a count of targets other than N),
// IndexError (a target outside [0, C)).
Tensor cross_entropy_loss(const Tensor& logits, const std::vector<std::int64_t>& targets);

// ---------------------------------------------------------------------------------------------
// The loop (yours: src/loop.cpp)

// What one pass over a loader measured.
struct EpochResult {
  double loss = 0.0;          // the mean loss per example: Σ_batches loss·B / examples
  double accuracy = 0.0;      // the fraction of examples whose argmax (first maximum) is the label
  std::int64_t examples = 0;  // how many examples the pass saw
};
// No batches: {0, 0, 0}.

// The index of the largest of each row of logits (N, C), the first one when several are equal
// (ties go to the lowest index, as in NumPy and PyTorch). Throws ShapeError naming the shape when
// logits is not 2-D or has no columns. logits may be a view, at an offset too: read them through
// to_vector(), never storage_data(). Logits (0, C) with C >= 1, a batch of no rows, give no
// classes.
std::vector<std::int64_t> argmax_rows(const Tensor& logits);

// One epoch of training: model.train(), then for each batch of loader.epoch(), in order:
//   optimizer.zero_grad()
//   logits = model(batch.images);  loss = cross_entropy_loss(logits, batch.labels)
//   loss.backward()
//   optimizer.step()
// The loss and accuracy of a batch are those of its logits, before its step. The optimizer must
// have been built from model.parameters().
EpochResult train_epoch(Module& model, optim::Optimizer& optimizer, DataLoader& loader);

// One pass without learning: model.eval(), then every batch of one loader.epoch() under a
// NoGradGuard (no graph is recorded), no backward(): the parameters and their gradients are
// exactly as before. Measures what train_epoch measures. The model stays in evaluation mode.
// Like train_epoch it takes one epoch (one epoch() call) from the loader: a shuffling loader
// draws a new order at every call.
EpochResult evaluate(Module& model, DataLoader& loader);

// The predicted class of every row of x: model.eval(), model(x) under a NoGradGuard, then
// argmax_rows of the logits. The model stays in evaluation mode.
std::vector<std::int64_t> predict(Module& model, const Tensor& x);

// ---------------------------------------------------------------------------------------------
// Checkpoints: the safetensors format (yours: src/safetensors.cpp, except parse_safetensors_header)
//
// Hugging Face's safetensors format, which its library and PyTorch (through it) read and write:
//   bytes 0 .. 7         N, the length of the header, an unsigned 64-bit integer, little-endian
//   bytes 8 .. 8 + N-1   the header: a JSON object, one entry per tensor,
//                          "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}
//                        and optionally "__metadata__": {"key": "value", ...} (strings only);
//                        padded at its end with spaces (0x20) so that N is a multiple of 8
//   bytes 8 + N ..       the data: every tensor's elements, row-major, each float32 as its 4
//                        bytes little-endian; tensor "name" occupies bytes [8 + N + begin,
//                        8 + N + end) of the file. Sorted by begin, the tensors follow one another
//                        without gaps or overlaps from 0 to the end of the file.
// F32 is the only dtype kiln reads or writes. Every x86 and ARM machine stores a float
// little-endian, so its 4 bytes (std::memcpy) are the file's bytes; kiln assumes such a machine.

// Writes `tensors` to `path` (replacing the file), in the given order: the header lists them in
// that order, and their data follows in that order, begin of the first at 0, each next where the
// last ended. Views are written by their elements in row-major order (to_vector()). A view at an
// offset is written by its own elements, from its offset, never from storage_data(). Each name is
// written as a JSON string: '"' as \" and '\' as \\, a character below 0x20 as \u00XX (two hex
// digits; JSON's short forms, \n for \u000a and the like, read the same); other bytes as they are
// (UTF-8 passes through). A reader takes the header as JSON, so any escape it reads as the same
// character is as good (\u0020 for a space). No "__metadata__". No tensors gives the header "{}"
// padded to 8 bytes.
// Throws std::invalid_argument for an empty name, a name used twice or "__metadata__", before
// writing anything (a file already at `path` is left as it was), and std::runtime_error naming
// `path` when the file cannot be written.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors);

// Given (src/training_given.cpp): what a safetensors header says about one tensor.
struct TensorEntry {
  std::string name;
  std::string dtype;           // "F32", "F16", "I64", ... as written
  Shape shape;                 // each size ≥ 0
  std::uint64_t begin = 0;     // data_offsets[0], relative to the start of the data
  std::uint64_t end = 0;       // data_offsets[1]
};

// Given: parses the N bytes of JSON of a header, which start at byte 8 of the file at `path`
// (nlohmann::json does the parsing). Returns the tensors in the order the header lists them, and
// skips "__metadata__". Throws kiln::FormatError (module 05) naming `path` and a byte offset
// ("byte 37") when the text is not JSON, is not an object, or an entry lacks a string "dtype", a
// "shape" of integers ≥ 0 or "data_offsets" of two integers ≥ 0. It checks nothing else: the
// dtype, the sizes and the offsets are yours to validate.
std::vector<TensorEntry> parse_safetensors_header(const std::string& json, const std::string& path);

// Reads every tensor of the safetensors file at `path`, in the order of their data (by begin),
// each a new contiguous tensor. Throws std::runtime_error naming `path` when the file cannot be
// opened, and kiln::FormatError naming `path` and a byte offset ("byte 5") when the file is
// damaged, and what was expected there:
//   * fewer than 8 bytes: the file ends at byte size(), inside the header length
//   * 8 + N past the end of the file: the header length at byte 0
//   * the header is not what parse_safetensors_header accepts (its error comes through)
//   * a dtype other than "F32", at byte 8, naming the tensor and its dtype
//   * end < begin, or end - begin ≠ 4·numel(shape), at byte 8, naming the tensor
//   * sorted by begin, a tensor that does not start where the last ended (0 for the first), or a
//     last one that does not end at the end of the file: a gap, an overlap or a range past the
//     end, at byte 8 + N + the offset where the data was expected, naming the tensor
// All of it is checked before any tensor is built.
std::vector<std::pair<std::string, Tensor>> load_safetensors(const std::string& path);

// Loads the file at `path` into the model's parameters, in place (through data(): every handle to
// a parameter, an optimizer's too, sees the new values), all or nothing. First everything is
// checked: the file as load_safetensors checks it, then that it holds exactly the model's
// named_parameters(): a parameter missing from the file, a tensor the model does not have, or a
// shape that differs throws kiln::FormatError naming `path`, the tensor and, for a shape, both
// shapes. Only when all of it holds are the values copied; after an error the model is untouched.
// A parameter may be a contiguous view at an offset: its values are written from
// parameter.data(), never from storage_data().
void load_parameters(Module& model, const std::string& path);

}  // namespace kiln::nn
