// A silent rendezvous pod; see silent_rendezvous.h.
#include "operator/plan/silent_rendezvous.h"

#include <algorithm>

#include "common/group_contract.h"
#include "operator/plan/lost_nodes.h"
#include "operator/plan/suspect_nodes.h"

namespace ddp::plan::internal {
namespace {

std::chrono::seconds Liveness(const api::DDPJob& job) {
  return std::chrono::seconds(std::max<int64_t>(1, job.spec.failure_policy.liveness_timeout_seconds));
}

// Rule 1's reads: `rdzv`'s page answered once and has failed since.
bool SilentPage(const std::optional<RendezvousReads>& reads, const ObservedPod& rdzv) {
  return reads && !reads->pod_uid.empty() && reads->pod_uid == rdzv.uid && reads->failing &&
         reads->last_ok != TimePoint{};
}

// Rule 2's: `rdzv`'s page answers (its last read did): the pod is alive, whatever its node.
bool AnsweringPage(const std::optional<RendezvousReads>& reads, const ObservedPod& rdzv) {
  return reads && !reads->pod_uid.empty() && reads->pod_uid == rdzv.uid && !reads->failing &&
         reads->last_ok != TimePoint{};
}

std::string Seconds(TimePoint::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + "s";
}

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

void ReplaceSilentRendezvous(Pass* p, const PlanOptions& options) {
  if (!InPlace(*p)) return;
  const auto& reads = p->seen->rendezvous_reads;
  for (const ObservedPod& pod : p->seen->pods) {
    if (pod.role != group::kRoleRendezvous || !IsCurrent(*p, pod)) continue;
    if (pod.deleting && pod.deletion_grace_seconds == 0) continue;  // force-deleted already
    // 2. Its node is lost, for the margin, and its page does not answer.
    std::optional<TimePoint> flap_ends;
    if (NodeLostPastMargin(pod, options.node_lost_margin, p->now, &flap_ends)) {
      if (!AnsweringPage(reads, pod)) {
        ForceDelete(p, pod,
                    "is on lost node " + pod.node_name +
                        (pod.node_lost_since ? " (for " + Seconds(p->now - *pod.node_lost_since) + ")"
                                             : "") +
                        (SilentPage(reads, pod) ? " and its page does not answer"
                                                : " and its page was never read"));
        continue;
      }
    } else if (flap_ends) {
      Requeue(p, *flap_ends);  // a lost node that may be flapping: look again then
    }
    // 1. Its page went silent.
    if (pod.deleting || !SilentPage(reads, pod)) continue;
    const auto liveness = Liveness(p->job);
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

bool LostWithStore(const api::DDPJob& job, const Observed& seen, const ObservedPod& pod,
                   TimePoint now, const PlanOptions& options) {
  if (job.spec.failure_policy.recovery != api::Recovery::kInPlace) return false;
  if (pod.role == group::kRoleRendezvous || pod.round != job.status.round || pod.deleting ||
      pod.phase != "Running") {
    return false;
  }
  // Kubernetes' word: the node is lost, and not just for a moment.
  if (!NodeLostPastMargin(pod, options.node_lost_margin, now)) return false;
  // The operator's: the pod itself said nothing to repeated probes.
  const auto& reads = seen.rendezvous_reads;
  if (!reads) return false;
  auto probes = reads->node_mates.find(pod.uid);
  if (probes == reads->node_mates.end() || probes->second.sent < kMinUnansweredProbes ||
      probes->second.answered) {
    return false;
  }
  // And rule 2 replaces its node's rendezvous pod now: the current round's, not deleting, on the
  // same (lost) node, its page silent.
  return std::any_of(seen.pods.begin(), seen.pods.end(), [&](const ObservedPod& rdzv) {
    return rdzv.role == group::kRoleRendezvous && rdzv.round == job.status.round &&
           !rdzv.deleting && rdzv.node_name == pod.node_name && SilentPage(reads, rdzv);
  });
}

}  // namespace ddp::plan::internal
