// Module 20, Capstone: a Fashion-MNIST classifier made small and fast, stored in one file format
// that the grader reads too, so that its accuracy, its size and its latency are figures of the
// same bytes.
//
// The model file (KCAP, version 1). Every number is little-endian; u32 is a 4-byte unsigned
// integer (2^31 and above are large positive numbers, never negative ones), u16 2 bytes, f32 an
// IEEE float, i8 a signed byte:
//
//   "KCAP"  u32 version (1)  u32 layer_count (1 to 64)
//   then layer_count layers, one after the other, each starting with u32 kind:
//     1 dense        u32 in, u32 out, f32 weight[out·in], f32 bias[out]
//                      y[n, j] = Σ_i weight[j·in + i] · x[n, i] + bias[j]
//     2 dense_int8   u32 in, u32 out, f32 scale[out], i8 code[out·in], f32 bias[out]
//                      y[n, j] = scale[j] · Σ_i code[j·in + i] · x[n, i] + bias[j]
//                      (the row's sum scaled once: scale 1e37 times a code of 127 is past FLT_MAX)
//     3 sparse_int8  u32 in, u32 out, u32 nnz, f32 scale[out], u32 row_start[out + 1],
//                    u16 column[nnz], i8 code[nnz], f32 bias[out]      (CSR, module 16)
//                      y[n, j] = scale[j] · Σ_{e in row_start[j] .. row_start[j+1]-1}
//                                  code[e] · x[n, column[e]] + bias[j]
//     4 relu         nothing more: y = max(x, 0), the width unchanged
//   and nothing after the last layer.
//
// A file is well formed when all of this holds: the magic and version 1 (not 0); 1 to 64 layers, at
// least one of them not relu; every in and out between 1 and 65,536; each layer's in equal to
// the width the layer before it gives (relu gives what it takes); a scale that is finite and
// greater than 0; every row start between 0 and nnz, the first 0, each at least the one before
// it and the last equal to nnz (each judged as it is read); every column below in; and exactly as many bytes as the layers need. The width the first weighted layer
// takes is the model's input width; the last one's out is its output width.
//
// Weights, scales and biases hold whatever values were written (finite or not): only the
// structure above is checked. Activations stay float32 through every layer: int8 is a way to
// store the weights, not to compute with them.
//
// The capstone's rules (module.yaml's capstone checks, docs/20_capstone.md): the model takes
// Fashion-MNIST images as 784 pixels in [0, 1] (byte / 255, no other normalisation: fold the
// training set's mean and standard deviation into the first layer), gives 10 logits, is at most
// 262,144 bytes (256 KiB), keeps every logit of the test images within ±10,000, and classifies
// at least 85% of the 10,000 test images right. It is trained on the 60,000 training images only:
// the test set is for the figure (the grader cannot see how a model was trained, so this rule is
// the student's to keep). Its predictions must be the file's: every logit within
// 1e-3·(1 + the row's largest logit - its smallest) + 1e-6·(the row's largest |logit|) of what the
// layers above give in exact arithmetic.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/data.h"    // kiln::FormatError
#include "kiln/tensor.h"

namespace kiln::capstone {

enum class LayerKind : std::uint32_t { dense = 1, dense_int8 = 2, sparse_int8 = 3, relu = 4 };

// One layer, as the file stores it. Which fields a kind uses:
//   dense        in, out, weight (out·in, row j = output j), bias (out)
//   dense_int8   in, out, scale (out), code (out·in), bias (out)
//   sparse_int8  in, out, scale (out), row_start (out + 1), column (nnz), code (nnz), bias (out)
//   relu         none (in = out = the width it passes through; for every relu before the first
//                weighted layer, that layer's in)
struct Layer {
  LayerKind kind = LayerKind::relu;
  std::int64_t in = 0, out = 0;
  std::vector<float> weight;
  std::vector<float> scale;
  std::vector<std::int8_t> code;
  std::vector<std::uint32_t> row_start;
  std::vector<std::uint16_t> column;
  std::vector<float> bias;
};

struct Model {
  std::vector<Layer> layers;
  std::int64_t input_width = 0;   // what the first weighted layer takes
  std::int64_t output_width = 0;  // what the last weighted layer gives
};

// The most layers, and the widest layer, a file may have.
constexpr std::uint32_t kMaxLayers = 64;
constexpr std::uint32_t kMaxWidth = 65536;
// The capstone's rules.
constexpr std::int64_t kImageWidth = 784;
constexpr std::int64_t kClasses = 10;
constexpr std::int64_t kMostBytes = 262144;
constexpr double kLeastAccuracy = 0.85;
constexpr double kLargestLogit = 10000;

// ---- Yours (src/capstone.cpp) ------------------------------------------------------------------

// Parses a KCAP file. A file that is not well formed throws kiln::FormatError whose message
// starts with the byte offset of the value that is wrong, then says what was found and what was
// expected there ("byte 12: layer 0 has kind 9; expected 1 to 4"; layers are counted from 0).
// The rules are judged in file order: where several values are wrong, the first is named (a
// layer whose in and out are both wrong, at its in; so is a wrong in where the file ends before
// the out, and a wrong row start or column where the file ends inside a later array of its layer).
// Nothing is half-loaded: the model is returned whole or not at all.
Model load_model(std::span<const std::uint8_t> bytes);

// The logits of images (N, input_width), row-major: (N, output_width). Throws kiln::ShapeError
// when images is not 2-D or its rows are not input_width wide. Images that are a contiguous view
// at an offset (a slice of a larger batch) are read from data(), where their values start, not
// from storage_data(), the storage's first float. An empty batch, (0, input_width) images, gives
// (0, output_width) logits and no error.
Tensor predict(const Model& model, const Tensor& images);

// The timed function: your model's logits (N, 10) for Fashion-MNIST images (N, 784) in [0, 1].
// It must give what predict(load_model(capstone_model_bytes()), images) gives, up to the rule's
// tolerance; how you get there (a model loaded once, weights laid out for your loops, the kernels
// of modules 15 to 17) is yours to choose.
Tensor capstone_predict(const Tensor& images);

// ---- Yours, written by `grader milestone capstone_fashion` (src/capstone_model.cpp) -------------

// The bytes of your capstone model.
std::span<const std::uint8_t> capstone_model_bytes();

// ---- Given (src/capstone_given.cpp) -------------------------------------------------------------

// The bytes of a KCAP file for `model` (what the capstone's trainer writes). Writes the layers as
// they are: a model load_model would reject comes out as a file it rejects.
std::vector<std::uint8_t> save_model(const Model& model);

// src/capstone_model.cpp for these bytes: a C++ source file that embeds them in base64, so that
// the model is part of the program the grader builds.
std::string model_source(std::span<const std::uint8_t> bytes);
// The bytes of base64 text (what model_source embeds); throws kiln::FormatError on a character
// that is not base64 or a length that is not a multiple of 4.
std::vector<std::uint8_t> decode_base64(std::string_view text);

}  // namespace kiln::capstone
