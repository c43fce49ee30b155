// The group store's network server (wire.h): one thread, epoll, every connection non-blocking,
// over a StoreState that in-process users share. It runs in the rendezvous pod (recovery
// InPlace) and in rank 0's trainer (recovery Restart), on the rendezvous port.
//
// Anything that reaches the port may connect (the store has no authentication: the job's
// NetworkPolicy keeps other pods out), so every resource is bounded: connections (more are
// closed at once), a first frame that must be a greeting within a few seconds, frames
// (wire.h kMaxFrameBytes; a larger length closes the connection before anything is allocated),
// the bytes of requests not yet whole over every connection (the one that passes the bound is
// closed), the bytes of parked requests over every connection (likewise), a watch's reply
// (kMaxWatchValueBytes),
// replies a peer does not read (its connection is closed past kMaxUnreadBytes), the bytes held
// (StoreState's bound), and accept() failing for want of descriptors (the listener pauses
// instead of spinning). Dead peers' connections are reaped by TCP keepalive.
#ifndef DDP_WORKER_STORE_SERVER_H_
#define DDP_WORKER_STORE_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "worker/store/state.h"

namespace ddp::store {

struct ServerLimits {
  size_t max_connections = 16384;
  std::chrono::milliseconds greeting{5000};  // a connection must say hello within this
  size_t max_unread_bytes = 256u << 20;      // replies queued for a peer that does not read
  size_t max_buffered_bytes = 1u << 30;     // requests not yet whole, over every connection
  size_t max_parked_bytes = 1u << 30;       // parked requests' copies, over every connection
};

// Thread-safe: its own thread serves; the accessors from any.
class StoreServer {
 public:
  // Listens on every address (IPv4 and IPv6) on `port` (0: any free port). `id` is said in every
  // greeting's reply (the store's epoch: a new one means a new, empty store). Unavailable when
  // the port cannot be bound.
  static StatusOr<std::unique_ptr<StoreServer>> Start(std::shared_ptr<StoreState> state, int port,
                                                      std::string id, ServerLimits limits = {});
  ~StoreServer();  // stops serving and closes every connection
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  const std::string& id() const { return id_; }
  StoreState& state() { return *state_; }

  int64_t open_connections() const { return open_.load(); }
  // Connections closed unheard: past the bound, no greeting, a malformed frame, a greeting of
  // another protocol or version, replies left unread.
  int64_t refused() const { return refused_.load(); }

 private:
  class Loop;
  StoreServer(std::shared_ptr<StoreState> state, int listen_fd, int port, std::string id,
              ServerLimits limits);

  std::shared_ptr<StoreState> state_;
  int port_;
  std::string id_;
  std::atomic<int64_t> open_{0};
  std::atomic<int64_t> refused_{0};
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
};

// A random store id (the epoch): 16 hex digits from the system's entropy.
std::string NewStoreId();

}  // namespace ddp::store

#endif  // DDP_WORKER_STORE_SERVER_H_
