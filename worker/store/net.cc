// Sockets with deadlines (see net.h).
#include "worker/store/net.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

namespace ddp::store {
namespace {

std::vector<Address> Collect(const addrinfo* found) {
  std::vector<Address> out;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    Address a;
    std::memcpy(&a.addr, ai->ai_addr, ai->ai_addrlen);
    a.len = ai->ai_addrlen;
    a.family = ai->ai_family;
    out.push_back(a);
  }
  return out;
}

addrinfo Hints(int flags) {
  addrinfo h{};
  h.ai_family = AF_UNSPEC;
  h.ai_socktype = SOCK_STREAM;
  h.ai_flags = flags;
  return h;
}

// One non-blocking connect, finished within `deadline`: the socket, or -1 with errno set.
int ConnectOnce(const Address& a, Clock::time_point deadline) {
  const int fd = ::socket(a.family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0) return fd;
  if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int ready;
    do {
      ready = ::poll(&p, 1, MillisLeft(deadline));
    } while (ready < 0 && errno == EINTR);
    if (ready == 1) {
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err == 0) return fd;
      errno = err;
    } else {
      errno = ETIMEDOUT;
    }
  }
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return -1;
}

}  // namespace

int MillisLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

int SystemResolver(const char* host, const char* service, const addrinfo* hints,
                   addrinfo** result) {
  return ::getaddrinfo(host, service, hints, result);
}

StatusOr<std::vector<Address>> ResolveWithin(const std::string& host, int port,
                                             Clock::time_point deadline,
                                             const Resolver& resolve) {
  const std::string service = std::to_string(port);
  const std::string where = host + ":" + service;
  // A numeric address needs no resolver (and no thread).
  addrinfo hints = Hints(AI_NUMERICHOST);
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), service.c_str(), &hints, &found) == 0) {
    auto out = Collect(found);
    ::freeaddrinfo(found);
    return out;
  }
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
    std::vector<Address> addrs;
  };
  auto shared = std::make_shared<Shared>();
  std::thread([shared, host, service, resolve] {
    addrinfo h = Hints(0);
    addrinfo* res = nullptr;
    const int rc = resolve(host.c_str(), service.c_str(), &h, &res);
    std::vector<Address> addrs;
    if (rc == 0) {
      addrs = Collect(res);
      ::freeaddrinfo(res);
    }
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->rc = rc;
    shared->addrs = std::move(addrs);
    shared->done = true;
    shared->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(shared->mu);
  if (!shared->cv.wait_until(lock, deadline, [&] { return shared->done; })) {
    return Status::DeadlineExceeded("resolving " + where + ": no answer from DNS in time");
  }
  if (shared->rc != 0) {
    return Status::Unavailable("resolving " + where + ": " + ::gai_strerror(shared->rc));
  }
  if (shared->addrs.empty()) return Status::Unavailable("resolving " + where + ": no address");
  return shared->addrs;
}

StatusOr<int> ConnectWithin(const std::string& host, int port, Clock::time_point deadline) {
  const std::string where = host + ":" + std::to_string(port);
  auto addrs = ResolveWithin(host, port, deadline);
  if (!addrs.ok()) return addrs.status();
  std::string last = "no address";
  for (const Address& a : *addrs) {
    const int fd = ConnectOnce(a, deadline);
    if (fd >= 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return fd;
    }
    last = std::strerror(errno);
    if (Clock::now() >= deadline) {
      return Status::DeadlineExceeded("connecting to " + where + ": " + last);
    }
  }
  return Status::Unavailable("connecting to " + where + ": " + last);
}

Status SendAll(int fd, const void* data, size_t n, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{fd, POLLOUT, 0};
      const int ready = ::poll(&pf, 1, MillisLeft(deadline));
      if (ready == 0) return Status::DeadlineExceeded("send timed out");
      continue;
    }
    return Status::Unavailable(std::string("send: ") + std::strerror(errno));
  }
  return Status::OK();
}

Status RecvAll(int fd, void* data, size_t n, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    pollfd pf{fd, POLLIN, 0};
    const int ready = ::poll(&pf, 1, MillisLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return Status::DeadlineExceeded("no reply in time");
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
    } else if (r == 0) {
      return Status::Unavailable("the peer closed the connection");
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::Unavailable(std::string("recv: ") + std::strerror(errno));
    }
  }
  return Status::OK();
}

}  // namespace ddp::store
