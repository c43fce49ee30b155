// Gang scheduling and queueing, pure: which pods of a job form its gang, the PodGroup object a
// gang scheduler (Volcano, the coscheduling plugin) reads, and the keys each pod carries for it
// and for Kueue. The planner (gang_pass.h) decides when to write them.
#ifndef DDP_OPERATOR_PLAN_GANG_H_
#define DDP_OPERATOR_PLAN_GANG_H_

#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/types.h"

namespace ddp::plan {

enum class GangScheduler { kNone, kVolcano, kCoscheduling };

// The operator's gang setting (a flag and a chart value, not a job field: the schedulers a
// cluster runs are its admins' choice, and so are the PodGroup permissions the chart grants).
struct GangConfig {
  GangScheduler scheduler = GangScheduler::kNone;
  // The pods' spec.schedulerName: "volcano", or the name of the scheduler profile that runs the
  // coscheduling plugin.
  std::string scheduler_name;
  // Honour the job's kueue.x-k8s.io/queue-name label. Local mode has no Kueue.
  bool kueue = true;
  // Why nothing is gang-scheduled when scheduler is kNone, for the job's Warning event.
  std::string none_reason = "the operator runs without --gang-scheduler-name";
};

// Kubeflow's --gang-scheduler-name convention: "" is none, "volcano" is Volcano, any other name
// is the coscheduling plugin in the scheduler profile of that name. False (and *out unchanged)
// for a name that is not a DNS-1123 subdomain.
bool ParseGangSchedulerName(const std::string& name, GangConfig* out);

inline constexpr char kPodGroupKind[] = "PodGroup";
inline constexpr char kVolcanoPodGroupApiVersion[] = "scheduling.volcano.sh/v1beta1";
inline constexpr char kCoschedulingPodGroupApiVersion[] = "scheduling.x-k8s.io/v1alpha1";
// The PodGroup apiVersion of `s`; "" for kNone.
const char* PodGroupApiVersion(GangScheduler s);
// "Volcano", "the coscheduling plugin": for messages.
const char* GangSchedulerDisplay(GangScheduler s);

// The one place that says which pods of `job` form its gang in a round of `round_size` pods,
// and so how many there are: every worker pod of the round and, with recovery InPlace, its
// rendezvous pod and its spares. Every count a scheduler sees (Kueue's pod-group-total-count)
// comes from here.
int GangPodCount(const api::DDPJob& job, int round_size);
// PodGroup minMember: the pods a round needs to train (the workers and, InPlace, the rendezvous
// pod; not the spares), capped by schedulingPolicy.minAvailable when it is smaller.
int GangMinMember(const api::DDPJob& job, int round_size);

// The job's Kueue LocalQueue (its kueue.x-k8s.io/queue-name label), "" when Kueue does not
// queue it (no label, or config.kueue false).
std::string KueueQueue(const api::DDPJob& job, const GangConfig& config);
// "<job>-r<round>": the Kueue pod group (and Workload) of one round. A round is one group: the
// operator never adds replacement pods to it (see docs/kueue.md).
std::string KueueGroupName(const api::DDPJob& job, int round);
// "<job>": the job's PodGroup, one per job, kept in step with its rounds.
std::string PodGroupName(const api::DDPJob& job);

// The PodGroup of the current round of `round_size` pods: name, namespace, the job label, the
// controller owner reference (when job.uid is set) and the spec `config.scheduler` reads:
//   Volcano:      minMember, queue, priorityClassName, minResources
//   coscheduling: minMember, minResources, scheduleTimeoutSeconds
// (fields the policy leaves unset are absent). REQUIRES: config.scheduler != kNone.
nlohmann::json BuildPodGroup(const api::DDPJob& job, const GangConfig& config, int round_size);

// The RFC 7386 merge patch that brings `current` (a stored PodGroup's spec) to `desired`'s
// values: each field of desired that differs, and null for a minResources desired no longer
// has. Fields only current has are left alone (a scheduler's webhook may default them, e.g.
// Volcano's queue). Null when nothing differs.
nlohmann::json PodGroupSpecPatch(const nlohmann::json& current, const nlohmann::json& desired);

// Adds the gang keys to `pod`, built by BuildWorkerPod for `round` of `round_size` pods:
//  - a PodGroup scheduler: spec.schedulerName, and the group (Volcano: the annotation
//    scheduling.k8s.io/group-name; coscheduling: the label scheduling.x-k8s.io/pod-group);
//  - Kueue (KueueQueue non-empty): the labels queue-name and pod-group-name (KueueGroupName)
//    and the annotations pod-group-total-count (GangPodCount) and retriable-in-group "false".
// Nothing when neither applies.
void AddGangKeys(const api::DDPJob& job, const GangConfig& config, int round, int round_size,
                 nlohmann::json* pod);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_GANG_H_
