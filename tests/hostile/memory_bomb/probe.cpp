#include <vector>
#include "kiln/probe.h"

namespace kiln {

int add(int a, int b) {
  std::vector<char*> hoard;
  for (;;) {
    char* block = new char[64 << 20];
    for (int page = 0; page < (64 << 20); page += 4096) block[page] = 1;  // make the memory real
    hoard.push_back(block);
  }
  return a + b;
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
