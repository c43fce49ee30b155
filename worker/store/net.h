// Sockets with deadlines: name resolution, connect, send and receive, each bounded. Every store
// and presence connection of the group goes through these, so no step of a connection (not even
// DNS, whose resolver may wait 5 s per try and search domain) can outlast its caller's bound.
#ifndef DDP_WORKER_STORE_NET_H_
#define DDP_WORKER_STORE_NET_H_

#include <netdb.h>
#include <sys/socket.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::store {

using Clock = std::chrono::steady_clock;

struct Address {
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = 0;
};

// getaddrinfo's signature: what ResolveWithin calls (tests pass a slow one).
using Resolver = std::function<int(const char* host, const char* service, const addrinfo* hints,
                                   addrinfo** result)>;
int SystemResolver(const char* host, const char* service, const addrinfo* hints, addrinfo** result);

// The TCP addresses of host:port. A numeric address at once; a name on a thread of its own that
// is abandoned (it ends by itself later) when `deadline` passes first: DeadlineExceeded then,
// Unavailable naming the resolver's error when the name does not resolve.
StatusOr<std::vector<Address>> ResolveWithin(const std::string& host, int port,
                                             Clock::time_point deadline,
                                             const Resolver& resolve = SystemResolver);

// A connected TCP socket to host:port (non-blocking, close-on-exec, TCP_NODELAY), trying each
// address until one answers or `deadline` passes. Unavailable (refused, unreachable, a name not
// in DNS yet) or DeadlineExceeded, naming host:port and the last error.
StatusOr<int> ConnectWithin(const std::string& host, int port, Clock::time_point deadline);

// All of `n` bytes, or an error: DeadlineExceeded, Unavailable ("closed", errno text).
// REQUIRES: `fd` non-blocking.
Status SendAll(int fd, const void* data, size_t n, Clock::time_point deadline);
Status RecvAll(int fd, void* data, size_t n, Clock::time_point deadline);

// Milliseconds until `deadline`, rounded up (a poll then never returns a hair early), >= 0.
int MillisLeft(Clock::time_point deadline);

}  // namespace ddp::store

#endif  // DDP_WORKER_STORE_NET_H_
