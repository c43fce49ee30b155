// In-place recovery, the trainer's side of the group (DESIGN.md "In-place recovery", "Drains,
// silent nodes and the budget"): a fixed-size group of trainer processes that re-forms at a new
// *generation* whenever a member is lost, on the store the rendezvous pod hosts. It creates the
// communicators; it does not move training state (train/heal.h does). Keys: group/keys.h.
//
// Protocol of Join():
//   1. a member whose pod the authority moved to another node rank (moved/<pod>, and node/<n>
//      names the pod: authority.h rule 10) takes that node rank's rank from now on, with its
//      state, and says so (trainer/<rank>/id). Fencing: a member whose pod no longer holds its
//      node rank (node/<n>) or whose trainer was replaced (trainer/<rank>/id) may not join:
//      kFenced. A stop or an abandoned group ends the join (kStop, kAbandon);
//   2. a survivor of generation g calls Advance(g); a new process reads G = gen and calls
//      Advance(G) when gen<G>/arrived/<rank> names another trainer (an earlier incarnation);
//   3. G = gen, then the group's size (world: the authority writes it before it moves gen on);
//      a rank outside it waits until its pod departs (kFenced) or the group grows to it, saying
//      once that it is ready (ready/<rank>: a newcomer prepared ahead of a growth, authority.h
//      rule 9); set gen<G>/arrived/<rank> =
//      "<committed step> <trainer identity>";
//   4. wait until every rank arrived in G; if gen moves past G meanwhile, go to 3 with the new G;
//   5. read every rank's committed step, then create the communicator under gen<G>/comm/ through
//      a FencedStore: a generation that moves on while the communicator forms cancels it.
// The watcher thread (from Connect() on): heartbeats trainer/<rank>/hb, aborts the watched
// communicator when the generation moves past its own or the group is abandoned or this trainer
// was declared stalled, and raises stop_requested() on a whole-job stop. A generation that only
// grows the group (gen<G>/graceful, authority.h rule 9c) is not aborted: once every newcomer
// arrived in it, the watcher raises leave_requested() and the trainer leaves at its next step
// agreement, losing no step; a member still in the old generation kGracefulLeave later (a step
// that never ends) is aborted as any other. When the store is lost
// it reconnects; a new store (a new rendezvous pod: a new epoch) starts generations afresh.
#ifndef DDP_WORKER_GROUP_MEMBERSHIP_H_
#define DDP_WORKER_GROUP_MEMBERSHIP_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "worker/comm/communicator.h"
#include "worker/group/steps.h"

namespace ddp::worker::group {

// Makes this member's communicator on a store already prefixed for the generation.
using CommunicatorMaker = std::function<StatusOr<std::unique_ptr<Communicator>>(
    c10::intrusive_ptr<c10d::Store> store, int rank, int size)>;
// Opens a new connection to the round's store (round-prefixed). Errors: Unavailable.
using StoreOpener = std::function<StatusOr<c10::intrusive_ptr<c10d::Store>>()>;

// How long a graceful leave may take once asked for before the watcher aborts the communicator.
inline constexpr std::chrono::seconds kGracefulLeave{30};

struct MemberIdentity {
  std::string trainer;  // TrainerIdentity(pod, local rank, incarnation)
  std::string pod;      // the pod identity that must hold `node`
  int node = 0;
  int local = 0;     // its local rank: rank = node * per_node + local
  int per_node = 1;  // ranks per node
};

// Why a Join ended without a group.
enum class GroupEnd {
  kNone,
  kStop,       // the whole job stops: checkpoint and exit 75
  kAbandon,    // the group cannot re-form this round: checkpoint and exit 75
  kFenced,     // this member was declared lost: exit at once, it holds nothing the group needs
  kStoreLost,  // the store stayed unreachable for the rendezvous timeout: checkpoint and exit 75
};
const char* GroupEndName(GroupEnd e);

struct Formation {
  int64_t generation = 0;
  int world = 0;      // ranks in this generation
  StepsSummary steps;  // the members' committed steps, summed up (who heals whom)
  std::unique_ptr<Communicator> comm;
  GroupEnd end = GroupEnd::kNone;  // when not kNone, nothing else is set
  std::string why;
};

// Thread-safety: Connect/Join/Advance/Watch from one thread (the training thread); the watcher
// has its own connection and thread; stop_requested() from any thread.
class GroupMembership {
 public:
  // `heartbeat`: how often the watcher beats (trainer/<rank>/hb); a tenth of the liveness
  // timeout keeps the authority's stall clock well inside it.
  GroupMembership(StoreOpener open, int rank, int size, MemberIdentity id,
                  std::chrono::milliseconds timeout, CommunicatorMaker make,
                  std::chrono::milliseconds heartbeat = std::chrono::milliseconds(100));
  ~GroupMembership();

  // The rank at the last Join (the constructor's until then): a pod moved to another node rank
  // (authority.h rule 10) takes its trainers with it.
  int rank() const { return rank_.load(); }
  // The group's size at the last Join (the constructor's until then): an elastic group resizes
  // in place at a new generation (authority.h rule 9), and every member reads the same size.
  int size() const { return size_; }
  int64_t generation() const { return generation_; }

  // Opens the connections (retrying until the timeout; DeadlineExceeded then) and starts the
  // watcher. REQUIRES: called once, before Join.
  Status Connect();

  // Steps 1-5. `committed_step` is the optimizer steps this member has applied, -1 without state.
  // OK with end == kNone and a communicator, or with another end (no group). Unavailable: the
  // communicator could not be created; the caller may Join again. DeadlineExceeded: the group
  // did not form within the timeout and nobody abandoned it (the authority is gone).
  StatusOr<Formation> Join(int64_t committed_step);

  // Whether this rank is past the group's size now and its node rank free (a newcomer prepared
  // ahead of a growth: its Join waits until the group grows to it). False when the store cannot
  // say.
  bool Outside();

  // Leaves generation `g` for good (one mover per g moves `gen` to g+1) and waits until gen > g.
  Status Advance(int64_t g);

  // Watches `comm` (of the last Join's generation) until the next Join or the destructor;
  // nullptr stops watching. `comm` must outlive the watch.
  void Watch(Communicator* comm);

  // A whole-job stop was decided: every member checkpoints at the next agreement and exits.
  bool stop_requested() const { return stop_requested_.load(); }

  // The group grew and every newcomer waits in the new generation: leave the watched one at the
  // next step agreement (agreed by all its members) and Join. False again once Join starts.
  bool leave_requested() const { return leave_requested_.load(); }

 private:
  StatusOr<Formation> JoinOnce(int64_t committed_step, std::chrono::steady_clock::time_point deadline);
  std::chrono::steady_clock::time_point JoinDeadline() const;
  std::string Ended(c10d::Store& s, GroupEnd* end);  // "" when the group goes on
  // Step 1's move: whether this member now takes another node rank's rank (the training thread).
  bool FollowMove(c10d::Store& s);
  void WatchLoop();
  // The last arrival in `g` writes its steps' summary (StepsKey): whoever counted to the size
  // or past it, once every rank arrived.
  void Summarize(c10d::Store& s, int64_t g);

  StoreOpener open_;
  std::atomic<int> rank_;  // the watcher heartbeats it
  int size_;
  MemberIdentity id_;
  std::chrono::milliseconds timeout_;
  CommunicatorMaker make_;
  std::chrono::milliseconds beat_;
  c10::intrusive_ptr<c10d::Store> store_;  // the training thread's connection
  std::string epoch_;                      // of the store the last Join used
  int64_t generation_ = -1;
  bool joined_before_ = false;
  bool ready_said_ = false;  // ready/<rank> written (once: a prepared trainer waiting outside)

  std::mutex watch_mu_;  // guards watched_ and watched_generation_ against the watcher's abort
  Communicator* watched_ = nullptr;
  int64_t watched_generation_ = -1;
  int watched_size_ = 0;  // the watched generation's ranks
  std::string watched_epoch_;
  int64_t graceful_seen_ = -1;  // the generation the watcher saw marked graceful (rule 9c)
  std::chrono::steady_clock::time_point leave_asked_{};  // when leave_requested_ rose
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> leave_requested_{false};
  // The watcher saw a new store (a replaced rendezvous pod): the training thread's connection is
  // to the old one, which may be frozen (every call would wait out the store's timeout), so the
  // next Join opens a fresh connection first.
  std::atomic<bool> store_replaced_{false};
  // What the watcher last read of the generation and the group's end: a hint for a join whose
  // communicator forms (forming.h), which reads the store itself only on it, or once a second.
  std::atomic<int64_t> seen_generation_{-1};
  std::atomic<bool> seen_end_{false};
  std::atomic<bool> quit_{false};
  std::thread watcher_;
};

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_MEMBERSHIP_H_
