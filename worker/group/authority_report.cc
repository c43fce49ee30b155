// The group authority's report phase (see authority_loop.h): the decisions' log lines and what
// the rendezvous pod's /metrics says. The loop's thread only.
#include <algorithm>
#include <cstdlib>

#include "common/logging.h"
#include "worker/group/authority_loop.h"
#include "worker/group/budget.h"
#include "worker/group/keys.h"

namespace ddp::worker::group {

void AuthorityLoop::Say(const Actions& a, const GroupView& v, Clock::time_point now) {
  for (const std::string& line : a.log) DDP_LOG(INFO) << "group authority: " << line;
  if (a.unheard > 0 && !unheard_) {
    DDP_LOG(WARNING) << "group authority: " << a.unheard
                     << " pod(s) silent while this authority hears from fewer than half of them"
                        " (or its tick came late): none declared lost until it hears again";
  }
  unheard_ = a.unheard > 0;
  if (a.slowdown > 0 && !slowdown_) {
    DDP_LOG(WARNING) << "group authority: " << a.slowdown
                     << " trainer(s) silent together past the liveness timeout"
                     << (v.tick_late_seconds > settings_.liveness_seconds / 2
                             ? " (and this authority's own tick came late)"
                             : "")
                     << ": a group-wide slowdown, none declared stalled";
  }
  slowdown_ = a.slowdown > 0;
  if (slowdown_) last_slowdown_ = now;
  if (a.silence_lost > 0) last_silence_lost_ = now;
  silence_lost_at_.insert(silence_lost_at_.end(), static_cast<size_t>(a.silence_lost), now);
  const int held = a.mass_silent - a.silence_lost;
  if (a.mass_silent > 0 && !mass_silent_) {
    DDP_LOG(WARNING) << "group authority: " << a.mass_silent
                     << " pod(s) silent together past the liveness timeout: a mass silence (the "
                        "host, the network or the store, likelier than that many losses); one "
                        "declared lost per liveness timeout, the longest silent first, "
                     << held << " waiting for the silence to clear";
  }
  mass_silent_ = a.mass_silent > 0;
}

void AuthorityLoop::Summarize(const Actions& a, const GroupView& v, GroupReport* r) {
  c10d::Store& s = *store_;
  // The report (the budget's counters every few ticks: they change only at failures).
  r->generation = a.advance ? generation_ + 1 : generation_;
  r->world_size = world_;
  r->resizes = resizes_;
  r->shrunk_nodes = shrunk_;
  if (ticks_++ % 4 == 0) {
    if (auto b = ReadBudget(s); b.ok()) budget_ = *b;
  }
  r->recoveries = budget_.recoveries;
  r->budget_left = budget_.left;
  for (int n = 0; n < settings_.nodes; ++n) {
    const std::string& h = v.node_holders[static_cast<size_t>(n)];
    if (!h.empty()) r->members[n] = PodOfIdentity(h);
  }
  for (const auto& [name, p] : v.pods) {
    bool holds = false;
    for (const auto& h : v.node_holders) holds = holds || h == p.identity;
    if (!holds && IsLive(v, settings_, p.identity) && !p.leaving && !fenced_.count(p.identity)) {
      r->spares.push_back(name);
    }
  }
  for (const std::string& id : fenced_) {
    const size_t slash = id.find('/');
    if (auto m = pod_memory_.find(id); m != pod_memory_.end() && m->second.exited) {
      r->ended.push_back({id.substr(0, slash), slash == std::string::npos ? "" : id.substr(slash + 1),
                         m->second.held});
    }
    // A departed pod leaves by itself (SIGTERM reached it), and a pod whose process ended reports
    // its own exit (a crash is a failure, not a disruption): nothing for the operator to force.
    if (auto m = pod_memory_.find(id);
        m != pod_memory_.end() && (m->second.verdict == kVerdictDepart ||
                                   m->second.verdict == kVerdictResized || m->second.exited)) {
      continue;
    }
    r->fenced.push_back({id.substr(0, slash), slash == std::string::npos ? "" : id.substr(slash + 1)});
  }
  for (int rank = 0; rank < world_; ++rank) {
    const std::string& id = trainers_[static_cast<size_t>(rank)].identity;
    const size_t last = id.rfind('/');
    if (id.empty() || last == std::string::npos) continue;
    r->trainers[rank] = {PodOfIdentity(id), std::atoi(id.c_str() + last + 1)};
  }
  r->silent_held = std::max(a.unheard, a.mass_silent - a.silence_lost);
  r->abandoned = abandoned_;
  r->finished = finished_;
  r->stopping = r->stopping || stopped_;
}

}  // namespace ddp::worker::group
