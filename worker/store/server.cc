// The store's network server (see server.h).
#include "worker/store/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "common/logging.h"
#include "worker/store/net.h"

namespace ddp::store {
namespace {

constexpr uint64_t kListenTag = 0;
constexpr uint64_t kWakeTag = 1;
constexpr size_t kReadChunk = 64 * 1024;
// accept() out of descriptors: the listener rests this long instead of spinning.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

void KeepAlive(int fd) {
  const int one = 1, idle = 30, interval = 10, count = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Reply Error(const std::string& why) {
  Reply r;
  r.code = Code::kError;
  r.value.assign(why.begin(), why.end());
  return r;
}

}  // namespace

std::string NewStoreId() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The event loop. Only the server's thread touches it, except Wake() and Stop().
class StoreServer::Loop {
 public:
  Loop(StoreServer* owner, int listen_fd, ServerLimits limits)
      : owner_(owner), state_(*owner->state_), listen_fd_(listen_fd), limits_(limits) {
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    Watch(listen_fd_, kListenTag, EPOLLIN, EPOLL_CTL_ADD);
    Watch(wake_, kWakeTag, EPOLLIN, EPOLL_CTL_ADD);
  }

  ~Loop() {
    for (auto& [id, c] : conns_) ::close(c.fd);
    ::close(listen_fd_);
    ::close(wake_);
    ::close(epoll_);
  }

  bool ok() const { return epoll_ >= 0 && wake_ >= 0; }

  // From any thread: a key was written (StoreState::OnChange). The loop looks at the requests
  // parked on it after its current batch; another thread wakes it.
  void Changed(const std::string& key) {
    {
      std::lock_guard<std::mutex> lock(changed_mu_);
      changed_.push_back(key);
    }
    if (std::this_thread::get_id() != loop_thread_.load()) Wake();
  }

  void Stop() {
    stop_ = true;
    Wake();
  }

  void Run() {
    loop_thread_ = std::this_thread::get_id();
    std::vector<epoll_event> events(256);
    while (!stop_.load()) {
      const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), Timeout());
      if (n < 0 && errno != EINTR) {
        DDP_LOG(ERROR) << "store: epoll_wait: " << std::strerror(errno);
        return;
      }
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[static_cast<size_t>(i)].data.u64;
        const uint32_t ev = events[static_cast<size_t>(i)].events;
        if (tag == kListenTag) {
          Accept();
        } else if (tag == kWakeTag) {
          uint64_t v;
          (void)!::read(wake_, &v, sizeof(v));
        } else {
          Serve(tag, ev);
        }
      }
      DrainChanged();
      Expire();
    }
  }

 private:
  struct Conn {
    int fd = -1;
    std::string in;
    std::string out;
    size_t out_off = 0;
    bool greeted = false;
    bool closing = false;   // close once `out` is sent
    bool waiting = false;   // a kGet, kWait or kWatch is parked
    Request parked;
    size_t parked_bytes = 0;  // what `parked` holds (counted in parked_)
    Clock::time_point opened, deadline;
    uint32_t events = 0;
  };

  void Wake() {
    const uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof(one));
  }

  void Watch(int fd, uint64_t tag, uint32_t events, int op) {
    epoll_event e{};
    e.events = events;
    e.data.u64 = tag;
    ::epoll_ctl(epoll_, op, fd, &e);
  }

  int Timeout() const {
    auto next = Clock::now() + std::chrono::seconds(1);
    if (!timers_.empty()) next = std::min(next, timers_.begin()->first);
    if (accept_paused_) next = std::min(next, accept_resume_);
    return MillisLeft(next);
  }

  void Refuse(const std::string& why) {
    const int64_t n = ++owner_->refused_;
    // One line per refusal would let a flood fill the log: the first and every 100th.
    if (n == 1 || n % 100 == 0) {
      DDP_LOG(WARNING) << "store: closed a connection (" << why << "); " << n << " so far";
    }
  }

  void Accept() {
    while (true) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: the pending connection stays queued and the listener readable;
          // rest instead of spinning, and say so once per pause.
          DDP_LOG(WARNING) << "store: accept: " << std::strerror(errno) << "; pausing "
                           << kAcceptPause.count() << " ms";
          Watch(listen_fd_, kListenTag, 0, EPOLL_CTL_MOD);
          accept_paused_ = true;
          accept_resume_ = Clock::now() + kAcceptPause;
        }
        return;  // EAGAIN: nothing more; other errors concern that connection only
      }
      if (conns_.size() >= limits_.max_connections) {
        Refuse("more than " + std::to_string(limits_.max_connections) + " connections");
        ::close(fd);
        continue;
      }
      KeepAlive(fd);
      const uint64_t id = next_id_++;
      Conn& c = conns_[id];
      c.fd = fd;
      c.opened = Clock::now();
      c.events = EPOLLIN;
      Watch(fd, id, EPOLLIN, EPOLL_CTL_ADD);
      timers_.insert({c.opened + limits_.greeting, id});
      owner_->open_ = static_cast<int64_t>(conns_.size());
    }
  }

  void Close(uint64_t id) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    if (c.waiting) Unpark(id, c);
    if (!c.greeted) timers_.erase({c.opened + limits_.greeting, id});
    buffered_ -= c.in.size();
    ::close(c.fd);
    conns_.erase(it);
    owner_->open_ = static_cast<int64_t>(conns_.size());
  }

  void Serve(uint64_t id, uint32_t ev) {
    auto it = conns_.find(id);
    if (it == conns_.end()) return;
    Conn& c = it->second;
    if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
      char buf[kReadChunk];
      while (true) {
        const ssize_t r = ::recv(c.fd, buf, sizeof(buf), 0);
        if (r > 0) {
          c.in.append(buf, static_cast<size_t>(r));
          buffered_ += static_cast<size_t>(r);
          if (c.in.size() > kMaxFrameBytes + 4) {
            Refuse("a peer sent more than a frame without waiting for its reply");
            return Close(id);
          }
          if (buffered_ > limits_.max_buffered_bytes) {
            Refuse("requests not yet whole pass " + std::to_string(limits_.max_buffered_bytes) +
                   " bytes over every connection; closing the one that sent the last");
            return Close(id);
          }
          continue;
        }
        if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
          return Close(id);  // the peer went away: its parked request goes with it
        }
        if (errno == EINTR) continue;
        break;
      }
      if (!Frames(id, c)) return Close(id);
    }
    if ((ev & EPOLLOUT) && !Flush(id, c)) Close(id);
  }

  // Serves every whole frame buffered, one at a time: a parked request holds the rest back.
  // The frames served are cut from the buffer once, after the loop: cutting each one as it is
  // served moved the rest of the buffer every time (a peer's pipelined small frames cost the
  // loop thread the square of its buffer). False when the connection must close now.
  bool Frames(uint64_t id, Conn& c) {
    size_t at = 0;
    while (!c.waiting && !c.closing && c.in.size() - at >= 4) {
      const auto* head = reinterpret_cast<const uint8_t*>(c.in.data()) + at;
      uint32_t len = 0;
      if (Status s = FrameLength(head, &len); !s.ok()) {
        Refuse(s.message());
        Consume(c, at);
        return false;
      }
      if (c.in.size() - at < 4 + static_cast<size_t>(len)) break;
      Request req;
      const Status s = DecodeRequest(head + 4, len, &req);
      at += 4 + static_cast<size_t>(len);
      if (!s.ok()) {
        Refuse("a malformed request: " + s.message());
        Send(id, c, Error("malformed request: " + s.message()));
        c.closing = true;
        break;
      }
      Handle(id, c, req);
    }
    Consume(c, at);
    return Flush(id, c);
  }

  // Drops the first `n` bytes of `c`'s requests (served).
  void Consume(Conn& c, size_t n) {
    if (n == 0) return;
    c.in.erase(0, n);
    buffered_ -= n;
  }

  void Handle(uint64_t id, Conn& c, const Request& req) {
    state_.Count(req.op);
    if (!c.greeted) {
      timers_.erase({c.opened + limits_.greeting, id});
      c.greeted = true;
      if (req.op != Op::kHello || req.number != kVersion) {
        Refuse(req.op != Op::kHello ? "no greeting" : "another protocol version");
        Send(id, c, Error(req.op != Op::kHello
                              ? "greet first (kHello)"
                              : "protocol version " + std::to_string(req.number) +
                                    " is not spoken here (this store speaks " +
                                    std::to_string(kVersion) + ")"));
        c.closing = true;
        return;
      }
      Reply r;
      r.number = kVersion;
      r.value.assign(owner_->id_.begin(), owner_->id_.end());
      return Send(id, c, r);
    }
    Reply r;
    const std::string& key = req.keys.empty() ? std::string() : req.keys[0];
    switch (req.op) {
      case Op::kHello:
        return Send(id, c, Error("greeted twice"));
      case Op::kSet:
        if (Status s = state_.Set(key, req.value); !s.ok()) return Send(id, c, Error(s.message()));
        break;
      case Op::kGet:
      case Op::kWait:
      case Op::kWatch:
        if (Answer(c, req, &r)) break;
        if (req.op == Op::kWatch) r.code = Code::kTimeout;  // the values are in r already
        if (req.wait_ms == 0 && req.op == Op::kWatch) break;
        if (req.wait_ms == 0) {
          r.code = Code::kNotFound;
          break;
        }
        return Park(id, c, req);
      case Op::kAdd: {
        auto v = state_.Add(key, req.number);
        if (!v.ok()) return Send(id, c, Error(v.status().message()));
        r.number = *v;
        break;
      }
      case Op::kCheck:
        r.number = state_.Check(req.keys) ? 1 : 0;
        break;
      case Op::kCompareSet: {
        auto v = state_.CompareSet(key, req.expected, req.value);
        if (!v.ok()) return Send(id, c, Error(v.status().message()));
        r.value = std::move(*v);
        break;
      }
      case Op::kDelete:
        r.number = state_.Delete(key) ? 1 : 0;
        break;
      case Op::kNumKeys:
        r.number = state_.NumKeys();
        break;
    }
    Send(id, c, r);
  }

  // A kGet, kWait or kWatch that can be answered now: true and `r` filled (a kWatch's values
  // are filled either way; a kWatch whose values are too many answers now, with an error).
  bool Answer(const Conn& c, const Request& req, Reply* r) {
    if (req.op == Op::kWait) return state_.Check(req.keys);
    if (req.op == Op::kWatch) {
      // Checked on every answer: a parked watch's keys may have grown since.
      if (const size_t bytes = state_.ValueBytes(req.conditions); bytes > kMaxWatchValueBytes) {
        *r = Error("a watch's values would take " + std::to_string(bytes) + " bytes (at most " +
                   std::to_string(kMaxWatchValueBytes) + ")");
        return true;
      }
      std::vector<std::optional<Bytes>> values;
      const bool held = state_.Evaluate(req.conditions, &values);
      std::vector<const Bytes*> ptrs;
      for (const auto& v : values) ptrs.push_back(v ? &*v : nullptr);
      const std::string enc = EncodeValues(ptrs);
      r->value.assign(enc.begin(), enc.end());
      return held;
    }
    auto v = state_.Get(req.keys[0]);
    if (!v) return false;
    r->value = std::move(*v);
    return true;
  }

  // The bytes a parked request's copy holds: its keys, its conditions' keys and operands.
  static size_t RequestBytes(const Request& req) {
    size_t n = sizeof(Request) + req.value.size() + req.expected.size();
    for (const auto& k : req.keys) n += sizeof(std::string) + k.size();
    for (const auto& c : req.conditions) n += sizeof(Condition) + c.key.size() + c.operand.size();
    return n;
  }

  void Park(uint64_t id, Conn& c, const Request& req) {
    const size_t bytes = RequestBytes(req);
    if (parked_ + bytes > limits_.max_parked_bytes) {
      Refuse("parked requests would pass " + std::to_string(limits_.max_parked_bytes) +
             " bytes over every connection; closing the one that parked the last");
      Send(id, c, Error("the store holds too many parked requests' bytes"));
      c.closing = true;
      return;
    }
    parked_ += bytes;
    c.parked_bytes = bytes;
    c.waiting = true;
    c.parked = req;
    c.deadline = Clock::now() + std::chrono::milliseconds(req.wait_ms);
    timers_.insert({c.deadline, id});
    for (const auto& k : WatchedKeys(req)) waiters_[k].insert(id);
  }

  static std::vector<std::string> WatchedKeys(const Request& req) {
    if (req.op != Op::kWatch) return req.keys;
    std::vector<std::string> keys;
    for (const auto& c : req.conditions) keys.push_back(c.key);
    return keys;
  }

  void Unpark(uint64_t id, Conn& c) {
    c.waiting = false;
    parked_ -= c.parked_bytes;
    c.parked_bytes = 0;
    timers_.erase({c.deadline, id});
    for (const auto& k : WatchedKeys(c.parked)) {
      auto w = waiters_.find(k);
      if (w == waiters_.end()) continue;
      w->second.erase(id);
      if (w->second.empty()) waiters_.erase(w);
    }
  }

  // Answers a parked request (now, or with kTimeout) and serves what the peer sent meanwhile.
  void Release(uint64_t id, Conn& c, const Reply& r) {
    Unpark(id, c);
    Send(id, c, r);
    if (!Frames(id, c)) Close(id);
  }

  void DrainChanged() {
    std::vector<std::string> keys;
    {
      std::lock_guard<std::mutex> lock(changed_mu_);
      keys.swap(changed_);
    }
    for (const auto& k : keys) {
      auto w = waiters_.find(k);
      if (w == waiters_.end()) continue;
      const std::vector<uint64_t> ids(w->second.begin(), w->second.end());
      for (uint64_t id : ids) {
        auto it = conns_.find(id);
        if (it == conns_.end() || !it->second.waiting) continue;
        Reply r;
        if (Answer(it->second, it->second.parked, &r)) Release(id, it->second, r);
      }
    }
  }

  void Expire() {
    const auto now = Clock::now();
    if (accept_paused_ && now >= accept_resume_) {
      accept_paused_ = false;
      Watch(listen_fd_, kListenTag, EPOLLIN, EPOLL_CTL_MOD);
    }
    while (!timers_.empty() && timers_.begin()->first <= now) {
      const uint64_t id = timers_.begin()->second;
      timers_.erase(timers_.begin());
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      Conn& c = it->second;
      if (!c.greeted) {
        Refuse("no greeting within " + std::to_string(limits_.greeting.count()) + " ms");
        Close(id);
      } else if (c.waiting) {
        Reply r;
        // A watch answers with the values as they are now (or the error that they are too many).
        if (!Answer(c, c.parked, &r) || r.code != Code::kError) r.code = Code::kTimeout;
        Release(id, c, r);
      }
    }
  }

  void Send(uint64_t id, Conn& c, const Reply& r) {
    c.out += EncodeReply(r);
    if (c.out.size() - c.out_off > limits_.max_unread_bytes) {
      Refuse("a peer left more than " + std::to_string(limits_.max_unread_bytes) +
             " bytes of replies unread");
      c.out.clear();
      c.out_off = 0;
      c.closing = true;
    }
  }

  // Writes what is queued; watches for room when the socket is full. False: close now.
  bool Flush(uint64_t id, Conn& c) {
    while (c.out_off < c.out.size()) {
      const ssize_t w = ::send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (w > 0) {
        c.out_off += static_cast<size_t>(w);
      } else if (w < 0 && errno == EINTR) {
        continue;
      } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        return false;
      }
    }
    if (c.out_off == c.out.size()) {
      c.out.clear();
      c.out_off = 0;
      if (c.closing) return false;
    } else if (c.out_off > (1u << 20)) {
      c.out.erase(0, c.out_off);
      c.out_off = 0;
    }
    const uint32_t want = EPOLLIN | (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
    if (want != c.events) {
      c.events = want;
      Watch(c.fd, id, want, EPOLL_CTL_MOD);
    }
    return true;
  }

  StoreServer* owner_;
  StoreState& state_;
  int listen_fd_;
  ServerLimits limits_;
  int epoll_ = -1;
  int wake_ = -1;
  std::atomic<bool> stop_{false};
  uint64_t next_id_ = 2;
  std::unordered_map<uint64_t, Conn> conns_;
  size_t buffered_ = 0;  // the sum of every connection's `in`
  std::set<std::pair<Clock::time_point, uint64_t>> timers_;  // greetings and parked requests
  std::map<std::string, std::set<uint64_t>> waiters_;         // key -> parked connections
  size_t parked_ = 0;  // the parked requests' bytes over every connection (RequestBytes)
  bool accept_paused_ = false;
  Clock::time_point accept_resume_;
  std::atomic<std::thread::id> loop_thread_{};
  std::mutex changed_mu_;
  std::vector<std::string> changed_;
};

StatusOr<std::unique_ptr<StoreServer>> StoreServer::Start(std::shared_ptr<StoreState> state,
                                                          int port, std::string id,
                                                          ServerLimits limits) {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Unavailable(std::string("store socket: ") + std::strerror(errno));
  const int one = 1, zero = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));  // IPv4 too
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_any;
  addr.sin6_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd, 1024) != 0) {
    const Status s = Status::Unavailable("store: cannot listen on port " + std::to_string(port) +
                                         ": " + std::strerror(errno));
    ::close(fd);
    return s;
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::unique_ptr<StoreServer> server(
      new StoreServer(std::move(state), fd, ntohs(addr.sin6_port), std::move(id), limits));
  if (!server->loop_->ok()) return Status::Unavailable("store: epoll or eventfd failed");
  server->thread_ = std::thread([s = server.get()] { s->loop_->Run(); });
  return server;
}

StoreServer::StoreServer(std::shared_ptr<StoreState> state, int listen_fd, int port,
                         std::string id, ServerLimits limits)
    : state_(std::move(state)), port_(port), id_(std::move(id)) {
  loop_ = std::make_unique<Loop>(this, listen_fd, limits);
  Loop* loop = loop_.get();
  state_->OnChange([loop](const std::string& key) { loop->Changed(key); });
}

StoreServer::~StoreServer() {
  state_->OnChange(nullptr);  // no in-process write reaches the loop any more
  loop_->Stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace ddp::store
