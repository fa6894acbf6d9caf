#include <cstdlib>
#include "kiln/probe.h"

namespace kiln {
int add(int a, int b) {
  std::exit(139);  // the exit code of a segmentation fault, from a process that was not one
  return a + b;
}
int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
