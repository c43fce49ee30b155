// What a pod's supervisor follows in the group's store (its verdict, its fence, its node rank,
// the group's stop, abandon and finish, its trainers' stalls, the membership and the budget),
// kept current by a thread of its own that parks one watch on the store (comm/watch.h) and wakes
// when any of those keys changes, or every kRefresh. So a pod costs the store a few requests a
// second whatever happens, where polling them cost about two hundred (issue: the group at a
// thousand pods). No decisions: launch/supervisor.cc decides.
#ifndef DDP_WORKER_GROUP_POD_WATCH_H_
#define DDP_WORKER_GROUP_POD_WATCH_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "worker/group/budget.h"

namespace ddp::worker::group {

// What the supervisor reads every poll.
struct PodPoll {
  bool store_ok = true;        // false: the store could not be read (reconnect)
  std::string verdict;         // kVerdictStop, kVerdictDepart, kVerdictFenced or ""
  int node = -1;               // the node rank this pod holds, -1 none
  std::string holder;          // who holds the node rank asked about ("" when nobody does)
  bool stop = false;
  std::string abandon;         // the reason when the group was abandoned
  bool finished = false;       // every rank finished training
  std::map<int, std::string> stalls;  // rank -> trainer identity declared stalled
  bool fenced = false;         // fenced/<this pod's identity>: the group declared it lost
  std::string epoch;           // the store's epoch as read ("" none)
  std::string members;         // kMembersKey as read (rejoin.h), "" none
  std::optional<Charge> budget;  // the budget's counters, when both are set
  std::string budget_text, recoveries_text;  // their values as stored (what a watch compares)
};

// The keys a poll reads, for a pod of `identity` holding node rank `holding` (-1: none) with
// trainers of `ranks`.
struct PodKeys {
  std::string identity;
  int holding = -1;
  std::vector<int> ranks;
  bool operator==(const PodKeys& o) const {
    return identity == o.identity && holding == o.holding && ranks == o.ranks;
  }
};

// One read of every key (a single request on the project's stores). Throws what the store
// throws. `last`: the values known (the read returns at once when one differs, else after
// `wait`); nullptr reads at once.
PodPoll ReadPod(c10d::Store& store, const PodKeys& keys, std::chrono::milliseconds wait,
                const PodPoll* last);

// How long a parked watch waits before it reads again anyway (and picks up changed keys).
inline constexpr std::chrono::milliseconds kPodRefresh{250};

// The watching thread. Thread-safe. The thread owns its connection; a failed read ends it
// (snapshot store_ok false) and the owner starts another after registering again.
class PodWatch {
 public:
  PodWatch() = default;
  ~PodWatch();  // stops the thread (it ends by itself after its current wait)
  PodWatch(const PodWatch&) = delete;
  PodWatch& operator=(const PodWatch&) = delete;

  // Starts following `keys` on `store` (a connection of its own), from `first` (a fresh read).
  void Start(c10::intrusive_ptr<c10d::Store> store, const PodKeys& keys, PodPoll first);
  // The keys to follow from now on (picked up within kPodRefresh).
  void Follow(const PodKeys& keys);
  // The latest read of `keys`: false when the thread has not read those keys yet (the caller
  // reads them itself). store_ok false once the thread's connection failed.
  bool Snapshot(const PodKeys& keys, PodPoll* out) const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_POD_WATCH_H_
