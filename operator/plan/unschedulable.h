// Internal to the planner: a round whose pods the scheduler cannot place says so on the job,
// with the scheduler's own reason, instead of leaving the user to find the Pending pod.
#ifndef DDP_OPERATOR_PLAN_UNSCHEDULABLE_H_
#define DDP_OPERATOR_PLAN_UNSCHEDULABLE_H_

#include "operator/plan/pass.h"

namespace ddp::plan::internal {

// The condition type (status.conditions[].type): True while a pod of the current round cannot
// be scheduled; False (reason Scheduled) once every pod is placed.
inline constexpr char kCondUnschedulable[] = "Unschedulable";
inline constexpr char kReasonUnschedulable[] = "Unschedulable";
inline constexpr char kReasonScheduled[] = "Scheduled";

// While a pod of the current round (worker, spare or rendezvous; not being deleted) is Pending
// with PodScheduled=False reason Unschedulable: condition Unschedulable=True, reason
// Unschedulable, message "pod <name> cannot be scheduled: <the scheduler's message>" (the first
// by name, "and N more" when several), and a Warning Event with that message each time the
// message changes. Once none is: the condition turns False (reason Scheduled) with a Normal
// Event. Nothing while the round waits for its gang (the Queued condition explains that wait).
void RecordUnschedulable(Pass* p);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_UNSCHEDULABLE_H_
