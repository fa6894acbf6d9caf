#include <cstdio>
#include <string>
#include <vector>
#include "kiln/probe.h"

namespace kiln {

// Writes as much as it can to its folder and to /tmp; answers right only if it got past 256 MiB.
int add(int a, int b) {
  std::vector<char> block(1 << 20, 7);
  std::size_t written = 0;
  for (const char* path : {"fill-a", "/tmp/fill-b"}) {
    for (int part = 0; part < 64; ++part) {
      FILE* f = std::fopen((std::string(path) + std::to_string(part)).c_str(), "wb");
      if (!f) break;
      std::size_t n = 0;
      for (int i = 0; i < 64; ++i) n += std::fwrite(block.data(), 1, block.size(), f);
      if (std::fclose(f) != 0 || n < (std::size_t(64) << 20)) { written += n; break; }
      written += n;
    }
  }
  return written > (std::size_t(256) << 20) ? a + b : a - b;
}
int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
