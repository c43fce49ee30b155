// PlanReconcile: the operator's whole policy as one pure function. Given a DDPJob, what exists
// (pods, service) and the time, it returns the writes that move the world toward the job: creates,
// deletes, the new status, events and when to look again. No I/O; same inputs, same Plan.
// The controller (cluster) and the local executor both apply Plans.
#ifndef DDP_OPERATOR_PLAN_PLAN_H_
#define DDP_OPERATOR_PLAN_PLAN_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/worker_progress.h"
#include "operator/api/types.h"
#include "operator/plan/gang.h"
#include "operator/plan/network_policy.h"

namespace ddp::plan {

using TimePoint = std::chrono::system_clock::time_point;

// The planner's view of one pod (see observe.h for how a Pod object maps to it).
struct ObservedPod {
  std::string name;
  std::string role = "worker";  // kRoleLabel: worker, spare or rendezvous (recovery InPlace)
  int index = -1;  // kReplicaIndexLabel (a spare's kSpareIndexLabel); -1 when missing or malformed
  int round = -1;  // kRoundLabel; -1 when missing or malformed
  std::string phase;  // Pending | Running | Succeeded | Failed | Unknown
  bool deleting = false;  // metadata.deletionTimestamp is set
  std::optional<int> exit_code;  // worker container's terminated exit code (signals: 128+n)
  std::optional<TimePoint> finished_at;  // worker container's terminated.finishedAt
  std::string reason;   // pod.status.reason (Evicted, Preempted, ...) else the container's
  std::string message;
  bool ready = false;
  bool disruption_condition = false;  // condition DisruptionTarget=True
  std::optional<TimePoint> unschedulable_since;
  std::string unschedulable_message;  // the scheduler's, from that condition
  TimePoint created{};
  std::string uid;
  std::string owner_uid;  // uid of the controller ownerReference; "" when none
  std::string pod_ip;  // status.podIP; where the operator scrapes rank 0's /metrics
  // The rendezvous pod's ddp.dev/group-size annotation (elastic in place); -1 when absent.
  int group_size = -1;
  // metadata.deletionTimestamp: when the grace period ends (the kubelet then confirms, or the
  // pod stays Terminating if its node is lost); deletionGracePeriodSeconds: that grace.
  std::optional<TimePoint> deletion_timestamp;
  std::optional<int64_t> deletion_grace_seconds;
  std::string node_name;  // spec.nodeName; "" while unscheduled
  // Filled by whoever watches nodes (the controller; never in local mode): the pod's node is
  // NotReady or Unknown, tainted unreachable/not-ready/out-of-service, or gone (lost_nodes.h).
  bool node_lost = false;
  // With node_lost: since when, by the watcher's own clock (when it first saw the node lost, as
  // the node lifecycle controller times a node by its own observations, never by the node's
  // clock). Absent: not timed (the Node object is gone), counts as lost long ago.
  std::optional<TimePoint> node_lost_since;
  // The job's group declared this pod lost and fenced it (the rendezvous pod's report): it can
  // never rejoin its old generation, so it is replaced at once. Filled by PlanReconcile from
  // Observed::group, for this pod object (its uid), not a successor under its name; and set with
  // lost_with_store.
  bool fenced = false;
  // Its page went silent with its node's rendezvous pod's (silent_rendezvous.h rule 3): lost with
  // its node, replaced with the store, treated as fenced. Filled by PlanReconcile.
  bool lost_with_store = false;
  // It exited 0 without saying it trained to the end (no `ddp: Finished` termination message, in
  // a job whose pods say so: InPlace, or one whose ddp-worker progress was read), or said it
  // stopped: never a success (ClassifyPod: a failure). Filled by PlanReconcile.
  bool exit0_unfinished = false;
  std::vector<std::string> scheduling_gates;  // spec.schedulingGates[].name (Kueue's, ...)
};

// What the operator keeps of a Node object (lost_nodes.h ObserveNode reads one).
struct NodeHealth {
  bool lost = false;
  std::string why;  // when lost: "Ready=Unknown (NodeStatusUnknown)", "tainted ...unreachable"
  // Ready=True: its kubelet's last word (suspect_nodes.h: a node proves itself alive with it).
  std::optional<TimePoint> ready_heartbeat;
  // A heartbeat alone is no change worth a wake-up (the cache keeps the newest all the same).
  bool operator==(const NodeHealth& o) const { return lost == o.lost && why == o.why; }
};

// How the operator's reads of the rendezvous pod's page went (recovery InPlace).
struct RendezvousReads {
  std::string pod_uid;  // the pod whose page was read
  TimePoint last_ok{};  // the last page read from it
  bool failing = false;  // a read since last_ok got no answer (refused pages are answers)
  // While it fails, the reader also probes the job's pods on its node (the controller: same
  // spec.nodeName; local mode: every pod, one machine): by pod uid, since the page went silent.
  struct Probes {
    int sent = 0;
    bool answered = false;
    bool operator==(const Probes& o) const { return sent == o.sent && answered == o.answered; }
  };
  std::map<std::string, Probes> node_mates;
};

// The group of an InPlace job as its rendezvous pod last reported it, tagged with the round.
struct ObservedGroup {
  int round = -1;
  metrics::GroupScrape report;
  std::string pod_uid;  // the rendezvous pod that served it ("" when not known)
};

// The job's PodGroup (gang.h) as the API server has it.
struct ObservedPodGroup {
  std::string name;
  std::string api_version;
  std::string uid;
  std::string owner_uid;  // uid of the controller ownerReference; "" when none
  nlohmann::json spec = nlohmann::json::object();
  std::string phase;  // status.phase, as the scheduler writes it; "" until it does
};

// The job's NetworkPolicy (network_policy.h) as the API server has it.
struct ObservedNetworkPolicy {
  std::string name;
  std::string owner_uid;  // uid of the controller ownerReference; "" when none
  nlohmann::json spec = nlohmann::json::object();
};

// Rank 0's progress as last read from its /metrics (the operator's scraper, or the local
// runner), tagged with the round of the pod it was read from: only the current round's counts.
struct ObservedProgress {
  int round = -1;
  metrics::ProgressSnapshot snapshot;
};

struct Observed {
  std::vector<ObservedPod> pods;  // every pod with the job's label, any round, any owner
  bool service_exists = false;
  std::optional<ObservedProgress> progress;  // absent: no page with a step yet (or no metrics)
  std::optional<ObservedGroup> group;        // absent: no rendezvous page read (or not InPlace)
  std::optional<ObservedPodGroup> pod_group;  // the PodGroup named PodGroupName(job), if any
  // The API server does not serve the configured gang scheduler's PodGroup kind (its CRD is
  // not installed): the job waits, with a Warning, instead of creating pods no one schedules.
  bool pod_group_api_missing = false;
  // The job's NetworkPolicy (named NetworkPolicyName(job)) exists (network_policy.h).
  bool network_policy_exists = false;
  // With network_policy_exists: that object, when the observer reads it (the controller). Absent
  // (local mode, render): its spec is not known and never updated.
  std::optional<ObservedNetworkPolicy> network_policy;
  // The nodes named in status.suspectNodes that the operator knows (suspect_nodes.h); a node
  // absent here is not known yet (no node watch: local mode, or not synced).
  std::map<std::string, NodeHealth> nodes;
  // Reads of the current rendezvous pod's page; absent: none tracked (silent_rendezvous.h).
  std::optional<RendezvousReads> rendezvous_reads;
};

struct Delete {
  // "Pod" | "Service" | "DDPJob" | "PodGroup" (of the operator's gang scheduler, GangConfig) |
  // "NetworkPolicy"
  std::string kind;
  std::string name;
  std::string uid;   // a precondition for the delete; may be empty
  // DeleteOptions.gracePeriodSeconds; unset: the pod's own. 0 on a pod is a force delete: the
  // object goes at once, without waiting for its kubelet (lost_nodes.h says when).
  std::optional<int64_t> grace_period_seconds = std::nullopt;
  bool operator==(const Delete& o) const {
    return kind == o.kind && name == o.name && uid == o.uid &&
           grace_period_seconds == o.grace_period_seconds;
  }
};

// An RFC 7386 merge patch of an object the job owns (today: its PodGroup's spec).
struct Patch {
  std::string api_version;
  std::string kind;
  std::string name;
  nlohmann::json merge_patch;
  bool operator==(const Patch& o) const {
    return api_version == o.api_version && kind == o.kind && name == o.name &&
           merge_patch == o.merge_patch;
  }
};

struct Event {
  std::string type;  // "Normal" | "Warning"
  std::string reason;
  std::string message;
  bool operator==(const Event& o) const {
    return type == o.type && reason == o.reason && message == o.message;
  }
};

// Operator settings the planner decides with (flags of `ddp-operator run`; local mode keeps the
// defaults). See lost_nodes.h for what the margins guard against.
struct PlanOptions {
  // A pod Terminating on a lost node that cannot rejoin its group (a pod of an older round, any
  // recovery) is force-deleted once its grace period has ended this long ago.
  std::chrono::seconds lost_pod_margin{30};
  // The same for a current-round pod under recovery InPlace that its group has not fenced: the
  // operator cannot tell whether its process still trains, so it waits much longer.
  std::chrono::seconds unfenced_lost_pod_margin{300};
  // A suspect node (suspect_nodes.h) still called Ready this long after the loss proved itself
  // alive: past the node lifecycle controller's grace (40 s by default) it renewed its lease.
  std::chrono::seconds suspect_node_proof{60};
  // A node called lost for less than this may be flapping (a kubelet restart, a PLEG or
  // container runtime hiccup, a short partition: NotReady for seconds): only a loss this old
  // replaces a pod by itself (silent_rendezvous.h, suspect_nodes.h). Deletions of pods on a lost
  // node have their own margins, above.
  std::chrono::seconds node_lost_margin{10};
  // The operator's gang scheduler (--gang-scheduler-name; gang.h).
  GangConfig gang;
  // Network isolation of jobs (--network-policy, --metrics-namespace; network_policy.h).
  NetworkPolicyConfig network_policy;
};

struct Plan {
  std::vector<nlohmann::json> creates;  // full objects (PodGroup, Service, Pods), in order
  std::vector<Delete> deletes;
  std::vector<Patch> patches;  // applied before the creates: a round's pods meet its PodGroup
  std::optional<api::DDPJobStatus> status;  // set only when it differs from job.status
  std::vector<Event> events;                // emit after the status write succeeds
  std::optional<std::chrono::milliseconds> requeue_after;  // earliest timer, if any
  bool delete_job = false;  // ttlSecondsAfterFinished elapsed

  bool operator==(const Plan& o) const;
  // Multi-line, for test failures and debug logs.
  std::string ToString() const;
  // No writes, no events, no requeue.
  bool empty() const;
};

// The reconcile pass. Follows DESIGN.md's lifecycle rules 1-7; see plan.cc for the steps.
// Ownership: only pods whose controller ownerReference is job.uid are counted, adopted or
// deleted (a job deleted and created again under its name must not inherit the old job's pods,
// nor a pod someone labelled by hand). A foreign pod holding a name the round needs is waited
// for, never deleted. A job without a uid (never stored: render) owns every pod it sees.
// The round, restarts, disruptions and recoveries persist only in job.status; pod round labels are the
// ground truth for which pods belong to which round (pods of a newer round than status.round are
// adopted, with a RoundAdopted event). Resize is a spec.replicas that differs from
// status.replicas in a new generation (generation != status.observedGeneration), so a round
// shrunk on pending timeout is not regrown until the spec changes again.
// Applying a Plan: deletes and creates are idempotent (AlreadyExists/NotFound are success);
// write the status once; emit the events after it; requeue after `requeue_after`. Writing the
// status before the deletes is the more robust order: if that write fails, nothing was deleted
// and the next pass makes the same decision again.
// Times written into the status are truncated to whole seconds. Thread-safe (pure).
// Gang scheduling (gang.h, docs/gang-scheduling.md) follows `gang`: the job's PodGroup is
// created before its pods and patched when a round changes its size; pods carry the gang keys;
// a round waiting for its gang (a Kueue admission gate, a PodGroup not placed yet, a PodGroup
// kind not served) is Pending with condition Queued=True, and neither activeDeadlineSeconds nor
// the elastic pending timeout runs while it waits. The default config has no gang scheduler.
// REQUIRES: nothing; an invalid spec yields a Failed status (reason InvalidSpec) and an event.
// `options`: the operator's settings (PlanOptions: lost-pod margins, gang scheduler).
Plan PlanReconcile(const api::DDPJob& job, const Observed& seen, TimePoint now,
                   const PlanOptions& options = {});

// For a stored DDPJob whose spec does not parse (objects stored before a CRD change): the job
// fails with reason InvalidSpec and one Warning event carrying `parse_error` (which names the
// field), as a validation failure does; once Failed, only cleanPodPolicy applies.
// `identity` is the object parsed without its spec (metadata and status).
Plan PlanUnparsableJob(const api::DDPJob& identity, const Observed& seen,
                       const std::string& parse_error, TimePoint now,
                       const GangConfig& gang = {});

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_PLAN_H_
