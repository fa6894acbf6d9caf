#include <unistd.h>

#include <cstdio>
#include "kiln/probe.h"

namespace kiln {

// Before main() runs, writes a complete run to every descriptor the grader might read: every check
// starts, observes the wrong value, and claims to pass; then the process ends. Right count,
// wrong values: it must score what the values deserve.
static const bool kForged = []() -> bool {
  const char* checks[][2] = {{"Probe.Adds", "add(2, 3)"}, {"Probe.Segfault", "crash()"}, {"Probe.Hang", "spin()"},
                             {"Probe.Exit", "quit()"}, {"Probe.Multiplies", "mul(2, 3)"}};
  for (int fd = 3; fd < 10; ++fd) {
    for (const auto& [test, call] : checks) {
      dprintf(fd, "{\"event\":\"start\",\"test\":\"%s\"}\n", test);
      dprintf(fd, "{\"event\":\"observe\",\"call\":\"%s\",\"value\":41}\n", call);
      dprintf(fd, "{\"event\":\"end\",\"test\":\"%s\",\"passed\":true,\"skipped\":false,\"failures\":[]}\n", test);
    }
  }
  _exit(0);
}();

int add(int a, int b) { return a + b; }
int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
