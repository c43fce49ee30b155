// The group authority's decision: its rules, in the order authority.h lists them (each one in
// authority_rules.cc).
#include "worker/group/authority.h"

#include "worker/group/authority_rules.h"

namespace ddp::worker::group {

bool Actions::empty() const {
  return fence.empty() && verdicts.empty() && assign.empty() && stalls.empty() && !advance &&
         !stop && abandon.empty() && !finished && resize_to < 0;
}

bool IsLive(const GroupView& view, const AuthoritySettings& settings, const std::string& identity) {
  return rules::Work(view, settings).Live(identity);
}

Actions Decide(const GroupView& v, const AuthoritySettings& s) {
  if (v.finished) return {};
  rules::Work w(v, s);
  if (rules::Finished(&w)) return w.a;  // nothing else matters any more
  rules::LostPods(&w);
  rules::RejoinLost(&w);
  rules::DeadHolders(&w);
  if (v.stop) return w.a;  // stopping together: no departures, no new members
  if (rules::StopTogether(&w)) return w.a;
  rules::Departures(&w);
  rules::ShrinkAsked(&w);
  rules::AssignFree(&w);
  rules::ShrinkOnLoss(&w);
  rules::Grow(&w);
  rules::Stalls(&w);
  rules::Restarts(&w);
  rules::Graceful(&w);
  rules::Abandon(&w);
  return w.a;
}

}  // namespace ddp::worker::group
