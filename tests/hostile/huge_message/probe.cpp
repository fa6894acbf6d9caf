#include <stdexcept>
#include <string>
#include "kiln/probe.h"

namespace kiln {
int add(int, int) {
  throw std::runtime_error(std::string(4 << 20, 'x'));  // a 4 MiB message for the result file
}
int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
