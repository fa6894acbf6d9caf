// Module 01: the Wichmann-Hill generator (Applied Statistics algorithm AS 183).
#include <cmath>

#include "kiln/errors.h"
#include "kiln/random.h"

namespace kiln {

WichmannHill::WichmannHill(std::uint64_t seed) {
  // Split the seed like digits: x = seed mod 30268, then seed /= 30268; y = seed mod 30306, then
  // seed /= 30306; z = seed mod 30322. Add 1 to each so that no state is ever 0.
  // Seed 457428938475 gives the state (4976, 20238, 499).
  throw kiln::NotImplemented();
}

std::array<int, 3> WichmannHill::state() const {
  // The three states x_, y_, z_.
  throw kiln::NotImplemented();
}

double WichmannHill::next() {
  // Advance x = 171·x mod 30269, y = 172·y mod 30307, z = 170·z mod 30323, then return the
  // fractional part of x/30269 + y/30307 + z/30323, computed in double.
  throw kiln::NotImplemented();
}

}  // namespace kiln
