// Rule 2 of DESIGN.md: is a pod's end a failure (the program exited non-zero) or a disruption
// (the platform took it away), and does a failure restart the group under the job's policy.
#ifndef DDP_OPERATOR_PLAN_CLASSIFY_H_
#define DDP_OPERATOR_PLAN_CLASSIFY_H_

#include <string>

#include "common/failure_policy.h"
#include "operator/api/types.h"
#include "operator/plan/plan.h"

namespace ddp::plan {

enum class PodOutcome {
  kActive,      // Pending, Running or Unknown: nothing to decide yet
  kSucceeded,   // the worker exited 0
  kFailure,     // the worker container exited non-zero
  kDisruption,  // evicted, preempted, node lost, deleted by someone else, departed or fenced
                // (recovery InPlace: the group fenced it, or its supervisor says so)
};

// REQUIRES: `pod` belongs to the current round (the planner never deletes current-round pods,
// so a deletionTimestamp there was set by someone else).
PodOutcome ClassifyPod(const ObservedPod& pod);

// Succeeded (exit 0) but not a finish (DESIGN.md "Worker exit codes"): its termination message
// is one of ddp-worker's but not `ddp: Finished: step N of N` (nor `Released`, an idle spare's
// end), or it has none while `expect_finish_message` (the job runs ddp-worker, which always
// says so). Such a pod is a failure, never a success: a pod told to stop that exits 0 must not
// end a job as Succeeded.
bool ExitedWithoutFinishing(const ObservedPod& pod, bool expect_finish_message);

// Pod status reasons the platform uses when it takes a pod away.
bool IsDisruptionReason(const std::string& reason);

// spec.failurePolicy as the shared decision's rules (common/failure_policy.h), which the pods'
// supervisors apply to their trainers too.
failure::Rules FailureRules(const api::FailurePolicy& policy);

// Whether a failure with `exit_code` restarts under `policy` (ignores maxRestarts):
// failure::Decide. Never: no. ExitCode: codes in retryableExitCodes and signals (>= 128).
// OnFailure: yes.
bool IsRetryable(const api::FailurePolicy& policy, int exit_code);

// "exited 75", "killed by signal 9 (exit 137)", "disrupted: Evicted", "disrupted: deleted",
// "disrupted: departed", "disrupted: declared lost by its group".
std::string DescribeOutcome(const ObservedPod& pod, PodOutcome outcome);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_CLASSIFY_H_
