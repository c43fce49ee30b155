// The endpoint server's polling loop and handler pool; see http_server.h.
#include "common/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/http_request.h"
#include "common/logging.h"

namespace ddp {
namespace {

using Clock = std::chrono::steady_clock;

const char* Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

std::string Format(const HttpResponse& r, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(r.code) + " " + Reason(r.code) +
                    "\r\nContent-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) +
                    "\r\nConnection: close\r\n\r\n";
  if (!head_only) out += r.body;
  return out;
}

std::string Plain(int code, const std::string& text) {
  return Format({code, "text/plain; charset=utf-8", text + "\n"}, false);
}

HttpResponse Run(const std::string& path, const std::function<HttpResponse()>& handler) {
  try {
    return handler();
  } catch (const std::exception& e) {
    DDP_LOG(ERROR) << "http handler " << path << ": " << e.what();
    return {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
  }
}

}  // namespace

struct HttpServer::Conn {
  int fd = -1;
  enum State { kReading, kHandling, kWriting } state = kReading;
  std::string in, out;
  size_t sent = 0;
  Clock::time_point accepted, deadline;
};

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

void HttpServer::Handle(const std::string& path, std::function<HttpResponse()> handler,
                        Dispatch dispatch) {
  routes_[path] = Route{std::move(handler), dispatch};
}

size_t HttpServer::connections() const {
  std::lock_guard<std::mutex> l(mu_);
  return open_;
}

Status HttpServer::Start(const std::string& bind_address) {
  std::string host;
  int port = 0;
  DDP_RETURN_IF_ERROR(ParseBindAddress(bind_address, &host, &port));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (host.empty()) {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
  } else if (host == "localhost") {
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  } else if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("bind address \"" + bind_address +
                                   "\": host must be an IPv4 address");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 128) != 0) {
    std::string err = std::strerror(errno);
    ::close(fd);
    return Status::Unavailable("listen on " + bind_address + ": " + err);
  }
  if (::pipe2(wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(fd);
    return Status::Unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  stopping_ = false;
  const bool may_block = std::any_of(routes_.begin(), routes_.end(), [](const auto& r) {
    return r.second.dispatch == Dispatch::kMayBlock;
  });
  for (int i = 0; may_block && i < std::max(1, options_.pool_threads); ++i) {
    pool_.emplace_back([this] { PoolLoop(); });
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::OK();
}

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  pool_cv_.notify_all();
  Wake();
  if (thread_.joinable()) thread_.join();
  for (auto& t : pool_) t.join();
  pool_.clear();
  for (int* fd : {&listen_fd_, &wake_fds_[0], &wake_fds_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  std::lock_guard<std::mutex> l(mu_);
  jobs_.clear();
  done_.clear();
}

void HttpServer::Wake() {
  if (wake_fds_[1] < 0) return;
  const char byte = 1;
  (void)!::write(wake_fds_[1], &byte, 1);  // a full pipe already wakes the loop
}

void HttpServer::PoolLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    pool_cv_.wait(l, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job job = jobs_.front();
    jobs_.pop_front();
    l.unlock();
    // The route's handler: routes_ is not changed after Start().
    std::string out = Format(Run("", job.route->handler), job.head_only);
    l.lock();
    done_.emplace_back(job.conn, std::move(out));
    Wake();
  }
}

int HttpServer::Accept(std::map<uint64_t, Conn>* conns, uint64_t* next_id) {
  while (true) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      // Out of descriptors or memory: the client stays queued and the listening socket stays
      // readable, so polling it again at once would spin. The caller pauses accepting.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) return errno;
      return 0;  // EAGAIN: none left (another error: the next poll tries again)
    }
    if (static_cast<int>(conns->size()) >= options_.max_connections) {
      // Full: the client that has waited longest without a complete head makes room.
      auto oldest = conns->end();
      for (auto it = conns->begin(); it != conns->end(); ++it) {
        if (it->second.state != Conn::kReading) continue;
        if (oldest == conns->end() || it->second.accepted < oldest->second.accepted) oldest = it;
      }
      if (oldest == conns->end()) {
        ::close(fd);  // every connection is being answered: this one tries again
        continue;
      }
      ::close(oldest->second.fd);
      conns->erase(oldest);
    }
    Conn c;
    c.fd = fd;
    c.accepted = Clock::now();
    c.deadline = c.accepted + options_.read_timeout;
    conns->emplace((*next_id)++, std::move(c));
  }
}

bool HttpServer::OnReadable(uint64_t id, Conn* c) {
  char buf[4096];
  while (c->state == Conn::kReading) {
    const ssize_t n = ::recv(c->fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    if (n == 0) return false;  // closed before a whole head
    const size_t scan_from = c->in.size() >= 3 ? c->in.size() - 3 : 0;
    c->in.append(buf, static_cast<size_t>(n));
    const size_t head = RequestHeadLength(std::string_view(c->in).substr(scan_from));
    if (head > 0 && scan_from + head <= options_.max_head_bytes) {
      Answer(id, c, c->in.substr(0, scan_from + head));
    } else if (c->in.size() > options_.max_head_bytes) {
      c->out = Plain(431, "request head larger than " + std::to_string(options_.max_head_bytes) +
                              " bytes");
      c->state = Conn::kWriting;
      c->deadline = Clock::now() + options_.write_timeout;
    }
  }
  return true;
}

void HttpServer::Answer(uint64_t id, Conn* c, const std::string& head) {
  c->in.clear();
  c->deadline = Clock::now() + options_.write_timeout;
  RequestHead req;
  c->state = Conn::kWriting;
  if (Status s = ParseRequestHead(head, &req); !s.ok()) {
    c->out = Plain(400, s.message());
    return;
  }
  const bool head_only = req.method == "HEAD";
  if (req.method != "GET" && !head_only) {
    c->out = Plain(405, "method not allowed");
    return;
  }
  auto route = routes_.find(req.path);
  if (route == routes_.end()) {
    c->out = Format({404, "text/plain; charset=utf-8", "not found\n"}, head_only);
    return;
  }
  if (route->second.dispatch == Dispatch::kInline) {
    c->out = Format(Run(req.path, route->second.handler), head_only);
    return;
  }
  std::lock_guard<std::mutex> l(mu_);
  if (jobs_.size() >= options_.max_queued) {
    c->out = Plain(503, "busy");
    return;
  }
  jobs_.push_back(Job{id, head_only, &route->second});
  c->state = Conn::kHandling;
  pool_cv_.notify_one();
}

bool HttpServer::OnWritable(Conn* c) {
  while (c->sent < c->out.size()) {
    const ssize_t n = ::send(c->fd, c->out.data() + c->sent, c->out.size() - c->sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    c->sent += static_cast<size_t>(n);
  }
  ::shutdown(c->fd, SHUT_WR);
  return false;  // all sent: done
}

void HttpServer::Loop() {
  std::map<uint64_t, Conn> conns;
  uint64_t next_id = 1;
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  // Out of descriptors, accepting waits this long (doubling to kMaxAcceptPause while it lasts)
  // instead of spinning on a listening socket that stays readable; connections being answered
  // go on, and each one closed frees a descriptor for the clients queued meanwhile.
  constexpr std::chrono::milliseconds kFirstAcceptPause(10), kMaxAcceptPause(200);
  std::chrono::milliseconds accept_pause(0);
  Clock::time_point accept_at{};
  while (true) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopping_) break;
      for (auto& [id, out] : done_) {
        auto it = conns.find(id);
        if (it == conns.end()) continue;  // closed meanwhile
        it->second.out = std::move(out);
        it->second.state = Conn::kWriting;
        it->second.deadline = Clock::now() + options_.write_timeout;
      }
      done_.clear();
      open_ = conns.size();
    }
    const bool accepting = Clock::now() >= accept_at;
    // poll() skips a negative fd: a paused listening socket is not polled.
    fds.assign({pollfd{wake_fds_[0], POLLIN, 0}, pollfd{accepting ? listen_fd_ : -1, POLLIN, 0}});
    ids.assign({0, 0});
    auto next_deadline = Clock::now() + std::chrono::seconds(1);
    if (!accepting) next_deadline = std::min(next_deadline, accept_at);
    for (auto& [id, c] : conns) {
      if (c.state == Conn::kHandling) continue;
      fds.push_back(pollfd{c.fd, static_cast<short>(c.state == Conn::kReading ? POLLIN : POLLOUT), 0});
      ids.push_back(id);
      next_deadline = std::min(next_deadline, c.deadline);
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        next_deadline - Clock::now()).count();
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait) + 1)) < 0 &&
        errno != EINTR) {
      DDP_LOG(ERROR) << "http server: poll: " << std::strerror(errno);
      break;
    }
    if (fds[0].revents) {
      char drain[256];
      while (::read(wake_fds_[0], drain, sizeof(drain)) > 0) {}
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto it = conns.find(ids[i]);
      Conn& c = it->second;
      const bool keep = c.state == Conn::kReading ? OnReadable(ids[i], &c) : OnWritable(&c);
      // An inline answer is written at once: most fit the socket buffer in one send.
      const bool done = keep && c.state == Conn::kWriting && !OnWritable(&c);
      if (!keep || done) {
        ::close(c.fd);
        conns.erase(it);
      }
    }
    const auto now = Clock::now();
    for (auto it = conns.begin(); it != conns.end();) {
      if (it->second.state != Conn::kHandling && now >= it->second.deadline) {
        ::close(it->second.fd);  // too slow to send its head, or to take its answer
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
    if (fds[1].revents) {
      if (const int err = Accept(&conns, &next_id); err == 0) {
        accept_pause = std::chrono::milliseconds(0);
      } else {
        if (accept_pause.count() == 0) {
          DDP_LOG(WARNING) << "http server: accept: " << std::strerror(err)
                           << "; new connections wait until descriptors are free";
        }
        accept_pause = std::min(kMaxAcceptPause, std::max(kFirstAcceptPause, accept_pause * 2));
        accept_at = Clock::now() + accept_pause;
      }
    }
  }
  for (auto& [id, c] : conns) ::close(c.fd);
  std::lock_guard<std::mutex> l(mu_);
  open_ = 0;
}

}  // namespace ddp
