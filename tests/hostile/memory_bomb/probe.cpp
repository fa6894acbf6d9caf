#include <vector>
#include "kiln/probe.h"

namespace kiln {

int add(int a, int b) {
  std::vector<char*> hoard;
  for (;;) {
    char* block = new char[64 << 20];
    block[0] = block[(64 << 20) - 1] = 1;  // the address-space limit stops it, touched or not
    hoard.push_back(block);
  }
  return a + b;
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
