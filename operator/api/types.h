// The DDPJob resource as C++ values: spec and status exactly as in DESIGN.md, plus the metadata
// the operator needs. Pure data; parsing, defaulting and validation live in serialize.h and
// validate.h. The whole object as received is kept in DDPJob::raw so fields this code does not
// know (in metadata, spec, the pod template) survive a parse/serialize round trip.
#ifndef DDP_OPERATOR_API_TYPES_H_
#define DDP_OPERATOR_API_TYPES_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/failure_policy.h"

namespace ddp::api {

using TimePoint = std::chrono::system_clock::time_point;

inline constexpr char kGroup[] = "ddp.dev";
inline constexpr char kVersion[] = "v1alpha1";
inline constexpr char kApiVersion[] = "ddp.dev/v1alpha1";
inline constexpr char kKind[] = "DDPJob";
inline constexpr char kPlural[] = "ddpjobs";

// The shared failure decision's (common/failure_policy.h): the pods' supervisors apply it too.
using RestartPolicy = failure::RestartPolicy;
enum class CleanPodPolicy { kNone, kRunning, kAll };
// spec.failurePolicy.recovery: a new round per failure, or replace a failed pod alone.
enum class Recovery { kRestart, kInPlace };
// spec.elastic.batchPolicy: a global batch fixed at every size (gradient accumulation), or each
// rank's batch fixed (the global batch follows the size). -> DDP_BATCH_POLICY.
enum class BatchPolicy { kConstantGlobal, kConstantPerRank };

// "OnFailure" etc.; Parse* return false on an unknown name (case-sensitive, as Kubernetes is).
const char* RestartPolicyName(RestartPolicy p);
bool ParseRestartPolicy(const std::string& name, RestartPolicy* out);
const char* CleanPodPolicyName(CleanPodPolicy p);
bool ParseCleanPodPolicy(const std::string& name, CleanPodPolicy* out);
const char* RecoveryName(Recovery r);
bool ParseRecovery(const std::string& name, Recovery* out);
const char* BatchPolicyName(BatchPolicy p);
bool ParseBatchPolicy(const std::string& name, BatchPolicy* out);

struct ElasticPolicy {
  int min_replicas = 0;  // 0 = unset; ApplyDefaults makes it 1
  int max_replicas = 0;  // 0 = unset; ApplyDefaults makes it max(spec.replicas, min_replicas)
  int pending_timeout_seconds = 120;
  BatchPolicy batch_policy = BatchPolicy::kConstantGlobal;
  // ConstantGlobal: samples per optimizer step, all ranks together (-> DDP_GLOBAL_BATCH_SIZE).
  // Unset: maxReplicas x nprocPerNode ranks' batches (-> DDP_GLOBAL_BATCH_RANKS).
  std::optional<int64_t> global_batch_size;
};

struct RendezvousSpec {
  int port = 29500;
  int timeout_seconds = 600;
};

struct FailurePolicy {
  RestartPolicy restart_policy = RestartPolicy::kOnFailure;
  int max_restarts = 3;
  std::vector<int> retryable_exit_codes = {75};
  Recovery recovery = Recovery::kRestart;
  // No step progress this long while Running -> a failure with reason Hung. Unset: never.
  std::optional<int64_t> hang_timeout_seconds;
  // InPlace only: hot spare pods kept running beside the job's, not in the world.
  int spares = 0;
  // InPlace only: a member silent this long is declared lost (-> DDP_LIVENESS_TIMEOUT).
  int64_t liveness_timeout_seconds = 10;
};

// spec.runPolicy.schedulingPolicy: how the job's PodGroup is written when the operator runs with
// a gang scheduler (Volcano or the coscheduling plugin). Which fields a scheduler reads is in
// docs/gang-scheduling.md; the scheduler itself is the operator's setting, not the job's.
struct SchedulingPolicy {
  std::optional<int> min_available;  // unset: the round's gang pod count (plan::GangPodCount)
  std::string queue;                 // Volcano queue; "" = the scheduler's default
  std::string priority_class;        // Volcano PodGroup priorityClassName; "" = none
  // Resource name -> quantity ("cpu" -> "32", "nvidia.com/gpu" -> "8"), as a ResourceList.
  std::map<std::string, std::string> min_resources;
  std::optional<int> schedule_timeout_seconds;  // coscheduling; unset: the plugin's default
  bool operator==(const SchedulingPolicy& o) const;
};

struct RunPolicy {
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int64_t> ttl_seconds_after_finished;
  bool suspend = false;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kRunning;
  std::optional<SchedulingPolicy> scheduling_policy;
  // A NetworkPolicy isolating the job's pods (plan/network_policy.h); unset: the operator's
  // default (--network-policy, on unless the chart turns it off).
  std::optional<bool> network_policy;
};

struct CheckpointSpec {
  std::optional<std::string> path;  // -> DDP_CHECKPOINT_DIR when set
};

struct MetricsSpec {
  int port = 9400;  // -> DDP_METRICS_PORT (always set)
};

struct DDPJobSpec {
  int replicas = 1;
  int nproc_per_node = 1;
  std::optional<ElasticPolicy> elastic;
  RendezvousSpec rendezvous;
  FailurePolicy failure_policy;
  RunPolicy run_policy;
  CheckpointSpec checkpoint;
  MetricsSpec metrics;
  // A PodTemplateSpec ({metadata, spec}) exactly as the user wrote it.
  nlohmann::json pod_template = nlohmann::json::object();
};

// Phases (status.phase).
inline constexpr char kPhasePending[] = "Pending";
inline constexpr char kPhaseRunning[] = "Running";
inline constexpr char kPhaseRestarting[] = "Restarting";
inline constexpr char kPhaseScaling[] = "Scaling";
inline constexpr char kPhaseSucceeded[] = "Succeeded";
inline constexpr char kPhaseFailed[] = "Failed";
inline constexpr char kPhaseSuspended[] = "Suspended";

// Condition types (status.conditions[].type). At most one condition per type.
inline constexpr char kCondCreated[] = "Created";
inline constexpr char kCondRunning[] = "Running";
inline constexpr char kCondRestarting[] = "Restarting";
inline constexpr char kCondSucceeded[] = "Succeeded";
inline constexpr char kCondFailed[] = "Failed";
inline constexpr char kCondSuspended[] = "Suspended";
// True while the round waits for its gang to be admitted (a Kueue admission gate, a PodGroup the
// scheduler has not placed yet, or a PodGroup kind the API server does not serve).
inline constexpr char kCondQueued[] = "Queued";
// Elastic in place: True while the group runs below the round's size (reason PendingTimeout:
// pods unschedulable; Growing: pods joining at its next generation).
inline constexpr char kCondBelowSize[] = "BelowSize";

// metav1.Condition. Times have whole-second precision (RFC 3339 on the wire).
struct Condition {
  std::string type;
  std::string status;  // "True" | "False" | "Unknown"
  std::string reason;  // CamelCase, e.g. "PodFailed"
  std::string message;
  TimePoint last_transition_time{};
  int64_t observed_generation = 0;
  bool operator==(const Condition& o) const;
  bool operator!=(const Condition& o) const { return !(*this == o); }
};

// The most recent pod failure or disruption (status.lastFailure).
struct LastFailure {
  std::string pod;
  int rank = 0;                  // the pod's replica index (node rank)
  std::optional<int> exit_code;  // absent for disruptions without an exit code
  std::string reason;
  std::string message;
  std::optional<TimePoint> time;
  std::string pod_uid;  // the failed pod's uid: InPlace counts each failed pod once
  // From `time` to every pod of the next round running; set once that round runs.
  std::optional<double> recovery_seconds;
  bool operator==(const LastFailure& o) const;
  bool operator!=(const LastFailure& o) const { return !(*this == o); }
};

// A node a pod of the job was lost on (status.suspectNodes): its group declared the pod lost, or
// the node went NotReady/unreachable under it. Pods of the job are kept off it until the node
// proves itself alive again (operator/plan/suspect_nodes.h).
struct SuspectNode {
  std::string name;
  TimePoint since{};  // when the operator saw the loss
  bool operator==(const SuspectNode& o) const { return name == o.name && since == o.since; }
};
// At most this many are remembered (the oldest go first): a bound on what a pod spec carries.
inline constexpr size_t kMaxSuspectNodes = 16;

// Rank 0's training progress as the operator last wrote it (status.progress), read from the
// worker's /metrics. Absent for jobs whose pods export no ddp-worker metrics.
struct Progress {
  int64_t step = 0;
  std::optional<int64_t> total_steps;
  std::optional<double> loss;
  std::optional<double> tokens_per_second;
  std::optional<int64_t> eta_seconds;
  std::optional<TimePoint> updated_at;
  // Trainer restarts healed in place inside the pods this round, as last read from rank 0's
  // page; already added to status.recoveries (this is how much of it came from this round).
  int64_t recoveries = 0;
  // Equal in every field but updated_at: what "nothing changed" means for a status write.
  bool SameValues(const Progress& o) const;
  bool operator==(const Progress& o) const { return SameValues(o) && updated_at == o.updated_at; }
  bool operator!=(const Progress& o) const { return !(*this == o); }
};

// One failure, loss or resize and what it cost (status.incidents; operator/plan/incidents.h
// decides them, docs/metrics.md "Incidents and goodput" defines every figure).
// Kinds (Incident::kind).
inline constexpr char kIncidentTrainerExit[] = "TrainerExit";  // a trainer process exited
inline constexpr char kIncidentPodLost[] = "PodLost";          // a pod deleted, killed or gone
inline constexpr char kIncidentNodeLost[] = "NodeLost";        // its node NotReady/unreachable
inline constexpr char kIncidentDrain[] = "Drain";              // evicted or drained (SIGTERM)
inline constexpr char kIncidentHang[] = "Hang";  // silent (declared lost) or no step progress
inline constexpr char kIncidentResize[] = "Resize";            // the group's size changed
// Outcomes (Incident::outcome; "" while the job is still recovering).
inline constexpr char kOutcomeHealedInPlace[] = "HealedInPlace";
inline constexpr char kOutcomeSpareTookRank[] = "SpareTookRank";
inline constexpr char kOutcomeShrank[] = "Shrank";
inline constexpr char kOutcomeGrew[] = "Grew";
inline constexpr char kOutcomeNewRound[] = "NewRound";
inline constexpr char kOutcomeFailed[] = "Failed";
// Who measured stallSeconds (Incident::source).
inline constexpr char kSourceWorkers[] = "workers";    // both ends are the trainers' own times
inline constexpr char kSourceOperator[] = "operator";  // an end is the operator's estimate

struct Incident {
  std::string kind;     // kIncident*
  std::string pod;      // the pod it hit; "" for a resize
  std::string pod_uid;  // that pod object's (an incident per pod object)
  std::string node;     // the pod's node; "" when unknown (local mode, unscheduled)
  int rank = -1;        // the node rank the pod held; -1: none (rendezvous pod, resize)
  int round = 0;        // the round it happened in
  int incarnation = 0;  // a trainer restarted in place: its new incarnation (else 0)
  int local_rank = -1;  // that trainer's local rank in its pod (global: rank * nproc + it); else -1
  TimePoint time{};     // when it happened, as best known (whole seconds on the wire)
  int64_t step = 0;     // the job's step then (status.progress.step)
  std::optional<double> detection_seconds;  // from the failure to the group noticing it
  std::optional<double> stall_seconds;      // from the last step before to the first after
  std::optional<int64_t> steps_lost;        // committed steps trained again
  std::string outcome;  // kOutcome*; "" until decided
  std::string source;   // kSource*, once stall_seconds is set
  std::string message;  // what happened, at most kMaxIncidentMessage bytes
  // Closed: nothing of it changes any more (outcome and stall known, or the job ended).
  bool Closed() const { return !outcome.empty() && stall_seconds.has_value(); }
  bool operator==(const Incident& o) const;
  bool operator!=(const Incident& o) const { return !(*this == o); }
};
// status.incidents keeps the newest this many (the oldest go first); totals stay in
// status.incidentsTotal and the goodput's stalledSeconds.
inline constexpr size_t kMaxIncidents = 20;
inline constexpr size_t kMaxIncidentMessage = 256;

// What the goodput needs beyond the incidents kept (status.goodput): every second training
// stood still since status.startTime (the start, every incident, not only the last 20), and
// the trainers' own time of the last resumption already counted (unix seconds), so a stall
// they report is counted once.
struct Goodput {
  double stalled_seconds = 0;
  double resumed_at = 0;  // 0: training has not started yet
  // The last stall the trainers recorded that no incident claimed yet (a trainer exit healed in
  // a pod whose count the group reports a few ticks after the heal): the incident opened for it
  // next takes it. unclaimed_end 0: none.
  double unclaimed_end = 0, unclaimed_stall = 0;
  std::optional<double> unclaimed_detection;
  bool operator==(const Goodput& o) const {
    return stalled_seconds == o.stalled_seconds && resumed_at == o.resumed_at &&
           unclaimed_end == o.unclaimed_end && unclaimed_stall == o.unclaimed_stall &&
           unclaimed_detection == o.unclaimed_detection;
  }
};

// Enough for every pod of a round ending twice over within one grace period.
inline constexpr size_t kMaxCountedPods = 64;

struct DDPJobStatus {
  std::string phase;  // empty until the first reconcile; then one of kPhase*
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;
  int replicas = 0;
  int ready_replicas = 0;
  int world_size = 0;
  int round = 0;
  int restarts = 0;
  int disruptions = 0;
  int recoveries = 0;  // failures healed in place (recovery InPlace)
  int spares = 0;        // spare pods of the current round that exist (recovery InPlace)
  int ready_spares = 0;  // of them, idle and ready to take a rank
  // recovery InPlace: pods silent past the liveness timeout that the group has not declared lost
  // (a mass silence it waits out), as the rendezvous pod's page last said.
  int silent_pods_held = 0;
  std::optional<LastFailure> last_failure;
  // recovery InPlace: the uids of the pods whose end was counted (a failure, a disruption) in
  // the current round, oldest first, at most kMaxCountedPods: a pod still Terminating passes
  // later is never counted twice, whatever was counted after it. Emptied by a new round.
  std::vector<std::string> counted_pods;
  // recovery InPlace: the uid of the rendezvous pod whose store's count progress.recoveries is;
  // a page from another one (a replaced rendezvous pod, a new store) counts from 0.
  std::string rendezvous_uid;
  std::optional<Progress> progress;
  std::vector<SuspectNode> suspect_nodes;  // oldest first
  std::vector<Incident> incidents;         // oldest first, at most kMaxIncidents
  int64_t incidents_total = 0;             // every incident of the job, dropped ones included
  Goodput goodput;
  std::string selector;
  std::optional<TimePoint> start_time;
  std::optional<TimePoint> completion_time;

  // Returns the condition of `type`, or nullptr.
  const Condition* FindCondition(const std::string& type) const;
  bool operator==(const DDPJobStatus& o) const;
  bool operator!=(const DDPJobStatus& o) const { return !(*this == o); }
};

struct DDPJob {
  std::string name;
  std::string namespace_name;  // metadata.namespace ("namespace" is a C++ keyword)
  std::string uid;
  int64_t generation = 0;
  std::string resource_version;
  std::map<std::string, std::string> labels;
  std::optional<TimePoint> deletion_timestamp;
  DDPJobSpec spec;
  DDPJobStatus status;
  // The whole object as received (or {} when built in code). ToJson overlays spec and status on it.
  nlohmann::json raw = nlohmann::json::object();

  // "namespace/name", the key for logs, events and the work queue.
  std::string Key() const { return namespace_name + "/" + name; }
};

}  // namespace ddp::api

#endif  // DDP_OPERATOR_API_TYPES_H_
