// The store of in-place recovery, seen from a pod's supervisor: pod 0's supervisor hosts the
// round's TCPStore (so it outlives every trainer, rank 0's included); every supervisor counts
// the group's recoveries in it. Trainers connect as clients (TORCHELASTIC_USE_AGENT_STORE).
#ifndef DDP_WORKER_LAUNCH_SUPERVISOR_STORE_H_
#define DDP_WORKER_LAUNCH_SUPERVISOR_STORE_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "common/status.h"
#include "worker/comm/rendezvous.h"

namespace ddp::worker {

// Thread-safe (one mutex): the supervisor's loop counts, the metrics endpoint reads.
class SupervisorStore {
 public:
  // host: listen on config.master_port (Unavailable when the port is taken). Otherwise nothing
  // happens until the first CountRecovery, which connects to master_addr:master_port.
  static StatusOr<std::unique_ptr<SupervisorStore>> Open(const RendezvousConfig& config, bool host);

  // Adds one to the round's recovery counter and returns the new total. Gone when the store
  // cannot be reached within `connect_timeout` (pod 0 is lost).
  StatusOr<int64_t> CountRecovery(std::chrono::milliseconds connect_timeout);

  // The round's recovery counter, without connecting: nullopt until this supervisor has a
  // connection (pod 0's has one from the start) or when the store fails.
  std::optional<int64_t> Recoveries();

 private:
  explicit SupervisorStore(RendezvousConfig config) : config_(std::move(config)) {}

  std::mutex mu_;
  RendezvousConfig config_;
  c10::intrusive_ptr<c10d::Store> store_;  // round-prefixed; null until connected
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_SUPERVISOR_STORE_H_
