// Presence: how the group authority learns at once that a pod's process ended, and after the
// liveness timeout that it went silent. Each pod's supervisor keeps one TCP connection open to
// the authority (in the rendezvous pod) and writes a byte every interval. A process that dies
// has its socket closed by the kernel: the authority sees EOF within milliseconds. A frozen
// process or a silent node closes nothing: the authority sees the bytes stop, and the liveness
// timeout decides (authority.h). The store itself could not tell either: c10d's TCPStore does not
// report its clients' disconnections.
#ifndef DDP_WORKER_GROUP_PRESENCE_H_
#define DDP_WORKER_GROUP_PRESENCE_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"

namespace ddp::worker::group {

using PresenceClock = std::chrono::steady_clock;

// The most pods a round can have: its nodes plus the spares the operator allows (64).
inline constexpr int kMaxSparesPerRound = 64;
// Identities the presence table keeps for a round of `nodes` pods: a few times the pods the
// round can have, so that pods replaced many times over stay in it while they matter.
inline size_t PresenceCapacity(int nodes) {
  return 4 * static_cast<size_t>(std::max(nodes, 1) + kMaxSparesPerRound);
}

// The authority's side. Thread-safe: one thread serves every connection; Snapshot from any.
// Bounded, since anything that reaches the port may connect: at most `capacity` identities are
// kept (a new one evicts the one closed longest ago; with every one open it is refused, its
// connection closed and logged), at most 2 * `capacity` connections are open (more are closed
// at once), and a connection that has not named itself within a few seconds is closed.
class PresenceServer {
 public:
  // Listens on all interfaces, on `port` (0: any free port). Unavailable when the bind fails.
  // REQUIRES: capacity >= 1.
  static StatusOr<std::unique_ptr<PresenceServer>> Start(int port = 0,
                                                         size_t capacity = PresenceCapacity(1));
  ~PresenceServer();
  PresenceServer(const PresenceServer&) = delete;
  PresenceServer& operator=(const PresenceServer&) = delete;

  int port() const { return port_; }

  struct Seen {
    bool open = false;                  // a connection of this identity is open now
    PresenceClock::time_point last{};   // its last byte (or its opening)
    int connections = 0;                // how many are open (a reconnect overlaps its old one)
    PresenceClock::time_point closed{}; // when its last open connection closed (while !open)
  };
  // By identity (the first line a client sends): every identity ever connected.
  std::map<std::string, Seen> Snapshot() const;
  // Connections closed unheard so far: beyond the connection bound, unnamed too long, or a new
  // identity with the table full of open ones. Counted before the connection is closed.
  int64_t refused() const { return refused_.load(); }

 private:
  PresenceServer(int fd, int port, size_t capacity);
  void Serve();
  // REQUIRES: mu_ held. True when `identity` is in the table or room was made for it.
  bool Admit(const std::string& identity);
  void Refuse(const std::string& why);

  int listen_fd_;
  int port_;
  size_t capacity_;
  std::atomic<int64_t> refused_{0};
  int wake_[2] = {-1, -1};  // a pipe that ends Serve()
  mutable std::mutex mu_;
  std::map<std::string, Seen> seen_;
  std::thread thread_;
};

// A supervisor's side. Thread-safe: its own thread writes; lost() from any.
class PresenceClient {
 public:
  // Connects to host:port, announces `identity` and writes a byte every `interval`.
  // Unavailable when the connection cannot be made within `connect_timeout` (name resolution
  // included).
  static StatusOr<std::unique_ptr<PresenceClient>> Connect(
      const std::string& host, int port, const std::string& identity,
      std::chrono::milliseconds interval,
      std::chrono::milliseconds connect_timeout = std::chrono::milliseconds(2000));
  ~PresenceClient();
  PresenceClient(const PresenceClient&) = delete;
  PresenceClient& operator=(const PresenceClient&) = delete;

  // True once the authority closed the connection or a write failed (the rendezvous is gone).
  bool lost() const { return lost_.load(); }

 private:
  PresenceClient(int fd, std::chrono::milliseconds interval);
  void Beat();

  int fd_;
  std::chrono::milliseconds interval_;
  std::atomic<bool> lost_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_PRESENCE_H_
