// Including a device that never ends its input: the compile must be stopped, and the batch go on.
#include "/dev/ptmx"
#include "kiln/probe.h"

namespace kiln {
int add(int a, int b) { return a + b; }
int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
