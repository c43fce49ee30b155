// The group authority's rules as named steps (internal to worker/group: authority.cc runs them
// in order, authority.h lists them and states the invariants each one keeps). Every rule reads
// the view and the decisions of the rules before it (a Work) and adds its own; none reads a
// clock or a store. Not thread-safe: one Work per Decide call.
#ifndef DDP_WORKER_GROUP_AUTHORITY_RULES_H_
#define DDP_WORKER_GROUP_AUTHORITY_RULES_H_

#include <set>
#include <string>
#include <vector>

#include "worker/group/authority.h"
#include "worker/group/rejoin.h"

namespace ddp::worker::group::rules {

// The working state of one Decide call: later rules see earlier decisions.
struct Work {
  Work(const GroupView& view, const AuthoritySettings& settings);

  const GroupView& v;
  const AuthoritySettings& s;
  Actions a;
  std::vector<std::string> holders;  // node rank -> identity, as the rules so far leave it
  std::set<std::string> gone;        // identities fenced or departed in this call or before
  std::set<std::string> spared;      // rule 1: silent in a mass silence, not declared lost yet
  bool deaf = false;                 // rule 1: silence does not count this call
  int cur = 0;                       // the group's node ranks, as the rules so far leave it
  int want = 0;                      // the size it wants (rule 9a sets it)
  RejoinDecision rejoin;             // a replaced store's old members (I4)
  bool shrunk = false;               // rule 10 shrank the group in this call
  bool moved_before = false;         // membership changed before the growth (rule 9c)
  int grown = 0;                     // the size after the growth (rule 9b)
  bool restarted = false;            // rule 5b moved the generation

  // Registered under `id`, no verdict but stop, not lost by rule 1, not gone.
  bool Live(const std::string& id) const;
  // Live, not leaving, holding no node rank.
  bool Idle(const PodView& p) const;
  void Fence(const std::string& id, const std::string& why);
  void Free(int node, const std::string& why);
  int NodeOf(const std::string& id) const;
};

// "12.3s".
std::string Seconds(double s);

// Each returns true when Decide ends with it (nothing later may change the decision).
bool Finished(Work* w);         // 8: every rank done
void LostPods(Work* w);         // 1: presence closed, or silent while the authority hears
void RejoinLost(Work* w);       // 1b: old members not back with a new store (I4)
void DeadHolders(Work* w);      // 2: holders no longer live registered pods
bool StopTogether(Work* w);     // 3: every member got SIGTERM: the whole job stops
void Departures(Work* w);       // 3: leaving members past the stop window, leaving spares
void ShrinkAsked(Work* w);      // 9a: a desired size below the group's
void AssignFree(Work* w);       // 4: free node ranks to old holders, own pods, spares
void ShrinkOnLoss(Work* w);     // 10: a loss with nobody to take the rank: go on smaller
void Grow(Work* w);             // 9b: a desired size above the group's
void Stalls(Work* w);           // 5: silent trainers of live pods, unless a slowdown
void Restarts(Work* w);         // 5b: a trainer restarted under its predecessor's generation
void Graceful(Work* w);         // 9c: a growth alone of a formed generation
void Abandon(Work* w);          // 7: a generation not formed within the rendezvous timeout

}  // namespace ddp::worker::group::rules

#endif  // DDP_WORKER_GROUP_AUTHORITY_RULES_H_
