// Presence connections (see presence.h).
#include "worker/group/presence.h"

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
#include <vector>

#include "common/logging.h"
#include "worker/store/net.h"

namespace ddp::worker::group {
namespace {

constexpr size_t kMaxIdentity = 512;
// A supervisor names itself in its first write; a connection silent that long is not one.
constexpr auto kNameDeadline = std::chrono::seconds(5);

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

StatusOr<std::unique_ptr<PresenceServer>> PresenceServer::Start(int port, size_t capacity) {
  const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Unavailable(Errno("presence socket"));
  const int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));  // IPv4 too
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_any;
  addr.sin6_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 128) != 0) {
    const Status s = Status::Unavailable(Errno("presence listen"));
    close(fd);
    return s;
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return std::unique_ptr<PresenceServer>(
      new PresenceServer(fd, ntohs(addr.sin6_port), std::max<size_t>(capacity, 1)));
}

PresenceServer::PresenceServer(int fd, int port, size_t capacity)
    : listen_fd_(fd), port_(port), capacity_(capacity) {
  if (pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
  thread_ = std::thread([this] { Serve(); });
}

PresenceServer::~PresenceServer() {
  if (wake_[1] >= 0) (void)!write(wake_[1], "x", 1);
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  if (wake_[0] >= 0) close(wake_[0]);
  if (wake_[1] >= 0) close(wake_[1]);
}

std::map<std::string, PresenceServer::Seen> PresenceServer::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seen_;
}

bool PresenceServer::Admit(const std::string& identity) {
  if (seen_.count(identity) > 0 || seen_.size() < capacity_) return true;
  auto oldest = seen_.end();
  for (auto it = seen_.begin(); it != seen_.end(); ++it) {
    // Closed longest: by when it closed, not by its last byte (a heartbeat of a pod that closed
    // later may be older than the last of one that closed first).
    if (!it->second.open && (oldest == seen_.end() || it->second.closed < oldest->second.closed)) {
      oldest = it;
    }
  }
  if (oldest == seen_.end()) return false;
  seen_.erase(oldest);
  return true;
}

void PresenceServer::Refuse(const std::string& why) {
  // One line per refusal would let a flood fill the log: the first and every 100th.
  const int64_t n = ++refused_;
  if (n == 1 || n % 100 == 0) {
    DDP_LOG(WARNING) << "presence: closed a connection (" << why << "); " << n << " so far";
  }
}

void PresenceServer::Serve() {
  struct Conn {
    int fd;
    std::string identity;  // empty until its first line arrived
    bool named = false;
    bool counted = false;  // counted in its identity's open connections
    PresenceClock::time_point opened;
  };
  std::vector<Conn> conns;
  while (true) {
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const Conn& c : conns) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;
    const auto now = PresenceClock::now();
    if (fds[1].revents & POLLIN) {
      const int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      // Twice the identities: a pod reconnecting may hold its old connection a moment longer.
      if (c >= 0 && conns.size() >= 2 * capacity_) {
        Refuse("more than " + std::to_string(2 * capacity_) + " connections");
        close(c);
      } else if (c >= 0) {
        conns.push_back({c, "", false, false, now});
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      Conn& unnamed = conns[i - 2];
      if (fds[i].revents == 0 && !unnamed.named && now - unnamed.opened > kNameDeadline) {
        Refuse("no identity within " + std::to_string(kNameDeadline.count()) + " s");
        close(unnamed.fd);
        unnamed.fd = -1;
        continue;
      }
      if (fds[i].revents == 0) continue;
      Conn& c = conns[i - 2];
      char buf[256];
      const ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
      std::lock_guard<std::mutex> lock(mu_);
      if (n <= 0) {
        // Closed only when no other connection of the identity is open: a reconnect's old
        // connection may close (a late FIN) after the new one named itself.
        if (auto it = seen_.find(c.identity); c.counted && it != seen_.end()) {
          it->second.open = --it->second.connections > 0;
          if (!it->second.open) it->second.closed = now;
        }
        close(c.fd);
        c.fd = -1;
        continue;
      }
      if (!c.named) {
        const std::string got(buf, static_cast<size_t>(n));
        const size_t nl = got.find('\n');
        c.identity += got.substr(0, nl);
        if (nl == std::string::npos) {
          if (c.identity.size() > kMaxIdentity) {
            close(c.fd);
            c.fd = -1;
          }
          continue;
        }
        c.named = true;
      }
      if (!Admit(c.identity)) {
        Refuse("identity table full: " + std::to_string(capacity_) + " open identities");
        close(c.fd);
        c.fd = -1;
        continue;
      }
      Seen& s = seen_[c.identity];
      if (!c.counted) {
        c.counted = true;
        ++s.connections;
      }
      s.open = true;
      s.last = now;
    }
    conns.erase(std::remove_if(conns.begin(), conns.end(), [](const Conn& c) { return c.fd < 0; }),
                conns.end());
  }
  for (const Conn& c : conns) close(c.fd);
}

StatusOr<std::unique_ptr<PresenceClient>> PresenceClient::Connect(
    const std::string& host, int port, const std::string& identity,
    std::chrono::milliseconds interval, std::chrono::milliseconds connect_timeout) {
  const std::string where = host + ":" + std::to_string(port);
  // Bounded like every store connection (store/net.h): a route to a lost node drops the SYN.
  auto connected = store::ConnectWithin(host, port, store::Clock::now() + connect_timeout);
  if (!connected.ok()) return Status::Unavailable("presence: " + connected.status().message());
  const int fd = *connected;
  const std::string line = identity + "\n";
  if (Status s = store::SendAll(fd, line.data(), line.size(), store::Clock::now() + connect_timeout);
      !s.ok()) {
    close(fd);
    return Status::Unavailable("presence announce " + where + ": " + s.message());
  }
  return std::unique_ptr<PresenceClient>(new PresenceClient(fd, interval));
}

PresenceClient::PresenceClient(int fd, std::chrono::milliseconds interval)
    : fd_(fd), interval_(interval) {
  thread_ = std::thread([this] { Beat(); });
}

PresenceClient::~PresenceClient() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  close(fd_);
}

void PresenceClient::Beat() {
  while (!stop_.load() && !lost_.load()) {
    // Non-blocking: a beat that finds the buffer full (the authority frozen) is simply not sent;
    // the authority's own clock decides, and a closed connection shows below.
    if (send(fd_, ".", 1, MSG_NOSIGNAL) != 1 && errno != EAGAIN && errno != EWOULDBLOCK &&
        errno != EINTR) {
      lost_ = true;
      break;
    }
    // Sleep the interval, but notice at once when the authority closes the connection: the
    // poll ends on that event (or, every 100 ms, to see stop_), never on a fixed short tick.
    pollfd p{fd_, POLLIN, 0};
    const auto until = PresenceClock::now() + interval_;
    while (!stop_.load() && PresenceClock::now() < until) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - PresenceClock::now());
      if (poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left.count(), 1, 100))) > 0) {
        char c;
        if (recv(fd_, &c, 1, MSG_DONTWAIT) == 0 || (p.revents & (POLLHUP | POLLERR))) {
          lost_ = true;
          break;
        }
      }
    }
  }
}

}  // namespace ddp::worker::group
