// Internal to the planner: the transitions of the round model (DESIGN.md lifecycle rules 2-5)
// that every decision step shares: recording a failure, starting a new round, ending the job.
#ifndef DDP_OPERATOR_PLAN_ROUND_H_
#define DDP_OPERATOR_PLAN_ROUND_H_

#include <string>

#include "operator/plan/classify.h"
#include "operator/plan/pass.h"

namespace ddp::plan::internal {

// The job ends (Succeeded or Failed with `reason`): conditions, one Event, cleanPodPolicy and the
// TTL; the last progress rides along. Returns the finished plan.
Plan EndJob(Pass* p, bool succeeded, const std::string& reason, const std::string& message);

// status.lastFailure := `pod`'s end. `rank`: the node rank it held (-1: its index).
void RecordFailure(Pass* p, const ObservedPod& pod, PodOutcome outcome, int rank = -1);
// Whether this pod object's end was counted in an earlier pass of this round (status.countedPods
// or status.lastFailure as the pass found them).
bool CountedThisRound(const Pass& p, const ObservedPod& pod);

// A new round of `size` pods: old-round pods become stale (DeleteStalePods removes them) and
// CreateMissing recreates each name once its old pod is gone.
void StartNewRound(Pass* p, int size, const char* phase, const std::string& reason,
                   const std::string& why, bool warning);

// A restart keeps the size, unless the spec asked for a new one at the same time.
int RestartSize(const Pass& p);

// "round 2 -> 3 (why)".
std::string RoundChange(int from, int to, const std::string& why);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_ROUND_H_
