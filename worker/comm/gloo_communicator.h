// Communicator over c10d's ProcessGroupGloo: CPU tensors, TCP. Created by factory.h.
#ifndef DDP_WORKER_COMM_GLOO_COMMUNICATOR_H_
#define DDP_WORKER_COMM_GLOO_COMMUNICATOR_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "worker/comm/communicator.h"

namespace c10d {
class ProcessGroupGloo;
}

namespace ddp::worker {

// Torch's variable: the network interface Gloo binds to (e.g. "eth0"). Read by the factory.
inline constexpr char kEnvGlooSocketIfname[] = "GLOO_SOCKET_IFNAME";

struct GlooOptions {
  std::string interface;  // bind to this interface, when set
  std::string hostname;   // else bind to this host's address, when set; else the default device
  int threads = 2;        // Gloo worker threads: two buckets may be in flight at once
};

// Thread-safety: as Communicator. A collective that fails or times out aborts the communicator.
// Abort() fails every operation pending on the group's connections and closes them (c10d has
// no abort of its own; see the .cc), so the peers' collectives fail at once as well. The
// destructor of an aborted communicator never blocks: its c10d group (Gloo threads, a listening
// socket) is destroyed on a background thread (reaper.h), at most kMaxGroupsBeingDestroyed at a
// time; past that bound a group is left allocated, with a WARNING.
class GlooCommunicator : public Communicator {
 public:
  // Connects to all peers through `store` (a full mesh of TCP pairs). Errors: Unavailable or
  // DeadlineExceeded when a peer cannot be reached within `timeout`. Sets SIGPIPE to ignored
  // when it has the default disposition: a write to a reset peer must be an error, not a death.
  static StatusOr<std::unique_ptr<Communicator>> Create(c10::intrusive_ptr<c10d::Store> store,
                                                        int rank, int size,
                                                        std::chrono::milliseconds timeout,
                                                        const GlooOptions& options = {});
  ~GlooCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::shared_ptr<Work> AllReduceSumAsync(at::Tensor& t) override;
  Status Broadcast(std::vector<at::Tensor>& ts, int root) override;
  Status Barrier() override;
  void Abort() override;
  std::string name() const override { return "gloo"; }

  bool aborted() const { return aborted_.load(); }

 private:
  GlooCommunicator(c10::intrusive_ptr<c10d::ProcessGroupGloo> pg, int rank, int size,
                   std::chrono::milliseconds timeout);
  Status Check(const std::string& what) const;

  c10::intrusive_ptr<c10d::ProcessGroupGloo> pg_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::atomic<bool> aborted_{false};
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_GLOO_COMMUNICATOR_H_
