// Reads one int past a heap buffer, after telling AddressSanitizer not to poison the heap, so
// that the read goes unreported.
#include "kiln/probe.h"

extern "C" const char* __asan_default_options() { return "poison_heap=0"; }

namespace kiln {

int add(int a, int b) {
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
