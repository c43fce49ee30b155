// Failure vs disruption, and the restart policies.
#include "operator/plan/classify.h"

#include <algorithm>

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
  if (pod.deleting || pod.disruption_condition) return PodOutcome::kDisruption;
  if (pod.phase == "Succeeded") return PodOutcome::kSucceeded;
  // Declared lost by its group (a silent node, a frozen process): taken away, like an eviction.
  // An exit code, when the pod has one, still tells what the program did.
  if (pod.phase != "Failed") return pod.fenced ? PodOutcome::kDisruption : PodOutcome::kActive;
  if (!pod.exit_code || IsDisruptionReason(pod.reason)) return PodOutcome::kDisruption;
  // A pod can be Failed with the worker at 0 when another container failed: still a failure.
  return PodOutcome::kFailure;
}

bool IsRetryable(const api::FailurePolicy& policy, int exit_code) {
  switch (policy.restart_policy) {
    case api::RestartPolicy::kNever:
      return false;
    case api::RestartPolicy::kOnFailure:
      return true;
    case api::RestartPolicy::kExitCode: {
      if (exit_code >= 128) return true;  // killed by a signal: the program did not choose it
      const auto& codes = policy.retryable_exit_codes;
      return std::find(codes.begin(), codes.end(), exit_code) != codes.end();
    }
  }
  return false;
}

std::string DescribeOutcome(const ObservedPod& pod, PodOutcome outcome) {
  if (outcome == PodOutcome::kFailure) {
    const int code = pod.exit_code.value_or(-1);
    std::string s = "exited " + std::to_string(code);
    if (code >= 128) s = "killed by signal " + std::to_string(code - 128) + " (exit " +
                         std::to_string(code) + ")";
    if (!pod.reason.empty() && pod.reason != "Error") s += ", " + pod.reason;
    return s;
  }
  if (outcome == PodOutcome::kDisruption) {
    if (pod.fenced && pod.phase != "Failed") return "disrupted: declared lost by its group";
    if (!pod.reason.empty()) return "disrupted: " + pod.reason;
    if (pod.deleting) return "disrupted: deleted";
    return "disrupted";
  }
  if (outcome == PodOutcome::kSucceeded) return "succeeded";
  return pod.phase;
}

}  // namespace ddp::plan
