// Tries to compile in another submission of the same batch, from where the grader stages them.
#if __has_include("../../../slot0/0000_abort/modules/01_probe/src/probe.cpp") || \
    __has_include("../../../slot1/0000_abort/modules/01_probe/src/probe.cpp") || \
    __has_include("../../../../submissions/0000_abort/01_probe/src/probe.cpp") || \
    __has_include("../../../../../submissions/abort/probe.cpp")
#define KILN_FOUND_OTHER 1
#endif
#include "kiln/probe.h"

namespace kiln {
int add(int a, int b) {
#ifdef KILN_FOUND_OTHER
  return a + b;
#else
  return a - b;
#endif
}
int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
