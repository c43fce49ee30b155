// Internal to the planner: recovery InPlace, a failed or lost pod (a worker, or a spare that held
// a rank) replaced alone in the same round while the other pods keep running. The round model
// (plan.cc) handles the rest: non-retryable failures and the budget.
#ifndef DDP_OPERATOR_PLAN_REPLACE_H_
#define DDP_OPERATOR_PLAN_REPLACE_H_

#include <string>

#include "operator/plan/classify.h"
#include "operator/plan/pass.h"

namespace ddp::plan::internal {

// The reason of the Event and of the Restarting condition while a pod is being replaced. The
// phase is Restarting until every pod of the round runs again (then Running, as after a round).
inline constexpr char kReasonPodReplaced[] = "PodReplaced";

// Whether a failure of `pod` is healed by replacing it alone: recovery InPlace (any worker or
// spare: the rendezvous pod outlives them all), and the job is not queued by Kueue (a Kueue pod
// group is one round).
bool CanReplaceAlone(const Pass& p, const ObservedPod& pod);

// Whether `pod` is a failure already counted, so it must not be counted again: it was replaced
// earlier in this pass, its uid is status.lastFailure.podUID, or it is being deleted while a
// replacement that began in an earlier pass is under way. A pod that someone else starts
// deleting during a replacement is therefore replaced without being counted: a deleting pod
// carries no mark of who deleted it, and counting a failure twice would be worse.
bool AlreadyReplacing(const Pass& p, const ObservedPod& pod);
bool ReplacedInThisPass(const Pass& p, const std::string& name);

// Re-issues the delete of a counted pod that is not going yet (the delete was lost or the
// cache is behind). Call once per pass, before the decisions.
void KeepReplacing(Pass* p);

// Replaces `pod` alone. REQUIRES: CanReplaceAlone; the caller recorded the failure and counted
// it (recoveries or disruptions). Appends pod.name to p->replaced; deletes the pod unless it
// is already going (CreateMissing recreates the name in the same round once it is gone); sets
// phase Restarting with condition Restarting=True/PodReplaced; records one Event with `why` and
// `budget`: "round 2: replacing pod mingpt-worker-1 (rank 1 exited 137; recovery 1 of 3)".
void ReplacePod(Pass* p, const ObservedPod& pod, const std::string& why,
                const std::string& budget);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_REPLACE_H_
