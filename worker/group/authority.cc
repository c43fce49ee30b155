// The group authority's rules (see authority.h for the list).
#include "worker/group/authority.h"

#include <algorithm>
#include <set>

#include "worker/group/keys.h"
#include "worker/group/rejoin.h"

namespace ddp::worker::group {
namespace {

std::string Seconds(double s) {
  const long tenths = static_cast<long>(s * 10 + 0.5);
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "s";
}

// Rule 1's test alone: why the pod of `p` is lost, or "". `deaf`: silence does not count (the
// authority hears from too few pods, or its tick came late).
std::string LostWhy(const PodView& p, const AuthoritySettings& s, bool deaf) {
  // Given a verdict, or done: its process ends on purpose.
  if (!p.verdict.empty() || p.done) return "";
  if (p.presence_closed) return "its process ended (connection closed)";
  if (!deaf && p.silent_seconds > s.liveness_seconds) {
    return "silent for " + Seconds(p.silent_seconds) + " (liveness timeout " +
           Seconds(s.liveness_seconds) + ")";
  }
  return "";
}

// The working state of one Decide call: later rules see earlier decisions.
struct Work {
  const GroupView& v;
  const AuthoritySettings& s;
  Actions a;
  std::vector<std::string> holders;
  std::set<std::string> gone;  // identities fenced or departed in this call or before
  bool deaf = false;           // rule 1: silence does not count this call

  bool Live(const std::string& id) const {
    if (id.empty() || gone.count(id)) return false;
    auto it = v.pods.find(PodOfIdentity(id));
    if (it == v.pods.end() || it->second.identity != id) return false;
    // A stopping member stays one: it writes the stop's checkpoint with the others.
    const std::string& verdict = it->second.verdict;
    return (verdict.empty() || verdict == kVerdictStop) && LostWhy(it->second, s, deaf).empty();
  }
  void Fence(const std::string& id, const std::string& why) {
    if (!gone.insert(id).second) return;
    a.fence.push_back({id, why});
  }
  void Free(int node, const std::string& why) {
    holders[static_cast<size_t>(node)] = "";
    a.assign.push_back({node, ""});
    a.advance = true;
    a.log.push_back("node rank " + std::to_string(node) + " freed: " + why);
  }
  int NodeOf(const std::string& id) const {
    for (size_t n = 0; n < holders.size(); ++n) {
      if (holders[n] == id) return static_cast<int>(n);
    }
    return -1;
  }
};

// Rule 10 (authority.h): the held-before node ranks below *cur that rule 4 left free are given
// up, as many as min_nodes allows; the highest members move into the lowest holes. Returns
// whether the group shrank (then *cur is its new size).
bool ShrinkOnLoss(Work* w, const GroupView& v, const AuthoritySettings& s,
                  const RejoinDecision& rejoin, int* cur) {
  if (s.min_nodes <= 0 || *cur <= s.min_nodes || v.abandon) return false;
  std::vector<int> holes;
  for (int n = 0; n < *cur; ++n) {
    const size_t i = static_cast<size_t>(n);
    const bool held_before = (i < v.ever_held.size() && v.ever_held[i]) || v.previous.count(n) > 0;
    if (w->holders[i].empty() && held_before && !rejoin.waiting.count(n)) holes.push_back(n);
  }
  if (holes.empty()) return false;
  const int to = *cur - std::min(static_cast<int>(holes.size()), *cur - s.min_nodes);
  // Never past a rank an old member may still register again for (I4): it would come back
  // outside the group. The window is seconds; the shrink waits for its end.
  if (!rejoin.waiting.empty() && *rejoin.waiting.rbegin() >= to) return false;
  size_t next = 0;  // the lowest hole not filled yet
  for (int n = *cur - 1; n >= to; --n) {
    const std::string id = w->holders[static_cast<size_t>(n)];
    if (id.empty()) continue;
    // Members past the new size are as many as the holes below it, less those left waiting.
    if (next >= holes.size() || holes[next] >= to) break;
    const int h = holes[next++];
    w->holders[static_cast<size_t>(n)] = "";
    w->holders[static_cast<size_t>(h)] = id;
    w->a.assign.push_back({n, ""});
    w->a.assign.push_back({h, id});
    w->a.moves.push_back({id, h});
    w->a.log.push_back("pod " + PodOfIdentity(id) + " moves from node rank " + std::to_string(n) +
                       " to " + std::to_string(h) + " with its trainers: ranks stay dense");
  }
  w->a.log.push_back("resize: " + std::to_string(*cur) + " -> " + std::to_string(to) +
                     " node(s): no idle pod for the lost member's rank; the group goes on " +
                     "without it and grows back when its replacement is ready");
  w->a.shrunk = *cur - to;
  w->a.resize_to = to;
  w->a.advance = true;
  *cur = to;
  return true;
}

}  // namespace

bool Actions::empty() const {
  return fence.empty() && verdicts.empty() && assign.empty() && stalls.empty() && !advance &&
         !stop && abandon.empty() && !finished && resize_to < 0;
}

bool IsLive(const GroupView& view, const AuthoritySettings& settings, const std::string& identity) {
  Work w{view, settings, {}, view.node_holders, {view.fenced.begin(), view.fenced.end()}};
  return w.Live(identity);
}

Actions Decide(const GroupView& v, const AuthoritySettings& s) {
  Work w{v, s, {}, v.node_holders, {v.fenced.begin(), v.fenced.end()}};
  w.holders.resize(static_cast<size_t>(s.nodes));
  int cur = v.nodes > 0 ? std::min(v.nodes, s.nodes) : s.nodes;  // as rules 4 and 9 leave it
  if (v.finished) return {};
  // 8. Done: nothing else matters any more.
  if (v.world > 0 && v.done_ranks >= v.world) {
    w.a.finished = true;
    w.a.log.push_back("every rank finished training");
    return w.a;
  }
  // 1. Lost pods. Silence decides only while this authority hears from most pods and its own
  // clock is on time: every pod silent at once is this authority starved or cut off, not them.
  int candidates = 0, unheard = 0;
  for (const auto& [name, p] : v.pods) {
    if (!p.verdict.empty() || p.done || w.gone.count(p.identity)) continue;
    ++candidates;
    if (!p.presence_closed && p.silent_seconds > s.liveness_seconds) ++unheard;
  }
  w.deaf = (unheard >= 2 && unheard * 2 > candidates) || v.tick_late_seconds > s.liveness_seconds / 2;
  if (w.deaf && unheard > 0) w.a.unheard = unheard;
  for (const auto& [name, p] : v.pods) {
    const std::string why = LostWhy(p, s, w.deaf);
    if (why.empty() || w.gone.count(p.identity)) continue;
    w.Fence(p.identity, why);
    w.a.verdicts.push_back({p.identity, kVerdictFenced});
    w.a.log.push_back("pod " + name + " lost: " + why);
    if (int n = w.NodeOf(p.identity); n >= 0) w.Free(n, "pod " + name + " lost");
  }
  // 1b. A replaced store: old members that did not register again in time (rejoin.h).
  const RejoinDecision rejoin = DecideRejoin(v, s);
  for (const auto& [n, id] : rejoin.lost) {
    if (w.gone.count(id)) continue;
    const std::string why =
        rejoin.replaced.count(n)
            ? "replaced: another pod registered under its name with the new store"
            : "did not register again with the new store within " + Seconds(RejoinWindowSeconds(s));
    w.Fence(id, why);
    w.a.verdicts.push_back({id, kVerdictFenced});
    w.a.advance = true;  // the survivors may wait on it in a collective of the old store
    w.a.log.push_back("pod " + PodOfIdentity(id) + " of node rank " + std::to_string(n) +
                      " lost: " + why);
  }
  // 2. Holders that are no longer live registered pods. Fenced with a verdict: a pod fenced
  // without one would read its trainers' exits as failures and charge them.
  for (int n = 0; n < s.nodes; ++n) {
    const std::string& h = w.holders[static_cast<size_t>(n)];
    if (h.empty() || w.Live(h)) continue;
    const std::string holder = h;
    const auto it = v.pods.find(PodOfIdentity(holder));
    const bool has_verdict =
        it != v.pods.end() && it->second.identity == holder && !it->second.verdict.empty();
    const bool fenced_now = w.gone.count(holder) == 0;
    w.Fence(holder, "replaced or no longer registered");
    if (fenced_now && !has_verdict) w.a.verdicts.push_back({holder, kVerdictFenced});
    w.Free(n, holder + " is no longer a live member");
  }
  if (v.stop) return w.a;  // stopping together: no departures, no new members
  // 3. SIGTERM: a whole-job stop, or departures after the stop window.
  std::vector<std::string> members, leaving;
  double longest = 0;
  for (const auto& h : w.holders) {
    if (h.empty() || !w.Live(h)) continue;
    members.push_back(h);
    const PodView& p = v.pods.at(PodOfIdentity(h));
    if (p.leaving) {
      leaving.push_back(h);
      longest = std::max(longest, p.leaving_seconds);
    }
  }
  // Not while an old member may still register again with a new store (rejoin.h): the first
  // pod back may be one that is leaving while the others are on their way (a rendezvous pod and
  // one worker deleted at once), and it is not "every member".
  if (!members.empty() && leaving.size() == members.size() && rejoin.waiting.empty()) {
    w.a.stop = true;
    for (const auto& h : members) w.a.verdicts.push_back({h, kVerdictStop});
    w.a.log.push_back("every member got SIGTERM: the job stops together with a checkpoint");
    return w.a;
  }
  if (!leaving.empty() && longest >= s.stop_window_seconds) {
    for (const auto& h : leaving) {
      const std::string name = PodOfIdentity(h);
      w.Fence(h, "departed");
      w.a.verdicts.push_back({h, kVerdictDepart});
      w.a.log.push_back("pod " + name + " departs (SIGTERM, not the whole job)");
      w.Free(w.NodeOf(h), "pod " + name + " departed");
    }
  }
  for (const auto& [name, p] : v.pods) {  // a leaving spare has nothing to hand over
    if (p.leaving && w.Live(p.identity) && w.NodeOf(p.identity) < 0) {
      w.Fence(p.identity, "departed");
      w.a.verdicts.push_back({p.identity, kVerdictDepart});
      w.a.log.push_back("spare " + name + " departs (SIGTERM)");
    }
  }
  // 9a. Shrink: the highest node ranks depart.
  const int want = v.desired_nodes < 0 ? cur : std::clamp(v.desired_nodes, 1, s.nodes);
  if (want < cur) {
    for (int n = want; n < cur; ++n) {
      const std::string h = w.holders[static_cast<size_t>(n)];
      if (h.empty()) continue;
      w.Fence(h, "departed: the group shrank");
      w.a.verdicts.push_back({h, kVerdictResized});
      w.holders[static_cast<size_t>(n)] = "";
      w.a.assign.push_back({n, ""});
      w.a.log.push_back("pod " + PodOfIdentity(h) + " leaves node rank " + std::to_string(n) +
                        ": the group shrinks");
    }
    w.a.log.push_back("resize: " + std::to_string(cur) + " -> " + std::to_string(want) +
                      " node(s)");
    cur = want;
    w.a.resize_to = want;
    w.a.advance = true;
  }
  // 4. Free node ranks: to the pod created for it, else to an idle spare in name order.
  auto idle = [&](const PodView& p) {
    return w.Live(p.identity) && !p.leaving && w.NodeOf(p.identity) < 0;
  };
  for (int n = 0; n < cur; ++n) {
    if (!w.holders[static_cast<size_t>(n)].empty() || rejoin.waiting.count(n)) continue;
    const std::string* pick = nullptr;
    // An old member back with a new store gets the node rank it held, whatever pod was created
    // for that rank (I4): it holds the state, and it may have moved there (rule 10) or be the
    // spare that took it.
    if (auto prev = v.previous.find(n); prev != v.previous.end()) {
      auto it = v.pods.find(PodOfIdentity(prev->second));
      if (it != v.pods.end() && it->second.identity == prev->second && idle(it->second)) {
        pick = &it->first;
      }
    }
    const bool back = pick != nullptr;
    for (const auto& [name, p] : v.pods) {
      if (!back && idle(p) && p.home_node == n) pick = &name;
    }
    // At start-up a rank waits for its own pod (a spare taking it would shuffle every rank),
    // unless that pod does not come.
    const bool held_before =
        (static_cast<size_t>(n) < v.ever_held.size() && v.ever_held[static_cast<size_t>(n)]) ||
        v.previous.count(n) > 0;
    const bool spare_may = held_before || v.unformed_seconds > s.liveness_seconds;
    for (auto it = v.pods.begin(); spare_may && pick == nullptr && it != v.pods.end(); ++it) {
      const PodView& p = it->second;
      const bool own_rank_free = p.home_node >= 0 && p.home_node < cur &&
                                 w.holders[static_cast<size_t>(p.home_node)].empty();
      if (idle(p) && !own_rank_free) pick = &it->first;
    }
    if (pick == nullptr) continue;
    const PodView& p = v.pods.at(*pick);
    w.holders[static_cast<size_t>(n)] = p.identity;
    w.a.assign.push_back({n, p.identity});
    w.a.log.push_back(back ? "pod " + *pick + " takes node rank " + std::to_string(n) +
                                 " back: it held it with the lost store"
                           : (p.home_node == n ? "pod " : "spare ") + *pick + " takes node rank " +
                                 std::to_string(n));
  }
  // 10. A loss without a spare: go on smaller at once (the highest members fill the holes).
  const bool shrunk = ShrinkOnLoss(&w, v, s, rejoin, &cur);
  // 9b. Grow, once every node rank of the group is held: the next node ranks go to the idle pods
  // created for them, else to idle worker pods whose own rank is held (a spare pod stays one).
  const bool moved_before =
      w.a.advance || !w.a.fence.empty() || !w.a.verdicts.empty() || !w.a.assign.empty();
  bool whole = want > cur && !shrunk;
  for (int n = 0; whole && n < cur; ++n) whole = !w.holders[static_cast<size_t>(n)].empty();
  // A preparing pod joins once its trainers are ready, or once it waited past the bound; one
  // that may prepare, once it said whether it does.
  auto ready = [&](const PodView& p) {
    if (p.deciding && p.registered_seconds < kDecideWaitSeconds) return false;
    return idle(p) && (!p.preparing || p.ready || p.registered_seconds >= kPrepareWaitSeconds);
  };
  if (whole) {
    // All the pods the growth needs, or the first of them waited long enough and none of those
    // there is still preparing.
    int there = 0;
    double waited = 0;
    bool preparing = false;
    for (const auto& [name, p] : v.pods) {
      if (!idle(p) || p.home_node < 0) continue;
      waited = std::max(waited, p.registered_seconds);
      if (ready(p)) {
        ++there;
      } else {
        preparing = true;
      }
    }
    whole = there >= want - cur || (there > 0 && !preparing && waited >= kGrowWaitSeconds);
  }
  int grown = cur;
  while (whole && grown < want) {
    const std::string* pick = nullptr;
    for (const auto& [name, p] : v.pods) {
      if (ready(p) && p.home_node == grown) pick = &name;
    }
    // Then a pod that prepared for it (rule 10: the rank the pod now holding its home left).
    for (auto it = v.pods.begin(); pick == nullptr && it != v.pods.end(); ++it) {
      const PodView& p = it->second;
      if (ready(p) && p.home_node >= 0 && p.preparing && p.prepare_node == grown) pick = &it->first;
    }
    for (auto it = v.pods.begin(); pick == nullptr && it != v.pods.end(); ++it) {
      const PodView& p = it->second;
      const bool own_rank_later = p.home_node > grown && p.home_node < want;
      if (ready(p) && p.home_node >= 0 && p.home_node < grown && !own_rank_later) pick = &it->first;
    }
    if (pick == nullptr) break;
    const PodView& p = v.pods.at(*pick);
    w.holders[static_cast<size_t>(grown)] = p.identity;
    w.a.assign.push_back({grown, p.identity});
    w.a.log.push_back("pod " + *pick + " takes node rank " + std::to_string(grown) +
                      ": the group grows");
    ++grown;
  }
  if (grown > cur) {
    w.a.log.push_back("resize: " + std::to_string(cur) + " -> " + std::to_string(grown) +
                      " node(s)");
    w.a.resize_to = grown;
    w.a.advance = true;
  }
  // 5. Stalled trainers of live pods; many at once, or a late tick, is a slowdown instead.
  std::vector<std::pair<int, const TrainerView*>> silent;
  int live_trainers = 0;
  for (size_t r = 0; r < v.trainers.size(); ++r) {
    const TrainerView& t = v.trainers[r];
    if (t.identity.empty()) continue;
    const std::string pod_id = t.identity.substr(0, t.identity.find('/', t.identity.find('/') + 1));
    if (!w.Live(pod_id)) continue;
    ++live_trainers;
    if (t.stall_reported || t.silent_seconds <= s.liveness_seconds) continue;
    silent.push_back({static_cast<int>(r), &t});
  }
  const bool late = v.tick_late_seconds > s.liveness_seconds / 2;
  std::set<std::string> silent_pods;
  for (const auto& [r, t] : silent) silent_pods.insert(PodOfIdentity(t->identity));
  const bool together = silent_pods.size() >= 2 &&
                        (silent.size() * 10 >= static_cast<size_t>(live_trainers) || silent.size() >= 4);
  const bool after = v.since_slowdown_seconds < s.liveness_seconds;
  if (!silent.empty() && (late || together || after)) {
    w.a.slowdown = static_cast<int>(silent.size());
  } else {
    for (const auto& [r, t] : silent) {
      w.a.stalls.push_back({r, t->identity});
      w.a.advance = true;
      w.a.log.push_back("rank " + std::to_string(r) + " trainer " + t->identity + " silent for " +
                        Seconds(t->silent_seconds) + ": stalled");
    }
  }
  // 9c. A growth alone, of a formed generation: its members leave at a step agreement.
  w.a.graceful = grown > cur && v.formed && !moved_before && w.a.stalls.empty();
  // 7. A group that cannot form.
  if (!v.abandon && !v.formed && v.unformed_seconds > s.rendezvous_seconds) {
    w.a.abandon = v.ever_formed ? "lost" : "never-formed";
    w.a.log.push_back(std::string("the group did not ") + (v.ever_formed ? "re-form" : "form") +
                      " within " + Seconds(s.rendezvous_seconds) + ": abandoning the round");
  }
  return w.a;
}

}  // namespace ddp::worker::group
