// The dataset: bytes to floats in [0, 1], and the statistics that normalise them.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/data.h"

namespace kiln {

Dataset make_dataset(const IdxArray& images, const IdxArray& labels, bool flatten) {
  // Check first (FormatError): images.dims has 3 sizes (N, rows, cols), labels.dims has 1 (N),
  // and the two N agree (name both counts). Then every byte b becomes the float b / 255.0f, in
  // the file's order (already row-major), into a tensor (N, rows, cols), or (N, rows·cols) when
  // flatten; the labels are the label bytes as std::int64_t.
  // No images give a dataset of size 0: images (0, rows, cols), or (0, rows·cols) when flatten, and
  // no labels; rows·cols is a 64-bit product (two sizes of 65536 make 2^32).
  throw kiln::NotImplemented();
}

std::pair<double, double> mean_and_std(const Tensor& x) {
  // Over every element of x (x.to_vector() reads a view too), in double:
  //   mean = Σ x / n,  std = √(Σ (x - mean)² / n)   (divide by n, not n - 1)
  // A float accumulator drifts once the sum is large: 7,840,000 pixels are enough to see it.
  // ShapeError for a tensor with no elements.
  // x may be a view, transposed or at an offset: read it through to_vector() or
  // contiguous().data(), never from storage_data().
  throw kiln::NotImplemented();
}

Tensor normalize(const Tensor& x, double mean, double std) {
  // A new tensor of x's shape holding (v - mean) / std for every element v, computed in double and
  // stored as float. std::invalid_argument when std is not > 0.
  // x may be a view, transposed or at an offset: read it through to_vector() or
  // contiguous().data(), never from storage_data(). A tensor with no elements gives a tensor of
  // its shape with no elements.
  throw kiln::NotImplemented();
}

}  // namespace kiln
