// In-place recovery's group membership: a fixed-size group of trainer processes that re-forms at
// a new *generation* whenever a member fails, on a store that outlives every trainer (hosted by
// pod 0's supervisor, worker/launch/). It creates communicators; it does not move training state
// (worker/train/heal.h does).
//
// Store keys, under the round's prefix:
//   gen                  the current generation G (an add() counter, starts at 0)
//   gen<G>/advance       add() counter: the member that takes it from 0 to 1 moves `gen` to G+1
//   gen<G>/arrived/<r>   rank r joined G; the value is r's committed step ("-1": no state yet)
//   gen<G>/comm/...      the communicator's own keys
//
// Protocol of Join():
//   1. a survivor of generation g calls Advance(g); a new process (first Join) reads G = gen and
//      calls Advance(G) when gen<G>/arrived/<rank> already exists (an earlier incarnation of
//      this rank was in G and is gone);
//   2. G = gen; set gen<G>/arrived/<rank> = committed step;
//   3. wait until every rank arrived in G; if gen moves past G meanwhile (a member failed during
//      the join), go to 2 with the new G; DeadlineExceeded after the timeout, naming the ranks;
//   4. read every rank's committed step, then create the communicator under gen<G>/comm/.
// Every member agrees on G and on the steps, because both are read from the same keys.
#ifndef DDP_WORKER_COMM_MEMBERSHIP_H_
#define DDP_WORKER_COMM_MEMBERSHIP_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "common/status.h"
#include "worker/comm/communicator.h"

namespace ddp::worker {

// Makes this member's communicator on a store already prefixed for the generation.
using CommunicatorMaker = std::function<StatusOr<std::unique_ptr<Communicator>>(
    c10::intrusive_ptr<c10d::Store> store, int rank, int size)>;

struct Formation {
  int64_t generation = 0;
  std::vector<int64_t> committed_steps;  // by rank; -1 = no training state
  std::unique_ptr<Communicator> comm;
};

// Thread-safety: Join/Advance from one thread (the training thread). The watcher started by
// Watch() runs on its own thread with its own store connection. `store` and `watch_store` are
// two connections to the same round-prefixed store (two, so the watcher never waits behind a
// blocking call of the training thread).
class GroupMembership {
 public:
  GroupMembership(c10::intrusive_ptr<c10d::Store> store,
                  c10::intrusive_ptr<c10d::Store> watch_store, int rank, int size,
                  std::chrono::milliseconds timeout, CommunicatorMaker make);
  ~GroupMembership();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The generation of the last successful Join, -1 before it.
  int64_t generation() const { return generation_; }

  // Steps 1-4 above. `committed_step` is the optimizer steps this member has applied, -1 when it
  // has no state (a new process). Errors: DeadlineExceeded (the group did not re-form in time),
  // Gone (the store is gone: pod 0 was lost), or the communicator's own error (Unavailable)
  // after which the caller may Join again.
  StatusOr<Formation> Join(int64_t committed_step);

  // Leaves generation `g` for good: the first caller for a given g moves `gen` to g+1, so
  // every member blocked in a generation-g collective can notice. Gone when the store is gone.
  // Idempotent per g.
  Status Advance(int64_t g);

  // Starts (or retargets) the watcher: every `interval` it reads `gen`, and once it is past the
  // generation of `comm` it calls comm->Abort(), releasing any Wait() on it. It stops quietly
  // when the store cannot be read. `comm` must stay
  // alive until the next Watch() or the destructor (both stop the previous watch first).
  void Watch(Communicator* comm, std::chrono::milliseconds interval);

 private:
  void StopWatch();

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Store> watch_store_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  CommunicatorMaker make_;
  int64_t generation_ = -1;
  bool joined_before_ = false;
  std::atomic<bool> watch_stop_{false};
  std::thread watcher_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_COMM_MEMBERSHIP_H_
