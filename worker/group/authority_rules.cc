// The group authority's rules, one function each (see authority_rules.h; authority.h states them
// and the invariants I1-I5 they keep).
#include "worker/group/authority_rules.h"

#include <algorithm>

#include "worker/group/keys.h"

namespace ddp::worker::group::rules {
namespace {

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

bool HeldBefore(const GroupView& v, int n) {
  const size_t i = static_cast<size_t>(n);
  return (i < v.ever_held.size() && v.ever_held[i]) || v.previous.count(n) > 0;
}

}  // namespace

std::string Seconds(double s) {
  const long tenths = static_cast<long>(s * 10 + 0.5);
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "s";
}

Work::Work(const GroupView& view, const AuthoritySettings& settings)
    : v(view), s(settings), holders(view.node_holders), gone(view.fenced.begin(), view.fenced.end()) {
  holders.resize(static_cast<size_t>(s.nodes));
  cur = v.nodes > 0 ? std::min(v.nodes, s.nodes) : s.nodes;
  want = cur;
  grown = cur;
}

bool Work::Live(const std::string& id) const {
  if (id.empty() || gone.count(id)) return false;
  auto it = v.pods.find(PodOfIdentity(id));
  if (it == v.pods.end() || it->second.identity != id) return false;
  // A stopping member stays one: it writes the stop's checkpoint with the others.
  const std::string& verdict = it->second.verdict;
  return (verdict.empty() || verdict == kVerdictStop) &&
         (LostWhy(it->second, s, deaf).empty() || spared.count(id) > 0);
}

bool Work::Idle(const PodView& p) const {
  return Live(p.identity) && !p.leaving && NodeOf(p.identity) < 0;
}

void Work::Fence(const std::string& id, const std::string& why) {
  if (!gone.insert(id).second) return;
  a.fence.push_back({id, why});
}

void Work::Free(int node, const std::string& why) {
  holders[static_cast<size_t>(node)] = "";
  a.assign.push_back({node, ""});
  a.advance = true;  // I5
  a.log.push_back("node rank " + std::to_string(node) + " freed: " + why);
}

int Work::NodeOf(const std::string& id) const {
  for (size_t n = 0; n < holders.size(); ++n) {
    if (holders[n] == id) return static_cast<int>(n);
  }
  return -1;
}

bool Finished(Work* w) {
  if (w->v.world <= 0 || w->v.done_ranks < w->v.world) return false;
  w->a.finished = true;
  w->a.log.push_back("every rank finished training");
  return true;
}

void LostPods(Work* w) {
  const GroupView& v = w->v;
  const AuthoritySettings& s = w->s;
  // Silence decides only while this authority hears from most pods and its own clock is on
  // time: every pod silent at once is this authority starved or cut off, not them.
  int candidates = 0, unheard = 0;
  for (const auto& [name, p] : v.pods) {
    if (!p.verdict.empty() || p.done || w->gone.count(p.identity)) continue;
    ++candidates;
    if (!p.presence_closed && p.silent_seconds > s.liveness_seconds) ++unheard;
  }
  w->deaf = (unheard >= 2 && unheard * 2 > candidates) ||
            v.tick_late_seconds > s.liveness_seconds / 2;
  if (w->deaf && unheard > 0) w->a.unheard = unheard;
  // A mass silence: one pod declared lost by silence per liveness timeout, the longest silent
  // (a dead node's pod stays silent; a slow one beats again and leaves the count). Pods go quiet
  // a beat apart, so the count takes those quiet for half the timeout, and those declared lost
  // by silence within the last two (the same event: one declared lost per timeout).
  int quiet = v.recent_silence_lost;
  for (const auto& [name, p] : v.pods) {
    if (!p.verdict.empty() || p.done || p.presence_closed || w->gone.count(p.identity)) continue;
    if (p.silent_seconds > s.liveness_seconds / 2) ++quiet;
  }
  const bool mass = !w->deaf && quiet >= kMassSilenceMin &&
                    quiet > (candidates + v.recent_silence_lost) * kMassSilenceShare;
  std::string first;  // the one silence may declare lost now, under a mass silence
  if (mass) {
    w->a.mass_silent = unheard;
    double longest = -1;
    for (const auto& [name, p] : v.pods) {
      if (!p.verdict.empty() || p.done || p.presence_closed || w->gone.count(p.identity)) continue;
      if (p.silent_seconds > s.liveness_seconds && p.silent_seconds > longest) {
        longest = p.silent_seconds;
        first = p.identity;
      }
    }
    if (v.since_silence_lost_seconds < s.liveness_seconds) first.clear();
  }
  for (const auto& [name, p] : v.pods) {
    const std::string why = LostWhy(p, s, w->deaf);
    if (why.empty() || w->gone.count(p.identity)) continue;
    if (mass && !p.presence_closed && p.identity != first) {
      w->spared.insert(p.identity);
      continue;
    }
    if (!p.presence_closed) ++w->a.silence_lost;
    w->Fence(p.identity, why);  // I3
    w->a.verdicts.push_back({p.identity, kVerdictFenced});
    w->a.log.push_back("pod " + name + " lost: " + why);
    if (int n = w->NodeOf(p.identity); n >= 0) w->Free(n, "pod " + name + " lost");
  }
}

void RejoinLost(Work* w) {
  w->rejoin = DecideRejoin(w->v, w->s);
  for (const auto& [n, id] : w->rejoin.lost) {
    if (w->gone.count(id)) continue;
    const std::string why =
        w->rejoin.replaced.count(n)
            ? "replaced: another pod registered under its name with the new store"
            : "did not register again with the new store within " +
                  Seconds(RejoinWindowSeconds(w->s));
    w->Fence(id, why);
    w->a.verdicts.push_back({id, kVerdictFenced});
    w->a.advance = true;  // I5: the survivors may wait on it in a collective of the old store
    w->a.log.push_back("pod " + PodOfIdentity(id) + " of node rank " + std::to_string(n) +
                       " lost: " + why);
  }
}

void DeadHolders(Work* w) {
  // Fenced with a verdict: a pod fenced without one would read its trainers' exits as failures
  // and charge them.
  for (int n = 0; n < w->s.nodes; ++n) {
    const std::string holder = w->holders[static_cast<size_t>(n)];
    if (holder.empty() || w->Live(holder)) continue;
    const auto it = w->v.pods.find(PodOfIdentity(holder));
    const bool has_verdict =
        it != w->v.pods.end() && it->second.identity == holder && !it->second.verdict.empty();
    const bool fenced_now = w->gone.count(holder) == 0;
    w->Fence(holder, "replaced or no longer registered");  // I3
    if (fenced_now && !has_verdict) w->a.verdicts.push_back({holder, kVerdictFenced});
    w->Free(n, holder + " is no longer a live member");
  }
}

bool StopTogether(Work* w) {
  std::vector<std::string> members;
  size_t leaving = 0;
  for (const auto& h : w->holders) {
    if (h.empty() || !w->Live(h)) continue;
    members.push_back(h);
    if (w->v.pods.at(PodOfIdentity(h)).leaving) ++leaving;
  }
  // Not while an old member may still register again with a new store (I4): the first pod back
  // may be one that is leaving while the others are on their way (a rendezvous pod and one
  // worker deleted at once), and it is not "every member".
  if (members.empty() || leaving != members.size() || !w->rejoin.waiting.empty()) return false;
  // Nor while the group is still assembling: a node rank no pod has held this round is a pod on
  // its way (created, not registered yet), so the leaving ones are not every member. They depart
  // (the group never formed this round: there is nothing to save; a stop would end the round).
  for (int n = 0; n < w->cur; ++n) {
    if (!HeldBefore(w->v, n)) return false;
  }
  w->a.stop = true;
  for (const auto& h : members) w->a.verdicts.push_back({h, kVerdictStop});
  w->a.log.push_back("every member got SIGTERM: the job stops together with a checkpoint");
  return true;
}

void Departures(Work* w) {
  std::vector<std::string> leaving;
  double longest = 0;
  for (const auto& h : w->holders) {
    if (h.empty() || !w->Live(h)) continue;
    const PodView& p = w->v.pods.at(PodOfIdentity(h));
    if (p.leaving) {
      leaving.push_back(h);
      longest = std::max(longest, p.leaving_seconds);
    }
  }
  // A stop whose signals arrive a second or two apart is still one stop: wait the window.
  if (!leaving.empty() && longest >= w->s.stop_window_seconds) {
    for (const auto& h : leaving) {
      const std::string name = PodOfIdentity(h);
      w->Fence(h, "departed");
      w->a.verdicts.push_back({h, kVerdictDepart});
      w->a.log.push_back("pod " + name + " departs (SIGTERM, not the whole job)");
      w->Free(w->NodeOf(h), "pod " + name + " departed");
    }
  }
  for (const auto& [name, p] : w->v.pods) {  // a leaving spare has nothing to hand over
    if (p.leaving && w->Live(p.identity) && w->NodeOf(p.identity) < 0) {
      w->Fence(p.identity, "departed");
      w->a.verdicts.push_back({p.identity, kVerdictDepart});
      w->a.log.push_back("spare " + name + " departs (SIGTERM)");
    }
  }
}

void ShrinkAsked(Work* w) {
  const int cur = w->cur;
  w->want = w->v.desired_nodes < 0 ? cur : std::clamp(w->v.desired_nodes, 1, w->s.nodes);
  if (w->want >= cur) return;
  for (int n = w->want; n < cur; ++n) {
    const std::string h = w->holders[static_cast<size_t>(n)];
    if (h.empty()) continue;
    w->Fence(h, "departed: the group shrank");
    w->a.verdicts.push_back({h, kVerdictResized});
    w->holders[static_cast<size_t>(n)] = "";
    w->a.assign.push_back({n, ""});
    w->a.log.push_back("pod " + PodOfIdentity(h) + " leaves node rank " + std::to_string(n) +
                       ": the group shrinks");
  }
  w->a.log.push_back("resize: " + std::to_string(cur) + " -> " + std::to_string(w->want) +
                     " node(s)");
  w->cur = w->grown = w->want;
  w->a.resize_to = w->want;
  w->a.advance = true;
}

void AssignFree(Work* w) {
  const GroupView& v = w->v;
  for (int n = 0; n < w->cur; ++n) {
    if (!w->holders[static_cast<size_t>(n)].empty() || w->rejoin.waiting.count(n)) continue;
    const std::string* pick = nullptr;
    // I4: an old member back with a new store gets the node rank it held, whatever pod was
    // created for that rank: it holds the state (it may have moved there by rule 10, or be the
    // spare that took it).
    if (auto prev = v.previous.find(n); prev != v.previous.end()) {
      auto it = v.pods.find(PodOfIdentity(prev->second));
      if (it != v.pods.end() && it->second.identity == prev->second && w->Idle(it->second)) {
        pick = &it->first;
      }
    }
    const bool back = pick != nullptr;
    for (const auto& [name, p] : v.pods) {  // the last in name order created for it
      if (!back && w->Idle(p) && p.home_node == n) pick = &name;
    }
    // At start-up a rank waits for its own pod (a spare taking it would shuffle every rank),
    // unless that pod does not come.
    const bool spare_may = HeldBefore(v, n) || v.unformed_seconds > w->s.liveness_seconds;
    for (auto it = v.pods.begin(); spare_may && pick == nullptr && it != v.pods.end(); ++it) {
      const PodView& p = it->second;
      const bool own_rank_free = p.home_node >= 0 && p.home_node < w->cur &&
                                 w->holders[static_cast<size_t>(p.home_node)].empty();
      if (w->Idle(p) && !own_rank_free) pick = &it->first;
    }
    if (pick == nullptr) continue;
    const PodView& p = v.pods.at(*pick);
    w->holders[static_cast<size_t>(n)] = p.identity;
    w->a.assign.push_back({n, p.identity});
    w->a.log.push_back(back ? "pod " + *pick + " takes node rank " + std::to_string(n) +
                                  " back: it held it with the lost store"
                            : (p.home_node == n ? "pod " : "spare ") + *pick +
                                  " takes node rank " + std::to_string(n));
  }
}

void ShrinkOnLoss(Work* w) {
  const GroupView& v = w->v;
  const AuthoritySettings& s = w->s;
  const int cur = w->cur;
  if (s.min_nodes <= 0 || cur <= s.min_nodes || v.abandon) return;
  std::vector<int> holes;  // held before, left free by rule 4, not kept for an old member
  for (int n = 0; n < cur; ++n) {
    if (w->holders[static_cast<size_t>(n)].empty() && HeldBefore(v, n) &&
        !w->rejoin.waiting.count(n)) {
      holes.push_back(n);
    }
  }
  if (holes.empty()) return;
  const int to = cur - std::min(static_cast<int>(holes.size()), cur - s.min_nodes);
  // I4: never past a rank an old member may still register again for (it would come back
  // outside the group). The window is seconds; the shrink waits for its end.
  if (!w->rejoin.waiting.empty() && *w->rejoin.waiting.rbegin() >= to) return;
  size_t next = 0;  // the lowest hole not filled yet
  for (int n = cur - 1; n >= to; --n) {
    const std::string id = w->holders[static_cast<size_t>(n)];
    if (id.empty()) continue;
    // Members past the new size are as many as the holes below it, less those left waiting.
    if (next >= holes.size() || holes[next] >= to) break;
    const int h = holes[next++];
    w->holders[static_cast<size_t>(n)] = "";
    w->holders[static_cast<size_t>(h)] = id;
    w->a.assign.push_back({n, ""});
    w->a.assign.push_back({h, id});
    w->a.moves.push_back({id, h});  // I2: the adapter writes moved/ before node/
    w->a.log.push_back("pod " + PodOfIdentity(id) + " moves from node rank " + std::to_string(n) +
                       " to " + std::to_string(h) + " with its trainers: ranks stay dense");
  }
  w->a.log.push_back("resize: " + std::to_string(cur) + " -> " + std::to_string(to) +
                     " node(s): no idle pod for the lost member's rank; the group goes on " +
                     "without it and grows back when its replacement is ready");
  w->a.shrunk = cur - to;
  w->a.resize_to = to;
  w->a.advance = true;  // I5
  w->cur = w->grown = to;
  w->shrunk = true;
}

void Grow(Work* w) {
  const GroupView& v = w->v;
  const int cur = w->cur, want = w->want;
  w->moved_before =
      w->a.advance || !w->a.fence.empty() || !w->a.verdicts.empty() || !w->a.assign.empty();
  // Once every node rank of the group is held; never in the decision that shrank on a loss.
  bool whole = want > cur && !w->shrunk;
  for (int n = 0; whole && n < cur; ++n) whole = !w->holders[static_cast<size_t>(n)].empty();
  // A preparing pod joins once its trainers are ready, or once it waited past the bound; one
  // that may prepare, once it said whether it does.
  auto ready = [&](const PodView& p) {
    if (p.deciding && p.registered_seconds < kDecideWaitSeconds) return false;
    return w->Idle(p) && (!p.preparing || p.ready || p.registered_seconds >= kPrepareWaitSeconds);
  };
  if (whole) {
    // All the pods the growth needs, or the first of them waited long enough and none of those
    // there is still preparing.
    int there = 0;
    double waited = 0;
    bool preparing = false;
    for (const auto& [name, p] : v.pods) {
      if (!w->Idle(p) || p.home_node < 0) continue;
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
    // The idle pod created for the node rank, else one that prepared for it (rule 10: the rank
    // the pod now holding its home left), else an idle worker pod whose own rank is held (a
    // spare pod stays one).
    const std::string* pick = nullptr;
    for (const auto& [name, p] : v.pods) {
      if (ready(p) && p.home_node == grown) pick = &name;
    }
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
    w->holders[static_cast<size_t>(grown)] = p.identity;
    w->a.assign.push_back({grown, p.identity});
    w->a.log.push_back("pod " + *pick + " takes node rank " + std::to_string(grown) +
                       ": the group grows");
    ++grown;
  }
  w->grown = grown;
  if (grown > cur) {
    w->a.log.push_back("resize: " + std::to_string(cur) + " -> " + std::to_string(grown) +
                       " node(s)");
    w->a.resize_to = grown;
    w->a.advance = true;
  }
}

void Stalls(Work* w) {
  const GroupView& v = w->v;
  const AuthoritySettings& s = w->s;
  std::vector<std::pair<int, const TrainerView*>> silent;
  int live_trainers = 0;
  for (size_t r = 0; r < v.trainers.size(); ++r) {
    const TrainerView& t = v.trainers[r];
    if (t.identity.empty()) continue;
    const std::string pod_id = t.identity.substr(0, t.identity.find('/', t.identity.find('/') + 1));
    if (!w->Live(pod_id)) continue;
    ++live_trainers;
    if (t.stall_reported || t.silent_seconds <= s.liveness_seconds) continue;
    silent.push_back({static_cast<int>(r), &t});
  }
  // Many at once, or a late tick, or soon after either, is a slowdown: nobody is charged.
  const bool late = v.tick_late_seconds > s.liveness_seconds / 2;
  std::set<std::string> silent_pods;
  for (const auto& [r, t] : silent) silent_pods.insert(PodOfIdentity(t->identity));
  const bool together = silent_pods.size() >= 2 &&
                        (silent.size() * 10 >= static_cast<size_t>(live_trainers) || silent.size() >= 4);
  const bool after = v.since_slowdown_seconds < s.liveness_seconds;
  if (!silent.empty() && (late || together || after)) {
    w->a.slowdown = static_cast<int>(silent.size());
    return;
  }
  for (const auto& [r, t] : silent) {
    w->a.stalls.push_back({r, t->identity});
    w->a.advance = true;  // I5
    w->a.log.push_back("rank " + std::to_string(r) + " trainer " + t->identity + " silent for " +
                       Seconds(t->silent_seconds) + ": stalled");
  }
}

void Restarts(Work* w) {
  const GroupView& v = w->v;
  // A store that replaced a lost one, where no generation formed: the group trains on in the old
  // store's generation, which holds every trainer that ran before.
  const bool old_store_generation = !v.previous.empty() && !v.ever_formed;
  for (size_t r = 0; r < v.trainers.size(); ++r) {
    const TrainerView& t = v.trainers[r];
    if (!t.restarted || t.identity.empty()) continue;
    // Here, its predecessor's arrival says the generation holds it (else the predecessor left a
    // generation that ended already). In the old store's, the new one may have arrived here at
    // once: this store's generation is not the one the group trains in.
    if (!old_store_generation && (t.arrived.empty() || t.arrived == t.identity)) continue;
    w->restarted = true;
    w->a.advance = true;  // I5
    const std::string where = old_store_generation ? "the lost store's" : t.arrived;
    w->a.log.push_back("rank " + std::to_string(r) + " trainer " + t.identity +
                       " restarted in place under a generation that holds its predecessor (" +
                       where + ")");
  }
}

void Graceful(Work* w) {
  w->a.graceful = w->grown > w->cur && w->v.formed && !w->moved_before && w->a.stalls.empty() &&
                  !w->restarted;
}

void Abandon(Work* w) {
  const GroupView& v = w->v;
  if (v.abandon || v.formed || v.unformed_seconds <= w->s.rendezvous_seconds) return;
  w->a.abandon = v.ever_formed ? "lost" : "never-formed";
  w->a.log.push_back(std::string("the group did not ") + (v.ever_formed ? "re-form" : "form") +
                     " within " + Seconds(w->s.rendezvous_seconds) + ": abandoning the round");
}

}  // namespace ddp::worker::group::rules
