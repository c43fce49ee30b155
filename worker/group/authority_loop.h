// The group authority's adapter (the rendezvous pod runs it): every tick it reads the store and
// the presence connections into a GroupView, decides (authority.h) and writes the Actions back.
// It also keeps what the rendezvous pod's /metrics reports (GroupReport).
#ifndef DDP_WORKER_GROUP_AUTHORITY_LOOP_H_
#define DDP_WORKER_GROUP_AUTHORITY_LOOP_H_

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "worker/group/authority.h"
#include "worker/group/budget.h"
#include "worker/group/presence.h"
#include "worker/group/rejoin.h"

namespace ddp::worker::group {

// What the rendezvous pod's /metrics says (common/group_contract.h names the series).
struct GroupReport {
  int64_t generation = 0;
  int world_size = 0;       // ranks in the group now
  int64_t resizes = 0;      // times the group changed its size in place this round
  int shrunk_nodes = 0;     // node ranks it runs without after losses (rule 10), until it grows back
  int64_t recoveries = 0;
  int64_t budget_left = 0;
  std::map<int, std::string> members;            // node rank -> pod name
  std::map<std::string, std::string> metrics_of;  // pod name -> "host:port"
  std::vector<std::string> spares;                // idle spare pod names
  std::vector<std::pair<std::string, std::string>> fenced;  // pod name, uid
  struct Ended {
    std::string pod, uid;
    int node_rank = -1;  // held when its process ended; -1: none
  };
  std::vector<Ended> ended;  // pods whose process ended while registered
  // rank -> (pod name, incarnation) of the trainer registered on it (keys.h TrainerIdentity).
  std::map<int, std::pair<std::string, int>> trainers;
  bool abandoned = false;
  bool finished = false;
  bool stopping = false;
  bool any_leaving = false;
  int open_connections = 0;  // pods whose presence connection is open
  // Pods silent past the liveness timeout and not declared lost: a mass silence held back (rule
  // 1), or the authority hearing too few.
  int silent_held = 0;
};

// Moves generation `g` on to g+1 unless someone already did (one mover per g, via gen<g>/advance);
// true when this call moved it. The mover writes g+1's size (GenWorldKey: the group's `world` as
// it reads it) before `gen` shows g+1, so every member of a generation forms at the same size.
// Does not wait. Throws what the store throws.
bool TryAdvance(c10d::Store& store, int64_t g);

// The size generation `g` forms at: its own (GenWorldKey), or `world` for a generation nobody
// began with TryAdvance (a store's first); 0 when neither is there.
int GenerationSize(c10d::Store& store, int64_t g);

// A resize's advance, once the store's `world` key holds `world` (review F8): ends `moved`, and
// then every generation a member began before that write, at the old size. Returns the
// generation the group forms in, the first one whose size is `world`. Waits up to 2 s for a
// mover's size; one that never comes (its mover died halfway) ends the search.
int64_t AdvancePastResize(c10d::Store& store, int64_t moved, int world);

// Thread-safe: the loop runs on its own thread; Report() from any.
class AuthorityLoop {
 public:
  // The group size asked for, in node ranks (resize.h), read every tick on the loop's thread;
  // -1 when nothing is asked (keep the size).
  using DesiredNodes = std::function<int()>;

  // `store`: a client connection to the round's store (round-prefixed); `presence` outlives this.
  // `world`: the group's ranks at start (`initial_nodes` x ranks per node); settings.nodes is the
  // most node ranks it may grow to. Writes the store's `world` key before its first tick.
  AuthorityLoop(c10::intrusive_ptr<c10d::Store> store, PresenceServer* presence,
                AuthoritySettings settings, int world, std::chrono::milliseconds tick,
                int initial_nodes = -1, DesiredNodes desired = nullptr);
  ~AuthorityLoop();

  GroupReport Report() const;
  // The few flags the rendezvous pod's own loop watches, without copying the whole report.
  struct Flags {
    bool finished = false, abandoned = false, stopping = false, any_leaving = false;
    int open_connections = 0;
  };
  Flags Status() const;

 private:
  void Run();
  // One pass: Observe (the store and the presence connections as a GroupView), Decide
  // (authority.h), Apply (the actions, in the order invariant I2 asks for), Summarize (the
  // report). The loop's thread only, as every function below.
  void Tick();
  // Invariant I4 (authority.h): a store that replaced a lost one trains at the size the old
  // one's membership copy names (rule 10 may have shrunk the group there).
  void SeedSize(const Membership& old);

  c10::intrusive_ptr<c10d::Store> store_;
  PresenceServer* presence_;
  AuthoritySettings settings_;
  int world_;      // ranks in the group now
  int per_node_;   // ranks per node
  int nodes_;      // node ranks in the group now
  int64_t resizes_ = 0;
  DesiredNodes desired_;
  int asked_;       // the last size asked for (the first size before any): rule 10 grows back to it
  int shrunk_ = 0;  // node ranks given up on losses (rule 10) and not grown back yet
  std::chrono::milliseconds tick_;
  std::atomic<bool> stop_{false};
  std::thread thread_;

  // Memory between ticks (the loop thread only).
  using Clock = std::chrono::steady_clock;
  using PresenceSnapshot = decltype(std::declval<PresenceServer>().Snapshot());
  GroupView Observe(Clock::time_point now, GroupReport* r);
  // The pods' and supervisors' keys, read again only when `registrations` moved.
  void ReadRegistrations(Clock::time_point now);
  void ObservePods(Clock::time_point now, const PresenceSnapshot& seen, GroupView* v,
                   GroupReport* r);
  void ObserveGeneration(Clock::time_point now, GroupView* v);
  void ObserveTrainers(Clock::time_point now, GroupView* v);
  void Say(const Actions& a, const GroupView& v, Clock::time_point now);  // the decisions' log
  void Apply(const Actions& a, GroupView* v);
  void Summarize(const Actions& a, const GroupView& v, GroupReport* r);
  std::vector<std::string> names_;  // pod_at/0..
  struct PodMemory {
    Clock::time_point first_seen{};
    Clock::time_point leaving_since{};
    bool leaving = false;
    std::string verdict;  // the authority's own, once given
    bool exited = false;  // fenced because its process ended: its pod reports its own exit
    int held = -1;        // the node rank it held then (-1: none, an idle spare)
    bool ready = false;   // its prepared trainers all wait outside the group (authority.h rule 9)
  };
  struct PodInfo {
    std::string identity;
    int home = -1;
    std::string metrics;
    std::string members;  // its copy of a lost store's membership (rejoin.h), "" when none
    std::string prepare;  // prepare/<identity>: "1" preparing, "0" no more, "" never
  };
  int64_t registrations_ = -1;
  std::map<std::string, PodInfo> pods_;            // by name, as registered
  std::map<std::string, PodMemory> pod_memory_;  // by identity
  struct TrainerMemory {
    std::string identity;       // trainer/<rank>/id as last read
    std::string seen_identity;  // the one whose heartbeat `hb` is
    int64_t hb = -1;
    bool beaten = false;  // `seen_identity` beat at least once (its clock starts then)
    Clock::time_point changed{};
    int64_t restarted_in = -1;  // the generation its trainer was last restarted in place under
  };
  std::set<int> done_;
  std::vector<std::string> holders_;  // node/<n>: the authority is their only writer
  bool stopped_ = false, abandoned_ = false, finished_ = false;  // as written here
  int64_t ticks_ = 0;
  Clock::time_point last_tick_{};  // when the previous tick read the store (rule 5's lateness)
  bool slowdown_ = false;          // rule 5's slowdown, as last logged
  bool unheard_ = false;           // rule 1's deafness, as last logged
  Clock::time_point last_slowdown_{};  // the last tick rule 5 read as a slowdown
  Clock::time_point last_silence_lost_{};  // the last tick rule 1 declared a pod lost by silence
  std::vector<Clock::time_point> silence_lost_at_;  // each such pod's, two liveness timeouts back
  bool mass_silent_ = false;               // rule 1's mass silence, as last logged
  Charge budget_;
  std::vector<TrainerMemory> trainers_;
  std::set<std::string> fenced_;
  std::vector<bool> ever_held_;
  std::map<int, std::string> stalls_;
  int64_t generation_ = -1;
  Clock::time_point generation_since_{};  // its first arrival; unset before one
  bool ever_formed_ = false;
  std::map<int, std::string> previous_;  // a lost store's membership (rejoin.h)
  Clock::time_point previous_since_{};    // its first copy; unset before one
  int64_t seeded_generation_ = -1;        // the copy whose size this store took (SeedSize)

  mutable std::mutex mu_;
  GroupReport report_;
};

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_AUTHORITY_LOOP_H_
