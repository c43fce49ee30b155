// A free TCP port on 127.0.0.1 for a test's server or rendezvous. Header-only.
#ifndef DDP_TESTS_COMMON_FREE_PORT_H_
#define DDP_TESTS_COMMON_FREE_PORT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ddp::testing {

// Binds port 0, reads the port the kernel chose, and closes the socket. Returns -1 when no port
// could be had. Another process may take the port before the caller binds it; tests that run in
// parallel accept that small race.
inline int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

}  // namespace ddp::testing

#endif  // DDP_TESTS_COMMON_FREE_PORT_H_
