// A pod's supervisor in the group (DESIGN.md "Hot spares", "Drains, silent nodes and the
// budget"): its registration in the store, its presence connection, and the few keys it reads
// and writes. No decisions: launch/supervisor.cc decides, the authority assigns node ranks.
#ifndef DDP_WORKER_GROUP_POD_CLIENT_H_
#define DDP_WORKER_GROUP_POD_CLIENT_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/group/budget.h"
#include "worker/group/pod_watch.h"
#include "worker/group/presence.h"
#include "worker/group/settings.h"

namespace ddp::worker::group {

// Thread-compatible: the supervisor's loop alone uses it.
class PodClient {
 public:
  // Connects to the store (settings.store_addr, MASTER_PORT; retrying until `deadline`: the
  // rendezvous pod may start later), registers the pod (identity, the node rank it holds or was
  // created for, its /metrics address) and opens its presence connection. A registration never
  // takes the pod's name from another identity the group has not declared lost (it waits for
  // that). DeadlineExceeded when the store cannot be reached or the name stays held;
  // FailedPrecondition when the group declared this pod lost or gave it a verdict (it must end,
  // Fenced: never charged).
  static StatusOr<std::unique_ptr<PodClient>> Connect(const GroupSettings& settings,
                                                      const std::string& metrics_addr,
                                                      std::chrono::steady_clock::time_point deadline);

  const std::string& identity() const { return identity_; }
  // Whether it registered with prepare/<identity> "?" (settings.decides_prepare, a group that
  // formed): its supervisor must say whether it prepares (SetPreparing).
  bool undecided() const { return undecided_; }

  // Registers again on a new store (the rendezvous pod was replaced), keeping `holding`; only
  // opens a new store connection while the presence connection is still open (same store), and
  // then never closes it. Its connect, greeting and presence connection are within `deadline`,
  // each store call of the registration within what was left of it when the connection opened
  // (at least 100 ms; the connection kept has the liveness timeout). FailedPrecondition when
  // this pod was fenced, given a verdict, or replaced under its name while it was away (another
  // identity registered the name): it must end, Fenced. Unavailable or DeadlineExceeded: try
  // again later.
  Status Reconnect(int holding, std::chrono::steady_clock::time_point deadline);
  // The presence connection closed or the store failed: the rendezvous is gone.
  bool lost() const;

  // What the group says of this pod, as the watching thread (pod_watch.h) last read it: never
  // blocks on the store while it follows these keys; after a change of `holding` or `ranks`,
  // one read of them. Never throws; store_ok false when the store failed (register again).
  // `ranks`: this pod's trainers' ranks.
  PodPoll Poll(int holding, const std::vector<int>& ranks);
  // The same, read now in one request (a trainer's exit is judged on the freshest word).
  PodPoll PollNow(int holding, const std::vector<int>& ranks);

  Status SetLeaving();
  Status SetTrainer(int rank, const std::string& trainer_identity);
  Status MarkDone(int rank);
  // prepare/<identity> (keys.h): whether this pod's trainers prepare outside the group, and for
  // which node rank (-1: the one it was created for).
  Status SetPreparing(bool preparing, int node = -1);
  // The node rank the pod holding node rank `node` registered for (its home), when a pod holds
  // it; NotFound when none does, Unavailable when the store cannot say.
  StatusOr<int> HomeOfHolder(int node);
  // The group's size now (`world`, ranks) and whether node rank `node` is free; Unavailable when
  // the store cannot be read or holds no size yet.
  StatusOr<int> WorldIfFree(int node, bool* free);
  StatusOr<Charge> ChargeOnce(const std::string& once_key);
  // The budget's counters as they are now (no charge).
  StatusOr<Charge> Budget();

 private:
  PodClient(GroupSettings settings, std::string metrics_addr);
  Status Open(int holding, std::chrono::steady_clock::time_point deadline);
  // The fence and verdict checks, and the name taken by compareSet (see Connect).
  Status Register(c10d::Store& store);
  // A connection of the watching thread's own (opened within `deadline`, at least 100 ms),
  // following `holding` and no ranks yet.
  Status StartWatch(int holding, std::chrono::steady_clock::time_point deadline);
  // Keeps what a replacing store needs (the membership, the budget) from a poll.
  void Remember(const PodPoll& p);

  GroupSettings settings_;
  std::string metrics_addr_;
  std::string identity_;
  std::string epoch_;  // the store's, as registered (a replaced rendezvous pod's store has another)
  // The store's kMembersKey as last read (every few polls): handed to a store that replaces
  // this one, so that its authority knows whom to wait for (rejoin.h).
  std::string members_;
  PodWatch watch_;
  bool registered_before_ = false;  // a later conflict over the name means this pod was replaced
  Charge budget_seen_;              // the budget as last read: carried to a store that replaces it
  bool budget_known_ = false;
  c10::intrusive_ptr<c10d::Store> store_;
  std::unique_ptr<PresenceClient> presence_;
  bool failed_ = false;
  bool undecided_ = false;
};

// The bound on a new connection's connect and greeting. A store that is up answers in
// milliseconds; one that accepts and says nothing is a frozen pod, and one whose SYN goes
// unanswered a dead node, typically the lost rendezvous pod that a Service still routes to until
// its endpoint is removed: a reconnecting pod must try again soon, not wait out the liveness
// timeout there (its rank's rejoin window is running).
inline constexpr std::chrono::milliseconds kFirstReadBound{2000};

// A new connection to round `round`'s store at host:port (round-prefixed): its connect and
// greeting within `first_bound` (or `timeout` when shorter), its later calls within `timeout`.
// Unavailable when it cannot. Every connection of a supervisor and of a trainer's membership
// (its watcher's and its joins') to the group's store is one of these.
StatusOr<c10::intrusive_ptr<c10d::Store>> OpenBoundedStore(
    const std::string& host, int port, int round, std::chrono::milliseconds timeout,
    std::chrono::milliseconds first_bound = kFirstReadBound);
// OpenBoundedStore of settings.store_addr, the rendezvous port and round; its connect and
// greeting also within what is left of `deadline` (at least 100 ms).
StatusOr<c10::intrusive_ptr<c10d::Store>> OpenGroupStore(
    const GroupSettings& settings, std::chrono::milliseconds timeout,
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max());

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_POD_CLIENT_H_
