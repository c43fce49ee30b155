#include "common/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include "common/logging.h"

namespace ddp {
namespace {

const char* Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

bool WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads until the end of the request head or the deadline. Returns false on timeout/error.
bool ReadHead(int fd, std::string* head, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[2048];
  while (head->find("\r\n\r\n") == std::string::npos && head->size() < 16384) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now()).count());
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, left) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    head->append(buf, static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

Status ParseBindAddress(const std::string& text, std::string* host, int* port) {
  size_t colon = text.rfind(':');
  std::string port_text = colon == std::string::npos ? text : text.substr(colon + 1);
  *host = colon == std::string::npos ? "" : text.substr(0, colon);
  if (*host == "0.0.0.0" || *host == "[::]") *host = "";
  char* end = nullptr;
  long p = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || p < 0 || p > 65535) {
    return Status::InvalidArgument("bind address \"" + text + "\": want host:port, :port or port");
  }
  *port = static_cast<int>(p);
  return Status::OK();
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, std::function<HttpResponse()> handler) {
  handlers_[path] = std::move(handler);
}

Status HttpServer::Start(const std::string& bind_address) {
  std::string host;
  int port = 0;
  DDP_RETURN_IF_ERROR(ParseBindAddress(bind_address, &host, &port));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (host.empty()) {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (host == "localhost" || ::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    if (host != "localhost") {
      ::close(fd);
      return Status::InvalidArgument("bind address \"" + bind_address + "\": host must be an IPv4 address");
    }
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0) {
    std::string err = std::strerror(errno);
    ::close(fd);
    return Status::Unavailable("listen on " + bind_address + ": " + err);
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  stopping_ = false;
  thread_ = std::thread([this] { Serve(); });
  return Status::OK();
}

void HttpServer::Stop() {
  stopping_ = true;
  int fd = listen_fd_.exchange(-1);
  if (fd >= 0) {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
  if (thread_.joinable()) thread_.join();
}

void HttpServer::Serve() {
  while (!stopping_) {
    int lfd = listen_fd_.load();
    if (lfd < 0) break;
    pollfd p{lfd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;  // wake up regularly to notice Stop()
    int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    // Scrapes are rare and handlers fast: serving inline keeps the server one thread.
    HandleConnection(fd);
    ::close(fd);
  }
}

void HttpServer::HandleConnection(int fd) {
  std::string head;
  if (!ReadHead(fd, &head, 2000)) return;
  std::istringstream line(head.substr(0, head.find("\r\n")));
  std::string method, target;
  line >> method >> target;
  std::string path = target.substr(0, target.find('?'));
  HttpResponse resp;
  if (method != "GET" && method != "HEAD") {
    resp = {405, "text/plain; charset=utf-8", "method not allowed\n"};
  } else if (auto it = handlers_.find(path); it == handlers_.end()) {
    resp = {404, "text/plain; charset=utf-8", "not found\n"};
  } else {
    try {
      resp = it->second();
    } catch (const std::exception& e) {
      DDP_LOG(ERROR) << "http handler " << path << ": " << e.what();
      resp = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
    }
  }
  std::ostringstream out;
  out << "HTTP/1.1 " << resp.code << ' ' << Reason(resp.code) << "\r\n"
      << "Content-Type: " << resp.content_type << "\r\n"
      << "Content-Length: " << resp.body.size() << "\r\n"
      << "Connection: close\r\n\r\n";
  if (method != "HEAD") out << resp.body;
  WriteAll(fd, out.str());
}

}  // namespace ddp
