#include <cstdio>
#include <string>
#include "kiln/probe.h"

namespace kiln {

int add(int a, int b) {
  // 512 MiB of output, then the right answer: the grader must neither drown nor stall.
  const std::string line(1 << 20, 'x');
  for (int i = 0; i < 512; ++i) std::fwrite(line.data(), 1, line.size(), stdout);
  return a + b;
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
