// Failure vs disruption, and the restart policies.
#include "operator/plan/classify.h"

#include <algorithm>

#include "common/group_contract.h"

namespace ddp::plan {

bool IsDisruptionReason(const std::string& reason) {
  static const char* const kReasons[] = {
      "Evicted",         "Preempted",           "PreemptionByScheduler", "NodeLost",
      "NodeShutdown",    "Shutdown",            "Terminated",            "TerminationByKubelet",
      "DeletionByTaintManager", "DeletionByPodGC", "EvictionByEvictionAPI",
      "UnexpectedAdmissionError", "NodeAffinity", "OutOfcpu", "OutOfmemory"};
  return std::any_of(std::begin(kReasons), std::end(kReasons),
                     [&](const char* r) { return reason == r; });
}

PodOutcome ClassifyPod(const ObservedPod& pod) {
  // Declared lost by its group (a silent node, a frozen process): taken away, like an eviction.
  if (pod.deleting || pod.disruption_condition || pod.fenced) return PodOutcome::kDisruption;
  if (pod.phase == "Succeeded") {
    return pod.exit0_unfinished ? PodOutcome::kFailure : PodOutcome::kSucceeded;
  }
  if (pod.phase != "Failed") return PodOutcome::kActive;
  if (!pod.exit_code || IsDisruptionReason(pod.reason)) return PodOutcome::kDisruption;
  // Its supervisor says the platform took it away (a SIGTERM to this pod only) or the group had
  // declared it lost: not the program's failure.
  const auto end = group::ParseEnd(pod.message);
  if (end == group::EndReason::kDeparted || end == group::EndReason::kFenced) {
    return PodOutcome::kDisruption;
  }
  // A pod can be Failed with the worker at 0 when another container failed: still a failure.
  return PodOutcome::kFailure;
}

failure::Rules FailureRules(const api::FailurePolicy& policy) {
  return failure::Rules{policy.restart_policy, policy.retryable_exit_codes};
}

bool ExitedWithoutFinishing(const ObservedPod& pod, bool expect_finish_message) {
  if (pod.phase != "Succeeded") return false;
  const auto end = group::ParseEnd(pod.message);
  if (!end) return expect_finish_message;  // torchrun and other images say nothing
  // A spare that held no rank; a pod the group shrank without (its index is past the size).
  if (*end == group::EndReason::kReleased || *end == group::EndReason::kResized) return false;
  return !group::ParseFinished(pod.message).has_value();
}

bool IsRetryable(const api::FailurePolicy& policy, int exit_code) {
  // Never 0 here (a failure has a non-zero code); the decision the pods' supervisors make too.
  return failure::Decide(FailureRules(policy), exit_code == 0 ? 1 : exit_code) ==
         failure::Verdict::kRetry;
}

std::string DescribeOutcome(const ObservedPod& pod, PodOutcome outcome) {
  if (outcome == PodOutcome::kFailure && pod.exit0_unfinished) {
    const auto end = group::ParseEnd(pod.message);
    return end ? std::string("exited 0 but its pod said ") + group::EndReasonName(*end) +
                     ", not Finished: training did not reach its last step"
               : "exited 0 without saying it trained to the end (no `ddp: Finished` "
                 "termination message): not a finish";
  }
  if (outcome == PodOutcome::kFailure) {
    const int code = pod.exit_code.value_or(-1);
    std::string s = "exited " + std::to_string(code);
    if (code >= 128) s = "killed by signal " + std::to_string(code - 128) + " (exit " +
                         std::to_string(code) + ")";
    if (!pod.reason.empty() && pod.reason != "Error") s += ", " + pod.reason;
    return s;
  }
  if (outcome == PodOutcome::kDisruption) {
    // Whatever it did after (its supervisor's Fenced, a crash): the group had given up on it.
    const auto end = group::ParseEnd(pod.message);
    if (pod.lost_with_store) {
      return "disrupted: lost with its node (its page went silent with the rendezvous pod's)";
    }
    if (pod.fenced || end == group::EndReason::kFenced) {
      return "disrupted: declared lost by its group";
    }
    // Its supervisor's word for a SIGTERM that reached this pod and not the whole job.
    if (end == group::EndReason::kDeparted) return "disrupted: departed";
    if (!pod.reason.empty()) return "disrupted: " + pod.reason;
    if (pod.deleting) return "disrupted: deleted";
    return "disrupted";
  }
  if (outcome == PodOutcome::kSucceeded) return "succeeded";
  return pod.phase;
}

}  // namespace ddp::plan
