// Reads past a heap buffer in a function the compiler is asked not to instrument, with the
// attribute's name pasted together so that no line names it whole.
#include "kiln/probe.h"

#define KILN_PASTE(a, b) a##b
#define KILN_QUIET __attribute__((KILN_PASTE(no_sanit, ize_address)))

namespace kiln {

KILN_QUIET int add(int a, int b) {
  int* sum = new int[1];
  sum[0] = a + b;
  const int result = sum[1] * 0 + sum[0];
  delete[] sum;
  return result;
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
