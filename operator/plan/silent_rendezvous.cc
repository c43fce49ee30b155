// A silent rendezvous pod; see silent_rendezvous.h.
#include "operator/plan/silent_rendezvous.h"

#include <algorithm>

#include "common/group_contract.h"
#include "operator/plan/suspect_nodes.h"

namespace ddp::plan::internal {
namespace {

void ForceDelete(Pass* p, const ObservedPod& pod, const std::string& why) {
  auto planned = std::find_if(p->plan.deletes.begin(), p->plan.deletes.end(), [&](const Delete& d) {
    return d.kind == "Pod" && d.name == pod.name && d.uid == pod.uid;
  });
  if (planned != p->plan.deletes.end()) {
    planned->grace_period_seconds = 0;
  } else {
    p->plan.deletes.push_back({"Pod", pod.name, pod.uid, 0});
  }
  AddEvent(p, "Warning", kReasonRendezvousSilent,
           "round " + std::to_string(p->round) + ": rendezvous pod " + pod.name + " " + why +
               ": force-deleted and created again; training goes on, the pods register with "
               "the new one and it declares lost the members that do not");
  MarkSuspect(p, pod.node_name, "rendezvous pod " + pod.name + " " + why);
}

}  // namespace

void ReplaceSilentRendezvous(Pass* p) {
  if (!InPlace(*p)) return;
  for (const ObservedPod& pod : p->seen->pods) {
    if (pod.role != group::kRoleRendezvous || !IsCurrent(*p, pod)) continue;
    if (pod.deleting && pod.deletion_grace_seconds == 0) continue;  // force-deleted already
    // 2. Its node is lost.
    if (pod.node_lost) {
      ForceDelete(p, pod, "is on lost node " + pod.node_name);
      continue;
    }
    // 1. Its page went silent.
    const auto& reads = p->seen->rendezvous_reads;
    if (pod.deleting || !reads || reads->pod_uid.empty() || reads->pod_uid != pod.uid ||
        !reads->failing || reads->last_ok == TimePoint{}) {
      continue;
    }
    const auto liveness =
        std::chrono::seconds(std::max<int64_t>(1, p->job.spec.failure_policy.liveness_timeout_seconds));
    const TimePoint due = reads->last_ok + liveness;
    if (p->now < due) {
      Requeue(p, due);
      continue;
    }
    ForceDelete(p, pod,
                "has not answered for " +
                    std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                       p->now - reads->last_ok).count()) +
                    "s (livenessTimeoutSeconds " + std::to_string(liveness.count()) + ")");
  }
}

}  // namespace ddp::plan::internal
