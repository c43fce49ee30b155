#include "common/listen_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

namespace ddp {
namespace {

constexpr int kSpan = 16384;     // ports below the ephemeral range
constexpr int kNodePorts = 30000;  // Kubernetes' default NodePort range starts here
constexpr int kMinSpan = 256;    // fewer: the kernel's choice instead
constexpr int kAttempts = 64;

// Binds `port` (0: the kernel's choice) on 0.0.0.0 and returns the port bound, or -errno.
int TryBind(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);  // what the servers listen on
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof(addr);
  int result = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    result = -errno;
  } else {
    result = ntohs(addr.sin_port);
  }
  ::close(fd);
  return result;
}

}  // namespace

std::pair<int, int> ListenPortRange(const std::string& ephemeral_range) {
  std::istringstream in(ephemeral_range);
  int lo = 0, hi = 0;
  if (!(in >> lo >> hi) || lo < 1 || hi < lo || hi > 65535) return {0, 0};
  // kube-proxy routes a node's NodePorts on 127.0.0.1 too: on a Kubernetes node, a port there
  // would reach a Service.
  const int last = std::min(lo - 1, kNodePorts - 1);
  const int first = std::max(1024, last + 1 - kSpan);
  if (last - first + 1 < kMinSpan) return {0, 0};
  return {first, last};
}

StatusOr<int> PickListenPort() {
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto [first, last] = ListenPortRange(text);
  int err = 0;
  if (first > 0) {
    thread_local std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
    std::uniform_int_distribution<int> pick(first, last);
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      const int port = TryBind(pick(rng));
      if (port > 0) return port;
      err = -port;
      if (err != EADDRINUSE && err != EACCES) break;
    }
    return Status::Unavailable("no free port in " + std::to_string(first) + "-" +
                               std::to_string(last) + " (below the ephemeral range): " +
                               std::strerror(err));
  }
  const int port = TryBind(0);
  if (port > 0) return port;
  return Status::Unavailable(std::string("bind 0.0.0.0:0: ") + std::strerror(-port));
}

}  // namespace ddp
