#include "worker/comm/store_client.h"

#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#if TORCH_VERSION_MAJOR < 2
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#endif

namespace ddp::worker {

#if TORCH_VERSION_MAJOR < 2
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The wire protocol of LibTorch 1.13's TCPStore (torch/csrc/distributed/c10d/TCPStore.cpp):
// a query is its type (one byte) and arguments; a string or byte vector is its length (uint64)
// and bytes; a number is 8 bytes; every key the client sends carries the prefix "/".
enum class Query : uint8_t { kSet, kCompareSet, kGet, kAdd, kCheck, kWait, kNumKeys, kWatch, kDelete };
constexpr uint8_t kCheckReady = 0;
constexpr uint8_t kStopWaiting = 0;
constexpr char kKeyPrefix[] = "/";
// Store values are names, counters and small blobs (an NCCL id): a larger length is a broken or
// hostile peer, refused before anything is allocated.
constexpr uint64_t kMaxValueBytes = 64ull << 20;

int MillisLeft(Clock::time_point deadline) {
  // Rounded up: poll() then never returns before the deadline (a timeout a hair early).
  const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// One non-blocking connect to `ai`, finished within `deadline`; the socket or -1 (errno set).
int ConnectOnce(const addrinfo* ai, Clock::time_point deadline) {
  const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
  if (fd < 0) return -1;
  if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return fd;
  if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, MillisLeft(deadline)) == 1) {
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

class StoreClient : public c10d::Store {
 public:
  StoreClient(const std::string& host, int port, milliseconds timeout)
      : c10d::Store(timeout), where_(host + ":" + std::to_string(port)) {
    const auto deadline = Clock::now() + timeout;
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    std::string last = "no address";
    milliseconds pause(20);
    while (true) {
      addrinfo* found = nullptr;
      const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
      if (rc == 0) {
        for (const addrinfo* ai = found; ai && fd_ < 0; ai = ai->ai_next) {
          fd_ = ConnectOnce(ai, deadline);
          if (fd_ < 0) last = std::strerror(errno);
        }
        ::freeaddrinfo(found);
      } else {
        last = ::gai_strerror(rc);  // a name not (yet) in DNS: a Service's pod still starting
      }
      if (fd_ >= 0) break;
      if (Clock::now() + pause >= deadline) {
        throw std::runtime_error("store " + where_ + ": cannot connect within " +
                                 std::to_string(timeout.count()) + " ms (timed out): " + last);
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, milliseconds(1000));
    }
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }

  ~StoreClient() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void set(const std::string& key, const std::vector<uint8_t>& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    SendQuery(Query::kSet);
    SendString(kKeyPrefix + key, true);
    SendBytes(value, false);
  }

  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override {
    std::lock_guard<std::mutex> lock(mu_);
    SendQuery(Query::kCompareSet);
    SendString(kKeyPrefix + key, true);
    SendBytes(expected, true);
    SendBytes(desired, false);
    return RecvBytes(timeout_);
  }

  // As c10d's: wait for the key (at most the store's timeout), then read it.
  std::vector<uint8_t> get(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    WaitLocked({kKeyPrefix + key}, timeout_);
    SendQuery(Query::kGet);
    SendString(kKeyPrefix + key, false);
    return RecvBytes(timeout_);
  }

  int64_t add(const std::string& key, int64_t value) override {
    std::lock_guard<std::mutex> lock(mu_);
    SendQuery(Query::kAdd);
    SendString(kKeyPrefix + key, true);
    Send(&value, sizeof(value), false);
    return RecvInt(timeout_);
  }

  bool deleteKey(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    SendQuery(Query::kDelete);
    SendString(kKeyPrefix + key, false);
    return RecvInt(timeout_) == 1;
  }

  bool check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu_);
    SendQuery(Query::kCheck);
    SendKeys(keys);
    return RecvByte(timeout_) == kCheckReady;
  }

  int64_t getNumKeys() override {
    std::lock_guard<std::mutex> lock(mu_);
    SendQuery(Query::kNumKeys);
    return RecvInt(timeout_);
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    std::vector<std::string> prefixed;
    for (const auto& k : keys) prefixed.push_back(kKeyPrefix + k);
    std::lock_guard<std::mutex> lock(mu_);
    WaitLocked(prefixed, timeout);
  }

  void watchKey(const std::string& key, c10d::WatchKeyCallback) override {
    throw std::runtime_error("store " + where_ + ": watchKey(" + key + ") is not supported");
  }

 private:
  void WaitLocked(const std::vector<std::string>& prefixed, milliseconds timeout) {
    SendQuery(Query::kWait);
    uint64_t n = prefixed.size();
    Send(&n, sizeof(n), !prefixed.empty());
    for (size_t i = 0; i < prefixed.size(); ++i) SendString(prefixed[i], i + 1 < prefixed.size());
    if (RecvByte(timeout) != kStopWaiting) Fail("an unexpected reply to a wait");
  }

  void SendKeys(const std::vector<std::string>& keys) {
    uint64_t n = keys.size();
    Send(&n, sizeof(n), !keys.empty());
    for (size_t i = 0; i < keys.size(); ++i) SendString(kKeyPrefix + keys[i], i + 1 < keys.size());
  }

  void SendQuery(Query q) {
    if (fd_ < 0) {
      throw std::runtime_error("store " + where_ + ": the connection was closed after an error");
    }
    const auto b = static_cast<uint8_t>(q);
    Send(&b, 1, true);
  }

  void SendString(const std::string& s, bool more) {
    uint64_t n = s.size();
    Send(&n, sizeof(n), true);
    Send(s.data(), s.size(), more);
  }

  void SendBytes(const std::vector<uint8_t>& v, bool more) {
    uint64_t n = v.size();
    Send(&n, sizeof(n), true);
    Send(v.data(), v.size(), more);
  }

  // Blocking sends (the socket is non-blocking: poll for room, at most the store's timeout).
  void Send(const void* data, size_t n, bool more) {
    const auto deadline = Clock::now() + timeout_;
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
      if (w > 0) {
        p += w;
        n -= static_cast<size_t>(w);
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd pf{fd_, POLLOUT, 0};
        if (::poll(&pf, 1, MillisLeft(deadline)) == 0) Fail("send timed out");
      } else {
        Fail(std::strerror(errno));
      }
    }
  }

  void Recv(void* data, size_t n, milliseconds timeout) {
    const bool forever = timeout == kNoTimeout;
    const auto deadline = Clock::now() + timeout;
    char* p = static_cast<char*>(data);
    while (n > 0) {
      pollfd pf{fd_, POLLIN, 0};
      const int ready = ::poll(&pf, 1, forever ? -1 : MillisLeft(deadline));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) Fail("no reply within " + std::to_string(timeout.count()) + " ms (timed out)");
      const ssize_t r = ::recv(fd_, p, n, 0);
      if (r > 0) {
        p += r;
        n -= static_cast<size_t>(r);
      } else if (r == 0) {
        Fail("the store closed the connection");
      } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
        Fail(std::strerror(errno));
      }
    }
  }

  std::vector<uint8_t> RecvBytes(milliseconds timeout) {
    uint64_t n = 0;
    Recv(&n, sizeof(n), timeout);
    if (n > kMaxValueBytes) Fail("a reply of " + std::to_string(n) + " bytes (at most 64 MiB)");
    std::vector<uint8_t> v(n);
    Recv(v.data(), v.size(), timeout);
    return v;
  }

  int64_t RecvInt(milliseconds timeout) {
    int64_t v = 0;
    Recv(&v, sizeof(v), timeout);
    return v;
  }

  uint8_t RecvByte(milliseconds timeout) {
    uint8_t v = 0;
    Recv(&v, 1, timeout);
    return v;
  }

  [[noreturn]] void Fail(const std::string& what) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("store " + where_ + ": " + what);
  }

  std::string where_;
  std::mutex mu_;
  int fd_ = -1;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> ConnectStore(const std::string& host, int port,
                                             std::chrono::milliseconds timeout) {
  return c10::make_intrusive<StoreClient>(host, port, timeout);
}

bool StoreClientIsOwn() { return true; }

#else

c10::intrusive_ptr<c10d::Store> ConnectStore(const std::string& host, int port,
                                             std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(port);
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(host, opts);
}

bool StoreClientIsOwn() { return false; }

#endif

}  // namespace ddp::worker
