// Reading a KCAP model, running it, and the capstone's timed predictor. The format is laid out in
// kiln/capstone.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "kiln/capstone.h"

namespace kiln::capstone {

Model load_model(std::span<const std::uint8_t> bytes) {
  // Read front to back, keeping the offset of what you read next. Before every read, check that
  // the bytes are there; before reading an array, that all of it is (count ≤ bytes left / size
  // of one value: a lying count must not make you allocate gigabytes). Integers are
  // little-endian: value = b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24, assembled in an unsigned
  // type (a u32 of 2^31 or more is no negative number); a float's 4 bytes are those of a u32
  // copied into it with std::memcpy.
  // Check, in file order: "KCAP"; version 1 (not 0); 1 to kMaxLayers layers; for each layer its
  // kind (1 to 4), in (1 to kMaxWidth, equal to the width the layers before give), out (1 to
  // kMaxWidth), the scales (finite, > 0), for sparse_int8 nnz ≤ in·out, each row start as it is
  // read (0 first, then from the one before it to nnz, the last equal to nnz) and the columns
  // (< in); at least one layer with weights; no bytes after the last layer. On the first thing
  // wrong (in file order: a layer's in judged before its out is read, the row starts before the
  // columns are read, the columns before the codes), throw
  // kiln::FormatError("byte OFFSET: what was found; expected what"), OFFSET that of the wrong
  // value (of an array's start when the array does not fit). Fill input_width and output_width;
  // a relu's in and out are the width it passes through (every leading relu's: the first
  // weighted layer's in).
  throw kiln::NotImplemented();
}

Tensor predict(const Model& model, const Tensor& images) {
  // Throw ShapeError naming images' shape unless images is (N, model.input_width). An empty batch,
  // (0, input_width) images, gives (0, output_width) logits and no error.
  // x starts as images (row-major, contiguous). Images that are a contiguous view at an offset
  // (a slice of a larger batch) are read from data(), where their values start, not from
  // storage_data(), the storage's first float. Each layer maps x (N, in) to y (N, out):
  //   dense        y[n, j] = Σ_i weight[j·in + i]·x[n, i] + bias[j]
  //   dense_int8   y[n, j] = scale[j]·Σ_i code[j·in + i]·x[n, i] + bias[j]   (the sum, then scaled once)
  //   sparse_int8  y[n, j] = scale[j]·Σ_{e = row_start[j]}^{row_start[j+1]-1} code[e]·x[n, column[e]] + bias[j]
  //   relu         y = max(x, 0)
  // in float32. The result is (N, model.output_width).
  throw kiln::NotImplemented();
}

Tensor capstone_predict(const Tensor& images) {
  // predict with your model, capstone_model_bytes(). Start with the plain version; then make it
  // fast (load the model once, lay the weights out for your loops, use modules 15 to 17).
  // `grader grade` times it beside the reference's, on images it has never seen.
  throw kiln::NotImplemented();
}

}  // namespace kiln::capstone
