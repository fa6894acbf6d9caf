// Module 05, Data: real images read from real files, and fed to a model in batches.
//
// The pipeline, from the file on disk to the batch a model sees:
//   read_idx          the bytes of an IDX file (gunzipped first when they are gzip), parsed into
//                     its dimensions and its unsigned bytes
//   make_dataset      images and labels as a Dataset: pixels as floats x/255 in [0, 1]
//   mean_and_std,     the statistics of the training images, and (x - mean)/std with them
//   normalize
//   DataLoader        the dataset cut into batches, in a shuffled order drawn from module 01's
//                     Wichmann-Hill generator, so that one seed gives one order
//   image_svg,        pictures: an image as a grid of gray squares, a histogram's counts
//   histogram
//
// The IDX format (Yann LeCun's, used by MNIST and Fashion-MNIST). Every number in it is a
// big-endian ("most significant byte first") unsigned 32-bit integer:
//   bytes 0, 1        0x00 0x00
//   byte 2            the element type: 0x08 unsigned byte (the only one kiln reads); the format
//                     also defines 0x09 signed byte, 0x0B short, 0x0C int, 0x0D float, 0x0E double
//   byte 3            the number of dimensions n (1 for labels, 3 for images)
//   bytes 4 .. 4n+3   the size of each dimension, one uint32 each (dimension d at byte 4 + 4d)
//   bytes 4n+4 ..     the data: size_0·size_1·…·size_{n-1} elements, row-major, and nothing after
// So the Fashion-MNIST test images start 0x00000803 (unsigned bytes, 3 dimensions), then 10000,
// 28, 28, then 7,840,000 bytes from byte 16 on; the labels start 0x00000801, then 10000.
//
// Layouts, all row-major float32:
//   Dataset::images   (N, rows, cols), or (N, rows·cols) when flattened; image i, pixel (r, c) at
//                     i·rows·cols + r·cols + c in either
//   Batch::images     the same with B (the batch's size) in place of N
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kiln/random.h"
#include "kiln/tensor.h"

namespace kiln {

// A file whose bytes are not what its format promises: a wrong magic number, a file that ends
// too early or goes on too long, a corrupt gzip stream, images and labels that do not pair up.
// The message names the file, the byte offset where the problem is ("byte 10"), and what was
// expected there.
class FormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Reading IDX files (yours: src/idx.cpp, except gunzip, which is given in src/gzip_given.cpp)

// What the first 4 + 4n bytes of an IDX file say.
struct IdxHeader {
  int type = 0;                  // byte 2: the element type (0x08, unsigned byte)
  Shape dims;                    // the n sizes, dims[d] from bytes 4 + 4d .. 7 + 4d
  std::int64_t data_offset = 0;  // where the data starts: 4 + 4n
};

// A whole IDX file: its dimensions and its numel(dims) bytes, row-major.
struct IdxArray {
  Shape dims;
  std::vector<std::uint8_t> values;
};

// The unsigned 32-bit integer stored big-endian in bytes[offset .. offset + 3]:
// (b0 << 24) | (b1 << 16) | (b2 << 8) | b3. The caller makes sure the four bytes exist.
std::uint32_t big_endian_u32(const std::vector<std::uint8_t>& bytes, std::size_t offset);

// Parses the header at the start of `bytes`; `name` names the file in error messages.
// Throws FormatError, whose message contains `name` and the offset as "byte N", for the first of
// these that holds, in this order:
//   * fewer than 4 bytes: the file ends at byte size(), where the 4-byte magic number should be
//   * bytes 0 and 1 not both 0: a wrong magic number, at byte 0
//   * byte 2 not 0x08: an element type kiln does not read, at byte 2
//   * byte 3 is 0: no dimensions, at byte 3
//   * fewer than 4 + 4n bytes: the file ends at byte size(), inside the sizes of the dimensions
//     (a 3-dimensional file cut at byte 10 gives "... ends at byte 10 ...")
// Sizes are unsigned 32-bit and kept whole: 4294967295 stays 4294967295 (an int would make it -1).
IdxHeader parse_idx_header(const std::vector<std::uint8_t>& bytes, const std::string& name);

// Parses a whole IDX file: the header, then exactly numel(dims) bytes of data. Throws what
// parse_idx_header throws, and FormatError naming `name` and
//   * the file's end, "byte size()", when it ends before the data does
//   * the data's end, "byte 4 + 4n + numel(dims)", when more bytes follow it
// The sizes come from the file, and a damaged one can promise more bytes than 64 bits count
// (four sizes of 65,536 make 2^64, past what numel(dims) can hold): such a file ends before its
// data.
IdxArray parse_idx(const std::vector<std::uint8_t>& bytes, const std::string& name);

// Given: the bytes that the gzip file `compressed` holds (RFC 1952: the header, DEFLATE data
// (RFC 1951), the CRC-32 and length of what it held, checked; several members are joined).
// Throws FormatError naming `name` and a byte offset for a stream that is not gzip, ends early or
// fails its check.
std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& compressed, const std::string& name);

// Reads the IDX file at `path`, compressed or not: all its bytes (binary, every byte), then
// gunzip(bytes, path) when they start with gzip's magic bytes 0x1f 0x8b (whatever the file is
// called), then parse_idx(bytes, path). Errors name `path`. A file that cannot be opened throws
// std::runtime_error naming it.
IdxArray read_idx(const std::string& path);

// ---------------------------------------------------------------------------------------------
// The dataset and its statistics (yours: src/dataset.cpp)

// N labelled images.
struct Dataset {
  Tensor images;                     // (N, rows, cols) or (N, rows·cols); pixel values in [0, 1]
  std::vector<std::int64_t> labels;  // N class numbers
  std::int64_t size() const { return static_cast<std::int64_t>(labels.size()); }
};

// images: an IDX array (N, rows, cols); labels: an IDX array (N). Returns the Dataset whose
// images are float(byte)/255, shaped (N, rows, cols), or (N, rows·cols) when `flatten`, and whose
// labels are the label bytes as integers. Throws FormatError when images is not 3-D or labels is
// not 1-D, naming the shape, and when the counts differ, naming both counts.
// No images give a dataset of size 0: images (0, rows, cols), or (0, rows·cols) when flatten, and
// no labels; rows·cols is a 64-bit product (two sizes of 65536 make 2^32).
Dataset make_dataset(const IdxArray& images, const IdxArray& labels, bool flatten);

// Given: make_dataset(read_idx(images_path), read_idx(labels_path), flatten).
Dataset load_dataset(const std::string& images_path, const std::string& labels_path, bool flatten = false);

// The mean and the (population) standard deviation of all the elements of x, any shape:
//   mean = Σ x / n,   std = √(Σ (x - mean)² / n)
// accumulated in double (7,840,000 floats summed in float lose digits). Throws ShapeError when x
// has no elements. x may be a view, transposed or at an offset: read it through to_vector() or
// contiguous().data(), never from storage_data().
std::pair<double, double> mean_and_std(const Tensor& x);

// (x - mean) / std elementwise: a new contiguous float tensor of x's shape (x may be a view).
// Throws std::invalid_argument when std is not greater than 0. x may be a view, transposed or at an
// offset: read it through to_vector() or contiguous().data(), never from storage_data(). A tensor
// with no elements gives a tensor of its shape with no elements.
Tensor normalize(const Tensor& x, double mean, double std);

// ---------------------------------------------------------------------------------------------
// Batches (yours: src/loader.cpp, except what is marked given)

// A random permutation of 0, 1, …, n-1 (Fisher-Yates, drawing from `generator`), exactly:
//   order = [0, 1, …, n-1]
//   for i = n-1 down to 1:
//     u = generator.next();  j = floor(u·(i + 1))   (so 0 <= j <= i)
//     swap order[i] and order[j]
// n - 1 draws in all (none for n <= 1); every permutation is equally likely. n < 0 raises
// std::invalid_argument naming n.
std::vector<std::int64_t> shuffled_indices(std::int64_t n, WichmannHill& generator);

// `order` cut into consecutive batches of batch_size indices, in order; the last batch holds what
// is left (1 to batch_size indices) unless drop_last, which leaves it out when it is not full.
// 7 indices in batches of 3: {0, 1, 2}, {3, 4, 5}, {6}, or without {6} when drop_last; an empty
// order gives no batches. Throws std::invalid_argument when batch_size < 1, an empty order too.
std::vector<std::vector<std::int64_t>> batch_indices(const std::vector<std::int64_t>& order, std::int64_t batch_size,
                                                     bool drop_last);

// The examples of `data` at `indices`, in that order.
struct Batch {
  Tensor images;                     // (B, rows, cols) or (B, rows·cols): image k is data's image indices[k]
  std::vector<std::int64_t> labels;  // B labels: labels[k] = data.labels[indices[k]]
};

// Copies the images and labels at `indices` into a Batch: its images share nothing with
// data.images, consecutive indices included. No indices give B = 0: images of shape
// (0, rows, cols) or (0, rows·cols), no labels. Throws IndexError when an index is not in
// [0, data.size()). data.images may be a view at an offset: its images start at data(), not at
// storage_data(). An index is compared as the int64 it is: 2^32 + 2 is outside the dataset, not
// image 2.
Batch collate(const Dataset& data, const std::vector<std::int64_t>& indices);

// Given: one epoch's batches, collated only when visited:
//   for (const Batch& batch : loader.epoch()) { ... }
// It refers to the loader's dataset: use it while the loader lives.
class Epoch {
 public:
  Epoch(const Dataset& data, std::vector<std::vector<std::int64_t>> batches)
      : data_(&data), batches_(std::move(batches)) {}
  std::size_t size() const { return batches_.size(); }
  const std::vector<std::int64_t>& indices(std::size_t i) const { return batches_.at(i); }
  Batch operator[](std::size_t i) const { return collate(*data_, batches_.at(i)); }

  class Iterator {
   public:
    Iterator(const Epoch* epoch, std::size_t i) : epoch_(epoch), i_(i) {}
    Batch operator*() const { return (*epoch_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iterator& other) const { return i_ != other.i_; }

   private:
    const Epoch* epoch_;
    std::size_t i_;
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, batches_.size()}; }

 private:
  const Dataset* data_;
  std::vector<std::vector<std::int64_t>> batches_;
};

// A dataset, served in batches, epoch after epoch.
class DataLoader {
 public:
  // Given: keeps the dataset and the settings; the generator starts as WichmannHill(seed) and is
  // used only when shuffling. Throws std::invalid_argument when batch_size < 1.
  DataLoader(Dataset data, std::int64_t batch_size, bool shuffle = false, std::uint64_t seed = 0,
             bool drop_last = false);

  // How many batches an epoch has: ⌈N / batch_size⌉, or ⌊N / batch_size⌋ with drop_last, for
  // every batch_size the constructor accepts, INT64_MAX included (where N + batch_size - 1
  // overflows). A dataset of no examples has 0 batches.
  std::int64_t num_batches() const;

  // The index batches of the next epoch: the order 0, 1, …, N-1, or, when shuffling,
  // shuffled_indices(N, generator) from the loader's one generator, which goes on from where the
  // last epoch left it (so every epoch has a new order, and the same seed gives the same
  // sequence of epochs); then batch_indices(order, batch_size, drop_last).
  std::vector<std::vector<std::int64_t>> next_epoch();

  // Given: Epoch(dataset(), next_epoch()).
  Epoch epoch();

  const Dataset& dataset() const { return data_; }
  std::int64_t batch_size() const { return batch_size_; }
  bool shuffle() const { return shuffle_; }
  bool drop_last() const { return drop_last_; }

 private:
  Dataset data_;
  std::int64_t batch_size_;
  bool shuffle_;
  bool drop_last_;
  std::uint64_t seed_;
  WichmannHill generator_;
};

// ---------------------------------------------------------------------------------------------
// Pictures (yours: src/pictures.cpp, except what is marked given)

// An image (rows, cols) as an SVG picture, each pixel a cell_size × cell_size gray square:
//   <svg xmlns="http://www.w3.org/2000/svg" width="W" height="H">   W = cols·cell_size, H = rows·cell_size
//   <rect x="X" y="Y" width="S" height="S" fill="rgb(G,G,G)"/>      one per pixel, row by row
//   </svg>
// for pixel (r, c): X = c·cell_size, Y = r·cell_size, S = cell_size, and the gray level
// G = round(255·v) of its value v clipped to [0, 1] (0 black, 1 white; 0.5 gives 128), clipped
// before it is rounded, so that inf and 1e17 are white (255·v would not fit a long).
// Throws ShapeError when image is not 2-D, std::invalid_argument when cell_size < 1. image may be a
// view, transposed or at an offset. Sizes and positions are 64-bit: at cell size 2^30,
// cols·cell_size and c·cell_size pass 2^31 and are written as they are. An image of no rows,
// (0, 3), is an svg cols·cell_size wide and 0 high, with no squares.
std::string image_svg(const Tensor& image, int cell_size);

// How many of `values` fall into each of `bins` equal bins over [low, high): v goes into bin
// floor((v - low)/(high - low)·bins); values outside [low, high) are not counted, and neither is
// NaN, which lies in no range.
// Throws std::invalid_argument when bins < 1, when high <= low, and when high - low is not finite
// (an infinite bound, or bounds too far apart: -1e308 and 1e308), which leaves the bins no width.
// No values give `bins` counts of 0.
std::vector<std::int64_t> histogram(const std::vector<double>& values, int bins, double low, double high);

// Given: a grid of images (each image_svg(images[i], cell_size), 2-D or 784 = 28·28 flat),
// `columns` to a row, each with its label (or class_names[label] when given) written beneath.
std::string grid_svg(const Tensor& images, const std::vector<std::int64_t>& labels, int columns, int cell_size,
                     const std::vector<std::string>& class_names = {});

// Given: counts as a bar chart over [low, high), bars `bar_width` wide, the tallest `height` high,
// with the bins' edges marked beneath.
std::string histogram_svg(const std::vector<std::int64_t>& counts, double low, double high, int bar_width = 40,
                          int height = 200);

// Given: writes text to the file at `path`; throws std::runtime_error naming it when it cannot.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace kiln
