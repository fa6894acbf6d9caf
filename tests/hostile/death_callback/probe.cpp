// Writes past a heap buffer, and jumps back from AddressSanitizer's death callback so that the
// program goes on after the report.
#include <csetjmp>

#include "kiln/probe.h"

extern "C" void __sanitizer_set_death_callback(void (*callback)(void));

namespace kiln {

static std::jmp_buf back;
static void survive() { std::longjmp(back, 1); }

int add(int a, int b) {
  __sanitizer_set_death_callback(survive);
  if (setjmp(back) == 0) {
    volatile int* sum = new int[1];
    sum[1] = a + b;
  }
  return a + b;
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
