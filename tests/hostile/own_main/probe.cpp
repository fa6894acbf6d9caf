#include <cstdio>
#include "kiln/probe.h"

// A main() of its own, that would print a perfect run instead of running the checks.
int main() {
  std::printf("[==========] 5 tests ran.\n[  PASSED  ] 5 tests.\n");
  for (int fd = 3; fd < 10; ++fd) dprintf(fd, "{\"event\":\"end\",\"test\":\"Probe.Adds\",\"passed\":true}\n");
  return 0;
}

namespace kiln {
int add(int a, int b) { return a - b; }
int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
