// Internal to the planner: the state of one reconcile pass and the steps that share it.
// PlanReconcile (plan.cc) decides; the steps here (pass.cc) do the bookkeeping every pass needs.
#ifndef DDP_OPERATOR_PLAN_PASS_H_
#define DDP_OPERATOR_PLAN_PASS_H_

#include <optional>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "operator/plan/plan.h"

namespace ddp::plan::internal {

// Why the current round's pods wait for their gang (gang_pass.h).
struct GangWait {
  std::string reason;  // the Queued condition's reason and its Event's
  std::string message;
  bool hold_pods = false;  // no PodGroup for them to join: pods are not created
};

// Not thread-safe; lives for one PlanReconcile call. `seen` must outlive it.
struct Pass {
  api::DDPJob job;     // defaulted copy of the input
  const Observed* seen = nullptr;  // the job's own pods only (see PlanReconcile)
  std::vector<std::string> foreign_names;  // names held by pods another owner controls
  TimePoint now;       // truncated to seconds: status times must survive the API server
  api::DDPJobStatus st;  // the status being built; starts as job.status
  Plan plan;
  int round = 0;  // the current rendezvous round
  int size = 0;   // pods in the current round
  std::vector<std::string> replaced;  // pod names replaced alone in this pass (recovery InPlace)
  GangConfig gang;            // the operator's gang scheduler (gang.h)
  std::optional<GangWait> gang_wait;  // set once per pass by RecordGangWait
};

Pass BeginPass(const api::DDPJob& job, const Observed& seen, TimePoint now,
               const GangConfig& gang = {});
// Sets plan.status when it differs from what the job had, and returns the plan.
Plan FinishPass(Pass* p);

// spec.replicas clamped into the elastic bounds (an HPA or `kubectl scale` may overshoot).
int DesiredSize(const api::DDPJob& job);

// Worker pods of the current round with index in [0, size), not being deleted; by index
// (-> nullptr).
std::vector<const ObservedPod*> CurrentPods(const Pass& p);
// recovery InPlace: whether the job runs a rendezvous pod and how many spares it keeps.
bool InPlace(const Pass& p);
int SpareCount(const Pass& p);
// Spare pods of the current round, not being deleted, by spare index (-> nullptr).
std::vector<const ObservedPod*> CurrentSpares(const Pass& p);
// The current round's rendezvous pod, not being deleted; nullptr when none.
const ObservedPod* CurrentRendezvous(const Pass& p);
// Whether `pod` is one the current round wants: a worker, spare or rendezvous pod of the round
// with its planned name (deleting or not).
bool IsCurrent(const Pass& p, const ObservedPod& pod);
// Any pod (any round, deleting or not) holding `name`.
const ObservedPod* PodNamed(const Pass& p, const std::string& name);

// The reason of a new job's event; CreateMissing appends what it creates to that event's
// message (one decision, one event).
inline constexpr char kReasonJobCreated[] = "JobCreated";

void AddEvent(Pass* p, const std::string& type, const std::string& reason,
              const std::string& message);
void Requeue(Pass* p, TimePoint at);

// Deletes every pod not of the current round (or out of range) that is not already going.
void DeleteStalePods(Pass* p);
// Creates the Service when absent and, unless `hold_pods` (restart backoff), each pod name of the
// current round that no pod holds.
void CreateMissing(Pass* p, bool hold_pods);
// Fills replicas, readyReplicas, worldSize, round, spares (as the plan leaves them: call after
// CreateMissing), readySpares and silentPodsHeld (the group's report); moves to Running once
// every rank's pod (inplace.h MemberPods: the worker pods, or a spare that took a rank) and,
// InPlace, the rendezvous pod have started.
void Summarize(Pass* p);
// What cleanPodPolicy deletes once the job has ended, and the TTL that deletes the job.
void CleanUpFinished(Pass* p);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_PASS_H_
