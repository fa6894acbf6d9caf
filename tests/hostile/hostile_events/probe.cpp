// Writes events the grader must read without throwing or recursing: an end event whose figure has
// a number for a name, an observation nested a million arrays deep, then the right answers'
// shape with a wrong sum. The grader must still grade every check, and this one as wrong.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kiln/probe.h"

namespace kiln {

static const bool kPlanted = [] {
  const char* fd_text = std::getenv("KILN_RESULTS_FD");
  const int fd = fd_text ? std::atoi(fd_text) : 3;
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  dprintf(fd, "{\"event\":\"start\",\"test\":\"Probe.Adds\"}\n");
  dprintf(fd, "{\"event\":\"observe\",\"value\":%s}\n", deep.c_str());
  dprintf(fd, "{\"event\":\"end\",\"test\":\"Probe.Adds\",\"passed\":true,\"figures\":[{\"name\":7,\"value\":1}],"
              "\"failures\":[{\"message\":5,\"file\":[],\"line\":\"x\"}]}\n");
  dprintf(fd, "%s\n", deep.c_str());
  return true;
}();

int add(int a, int b) { return a + b + 1; }
int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
