// recovery InPlace's steps of a reconcile pass (see inplace.h).
#include "operator/plan/inplace.h"

#include <algorithm>
#include <optional>

#include "common/group_contract.h"
#include "operator/plan/names.h"
#include "operator/plan/replace.h"
#include "operator/plan/round.h"

namespace ddp::plan::internal {
namespace {

using ddp::group::EndReason;
using ddp::group::ParseEnd;

bool Ended(const ObservedPod& pod) {
  return pod.deleting || pod.fenced || pod.phase == "Failed" || pod.disruption_condition;
}

// What the group said of this very pod object when its process ended: the node rank it held
// then (-1: none). Nullopt when the report has no such entry.
std::optional<int> EndedHolding(const metrics::GroupScrape& g, const ObservedPod& pod) {
  for (const auto& e : g.ended) {
    if (e.pod == pod.name && !pod.uid.empty() && e.uid == pod.uid) return e.node_rank;
  }
  return std::nullopt;
}

// Idle: a spare pod holding no rank, or any pod the group lists as an idle spare (a worker pod
// whose rank a spare took registers as one); a pod whose process ended, by what it held then
// (the report after its end lists it nowhere). Without a report: the spare pods.
bool IsIdleSpare(const Pass& p, const ObservedPod& pod) {
  const metrics::GroupScrape* g = CurrentGroup(p);
  if (g == nullptr) return pod.role == group::kRoleSpare;
  if (auto held = EndedHolding(*g, pod)) return *held < 0;
  const auto& spares = g->spares;
  if (std::find(spares.begin(), spares.end(), pod.name) != spares.end()) return true;
  return pod.role == group::kRoleSpare && !g->members.count(pod.name);
}

}  // namespace

const metrics::GroupScrape* CurrentGroup(const Pass& p) {
  const auto& g = p.seen->group;
  return InPlace(p) && g && g->round == p.round && g->report.present ? &g->report : nullptr;
}

int GroupRank(const Pass& p, const ObservedPod& pod) {
  if (const metrics::GroupScrape* g = CurrentGroup(p)) {
    if (auto held = EndedHolding(*g, pod); held && *held >= 0) return *held;
    auto it = g->members.find(pod.name);
    if (it != g->members.end()) return it->second;
  }
  return pod.index;
}

bool IsMember(const Pass& p, const ObservedPod& pod) {
  return IsCurrent(p, pod) && pod.role != group::kRoleRendezvous && !IsIdleSpare(p, pod);
}

bool HeldARank(const Pass& p, const ObservedPod& pod) {
  const metrics::GroupScrape* g = CurrentGroup(p);
  if (g == nullptr) return IsMember(p, pod);
  if (auto held = EndedHolding(*g, pod)) return *held >= 0;
  return IsCurrent(p, pod) && g->members.count(pod.name) > 0;
}

std::vector<const ObservedPod*> MemberPods(const Pass& p) {
  std::vector<const ObservedPod*> out;
  for (const ObservedPod* pod : CurrentPods(p)) {
    if (pod != nullptr && !IsIdleSpare(p, *pod)) out.push_back(pod);
  }
  for (const ObservedPod* pod : CurrentSpares(p)) {
    if (pod != nullptr && !IsIdleSpare(p, *pod)) out.push_back(pod);
  }
  return out;
}

bool NoSurvivor(const Pass& p) {
  if (!InPlace(p)) return false;
  for (const ObservedPod* pod : MemberPods(p)) {
    if (pod->phase == "Running" && !pod->fenced && !pod->disruption_condition &&
        !ReplacedInThisPass(p, pod->name)) {
      return false;
    }
  }
  return true;
}

std::vector<const ObservedPod*> TakenWithoutSurvivor(const Pass& p) {
  std::vector<const ObservedPod*> out;
  if (!NoSurvivor(p)) return out;
  for (const ObservedPod& pod : p.seen->pods) {
    if (!pod.deleting || !IsMember(p, pod) || ReplacedInThisPass(p, pod.name)) continue;
    if (CountedThisRound(p, pod)) continue;  // counted when it went
    out.push_back(&pod);
  }
  return out;
}

std::optional<Plan> DecideGroup(Pass* p) {
  if (!InPlace(*p)) return std::nullopt;
  const api::FailurePolicy& policy = p->job.spec.failure_policy;
  std::vector<const ObservedPod*> pods = CurrentPods(*p);
  for (const ObservedPod* s : CurrentSpares(*p)) pods.push_back(s);
  // 1-2. What the supervisors said when their pods ended.
  for (const ObservedPod* pod : pods) {
    if (pod == nullptr || pod->phase != "Failed") continue;
    const auto end = ParseEnd(pod->message);
    if (end == EndReason::kBudgetSpent) {
      RecordFailure(p, *pod, PodOutcome::kFailure, GroupRank(*p, *pod));
      p->st.recoveries = std::max(p->st.recoveries, policy.max_restarts - p->st.restarts);
      return EndJob(p, false, "MaxRestartsExceeded",
                    "pod " + pod->name + ": " + pod->message.substr(5) + " (" +
                        std::to_string(p->st.restarts) + " restarts and " +
                        std::to_string(p->st.recoveries) +
                        " recoveries reached spec.failurePolicy.maxRestarts)");
    }
    if (end == EndReason::kStopped) {
      // Suspend, a deadline and a deleted job never get here (plan.cc returns before): nobody
      // asked this job to stop, so the stop is not its end.
      RecordFailure(p, *pod, PodOutcome::kDisruption, GroupRank(*p, *pod));
      p->st.disruptions += 1;
      StartNewRound(p, RestartSize(*p), api::kPhaseRestarting, "GroupStopped",
                    "the group stopped together with a checkpoint (pod " + pod->name +
                        ": every member got SIGTERM at once) but the job was not stopped: the "
                        "new round resumes from that checkpoint (disruption " +
                        std::to_string(p->st.disruptions) + ", not limited)",
                    true);
      return std::nullopt;
    }
    if (end != EndReason::kGroupAbandoned) continue;
    const bool never_formed = pod->message.find("never formed") != std::string::npos;
    RecordFailure(p, *pod, PodOutcome::kFailure, GroupRank(*p, *pod));
    if (!never_formed) {
      StartNewRound(p, RestartSize(*p), api::kPhaseRestarting, "GroupAbandoned",
                    "the group could not re-form in place (pod " + pod->name +
                        "); the failure that caused it was counted already",
                    true);
      return std::nullopt;
    }
    if (p->st.restarts + p->st.recoveries >= policy.max_restarts) {
      return EndJob(p, false, "MaxRestartsExceeded",
                    "the group never formed within spec.rendezvous.timeoutSeconds; " +
                        std::to_string(p->st.restarts) + " restarts and " +
                        std::to_string(p->st.recoveries) +
                        " recoveries reached spec.failurePolicy.maxRestarts");
    }
    p->st.restarts += 1;
    StartNewRound(p, RestartSize(*p), api::kPhaseRestarting, "PodFailed",
                  "the group never formed within spec.rendezvous.timeoutSeconds; restart " +
                      std::to_string(p->st.restarts + p->st.recoveries) + " of " +
                      std::to_string(policy.max_restarts),
                  true);
    return std::nullopt;
  }
  // 3. The rendezvous pod. Once it is going there is nothing left to decide: this planner
  // deleted it in an earlier pass (and said so then) or someone else did; either way its name
  // comes back once it is gone, and that create is announced.
  for (const auto& pod : p->seen->pods) {
    if (pod.role != group::kRoleRendezvous || !IsCurrent(*p, pod) || !Ended(pod)) continue;
    if (pod.deleting) continue;
    const int code = pod.exit_code.value_or(-1);
    if (code == 2 || code == 126 || code == 127) {
      return EndJob(p, false, "RendezvousFailed",
                    "rendezvous pod " + pod.name + " exited " + std::to_string(code) +
                        ": recovery InPlace runs `ddp-worker rendezvous` from the worker "
                        "container's image; use a ddp-worker image, or recovery Restart");
    }
    p->plan.deletes.push_back({"Pod", pod.name, pod.uid});
    AddEvent(p, "Warning", "RendezvousReplaced",
             "round " + std::to_string(p->round) + ": replacing rendezvous pod " + pod.name +
                 " (" + DescribeOutcome(pod, ClassifyPod(pod)) +
                 "); training goes on, the group re-registers with the new one");
  }
  // 4. Idle spares.
  for (const ObservedPod* pod : pods) {
    if (pod == nullptr || !Ended(*pod) || !IsIdleSpare(*p, *pod)) continue;
    if (ReplacedInThisPass(*p, pod->name)) continue;
    p->replaced.push_back(pod->name);
    if (!pod->deleting) p->plan.deletes.push_back({"Pod", pod->name, pod->uid});
    AddEvent(p, "Normal", "SpareReplaced",
             "round " + std::to_string(p->round) + ": replacing idle spare " + pod->name + " (" +
                 DescribeOutcome(*pod, ClassifyPod(*pod)) + "; not counted: it held no rank)");
  }
  return std::nullopt;
}

// The highest count finished pods of this round read from the group's store as they left; -1
// when none did.
int64_t FinishedCount(const Pass& p) {
  int64_t most = -1;
  std::vector<const ObservedPod*> pods = CurrentPods(p);
  for (const ObservedPod* s : CurrentSpares(p)) pods.push_back(s);
  for (const ObservedPod* pod : pods) {
    if (pod == nullptr || pod->phase != "Succeeded") continue;
    if (auto n = group::ParseFinished(pod->message); n && n->recoveries) {
      most = std::max(most, *n->recoveries);
    }
  }
  return most;
}

std::optional<Plan> MirrorGroup(Pass* p) {
  if (!InPlace(*p)) return std::nullopt;
  const metrics::GroupScrape* g = CurrentGroup(*p);
  // A page from another rendezvous pod than the one counted (it was replaced: its store counts
  // from 0) starts a new baseline at 0, so a heal in the new store is never taken for one
  // counted in the old, however soon after the replacement it happens.
  const std::string& source = p->seen->group ? p->seen->group->pod_uid : "";
  int64_t counted = p->st.progress ? p->st.progress->recoveries : 0;
  if (g != nullptr && !source.empty() && source != p->st.rendezvous_uid) {
    if (!p->st.rendezvous_uid.empty()) {
      counted = 0;
      if (p->st.progress) p->st.progress->recoveries = 0;
    }
    p->st.rendezvous_uid = source;
  }
  const int64_t finished = FinishedCount(*p);
  // A finished pod's count only ever adds what no scrape saw (it never sets a new baseline).
  if (g == nullptr && finished <= counted) return std::nullopt;
  const int64_t reported =
      std::max(g ? static_cast<int64_t>(g->recoveries) : int64_t{0}, finished);
  if (reported == counted) return std::nullopt;
  if (!p->st.progress) p->st.progress = api::Progress{};
  p->st.progress->recoveries = reported;
  // A new rendezvous pod (its store counts from 0) is a new baseline, never a negative count.
  if (reported < counted) return std::nullopt;
  p->st.recoveries += static_cast<int>(reported - counted);
  const api::FailurePolicy& policy = p->job.spec.failure_policy;
  if (p->st.restarts + p->st.recoveries <= policy.max_restarts) return std::nullopt;
  p->st.recoveries = policy.max_restarts - p->st.restarts;
  return EndJob(p, false, "MaxRestartsExceeded",
                "failures healed in place inside the pods and pods replaced reached "
                "spec.failurePolicy.maxRestarts (" + std::to_string(policy.max_restarts) + ")");
}

}  // namespace ddp::plan::internal
