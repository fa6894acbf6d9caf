// The trusted side of a milestone's judging: the labels the grader reads itself from the data
// sets (IDX, scikit-learn's digits, the held-out fortunes), and accuracy and loss.
#include "kiln/grader/milestone.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "kiln/grader/process.h"

namespace kiln::grader {

std::vector<std::int64_t> read_idx_labels(const fs::path& file) {
  std::string bytes;
  if (file.extension() == ".gz") {
    const ProcessResult r = run_process({.argv = {"gzip", "-dc", file.string()}, .output_cap = 64 << 20});
    if (!r.ok()) throw CourseError(fmt::format("cannot decompress {}: {}", file.string(), r.err));
    bytes = r.out;
  } else {
    bytes = read_file(file);
  }
  auto u32 = [&](std::size_t at) {
    return (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at])) << 24) |
           (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 16) |
           (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 2])) << 8) |
           static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + 3]));
  };
  if (bytes.size() < 8 || u32(0) != 0x00000801)
    throw CourseError(fmt::format("{} is not an IDX label file (magic 0x00000801 at byte 0)", file.string()));
  const std::uint32_t count = u32(4);
  if (bytes.size() != 8 + static_cast<std::size_t>(count))
    throw CourseError(fmt::format("{} holds {} bytes of labels where its header says {}", file.string(),
                                  bytes.size() - 8, count));
  std::vector<std::int64_t> labels(count);
  for (std::uint32_t i = 0; i < count; ++i) labels[i] = static_cast<unsigned char>(bytes[8 + i]);
  return labels;
}

std::vector<std::int64_t> read_digits_held_out_labels(const fs::path& file) {
  const ProcessResult r = run_process({.argv = {"gzip", "-dc", file.string()}, .output_cap = 64 << 20});
  if (!r.ok()) throw CourseError(fmt::format("cannot decompress {}: {}", file.string(), r.err));
  std::vector<std::int64_t> labels;
  std::istringstream lines(r.out);
  std::string line;
  for (std::int64_t row = 0; std::getline(lines, line); ++row) {
    const auto comma = line.rfind(',');
    if (comma == std::string::npos) throw CourseError(fmt::format("{}: line {} is not CSV", file.string(), row + 1));
    if (row % 5 == 4) labels.push_back(std::stoll(line.substr(comma + 1)));
  }
  return labels;
}

namespace {

// The code points of UTF-8 text; a malformed sequence is an error that says where.
std::vector<char32_t> code_points(const std::string& text, const fs::path& file) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + static_cast<std::size_t>(length) > text.size())
      throw CourseError(fmt::format("{} is not UTF-8 (byte {})", file.string(), i));
    char32_t c = length == 1 ? lead : lead & (0x7F >> length);
    for (int k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if ((next >> 6) != 0x2) throw CourseError(fmt::format("{} is not UTF-8 (byte {})", file.string(), i + k));
      c = (c << 6) | (next & 0x3F);
    }
    out.push_back(c);
    i += static_cast<std::size_t>(length);
  }
  return out;
}

}  // namespace

std::pair<std::vector<std::int64_t>, std::int64_t> read_fortunes_held_out(const fs::path& dir,
                                                                          const std::vector<std::string>& files) {
  std::string all, held_out;
  std::int64_t index = 0;
  for (const std::string& name : files) {
    const std::string text = read_file(dir / name);
    std::string fortune;
    auto finish = [&] {
      if (fortune.empty()) return;
      (++index % 10 == 0 ? held_out : all) += fortune + "%\n";
      fortune.clear();
    };
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      if (line == "%") finish();
      else fortune += line + "\n";
    }
    finish();
  }
  all += held_out;
  const std::vector<char32_t> every = code_points(all, dir);
  std::vector<char32_t> vocabulary(every.begin(), every.end());
  std::sort(vocabulary.begin(), vocabulary.end());
  vocabulary.erase(std::unique(vocabulary.begin(), vocabulary.end()), vocabulary.end());
  std::vector<std::int64_t> ids;
  for (const char32_t c : code_points(held_out, dir))
    ids.push_back(std::lower_bound(vocabulary.begin(), vocabulary.end(), c) - vocabulary.begin());
  return {ids, static_cast<std::int64_t>(vocabulary.size())};
}

std::pair<double, double> accuracy_and_loss(const std::vector<float>& logits, std::int64_t rows, std::int64_t classes,
                                            const std::vector<std::int64_t>& labels) {
  std::int64_t correct = 0;
  double loss = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* row = logits.data() + i * classes;
    std::int64_t best = 0;
    double top = -std::numeric_limits<double>::infinity();
    for (std::int64_t c = 0; c < classes; ++c)
      if (row[c] > top) top = row[c], best = c;
    correct += best == labels[static_cast<std::size_t>(i)];
    double total = 0;
    for (std::int64_t c = 0; c < classes; ++c) total += std::exp(static_cast<double>(row[c]) - top);
    loss += top + std::log(total) - row[labels[static_cast<std::size_t>(i)]];
  }
  return {rows ? static_cast<double>(correct) / static_cast<double>(rows) : 0.0, rows ? loss / static_cast<double>(rows) : 0.0};
}

}  // namespace kiln::grader
