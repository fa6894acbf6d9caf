// Given: the parts of the module that only pass things on to your functions (load_dataset, the
// DataLoader's constructor and epoch()), and the pictures built from your image_svg and
// histogram counts (grid_svg, histogram_svg).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>

#include "kiln/data.h"

namespace kiln {

Dataset load_dataset(const std::string& images_path, const std::string& labels_path, bool flatten) {
  return make_dataset(read_idx(images_path), read_idx(labels_path), flatten);
}

DataLoader::DataLoader(Dataset data, std::int64_t batch_size, bool shuffle, std::uint64_t seed, bool drop_last)
    : data_(std::move(data)),
      batch_size_(batch_size),
      shuffle_(shuffle),
      drop_last_(drop_last),
      seed_(seed),
      generator_(seed) {
  if (batch_size < 1)
    throw std::invalid_argument("DataLoader: batch_size must be at least 1, got " + std::to_string(batch_size));
}

Epoch DataLoader::epoch() { return Epoch(data_, next_epoch()); }

namespace {

// A number for an SVG attribute: integers without a decimal point.
std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string grid_svg(const Tensor& images, const std::vector<std::int64_t>& labels, int columns, int cell_size,
                     const std::vector<std::string>& class_names) {
  if (columns < 1) throw std::invalid_argument("grid_svg: columns must be at least 1");
  if (images.dim() != 2 && images.dim() != 3) {
    throw ShapeError("grid_svg needs images (N, rows, cols) or (N, 784), got " + to_string(images.shape()));
  }
  const std::int64_t n = images.shape()[0];
  if (static_cast<std::int64_t>(labels.size()) != n) {
    throw std::invalid_argument("grid_svg: " + std::to_string(n) + " images but " + std::to_string(labels.size()) +
                                " labels");
  }
  // A flat image of 784 pixels is shown as 28 × 28.
  const Tensor square = images.dim() == 3 ? images : images.contiguous().reshape({n, 28, 28});
  const std::int64_t rows = square.shape()[1], cols = square.shape()[2];
  const int gap = 4, label_height = 16;
  const std::int64_t tile_w = cols * cell_size + gap, tile_h = rows * cell_size + label_height + gap;
  const std::int64_t grid_rows = (n + columns - 1) / columns;
  const std::int64_t width = std::min<std::int64_t>(n, columns) * tile_w + gap, height = grid_rows * tile_h + gap;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width) + "\" height=\"" +
                    number(height) + "\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t x = gap + (i % columns) * tile_w, y = gap + (i / columns) * tile_h;
    // Each image is your image_svg, placed as a nested <svg> at (x, y).
    std::string picture = image_svg(make_view(square, {rows, cols}, {square.strides()[1], square.strides()[2]},
                                              square.offset() + i * square.strides()[0]),
                                    cell_size);
    const auto at = picture.find("<svg");
    if (at == std::string::npos) throw std::runtime_error("grid_svg: image_svg did not return an <svg> element");
    picture.insert(at + 4, " x=\"" + number(x) + "\" y=\"" + number(y) + "\"");
    svg += picture;
    if (picture.back() != '\n') svg += '\n';
    const std::int64_t label = labels[static_cast<std::size_t>(i)];
    const std::string text = label >= 0 && label < static_cast<std::int64_t>(class_names.size())
                                 ? class_names[static_cast<std::size_t>(label)]
                                 : std::to_string(label);
    svg += "<text x=\"" + number(x + cols * cell_size / 2.0) + "\" y=\"" + number(y + rows * cell_size + 12) +
           "\" font-family=\"sans-serif\" font-size=\"11\" text-anchor=\"middle\">" + escaped(text) + "</text>\n";
  }
  return svg + "</svg>\n";
}

std::string histogram_svg(const std::vector<std::int64_t>& counts, double low, double high, int bar_width, int height) {
  if (counts.empty()) throw std::invalid_argument("histogram_svg: no bins");
  const std::int64_t tallest = std::max<std::int64_t>(1, *std::max_element(counts.begin(), counts.end()));
  const int left = 50, top = 10, bottom = 30;
  const std::int64_t width = left + static_cast<std::int64_t>(counts.size()) * bar_width + 20;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width) + "\" height=\"" +
                    number(top + height + bottom) + "\" font-family=\"sans-serif\" font-size=\"11\">\n" +
                    "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // The vertical axis: 0 and the tallest count.
  svg += "<line x1=\"" + number(left) + "\" y1=\"" + number(top) + "\" x2=\"" + number(left) + "\" y2=\"" +
         number(top + height) + "\" stroke=\"black\"/>\n";
  svg += "<text x=\"" + number(left - 4) + "\" y=\"" + number(top + 4) + "\" text-anchor=\"end\">" +
         std::to_string(tallest) + "</text>\n";
  svg += "<text x=\"" + number(left - 4) + "\" y=\"" + number(top + height + 4) + "\" text-anchor=\"end\">0</text>\n";
  for (std::size_t b = 0; b < counts.size(); ++b) {
    const double h = static_cast<double>(height) * static_cast<double>(counts[b]) / static_cast<double>(tallest);
    const double x = left + static_cast<double>(b) * bar_width;
    svg += "<rect x=\"" + number(x + 1) + "\" y=\"" + number(top + height - h) + "\" width=\"" + number(bar_width - 2) +
           "\" height=\"" + number(h) + "\" fill=\"steelblue\"/>\n";
  }
  // The bins' edges beneath.
  for (std::size_t b = 0; b <= counts.size(); ++b) {
    const double edge = low + (high - low) * static_cast<double>(b) / static_cast<double>(counts.size());
    svg += "<text x=\"" + number(left + static_cast<double>(b) * bar_width) + "\" y=\"" + number(top + height + 16) +
           "\" text-anchor=\"middle\">" + number(edge) + "</text>\n";
  }
  return svg + "</svg>\n";
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace kiln
