// A store that replaced a lost rendezvous pod (DESIGN.md "In-place recovery"; docs/
// in-place-recovery.md "The store's node lost"). The new store starts empty: it knows no member of
// the generation the group trains in. The surviving pods know: the authority publishes who holds
// each node rank (kMembersKey), every supervisor keeps the last copy it read, and a supervisor
// that registers with a new store hands its copy over (pod/<name>/members). The new authority
// takes the newest copy as the old membership and the group's size there (invariant I4 in
// authority.h): a member that registers again gets its node rank back, before any pod created
// for that rank or registered for it (it holds the state); one that does not within the rejoin window (a frozen node, a pod lost with the store), or
// whose pod the operator already replaced under its name, is declared lost like a silent member,
// so its rank is freed, the survivors blocked in a collective with it are released (a new
// generation), and a spare or its replacement heals the group in the same round. Pure.
#ifndef DDP_WORKER_GROUP_REJOIN_H_
#define DDP_WORKER_GROUP_REJOIN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "worker/group/authority.h"

namespace ddp::worker::group {

// The store key the authority writes whenever a node rank changes hands: FormatMembers.
inline constexpr char kMembersKey[] = "members";

// Node rank holders and the group's size as one value: "<generation>:<nodes>;<n>=<identity>,..."
// ("" holders left out; never an empty value: "<generation>:<nodes>;" when nobody holds a rank).
// `nodes`: node ranks in the group (it may run below the size asked for, rule 10).
std::string FormatMembers(int64_t generation, const std::vector<std::string>& holders, int nodes);

// The membership a copy names; nullopt when `text` is not FormatMembers' output for node ranks in
// [0, nodes) (a copy is written by pods: a malformed one is ignored, never trusted in part). A
// copy of an older authority ("<generation>;...", no size) parses with nodes -1.
struct Membership {
  int64_t generation = -1;
  int nodes = -1;  // the group's node ranks then; -1: not said
  std::map<int, std::string> holders;
};
std::optional<Membership> ParseMembers(const std::string& text, int nodes);

// Of several copies, the one of the newest generation (the first of equals); an empty
// membership when none parses.
Membership NewestMembers(const std::vector<std::string>& copies, int nodes);

// How long the old members have to register again, counted from the first copy handed over.
// Every live member notices a silent store within the liveness timeout, before the operator
// replaces it, so by then they all retry (a connection's first read bounded by kFirstReadBound,
// 2 s, then again); a quarter of the liveness timeout, at least 3 s, covers one attempt lost to
// a stale route and a busy new store.
double RejoinWindowSeconds(const AuthoritySettings& settings);

// The node ranks a store that replaced a lost one trains at, from the old store's membership
// (invariant I4 in authority.h): the copy's size when it names one within [1, settings.nodes]
// that covers every holder it names, else `nodes_now` (the size the new store started at).
int SeedNodes(const Membership& old, const AuthoritySettings& settings, int nodes_now);

struct RejoinDecision {
  std::vector<std::pair<int, std::string>> lost;  // node rank, identity: not back in time
  std::set<int> replaced;  // of `lost`: node ranks whose pod was replaced under its name
  std::set<int> waiting;  // node ranks kept for an old member still inside the window
};

// `view.previous` against who registered: a member back under its identity needs nothing; one
// fenced already is skipped; one whose pod name is registered under another identity (the
// operator replaced its pod: it force-deletes the pods whose pages went silent with the old
// store's, operator/plan/silent_rendezvous.h) is lost at once, so its replacement takes the rank
// as soon as it registers; the others wait (inside the window) or are lost.
RejoinDecision DecideRejoin(const GroupView& view, const AuthoritySettings& settings);

}  // namespace ddp::worker::group

#endif  // DDP_WORKER_GROUP_REJOIN_H_
