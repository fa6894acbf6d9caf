#include <cstdlib>
#include <stdexcept>
#include <string>
#include "kiln/probe.h"

namespace kiln {

// The grader's own environment holds a CI secret (the hostile test sets KILN_HOSTILE_SECRET). A
// submission that could read it would copy it into the result file through an error message.
int add(int a, int b) {
  if (const char* secret = std::getenv("KILN_HOSTILE_SECRET")) throw std::runtime_error(std::string("stolen: ") + secret);
  return a + b;  // right only when the secret is out of reach
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
