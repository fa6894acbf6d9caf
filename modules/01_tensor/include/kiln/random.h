// The Wichmann-Hill generator (Applied Statistics algorithm AS 183), which Python used before
// version 2.3. Three small linear congruential generators whose sum, taken modulo 1, is uniform.
// Small enough to write from memory, and reproducible across machines and languages.
#pragma once

#include <array>
#include <cstdint>

namespace kiln {

class WichmannHill {
 public:
  // Splits the seed into the three states: x = seed mod 30268, then y and z from what is left
  // (moduli 30306 and 30322), each plus one so that no state is ever zero.
  explicit WichmannHill(std::uint64_t seed);

  std::array<int, 3> state() const;

  // Advances each state (x·171 mod 30269, y·172 mod 30307, z·170 mod 30323) and returns
  // (x/30269 + y/30307 + z/30323) mod 1, uniform in [0, 1).
  double next();

 private:
  int x_ = 1;
  int y_ = 1;
  int z_ = 1;
};

}  // namespace kiln
