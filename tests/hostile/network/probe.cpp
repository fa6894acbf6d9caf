#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include "kiln/probe.h"

namespace kiln {

// Loopback port the hostile test listens on; a connection there would mean the sandbox has a network.
constexpr int kListenerPort = 47123;

int add(int a, int b) {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(kListenerPort);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected = s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0;
  if (s >= 0) close(s);
  return connected ? a - b : a + b;  // right only when no connection could be made
}

int crash() { return 1; }
int spin() { return 2; }
int quit() { return 3; }
int mul(int a, int b) { return a * b; }
}  // namespace kiln
