// Enum names and equality for the DDPJob value types.
#include "operator/api/types.h"

namespace ddp::api {

const char* RestartPolicyName(RestartPolicy p) { return failure::PolicyName(p); }

bool ParseRestartPolicy(const std::string& name, RestartPolicy* out) {
  return failure::ParsePolicy(name, out);
}

const char* CleanPodPolicyName(CleanPodPolicy p) {
  switch (p) {
    case CleanPodPolicy::kNone: return "None";
    case CleanPodPolicy::kRunning: return "Running";
    case CleanPodPolicy::kAll: return "All";
  }
  return "?";
}

bool ParseCleanPodPolicy(const std::string& name, CleanPodPolicy* out) {
  for (CleanPodPolicy p : {CleanPodPolicy::kNone, CleanPodPolicy::kRunning, CleanPodPolicy::kAll}) {
    if (name == CleanPodPolicyName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

bool Condition::operator==(const Condition& o) const {
  return type == o.type && status == o.status && reason == o.reason && message == o.message &&
         last_transition_time == o.last_transition_time &&
         observed_generation == o.observed_generation;
}

bool SchedulingPolicy::operator==(const SchedulingPolicy& o) const {
  return min_available == o.min_available && queue == o.queue &&
         priority_class == o.priority_class && min_resources == o.min_resources &&
         schedule_timeout_seconds == o.schedule_timeout_seconds;
}

bool LastFailure::operator==(const LastFailure& o) const {
  return pod == o.pod && rank == o.rank && exit_code == o.exit_code && reason == o.reason &&
         message == o.message && time == o.time && pod_uid == o.pod_uid &&
         recovery_seconds == o.recovery_seconds;
}

bool Incident::operator==(const Incident& o) const {
  return kind == o.kind && pod == o.pod && pod_uid == o.pod_uid && node == o.node &&
         rank == o.rank && round == o.round && incarnation == o.incarnation &&
         local_rank == o.local_rank && time == o.time &&
         step == o.step && detection_seconds == o.detection_seconds &&
         stall_seconds == o.stall_seconds && steps_lost == o.steps_lost &&
         outcome == o.outcome && source == o.source && message == o.message;
}

const char* RecoveryName(Recovery r) {
  switch (r) {
    case Recovery::kRestart: return "Restart";
    case Recovery::kInPlace: return "InPlace";
  }
  return "?";
}

const char* BatchPolicyName(BatchPolicy p) {
  return p == BatchPolicy::kConstantPerRank ? "ConstantPerRank" : "ConstantGlobal";
}

bool ParseBatchPolicy(const std::string& name, BatchPolicy* out) {
  for (BatchPolicy p : {BatchPolicy::kConstantGlobal, BatchPolicy::kConstantPerRank}) {
    if (name == BatchPolicyName(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

bool ParseRecovery(const std::string& name, Recovery* out) {
  for (Recovery r : {Recovery::kRestart, Recovery::kInPlace}) {
    if (name == RecoveryName(r)) {
      *out = r;
      return true;
    }
  }
  return false;
}

bool Progress::SameValues(const Progress& o) const {
  return step == o.step && total_steps == o.total_steps && loss == o.loss &&
         tokens_per_second == o.tokens_per_second && eta_seconds == o.eta_seconds &&
         recoveries == o.recoveries;
}

const Condition* DDPJobStatus::FindCondition(const std::string& type) const {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool DDPJobStatus::operator==(const DDPJobStatus& o) const {
  return phase == o.phase && conditions == o.conditions &&
         observed_generation == o.observed_generation && replicas == o.replicas &&
         ready_replicas == o.ready_replicas && world_size == o.world_size && round == o.round &&
         restarts == o.restarts && disruptions == o.disruptions &&
         recoveries == o.recoveries && spares == o.spares && ready_spares == o.ready_spares &&
         silent_pods_held == o.silent_pods_held &&
         last_failure == o.last_failure && counted_pods == o.counted_pods &&
         rendezvous_uid == o.rendezvous_uid &&
         progress == o.progress && suspect_nodes == o.suspect_nodes &&
         incidents == o.incidents && incidents_total == o.incidents_total &&
         goodput == o.goodput && selector == o.selector && start_time == o.start_time &&
         completion_time == o.completion_time;
}

}  // namespace ddp::api
