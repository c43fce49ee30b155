// Presence: how the group authority learns at once that a pod's process ended, and after the
// liveness timeout that it went silent. Each pod's supervisor keeps one TCP connection open to
// the authority (in the rendezvous pod) and writes a byte every interval. A process that dies
// has its socket closed by the kernel: the authority sees EOF within milliseconds. A frozen
// process or a silent node closes nothing: the authority sees the bytes stop, and the liveness
// timeout decides (authority.h). The store itself could not tell either: c10d's TCPStore does not
// report its clients' disconnections.
#ifndef DDP_WORKER_GROUP_PRESENCE_H_
#define DDP_WORKER_GROUP_PRESENCE_H_

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

// The authority's side. Thread-safe: one thread serves every connection; Snapshot from any.
class PresenceServer {
 public:
  // Listens on all interfaces, on `port` (0: any free port). Unavailable when the bind fails.
  static StatusOr<std::unique_ptr<PresenceServer>> Start(int port = 0);
  ~PresenceServer();
  PresenceServer(const PresenceServer&) = delete;
  PresenceServer& operator=(const PresenceServer&) = delete;

  int port() const { return port_; }

  struct Seen {
    bool open = false;                  // a connection of this identity is open now
    PresenceClock::time_point last{};   // its last byte (or its opening)
  };
  // By identity (the first line a client sends): every identity ever connected.
  std::map<std::string, Seen> Snapshot() const;

 private:
  PresenceServer(int fd, int port);
  void Serve();

  int listen_fd_;
  int port_;
  int wake_[2] = {-1, -1};  // a pipe that ends Serve()
  mutable std::mutex mu_;
  std::map<std::string, Seen> seen_;
  std::thread thread_;
};

// A supervisor's side. Thread-safe: its own thread writes; lost() from any.
class PresenceClient {
 public:
  // Connects to host:port, announces `identity` and writes a byte every `interval`.
  // Unavailable when the connection cannot be made.
  static StatusOr<std::unique_ptr<PresenceClient>> Connect(const std::string& host, int port,
                                                           const std::string& identity,
                                                           std::chrono::milliseconds interval);
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
