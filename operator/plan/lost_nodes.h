// Silent nodes and fenced members: pods that would hold their names forever. A pod on a node that
// went silent is deleted (by the taint manager, or by the planner for a new round) but nobody
// confirms its termination, so it stays Terminating and its name can never be recreated; a pod
// whose members the job's group declared lost is dead weight. The planner force-deletes both
// (DeleteOptions gracePeriodSeconds 0 with the pod's UID as a precondition). Pure; it decides
// nothing about counting: a Terminating pod was counted when it began to go, and a fenced pod is
// a disruption (classify.h).
#ifndef DDP_OPERATOR_PLAN_LOST_NODES_H_
#define DDP_OPERATOR_PLAN_LOST_NODES_H_

#include <string>

#include <nlohmann/json.hpp>

#include "operator/plan/pass.h"
#include "operator/plan/plan.h"

namespace ddp::plan {

// Taints on nodes whose kubelet cannot be relied on to finish a pod's termination. The node
// lifecycle controller sets the first two (Ready Unknown / False); an administrator sets the
// third on a node known to be shut down (Kubernetes' non-graceful node shutdown).
inline constexpr char kTaintUnreachable[] = "node.kubernetes.io/unreachable";
inline constexpr char kTaintNotReady[] = "node.kubernetes.io/not-ready";
inline constexpr char kTaintOutOfService[] = "node.kubernetes.io/out-of-service";

// Reads a Node (NodeHealth: plan.h). Lost: its Ready condition is False or Unknown, or it carries
// one of the taints above (any effect). A node without a Ready condition yet (just registered) is
// not lost. ready_heartbeat: the later of the Ready=True condition's lastHeartbeatTime and
// lastTransitionTime. Never throws: a malformed object reads as not lost.
NodeHealth ObserveNode(const nlohmann::json& node);

// Whether `pod`'s node has been lost for at least `margin` (ObservedPod::node_lost_since; a
// loss not timed counts as old). When it is lost but not for that long yet, *due (if not null)
// is set to when it will have been.
bool NodeLostPastMargin(const ObservedPod& pod, std::chrono::seconds margin, TimePoint now,
                        std::optional<TimePoint>* due = nullptr);

// The decision for one pod of the job.
struct LostPodDecision {
  enum Verdict { kKeep, kWait, kForceDelete };
  Verdict verdict = kKeep;
  TimePoint due{};  // kWait: when the verdict becomes kForceDelete
  // kForceDelete: "Terminating on lost node n3 for 330s", "declared lost and fenced by its group"
  std::string why;
};

// 1. fenced (the group declared the pod's members lost, or it went silent with its node's
//    rendezvous pod: silent_rendezvous.h), exited or not: force-delete now;
// 2. being deleted on a lost node: force-delete once `margin` has passed since the end of its
//    grace period (deletionTimestamp), where margin is options.unfenced_lost_pod_margin when
//    `may_rejoin` (its process, were it still alive, could rejoin the group it was in) and
//    options.lost_pod_margin otherwise; before that kWait;
// 3. anything else: kKeep (a live kubelet finishes the deletion itself).
// `may_rejoin`: recovery InPlace and the pod is a worker or spare pod of the current round (same
// store prefix); a pod of another round is fenced by the round itself, and a rendezvous pod
// holds no member.
LostPodDecision DecideLostPod(const ObservedPod& pod, bool may_rejoin, const PlanOptions& options,
                              TimePoint now);

namespace internal {

// The reason of the event recorded for each force delete.
inline constexpr char kReasonForceDeleted[] = "ForceDeletingPod";

// Applies DecideLostPod to every pod of the job: a force delete for each kForceDelete (a delete
// of the same pod already in the plan becomes forced), one Warning event and log line each
// ("round 2: pod x-worker-1 Terminating on lost node n3 for 330s: force-deleted"), and a requeue
// at the earliest kWait. Call after the pass's other deletes are planned.
void ForceDeleteLostPods(Pass* p, const PlanOptions& options);

}  // namespace internal
}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_LOST_NODES_H_
