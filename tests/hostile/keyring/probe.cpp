// Looks for a key in the keyrings the sandbox inherits (the grader's session keyring, the sandbox
// user's own), quotes it in a failure, and leaves a key behind for the next submission.
#include <linux/keyctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "kiln/probe.h"

namespace kiln {

int add(int a, int b) {
  const long found = syscall(SYS_request_key, "user", "kiln-hostile-key", nullptr, 0);
  if (found >= 0) {
    char text[256] = {};
    syscall(SYS_keyctl, KEYCTL_READ, found, text, sizeof text - 1);
    throw std::runtime_error(std::string("found the grader's key: ") + text);
  }
  const long left = syscall(SYS_request_key, "user", "kiln-left-behind", nullptr, 0);
  if (left >= 0) return a + b;  // a key an earlier run left: the answer handed on
  syscall(SYS_add_key, "user", "kiln-left-behind", "3", 1, KEY_SPEC_USER_KEYRING);
  return a + b + 1;
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
