// What the operator creates for a job it sees for the first time, for `ddp-operator render`:
// the planner's own first pass (PlanReconcile), not a second copy of its rules. Pure.
#ifndef DDP_OPERATOR_PLAN_RENDER_H_
#define DDP_OPERATOR_PLAN_RENDER_H_

#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/types.h"
#include "operator/plan/plan.h"

namespace ddp::plan {

// PlanReconcile of `job` with no status but `round` (a job starting in that round) and nothing
// observed, at `now`, with the operator's settings `options`: its creates, in the order the
// operator makes them: the PodGroup (with a gang scheduler), the NetworkPolicy (when the job
// gets one), the headless Service, then the rendezvous pod (recovery InPlace), the worker pods
// and the spare pods (InPlace; under a PodGroup scheduler the operator creates them once the
// round's other pods are bound, a second pass that render makes as if they were). Left out is what comes later: status writes, Events,
// replacements, the pods of later rounds, patches of the rendezvous pod's group size.
// The job's own status (a manifest from `kubectl get`) and deletionTimestamp are ignored; a
// suspended job renders as it starts once resumed. REQUIRES: job valid (api::Validate);
// round >= 0.
std::vector<nlohmann::json> RenderNewJob(const api::DDPJob& job, int round,
                                         const PlanOptions& options, TimePoint now);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_RENDER_H_
