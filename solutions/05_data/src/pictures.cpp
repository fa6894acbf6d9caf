// Pictures: an image as gray squares, and the counts of a histogram.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kiln/data.h"

namespace kiln {

std::string image_svg(const Tensor& image, int cell_size) {
  if (image.dim() != 2) throw ShapeError("image_svg needs an image (rows, cols), got " + to_string(image.shape()));
  if (cell_size < 1) throw std::invalid_argument("image_svg: cell_size must be at least 1");
  const std::int64_t rows = image.shape()[0], cols = image.shape()[1];
  const std::string size = std::to_string(cell_size);
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(cols * cell_size) +
                    "\" height=\"" + std::to_string(rows * cell_size) + "\">\n";
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = std::clamp(image.at({r, c}), 0.0f, 1.0f);
      const std::string gray = std::to_string(std::lround(255.0 * v));
      svg += "<rect x=\"" + std::to_string(c * cell_size) + "\" y=\"" + std::to_string(r * cell_size) +
             "\" width=\"" + size + "\" height=\"" + size + "\" fill=\"rgb(" + gray + "," + gray + "," + gray +
             ")\"/>\n";
    }
  }
  return svg + "</svg>\n";
}

std::vector<std::int64_t> histogram(const std::vector<double>& values, int bins, double low, double high) {
  if (bins < 1) throw std::invalid_argument("histogram: bins must be at least 1");
  if (!(high > low)) throw std::invalid_argument("histogram: high must be greater than low");
  // An infinite bound, or bounds so far apart that high - low overflows (-1e308 and 1e308), leave
  // no finite width: (v - low)/(high - low) would be inf/inf = NaN, or 0 for every value.
  if (!std::isfinite(high - low)) throw std::invalid_argument("histogram: high - low must be finite");
  std::vector<std::int64_t> counts(static_cast<std::size_t>(bins), 0);
  for (const double v : values) {
    // Asked this way round, NaN (for which every comparison is false) is left out with the rest.
    if (!(low <= v && v < high)) continue;
    const auto bin = static_cast<std::int64_t>(std::floor((v - low) / (high - low) * bins));
    ++counts[static_cast<std::size_t>(std::min<std::int64_t>(bin, bins - 1))];
  }
  return counts;
}

}  // namespace kiln
