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
  // The exact text is in kiln/data.h: an <svg> of width cols·cell_size and height rows·cell_size,
  // then one <rect/> per pixel, row by row. Pixel (r, c) goes right by its column and down by
  // its row: x = c·cell_size, y = r·cell_size. Its gray G = std::lround(255·v), v being the
  // value clipped to [0, 1] (std::clamp) before rounding: 255·inf, or 255·1e17, does not fit the
  // long that std::lround returns. Written fill="rgb(G,G,G)". image.at({r, c}) reads a
  // view too. ShapeError when image is not 2-D; std::invalid_argument when cell_size < 1.
  // image may be a view, transposed or at an offset. Sizes and positions are 64-bit: at cell size
  // 2^30, cols·cell_size and c·cell_size pass 2^31 and are written as they are. An image of no
  // rows, (0, 3), is an svg cols·cell_size wide and 0 high, with no squares.
  throw kiln::NotImplemented();
}

std::vector<std::int64_t> histogram(const std::vector<double>& values, int bins, double low, double high) {
  // bins counters at 0. Skip every v not inside [low, high), NaN too: ask whether low <= v < high,
  // since every comparison with NaN is false (v < low or v >= high lets NaN through). Add 1 to bin
  // floor((v - low) / (high - low) · bins). std::invalid_argument when bins < 1, high <= low, or
  // high - low is not finite (std::isfinite): an infinite bound, or -1e308 and 1e308.
  // No values give `bins` counts of 0.
  throw kiln::NotImplemented();
}

}  // namespace kiln
