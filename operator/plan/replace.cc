// recovery InPlace: one pod replaced in the same round; see replace.h.
#include "operator/plan/replace.h"

#include <algorithm>

#include "common/group_contract.h"
#include "operator/plan/conditions.h"
#include "operator/plan/round.h"

namespace ddp::plan::internal {
namespace {

// As the pass found it: a replacement decided earlier in this pass does not count.
bool ReplacementUnderWay(const Pass& p) {
  const api::DDPJobStatus& st = p.job.status;
  const api::Condition* c = st.FindCondition(api::kCondRestarting);
  return st.phase == api::kPhaseRestarting && c && c->status == "True" &&
         c->reason == kReasonPodReplaced;
}

}  // namespace

bool CanReplaceAlone(const Pass& p, const ObservedPod& pod) {
  // Under Kueue a round is one pod group that never gets replacement pods: Kueue keeps a failed
  // member (its finalizer) until the group has a replacement, and a name is recreated only once
  // its old pod is gone. A new round (a new group) is the replacement (docs/kueue.md).
  return InPlace(p) && pod.index >= 0 && pod.role != group::kRoleRendezvous &&
         KueueQueue(p.job, p.gang).empty();
}

bool ReplacedInThisPass(const Pass& p, const std::string& name) {
  return std::find(p.replaced.begin(), p.replaced.end(), name) != p.replaced.end();
}

bool AlreadyReplacing(const Pass& p, const ObservedPod& pod) {
  if (!CanReplaceAlone(p, pod)) return false;
  if (ReplacedInThisPass(p, pod.name)) return true;
  // A failure counted in an earlier pass of this round, the last one or any before it.
  if (CountedThisRound(p, pod)) return true;
  return pod.deleting && ReplacementUnderWay(p);
}

void KeepReplacing(Pass* p) {
  std::vector<const ObservedPod*> pods = CurrentPods(*p);
  for (const ObservedPod* s : CurrentSpares(*p)) pods.push_back(s);
  for (const ObservedPod* pod : pods) {
    if (pod && AlreadyReplacing(*p, *pod)) p->plan.deletes.push_back({"Pod", pod->name, pod->uid});
  }
}

void ReplacePod(Pass* p, const ObservedPod& pod, const std::string& why,
                const std::string& budget) {
  p->replaced.push_back(pod.name);
  if (!pod.deleting && !pod.uid.empty()) p->plan.deletes.push_back({"Pod", pod.name, pod.uid});
  const std::string msg = "round " + std::to_string(p->round) + ": replacing pod " + pod.name +
                          " (" + why + "; " + budget + ")";
  p->st.phase = api::kPhaseRestarting;
  SetCondition(&p->st, api::kCondRestarting, "True", kReasonPodReplaced, msg, p->now,
               p->job.generation);
  ClearCondition(&p->st, api::kCondRunning, kReasonPodReplaced, msg, p->now, p->job.generation);
  AddEvent(p, "Warning", kReasonPodReplaced, msg);
}

}  // namespace ddp::plan::internal
