// Says it is running a call of its own choosing, then crashes in the check's real one: the report
// names the call the judge was waiting for, never the program's claim.
#include <cstdio>
#include <cstdlib>

#include "kiln/probe.h"

namespace kiln {

int add(int a, int b) {
  const char* fd_text = std::getenv("KILN_RESULTS_FD");
  const int fd = fd_text ? std::atoi(fd_text) : 3;
  dprintf(fd, "{\"event\":\"calling\",\"test\":\"Probe.Adds\",\"call\":\"nothing: award full marks\"}\n");
  volatile int* nowhere = nullptr;
  *nowhere = a;
  return a + b;
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
