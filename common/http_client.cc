// HttpFetch and HttpGet (declared in http_server.h): a plain-socket GET for scraping our own
// endpoints.
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <optional>
#include <string_view>
#include <chrono>
#include <cstring>

#include "common/http_server.h"

namespace ddp {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxResponseHead = 16 << 10;

// The Content-Length of a response head, when it has a well-formed one.
std::optional<size_t> ContentLength(std::string_view head) {
  size_t at = 0;
  while ((at = head.find("\r\n", at)) != std::string_view::npos) {
    at += 2;
    constexpr std::string_view kName = "content-length:";
    if (head.size() - at < kName.size()) break;
    bool same = true;
    for (size_t i = 0; i < kName.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(head[at + i])) == kName[i];
    }
    if (!same) continue;
    size_t i = at + kName.size();
    while (i < head.size() && (head[i] == ' ' || head[i] == '\t')) ++i;
    size_t value = 0, digits = 0;
    for (; i < head.size() && std::isdigit(static_cast<unsigned char>(head[i])); ++i, ++digits) {
      if (value > (SIZE_MAX - 9) / 10) return SIZE_MAX;  // absurd: certainly past any cap
      value = value * 10 + static_cast<size_t>(head[i] - '0');
    }
    if (digits > 0) return value;
  }
  return std::nullopt;
}

int MillisLeft(Clock::time_point deadline) {
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
}

}  // namespace

StatusOr<HttpAnswer> HttpFetch(const std::string& host, int port, const std::string& path,
                               int timeout_ms, size_t max_body_bytes) {
  const std::string where = "GET http://" + host + ":" + std::to_string(port) + path;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    return Status::Unavailable(where + ": " + ::gai_strerror(rc));
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return Status::Unavailable(where + ": socket: " + std::strerror(errno));
  }
  int rc = ::connect(fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  auto fail = [&](const std::string& why) {
    ::close(fd);
    return Status::Unavailable(where + ": " + why);
  };
  if (rc != 0 && errno != EINPROGRESS) return fail(std::strerror(errno));
  pollfd p{fd, POLLOUT, 0};
  if (::poll(&p, 1, std::max(0, MillisLeft(deadline))) <= 0) return fail("connect timed out");
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return fail(std::strerror(err));

  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + host +
                          "\r\nConnection: close\r\nAccept: */*\r\n\r\n";
  size_t off = 0;
  while (off < req.size()) {
    ssize_t n = ::send(fd, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd w{fd, POLLOUT, 0};
      if (::poll(&w, 1, std::max(0, MillisLeft(deadline))) <= 0) return fail("send timed out");
      continue;
    }
    if (n <= 0) return fail(std::string("send: ") + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  // A body past the cap is refused as soon as it is known to be: by its Content-Length, or by
  // the bytes received, so at most one read past the cap is ever buffered.
  const size_t max_total = max_body_bytes ? max_body_bytes + kMaxResponseHead : 0;
  auto too_large = [&] {
    ::close(fd);
    return Status::FailedPrecondition(where + ": response body larger than " +
                                      std::to_string(max_body_bytes) + " bytes");
  };
  std::string resp;
  char buf[8192];
  bool head_checked = false;
  for (;;) {
    int left = MillisLeft(deadline);
    if (left <= 0) return fail("read timed out");
    pollfd r{fd, POLLIN, 0};
    if (::poll(&r, 1, left) <= 0) return fail("read timed out");
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) return fail(std::string("recv: ") + std::strerror(errno));
    if (n == 0) break;
    resp.append(buf, static_cast<size_t>(n));
    if (!max_body_bytes) continue;
    if (!head_checked) {
      const size_t end = resp.find("\r\n\r\n");
      if (end != std::string::npos) {
        head_checked = true;
        if (auto length = ContentLength(std::string_view(resp).substr(0, end));
            length && *length > max_body_bytes) {
          return too_large();
        }
        if (resp.size() - end - 4 > max_body_bytes) return too_large();
      } else if (resp.size() > kMaxResponseHead) {
        return fail("response head larger than " + std::to_string(kMaxResponseHead) + " bytes");
      }
    } else if (resp.size() > max_total) {
      const size_t end = resp.find("\r\n\r\n");
      if (resp.size() - end - 4 > max_body_bytes) return too_large();
    }
  }
  ::close(fd);
  size_t head_end = resp.find("\r\n\r\n");
  if (resp.compare(0, 5, "HTTP/") != 0 || head_end == std::string::npos) {
    return Status::Unavailable(where + ": malformed response");
  }
  // "HTTP/1.1 200 OK": the status code is the three digits after the first space.
  const size_t space = resp.find(' ');
  int code = 0;
  if (space != std::string::npos && space + 4 <= head_end) {
    for (size_t i = space + 1; i < space + 4; ++i) {
      const bool digit = std::isdigit(static_cast<unsigned char>(resp[i])) != 0;
      code = digit ? code * 10 + (resp[i] - '0') : -1000;
    }
  }
  if (code < 100 || code > 599) return Status::Unavailable(where + ": malformed response");
  return HttpAnswer{code, resp.substr(head_end + 4)};
}

StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path,
                              int timeout_ms, size_t max_body_bytes) {
  StatusOr<HttpAnswer> answer = HttpFetch(host, port, path, timeout_ms, max_body_bytes);
  if (!answer.ok()) return answer.status();
  if (answer->code != 200) {
    return Status::Unavailable("GET http://" + host + ":" + std::to_string(port) + path +
                               ": HTTP " + std::to_string(answer->code));
  }
  return std::move(answer->body);
}

}  // namespace ddp
