// The endpoint server under hostile clients, over real sockets on 127.0.0.1: idle connections,
// clients that never read, oversized heads, a full connection table; and HttpGet's body cap
// against a server that sends more than it may.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common/http_server.h"
#include "tests/common/poll.h"

namespace ddp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using testing::PollUntil;

// A connected client socket (blocking), or -1.
int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void Send(int fd, const std::string& s) { ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size())); }

// Everything the server sends until it closes, or until `timeout`.
std::string ReadAll(int fd, milliseconds timeout = milliseconds(5000)) {
  std::string out;
  const auto deadline = Clock::now() + timeout;
  char buf[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// True when the server closed `fd` within `timeout` (a read returns 0 or an error).
bool ClosedWithin(int fd, milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

HttpResponse Ok() { return {200, "text/plain", "ok\n"}; }

// The median latency of `n` GET /healthz, each of which must succeed. The median, so that one
// scheduling hiccup of a loaded machine does not decide; a server that makes probes wait (as
// one serving a connection at a time did, 2 s per idle client) makes every request slow.
Clock::duration MedianHealthz(int port, int n = 5) {
  std::vector<Clock::duration> took;
  for (int i = 0; i < n; ++i) {
    const auto start = Clock::now();
    auto r = HttpGet("127.0.0.1", port, "/healthz", 2000);
    took.push_back(Clock::now() - start);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) EXPECT_EQ(*r, "ok\n");
  }
  std::sort(took.begin(), took.end());
  return took[took.size() / 2];
}

// The target: with 50 idle connections held open, /healthz answers within 100 ms.
TEST(HttpServerLoad, FiftyIdleConnectionsLeaveHealthzFast) {
  HttpServer srv;
  srv.Handle("/healthz", Ok);
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  std::vector<int> idle;
  for (int i = 0; i < 50; ++i) {
    idle.push_back(Connect(srv.port()));
    ASSERT_GE(idle.back(), 0);
  }
  Send(idle[0], "GET /hea");  // half a head, then nothing
  ASSERT_TRUE(PollUntil([&] { return srv.connections() == 50; }, milliseconds(5000)));
  EXPECT_LT(MedianHealthz(srv.port()), milliseconds(100));
  for (int fd : idle) ::close(fd);
}

TEST(HttpServerLoad, AClientThatNeverReadsBlocksNobody) {
  const std::string big(8 << 20, 'x');  // far more than the socket buffers hold
  HttpServer srv;  // after `big`: stopped before the page its handler reads goes away
  srv.Handle("/metrics", [&] { return HttpResponse{200, kPrometheusContentType, big}; });
  srv.Handle("/healthz", Ok);
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  std::vector<int> stuck;
  for (int i = 0; i < 3; ++i) {
    stuck.push_back(Connect(srv.port()));
    Send(stuck.back(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  // Once their pages are rendered (the handler's own cost) and stuck in the sockets:
  EXPECT_TRUE(PollUntil([&] { return HttpGet("127.0.0.1", srv.port(), "/healthz", 2000).ok(); },
                        milliseconds(20000)));
  EXPECT_LT(MedianHealthz(srv.port()), milliseconds(100));
  for (int fd : stuck) ::close(fd);
}

TEST(HttpServerLoad, ASlowHeadIsCutAtTheReadDeadline) {
  HttpServerOptions o;
  o.read_timeout = milliseconds(200);
  HttpServer srv(o);
  srv.Handle("/healthz", Ok);
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  int fd = Connect(srv.port());
  Send(fd, "GET /healthz HTTP/1.1\r\n");  // never finished
  EXPECT_TRUE(ClosedWithin(fd, milliseconds(3000)));
  ::close(fd);
  EXPECT_TRUE(PollUntil([&] { return srv.connections() == 0; }, milliseconds(3000)));
}

TEST(HttpServerLoad, AnOversizedHeadGets431) {
  HttpServer srv;
  srv.Handle("/healthz", Ok);
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  int fd = Connect(srv.port());
  std::string head = "GET /healthz HTTP/1.1\r\n";
  while (head.size() < 10000) head += "X-Filler: " + std::string(100, 'a') + "\r\n";
  ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);  // the server may close before the end
  const std::string reply = ReadAll(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 431 ", 0), 0u) << reply;
  ::close(fd);
}

TEST(HttpServerLoad, MalformedHeadsAre400AndOtherMethods405) {
  HttpServer srv;
  srv.Handle("/healthz", Ok);
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  for (const auto& [req, code] : std::vector<std::pair<std::string, std::string>>{
           {"GET healthz HTTP/1.1\r\n\r\n", "400"},
           {"GET /healthz HTTP/2.0\r\n\r\n", "400"},
           {"GET /healthz HTTP/1.1\r\nno colon\r\n\r\n", "400"},
           {"POST /healthz HTTP/1.1\r\n\r\n", "405"},
           {"HEAD /healthz HTTP/1.0\n\n", "200"}}) {
    int fd = Connect(srv.port());
    Send(fd, req);
    const std::string reply = ReadAll(fd);
    EXPECT_EQ(reply.substr(0, 12), "HTTP/1.1 " + code) << req;
    if (code == "200") {
      EXPECT_EQ(reply.find("ok\n"), std::string::npos) << "HEAD has no body";
    }
    ::close(fd);
  }
}

TEST(HttpServerLoad, AFullTableEvictsTheLongestIdleClient) {
  HttpServerOptions o;
  o.max_connections = 4;
  HttpServer srv(o);
  srv.Handle("/healthz", Ok);
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(Connect(srv.port()));
    ASSERT_TRUE(PollUntil([&] { return srv.connections() == idle.size(); }, milliseconds(3000)));
  }
  auto r = HttpGet("127.0.0.1", srv.port(), "/healthz", 1000);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(ClosedWithin(idle[0], milliseconds(3000))) << "the oldest idle client goes first";
  EXPECT_FALSE(ClosedWithin(idle[3], milliseconds(50)));
  for (int fd : idle) ::close(fd);
}

TEST(HttpServerLoad, ABlockingHandlerDelaysNoProbe) {
  std::atomic<bool> release{false};
  HttpServer srv;
  srv.Handle("/metrics", [&] {
    PollUntil([&] { return release.load(); }, milliseconds(5000));
    return HttpResponse{200, kPrometheusContentType, "x 1\n"};
  }, HttpServer::Dispatch::kMayBlock);
  srv.Handle("/healthz", Ok);
  ASSERT_TRUE(srv.Start("127.0.0.1:0").ok());
  std::thread slow([&] { EXPECT_TRUE(HttpGet("127.0.0.1", srv.port(), "/metrics", 6000).ok()); });
  EXPECT_LT(MedianHealthz(srv.port()), milliseconds(100));
  release = true;
  slow.join();
}

// A raw server that answers one connection with `reply` then closes (for HttpGet's caps).
class RawServer {
 public:
  explicit RawServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 4);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      // Read the request first: closing with it unread would reset the connection.
      std::string head;
      char buf[1024];
      while (head.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      size_t off = 0;
      while (off < reply_.size()) {
        ssize_t n = ::send(c, reply_.data() + off, reply_.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;  // the client stopped reading and closed
        off += static_cast<size_t>(n);
      }
      sent_ = off;
      ::shutdown(c, SHUT_WR);
      ::close(c);
    });
  }
  ~RawServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  size_t sent() const { return sent_.load(); }

 private:
  std::string reply_;
  int fd_ = -1, port_ = 0;
  std::atomic<size_t> sent_{0};
  std::thread thread_;
};

TEST(HttpGetCap, ABodyPastTheCapIsRefusedWithoutReadingIt) {
  const std::string body(64 << 20, 'x');  // 64 MiB, no Content-Length: only the bytes tell
  RawServer srv("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + body);
  auto r = HttpGet("127.0.0.1", srv.port(), "/metrics", 5000, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find("larger than 1048576 bytes"), std::string::npos);
}

TEST(HttpGetCap, AContentLengthPastTheCapIsRefusedAtTheHead) {
  RawServer srv("HTTP/1.1 200 OK\r\nContent-Length: 104857600\r\n\r\nxx");
  auto r = HttpGet("127.0.0.1", srv.port(), "/metrics", 5000, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
}

TEST(HttpGetCap, ABodyAtTheCapIsRead) {
  const std::string body(1 << 20, 'y');
  RawServer srv("HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n" + body);
  auto r = HttpGet("127.0.0.1", srv.port(), "/metrics", 5000, 1 << 20);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->size(), body.size());
}

TEST(HttpGetCap, AnEndlessHeadIsRefused) {
  RawServer srv("HTTP/1.1 200 OK\r\n" + std::string(1 << 20, 'h'));
  auto r = HttpGet("127.0.0.1", srv.port(), "/metrics", 5000, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("head larger"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace ddp
