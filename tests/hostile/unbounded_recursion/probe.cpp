// Recurses until the stack runs out.
#include "kiln/probe.h"

namespace kiln {

int add(int a, int b) {
  volatile char frame[4096];
  frame[0] = static_cast<char>(a);
  return add(a + frame[0], b) + frame[4095];
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
