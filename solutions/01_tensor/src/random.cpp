// Module 01: the Wichmann-Hill generator (AS 183).
#include <cmath>

#include "kiln/random.h"

namespace kiln {

WichmannHill::WichmannHill(std::uint64_t seed) {
  // Peel the seed apart like mixed-radix digits; +1 keeps every state away from zero, where a
  // multiplicative generator would stay forever.
  x_ = static_cast<int>(seed % 30268) + 1;
  seed /= 30268;
  y_ = static_cast<int>(seed % 30306) + 1;
  seed /= 30306;
  z_ = static_cast<int>(seed % 30322) + 1;
}

std::array<int, 3> WichmannHill::state() const { return {x_, y_, z_}; }

double WichmannHill::next() {
  x_ = (171 * x_) % 30269;
  y_ = (172 * y_) % 30307;
  z_ = (170 * z_) % 30323;
  // Each state over its modulus is uniform in (0, 1); the fractional part of their sum is too.
  return std::fmod(x_ / 30269.0 + y_ / 30307.0 + z_ / 30323.0, 1.0);
}

}  // namespace kiln
