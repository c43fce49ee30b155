// The group's keys in the round's store (the rendezvous pod hosts it; DESIGN.md "In-place
// recovery"). One home for every key name, so the authority (authority_loop.cc), the supervisors
// (pod_client.cc) and the trainers (comm/membership.cc) cannot disagree. All keys live under the
// round's prefix (rendezvous.h RoundPrefix).
//
//   epoch                 a random id of the store process: a new one means a new, empty store
//   pods                  add() counter: pods listed so far; pod_at/<i> names the i-th
//   registrations         add() counter: bumped after every write of the supervisors' keys
//                         below (pod/*, trainer/<rank>/id, done/<rank>): the authority re-reads
//                         them when it moves
//   pod/<name>/id         the identity of the pod now registered under <name> ("<name>/<uid>")
//   pod/<name>/metrics    "host:port" of that pod's /metrics
//   leaving/<identity>    set when that pod got SIGTERM (a departure or a whole-job stop)
//   verdict/<identity>    set by the authority: kVerdictStop, kVerdictDepart or kVerdictFenced
//                         (by identity: a pod recreated under the same name starts clean)
//   presence              "port" of the authority's presence listener (presence.h)
//   node/<n>              the pod identity holding node rank n; absent when free
//   assigned/<identity>   the node rank that pod holds ("n"); absent when none (what a pod
//                         watches for its own rank, instead of reading every node/<n>)
// No key ever holds an empty value: c10d's TCPStore client takes 200 ms to read one.
//   trainer/<rank>/id     identity of the trainer process of <rank> ("<pod id>/<local>/<inc>")
//   trainer/<rank>/hb     add() heartbeat of that trainer (its watcher thread)
//   stall/<rank>          set by the authority: the trainer identity it found silent
//   fenced/<identity>     a pod or trainer identity the group declared lost
//   budget                add() counter: failures this round may still heal (see budget.h)
//   recoveries            add() counter: failures healed this round
//   charge/<key>          add() counter: a charge's idempotency (a replaced pod's uid)
//   stop                  the whole job stops: every trainer checkpoints and exits 75
//   abandon               the group cannot re-form: survivors save once and exit 75
//   formed                set once a generation of this round formed (a communicator made)
//   done/<rank>           rank's trainer finished training (exit 0; its supervisor sets it)
//   prepare/<identity>    "1": that pod, created for a node rank past the group's size, started
//                         its trainers for it ahead of the growth (they build their data and
//                         model, then wait outside the group); "1@<n>": the same for node
//                         rank n, the one the pod holding its own left when the group shrank
//                         on a loss (authority.h rule 10); "0": it does not prepare, or its
//                         trainers ended and it prepares no more; "?": a pod that may prepare
//                         (warm standbys) registers with it, before it is listed, and says "1",
//                         "1@<n>" or "0" right after: the authority does not grow with it until
//                         it said (kDecideWaitSeconds at most). Its supervisor writes it, then
//                         bumps `registrations`
//   ready/<rank>          the trainer identity that prepared <rank> and waits outside the group
//   moved/<identity>      "<n>", set by the authority before it gives that pod node rank n in
//                         place of the one it held (rule 10: ranks stay dense): its trainers
//                         take the ranks of node rank n with their state (comm/membership.h)
//   finished              every rank is done: spares and the rendezvous may end
//   gen                   add() counter: the current generation G (comm/membership.h)
//   world                 ranks in the group (nodes x nproc per node), written by the authority
//                         only, always before it moves `gen` on: a member reads `gen`, then
//                         `world`, and so never joins a generation at a size it was not formed for
//   gen<G>/advance        add() counter: the caller taking it 0 -> 1 moves gen to G+1
//   gen<G>/graceful       "1", written by the authority before it moves gen to G when G only
//                         grows a formed G-1 (authority.h rule 9c): the members of G-1 train on
//                         and leave it at a step agreement once every newcomer arrived in G,
//                         instead of aborting their communicator
//   gen<G>/arrived/<r>    rank r joined G: "<committed step> <trainer identity>"
//   gen<G>/arrivals       a counter: arrivals in G (the authority's rendezvous clock starts at 1;
//                         a retried join counts again)
//   gen<G>/steps          the members' committed steps summed up (group/steps.h), written by the
//                         last to arrive: G formed once it exists
//   gen<G>/comm/...       the communicator's own keys
#ifndef DDP_WORKER_GROUP_KEYS_H_
#define DDP_WORKER_GROUP_KEYS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ddp::worker::group {

inline constexpr char kEpochKey[] = "epoch";
inline constexpr char kPodsKey[] = "pods";
inline constexpr char kRegistrationsKey[] = "registrations";
inline constexpr char kPresenceKey[] = "presence";
inline constexpr char kBudgetKey[] = "budget";
inline constexpr char kRecoveriesKey[] = "recoveries";
inline constexpr char kStopKey[] = "stop";
inline constexpr char kAbandonKey[] = "abandon";
inline constexpr char kFinishedKey[] = "finished";
inline constexpr char kFormedKey[] = "formed";
inline constexpr char kGenKey[] = "gen";
inline constexpr char kWorldKey[] = "world";

inline constexpr char kVerdictStop[] = "stop";
inline constexpr char kVerdictDepart[] = "depart";
inline constexpr char kVerdictFenced[] = "fenced";
// prepare/<identity> of a pod that has not said yet whether it prepares.
inline constexpr char kPrepareUndecided[] = "?";
// The group shrank without this pod (a resize, not a failure): it ends at once, uncharged.
inline constexpr char kVerdictResized[] = "resized";

inline std::string PodAtKey(int64_t i) { return "pod_at/" + std::to_string(i); }
inline std::string PodKey(const std::string& name, const char* field) {
  return "pod/" + name + "/" + field;
}
inline std::string LeavingKey(const std::string& identity) { return "leaving/" + identity; }
inline std::string VerdictKey(const std::string& identity) { return "verdict/" + identity; }
inline std::string NodeKey(int node) { return "node/" + std::to_string(node); }
inline std::string AssignedKey(const std::string& identity) { return "assigned/" + identity; }
inline std::string TrainerKey(int rank, const char* field) {
  return "trainer/" + std::to_string(rank) + "/" + field;
}
inline std::string StallKey(int rank) { return "stall/" + std::to_string(rank); }
inline std::string FencedKey(const std::string& identity) { return "fenced/" + identity; }
inline std::string ChargeKey(const std::string& key) { return "charge/" + key; }
inline std::string DoneKey(int rank) { return "done/" + std::to_string(rank); }
inline std::string PrepareKey(const std::string& identity) { return "prepare/" + identity; }
inline std::string ReadyKey(int rank) { return "ready/" + std::to_string(rank); }
inline std::string MovedKey(const std::string& identity) { return "moved/" + identity; }
inline std::string GenPrefix(int64_t g) { return "gen" + std::to_string(g) + "/"; }
inline std::string ArrivedKey(int64_t g, int rank) {
  return GenPrefix(g) + "arrived/" + std::to_string(rank);
}
inline std::string ArrivalsKey(int64_t g) { return GenPrefix(g) + "arrivals"; }
inline std::string StepsKey(int64_t g) { return GenPrefix(g) + "steps"; }
inline std::string AdvanceKey(int64_t g) { return GenPrefix(g) + "advance"; }
inline std::string GracefulKey(int64_t g) { return GenPrefix(g) + "graceful"; }
// The size generation g forms at: written by whoever began g (TryAdvance), before `gen` shows g.
inline std::string GenWorldKey(int64_t g) { return GenPrefix(g) + "world"; }

// "<name>/<uid>"; the pod name of an identity.
inline std::string PodIdentity(const std::string& name, const std::string& uid) {
  return name + "/" + uid;
}
inline std::string PodOfIdentity(const std::string& id) { return id.substr(0, id.find('/')); }
// "<pod identity>/<local rank>/<incarnation>".
inline std::string TrainerIdentity(const std::string& pod_id, int local_rank, int incarnation) {
  return pod_id + "/" + std::to_string(local_rank) + "/" + std::to_string(incarnation);
}

inline std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }
inline std::string Text(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_KEYS_H_
