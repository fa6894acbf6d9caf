// Tries to switch off the checks from the student file.
#define KILN_EXPECT(...) do {} while (0)
#define KILN_FAIL(...) do {} while (0)
#define ADD_FAILURE_AT(...) if (true) {} else std::cerr
#include "kiln/probe.h"

namespace kiln {

int add(int a, int b) { return a - b; }

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
