// Module 05 checks for reading IDX files: the header, the data, the errors, gzip, and the real
// Fashion-MNIST test set. Every file is written here byte by byte (data_testing.h), so the
// expected dimensions and bytes are known without any reader; the real data set is compared with
// numbers computed by an independent reader (Python's gzip and struct) and held below.
//
// Every value taken from the module's functions passes through observe(): a header or an array
// crosses as its numbers, an error as its kind and message.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "data_testing.h"
#include "kiln/data.h"
#include "kiln/testing.h"

KILN_OBSERVABLE_ERROR(kiln::FormatError, std::runtime_error);

namespace kiln {
namespace {

using data_testing::Bytes;
using data_testing::hand_file;
using data_testing::idx_bytes;
using data_testing::list_of;
using data_testing::prefix;
using data_testing::random_bytes;
using testing::observe;

// An IDX array as plain data: its dimensions and its bytes.
std::pair<Shape, std::vector<std::int64_t>> plain(const IdxArray& a) {
  return {a.dims, std::vector<std::int64_t>(a.values.begin(), a.values.end())};
}

std::vector<std::int64_t> as_ints(const Bytes& bytes) { return std::vector<std::int64_t>(bytes.begin(), bytes.end()); }

using ObservedArray = testing::Observed<std::pair<Shape, std::vector<std::int64_t>>>;

// Reports failure_id unless the observed array has the dimensions and bytes expected. Judging
// only: called inside KILN_JUDGE.
bool expect_array(const char* file, int line, const ObservedArray& got, const Shape& dims, const Bytes& data,
                  const std::string& failure_id, const testing::Params& params = {}) {
  if (!testing::expect_ok(file, line, got, failure_id, params)) return false;
  if (got->first != dims) {
    testing::report_failure(
        file, line, failure_id, params,
        fmt::format("{} has dimensions {}, expected {}", got.call(), to_string(got->first), to_string(dims)));
    return false;
  }
  if (got->second != as_ints(data)) {
    testing::report_failure(
        file, line, failure_id, params,
        fmt::format("{} has the data {}, expected {}", got.call(), list_of(got->second), list_of(as_ints(data))));
    return false;
  }
  return true;
}

// Reports read_idx_error_unnamed unless the observed call threw `kind` with `path` in its message.
// Judging only: called inside KILN_JUDGE.
bool expect_error_naming(const char* file, int line, const ObservedArray& got, const std::string& kind,
                         const std::string& path, const testing::Params& params) {
  std::string problem;
  if (got.ok()) {
    problem = got.call() + " did not throw (expected " + kind + ")";
  } else if (!got.error().is(kind)) {
    problem = fmt::format("{} threw {} ({}), expected {}", got.call(), got.error().kind(), got.error().message, kind);
  } else if (got.error().message.find(path) == std::string::npos) {
    problem = got.call() + ": the message should name " + path + ", but it says: " + got.error().message;
  } else {
    return true;
  }
  testing::report_failure(file, line, "read_idx_error_unnamed", params, problem);
  return false;
}

}  // namespace

TEST(Data, IdxHeader) {
  // Big-endian words: 00 00 08 03 is the magic of an image file, 2051; 00 00 EA 60 is 60000 (the
  // Fashion-MNIST training set); a word at offset 1; the largest bytes; and three of the run.
  struct Word {
    Bytes bytes;
    std::size_t offset;
  };
  std::vector<Word> words = {{{0x00, 0x00, 0x08, 0x03}, 0},
                             {{0x00, 0x00, 0xea, 0x60}, 0},
                             {{0xab, 0x12, 0x34, 0x56, 0x78}, 1},
                             {{0xff, 0xff, 0xff, 0xfe}, 0}};
  const Bytes run = random_bytes(12, 501);
  for (std::size_t k = 0; k < 3; ++k) words.push_back({Bytes(run.begin() + 4 * k, run.begin() + 4 * k + 4), 0});
  for (std::size_t k = 0; k < words.size(); ++k) {
    const Word& w = words[k];
    const auto got = observe(fmt::format("big_endian_u32({{{}}}, {})", data_testing::hex_prefix(w.bytes, 5), w.offset),
                             [&] { return big_endian_u32(w.bytes, w.offset); });
    if (!KILN_EXPECT_OK(got, "idx_header_wrong")) return;
    KILN_JUDGE {
      // The words by hand, then those of the run's bytes.
      const std::vector<std::uint32_t> by_hand = {2051u, 60000u, 0x12345678u, 4294967294u};
      const std::uint32_t expected = k < by_hand.size() ? by_hand[k]
                                                         : static_cast<std::uint32_t>(w.bytes[0]) << 24 |
                                                               static_cast<std::uint32_t>(w.bytes[1]) << 16 |
                                                               static_cast<std::uint32_t>(w.bytes[2]) << 8 | w.bytes[3];
      if (*got != static_cast<std::int64_t>(expected)) {
        KILN_FAIL("idx_header_wrong", {}, fmt::format("{} gave {}, expected {}", got.call(), *got, expected));
        return;
      }
    }
  }

  // Headers: the hand-made images (2, 3, 3); labels (7); four dimensions (1, 2, 1, 3); the header
  // of the Fashion-MNIST test images (10000, 28, 28) without its data; sizes of the run above
  // 65535, which need all four bytes.
  const std::vector<std::int64_t> big = testing::random_ints(2, 65536, 4294967296LL, 502);
  // Each file is written from its dimensions and its data.
  struct Header {
    std::string what;
    Shape dims;
    Bytes data;
  };
  const std::vector<Header> headers = {
      {"the hand-made 2×3×3 file", data_testing::kHandDims, data_testing::kHandPixels},
      {"a label file of 7 bytes", {7}, {9, 2, 1, 1, 6, 1, 4}},
      {"a (1, 2, 1, 3) file", {1, 2, 1, 3}, random_bytes(6, 503)},
      {"the header of the Fashion-MNIST test images", {10000, 28, 28}, {}},
      // Sizes of 2^31 and above, which an int holds as negative numbers (-1 and -2147483648).
      {"a header of sizes (4294967295, 2147483648)", {4294967295LL, 2147483648LL}, {}},
      {fmt::format("a header of sizes ({}, {})", big[0], big[1]), {big[0], big[1]}, {}},
  };
  for (const Header& h : headers) {
    const Bytes bytes = idx_bytes(h.dims, h.data);
    const auto got = observe(fmt::format("parse_idx_header(<{}>, \"h.idx\")", h.what), [&] {
      const IdxHeader header = parse_idx_header(bytes, "h.idx");
      return std::tuple(header.type, header.dims, header.data_offset);
    });
    if (!KILN_EXPECT_OK(got, "idx_header_wrong")) return;
    KILN_JUDGE {
      const auto& [type, dims, data_offset] = *got;
      const std::int64_t expected_offset = 4 + 4 * static_cast<std::int64_t>(h.dims.size());
      // Sizes read right but held in an int (negative from 2^31 on) are that mistake.
      Shape wrapped;
      for (const std::int64_t size : h.dims) wrapped.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(size)));
      if (type == 0x08 && data_offset == expected_offset && dims != h.dims && dims == wrapped) {
        KILN_FAIL("idx_size_narrowed", {{"sizes", to_string(h.dims)}, {"got", to_string(dims)}}, got.call());
        return;
      }
      if (type != 0x08 || dims != h.dims || data_offset != expected_offset) {
        KILN_FAIL("idx_header_wrong", {},
                  fmt::format("{} gave type {}, dims {} and data_offset {}; expected 8, {} and {}", got.call(), type,
                              to_string(dims), data_offset, to_string(h.dims), expected_offset));
        return;
      }
    }
  }
}

TEST(Data, IdxData) {
  // The hand-made file; 7 labels; one byte; two files of no data; and a (3, 33) file of the run's
  // bytes.
  const Bytes labels = {9, 2, 1, 1, 6, 1, 4};
  const Bytes one = {200};
  const Bytes run = random_bytes(99, 511);
  const std::vector<std::tuple<std::string, Shape, Bytes>> files = {
      {"the hand-made 2×3×3 file", data_testing::kHandDims, data_testing::kHandPixels},
      {"a label file of 7 bytes", {7}, labels},
      {"a (1, 1, 1) file holding 200", {1, 1, 1}, one},
      // No data at all: a size of 0 makes the product 0, also after sizes whose product alone
      // would pass 64 bits.
      {"a (0, 28, 28) file, no images", {0, 28, 28}, {}},
      {"a (65536, 65536, 65536, 65536, 0) file, whose sizes multiply to 0", {65536, 65536, 65536, 65536, 0}, {}},
      {"a (3, 33) file of the run's bytes", {3, 33}, run},
  };
  for (const auto& [what, dims, data] : files) {
    const Bytes bytes = idx_bytes(dims, data);
    const auto got =
        observe(fmt::format("parse_idx(<{}>, \"d.idx\")", what), [&] { return plain(parse_idx(bytes, "d.idx")); });
    KILN_JUDGE {
      if (!expect_array(__FILE__, __LINE__, got, dims, data, "idx_data_wrong")) return;
    }
    if (!got.ok()) return;
  }
}

TEST(Data, IdxErrors) {
  using data_testing::expect_format_error;
  const Bytes hand = hand_file();
  // Wrong magic numbers: two bytes that are not zero, byte 0 alone, byte 1 alone (of the run), and a gzip file's
  // first bytes 1f 8b 08 00, which an unchecked reader would take for an IDX file of no
  // dimensions; then an element type other than 0x08 (byte 2) and no dimensions (byte 3).
  Bytes wrong = hand;
  wrong[0] = 0x12;
  wrong[1] = 0x34;
  Bytes first_only = hand;
  first_only[0] = 0x08;
  Bytes run_wrong = hand;
  run_wrong[1] = static_cast<std::uint8_t>(1 + testing::random_ints(1, 255, 521)[0]);
  Bytes floats = hand;
  floats[2] = 0x0d;
  const std::vector<std::pair<std::string, Bytes>> bad = {
      {"a file starting 12 34 08 03", wrong},
      {"a file starting 08 00 08 03", first_only},
      {"a file starting " + data_testing::hex_prefix(run_wrong), run_wrong},
      {"a gzip file (1f 8b 08 00)", data_testing::kHandGzip},
      {"a file of floats (type 0x0d)", floats},
      {"a file of no dimensions (00 00 08 00)", Bytes{0x00, 0x00, 0x08, 0x00}},
  };
  for (std::size_t k = 0; k < bad.size(); ++k) {
    const auto& [what, bytes] = bad[k];
    const auto got =
        observe(fmt::format("parse_idx(<{}>, \"bad.idx\")", what), [&] { return plain(parse_idx(bytes, "bad.idx")); });
    KILN_JUDGE {
      // The byte each error must name: the magic's first bytes (0), its type (2), its dimensions (3).
      const std::int64_t offset = std::vector<std::int64_t>{0, 0, 0, 0, 2, 3}[k];
      if (!expect_format_error(__FILE__, __LINE__, got, "bad.idx", offset, "idx_bad_magic",
                               {{"what", what}, {"offset", std::to_string(offset)}}))
        return;
    }
  }

  // Files that end too early: an empty file (byte 0), inside the magic (byte 3), inside the sizes
  // (byte 10), inside the data (byte 20), and at a place of the run inside the data (bytes 17 to 33).
  const std::int64_t run_cut = 17 + testing::random_ints(1, 17, 522)[0];
  for (const std::int64_t cut : {std::int64_t{0}, std::int64_t{3}, std::int64_t{10}, std::int64_t{20}, run_cut}) {
    const Bytes bytes = prefix(hand, static_cast<std::size_t>(cut));
    const auto got = observe(fmt::format("parse_idx(<the hand-made file cut at byte {}>, \"cut.idx\")", cut),
                             [&] { return plain(parse_idx(bytes, "cut.idx")); });
    KILN_JUDGE {
      if (!expect_format_error(__FILE__, __LINE__, got, "cut.idx", cut, "idx_truncated",
                               {{"offset", std::to_string(cut)}}))
        return;
    }
  }

  // Headers whose sizes promise more data than 32 bits can count, and no data: (65536, 65536, 1)
  // is 2^32 bytes (0 in 32 bits), (65536, 65536, 65536, 65536) 2^64 (0 in 64 bits). Each file
  // ends where its data should begin, at byte 16 or 20.
  for (const Shape& dims : {Shape{65536, 65536, 1}, Shape{65536, 65536, 65536, 65536}}) {
    const Bytes bytes = idx_bytes(dims, {});
    const auto end = static_cast<std::int64_t>(bytes.size());
    const auto got = observe(fmt::format("parse_idx(<a header of sizes {} and no data>, \"huge.idx\")", to_string(dims)),
                             [&] { return plain(parse_idx(bytes, "huge.idx")); });
    KILN_JUDGE {
      if (!expect_format_error(__FILE__, __LINE__, got, "huge.idx", end, "idx_truncated", {{"offset", std::to_string(end)}}))
        return;
    }
  }

  // Bytes after the data: 2 of them, and a number of the run; the data ends at byte 34.
  const std::int64_t run_extra = 1 + testing::random_ints(1, 40, 523)[0];
  for (const std::int64_t extra : {std::int64_t{2}, run_extra}) {
    Bytes bytes = hand;
    const Bytes more = random_bytes(static_cast<std::size_t>(extra), 524);
    bytes.insert(bytes.end(), more.begin(), more.end());
    const auto got = observe(fmt::format("parse_idx(<the hand-made file and {}>, \"long.idx\")", testing::counted(extra, "more byte")),
                             [&] { return plain(parse_idx(bytes, "long.idx")); });
    KILN_JUDGE {
      if (!expect_format_error(__FILE__, __LINE__, got, "long.idx", 34, "idx_extra_bytes", {{"offset", "34"}})) return;
    }
  }
}

TEST(Data, Gzip) {
  const Bytes hand = hand_file();
  // A file of the run: (3, 5, 7) bytes.
  const Shape run_dims = {3, 5, 7};
  const Bytes run_data = random_bytes(105, 531);
  const Bytes run_file = idx_bytes(run_dims, run_data);
  Bytes corrupt = data_testing::kHandGzip;
  corrupt[corrupt.size() - 8] ^= 0x01;  // a CRC-32 that does not match
  // The files are written inside an observation, so that the program that reads them is the one
  // that wrote them; the folder's name is only a label for the calls and the messages.
  std::optional<data_testing::ScratchDir> scratch;
  const auto folder = observe("writing the test's files to a scratch folder", [&] {
    scratch.emplace("gzip");
    scratch->write("hand.idx", hand);
    scratch->write("run-images.idx", run_file);
    scratch->write("hand.idx.gz", data_testing::kHandGzip);
    scratch->write("run-images.idx.gz", data_testing::gzip_stored(run_file));
    scratch->write("images-idx3-ubyte", data_testing::gzip_stored(run_file));
    scratch->write("cut.idx", prefix(hand, 10));
    scratch->write("corrupt.idx.gz", corrupt);
    return scratch->path_of("");
  });
  ASSERT_TRUE(folder.ok()) << folder.describe_error();
  auto path_of = [&](const std::string& name) { return *folder + name; };

  // Uncompressed files.
  for (const auto& [name, dims, data] :
       {std::tuple(std::string("hand.idx"), data_testing::kHandDims, data_testing::kHandPixels),
        std::tuple(std::string("run-images.idx"), run_dims, run_data)}) {
    const std::string path = path_of(name);
    const auto got = observe("read_idx(\"" + path + "\")", [&] { return plain(read_idx(path)); });
    KILN_JUDGE {
      if (!expect_array(__FILE__, __LINE__, got, dims, data, "read_idx_wrong", {{"file", name}})) return;
    }
    if (!got.ok()) return;
  }

  // Compressed: Python's gzip of the hand-made file, the run's file in stored blocks, and the
  // same bytes under a name without .gz.
  for (const auto& [name, dims, data] :
       {std::tuple(std::string("hand.idx.gz"), data_testing::kHandDims, data_testing::kHandPixels),
        std::tuple(std::string("run-images.idx.gz"), run_dims, run_data),
        std::tuple(std::string("images-idx3-ubyte"), run_dims, run_data)}) {
    const std::string path = path_of(name);
    const auto got = observe("read_idx(\"" + path + "\")", [&] { return plain(read_idx(path)); });
    KILN_JUDGE {
      if (!expect_array(__FILE__, __LINE__, got, dims, data, "gzip_not_read", {{"file", name}})) return;
    }
    if (!got.ok()) return;
  }

  // Errors name the path: a file cut at byte 10, a gzip file whose CRC-32 is wrong, and a file
  // that is not there (std::runtime_error, not a FormatError about bytes never read).
  for (const std::string name : {"cut.idx", "corrupt.idx.gz"}) {
    const std::string path = path_of(name);
    const testing::Params params = {{"file", name}, {"kind", "kiln::FormatError"}};
    const auto got = observe("read_idx(\"" + path + "\")", [&] { return plain(read_idx(path)); });
    KILN_JUDGE {
      if (!expect_error_naming(__FILE__, __LINE__, got, "kiln::FormatError", path, params)) return;
    }
  }
  const std::string missing = path_of("missing.idx");
  const testing::Params params = {{"file", "missing.idx (a file that does not exist)"}, {"kind", "std::runtime_error"}};
  const auto got = observe("read_idx(\"" + missing + "\")", [&] { return plain(read_idx(missing)); });
  KILN_JUDGE {
    if (!got.ok() && got.error().is("kiln::FormatError")) {
      KILN_FAIL("read_idx_error_unnamed", params,
                fmt::format("{} threw kiln::FormatError ({}): the file was never opened, so it has no bytes to be wrong",
                            got.call(), got.error().message));
      return;
    }
    expect_error_naming(__FILE__, __LINE__, got, "std::runtime_error", missing, params);
  }
}

TEST(Data, FashionMnist) {
  // Debian's dataset-fashion-mnist. The numbers below were computed with Python's gzip and
  // struct modules, independently of any code of the course.
  const std::string folder = "/usr/share/datasets/fashion-mnist/";
  const std::string images_path = folder + "t10k-images-idx3-ubyte.gz";
  const std::string labels_path = folder + "t10k-labels-idx1-ubyte.gz";
  if (!std::filesystem::exists(images_path) || !std::filesystem::exists(labels_path)) {
    GTEST_SKIP() << "Fashion-MNIST is not installed here (apt-get install dataset-fashion-mnist)";
  }
  // The numbers the judge holds (compile-time constants, which only the judge's code uses).
  constexpr std::int64_t kPixelSum = 573469082;          // Σ of all 7,840,000 bytes
  constexpr std::int64_t kWeightedSum = 18731464165863;  // Σ byte[i]·(i mod 65521 + 1)
  constexpr double kMean = 0.28684928071228494, kStd = 0.35244415324744;

  // Whether the installed file is the one these numbers belong to, told the same way in the judge
  // and in the observed program, so that both skip together: the compressed file's size and its
  // FNV-1a hash, which say nothing of the pixels.
  std::ifstream gz(images_path, std::ios::binary);
  const Bytes compressed{std::istreambuf_iterator<char>(gz), std::istreambuf_iterator<char>()};
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (const std::uint8_t b : compressed) hash = (hash ^ b) * 0x100000001b3ULL;
  if (compressed.size() != 4422079 || hash != 0x277ca49cc91568ceULL) {
    GTEST_SKIP() << "the installed " << images_path << " is not the file this check knows";
  }
  // The trusted reading (the judge's alone): the given gunzip and the layout of the format; it
  // gives the pixels at the places drawn by the run.
  Bytes trusted;
  KILN_JUDGE { trusted = gunzip(compressed, images_path); }
  const std::vector<std::int64_t> places = testing::random_ints(16, 7840000, 541);

  const auto images = observe("read_idx(\"" + images_path + "\"): its dims, size, sums and 16 pixels of the run", [&] {
    const IdxArray a = read_idx(images_path);
    std::int64_t sum = 0, weighted = 0;
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      sum += a.values[i];
      weighted += static_cast<std::int64_t>(a.values[i]) * static_cast<std::int64_t>(i % 65521 + 1);
    }
    std::vector<std::int64_t> samples;
    for (const std::int64_t p : places) {
      samples.push_back(static_cast<std::size_t>(p) < a.values.size() ? a.values[static_cast<std::size_t>(p)] : -1);
    }
    return std::tuple(a.dims, static_cast<std::int64_t>(a.values.size()), sum, weighted, samples);
  });
  const testing::Params images_file = {{"file", images_path}};
  if (!KILN_EXPECT_OK(images, "fashion_mnist_wrong", images_file)) return;
  KILN_JUDGE {
    std::vector<std::int64_t> expected_samples;
    for (const std::int64_t p : places) expected_samples.push_back(trusted[16 + static_cast<std::size_t>(p)]);
    const auto& [dims, size, sum, weighted, samples] = *images;
    if (dims != Shape{10000, 28, 28} || size != 7840000 || sum != kPixelSum || weighted != kWeightedSum ||
        samples != expected_samples) {
      KILN_FAIL("fashion_mnist_wrong", images_file,
                fmt::format("{} gave dims {}, {}, sum {}, weighted sum {}, pixels {} at {}; expected (10000, 28, "
                            "28), 7840000, {}, {}, {}",
                            images.call(), to_string(dims), testing::counted(size, "byte"), sum, weighted, list_of(samples), list_of(places),
                            kPixelSum, kWeightedSum, list_of(expected_samples)));
      return;
    }
  }

  const auto labels = observe("read_idx(\"" + labels_path + "\"): its dims, first 20 labels and class counts", [&] {
    const IdxArray a = read_idx(labels_path);
    std::vector<std::int64_t> first(a.values.begin(), a.values.begin() + std::min<std::ptrdiff_t>(20, a.values.size()));
    std::vector<std::int64_t> counts(10, 0);
    for (const std::uint8_t v : a.values) {
      if (v < 10) ++counts[v];
    }
    return std::tuple(a.dims, first, counts);
  });
  const testing::Params labels_file = {{"file", labels_path}};
  if (!KILN_EXPECT_OK(labels, "fashion_mnist_wrong", labels_file)) return;
  KILN_JUDGE {
    const std::vector<std::int64_t> first_labels = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7, 4, 5, 7, 3, 4, 1, 2, 4, 8, 0};
    const auto& [label_dims, first, counts] = *labels;
    if (label_dims != Shape{10000} || first != first_labels || counts != std::vector<std::int64_t>(10, 1000)) {
      KILN_FAIL("fashion_mnist_wrong", labels_file,
                fmt::format("{} gave dims {}, first labels {}, class counts {}; expected (10000), {}, 1000 each",
                            labels.call(), to_string(label_dims), list_of(first, 20), list_of(counts),
                            list_of(first_labels, 20)));
      return;
    }
  }

  const auto statistics = observe("mean_and_std(load_dataset(images, labels).images) of the Fashion-MNIST test set",
                                  [&] { return mean_and_std(load_dataset(images_path, labels_path).images); });
  if (!KILN_EXPECT_OK(statistics, "fashion_mnist_statistics_wrong", {{"mean", "?"}, {"std", "?"}})) return;
  KILN_JUDGE {
    const auto [mean, std] = *statistics;
    if (std::fabs(mean - kMean) > 1e-5 || std::fabs(std - kStd) > 1e-5) {
      KILN_FAIL("fashion_mnist_statistics_wrong",
                {{"mean", fmt::format("{:.6f}", mean)}, {"std", fmt::format("{:.6f}", std)}},
                fmt::format("{} gave ({}, {})", statistics.call(), mean, std));
    }
  }
}

}  // namespace kiln
