// Small builders for planner tests: jobs, observed pods, and a pure "apply" that plays a Plan
// against the observed world the way the API server would.
#ifndef DDP_TESTS_OPERATOR_PLANNER_FIXTURE_H_
#define DDP_TESTS_OPERATOR_PLANNER_FIXTURE_H_

#include <map>
#include <string>
#include <vector>

#include "common/group_contract.h"
#include "operator/api/time_format.h"
#include "operator/api/types.h"
#include "operator/plan/observe.h"
#include "operator/plan/plan.h"

namespace ddp::plan::testing {

inline TimePoint T0() { return *api::ParseTime("2026-01-01T00:00:00Z"); }
inline TimePoint At(int seconds) { return T0() + std::chrono::seconds(seconds); }

// A valid job "ml/mingpt" with `replicas` pods and one "worker" container.
api::DDPJob Job(int replicas);

// Job modifiers, each returning the job so rows stay one expression.
api::DDPJob Elastic(api::DDPJob j, int min, int max, int pending_timeout_seconds);
api::DDPJob Policy(api::DDPJob j, api::RestartPolicy p, int max_restarts);
// status as the planner would have left it: phase, round, size, restarts, started at At(0).
api::DDPJob InPhase(api::DDPJob j, const std::string& phase, int round, int size,
                    int restarts = 0);
// A spec change: generation + 1 (status.observedGeneration stays behind).
api::DDPJob Scaled(api::DDPJob j, int replicas);

// recovery InPlace with `spares` spare pods (spec.failurePolicy.spares).
api::DDPJob InPlace(api::DDPJob j, int spares = 0);

ObservedPod Pod(int index, int round, const std::string& phase);
// recovery InPlace's other pods, as ObservePod reads the planner's own objects: the rendezvous
// pod "mingpt-rendezvous" (role rendezvous, index 0) and spare pod "mingpt-spare-<k>" (role
// spare, index k). UIDs "<name>-r<round>" as Pod's.
ObservedPod Rendezvous(int round, const std::string& phase);
ObservedPod Spare(int k, int round, const std::string& phase);
// A supervised pod that ended with `reason` (group_contract.h): Failed, exit `code`, the
// termination message "ddp: <Reason>: <text>".
ObservedPod Ends(ObservedPod p, group::EndReason reason, const std::string& text, int code = 75);
ObservedPod Exited(int index, int round, int code);          // Failed with an exit code
// Exited, the worker container having terminated at `finished` (container finishedAt).
ObservedPod ExitedAt(int index, int round, int code, TimePoint finished);
ObservedPod Evicted(int index, int round);                    // Failed, reason Evicted, no code
ObservedPod Deleting(ObservedPod p);
// The pod's controller ownerReference names `owner_uid` ("" = none), not the rows' job.
ObservedPod OwnedBy(ObservedPod p, const std::string& owner_uid);
ObservedPod Unschedulable(int index, int round, TimePoint since);
// `n` pods 0..n-1 of `round` in `phase` (Running ones are also ready).
std::vector<ObservedPod> Pods(int n, int round, const std::string& phase);
Observed World(std::vector<ObservedPod> pods, bool service = true);
// An InPlace round: the rendezvous pod, `n` worker pods and `spares` spare pods, all in `phase`.
Observed GroupWorld(int n, int round, int spares, const std::string& phase);
// The group's report of `round` as the rendezvous pod's page gives it: who holds which node
// rank, the idle spares, the recoveries healed in the pods, the fenced pods (name -> uid).
ObservedGroup Report(int round, std::map<std::string, int> members,
                     std::vector<std::string> spares = {}, double recoveries = 0,
                     std::map<std::string, std::string> fenced = {});
Observed With(Observed w, ObservedPod p);  // replaces the pod with the same name, else appends

// Plays `plan` on the world: creates appear (pods Pending, via ObservePod on the built object;
// a PodGroup via ObservePodGroup, no phase yet), deletes mark pods deleting (they linger, as
// with a grace period; a force delete, grace 0, removes the pod whose UID it names at once),
// the Service, NetworkPolicy and PodGroup deletes remove them, patches merge into the PodGroup's spec, status
// replaces job.status, delete_job sets the job's deletionTimestamp.
void Apply(const Plan& plan, api::DDPJob* job, Observed* world, TimePoint now);
// Pods being deleted finish going away.
void ReapDeleting(Observed* world);

// "Pod mingpt-worker-0 r1" / "Service mingpt" / "Pod mingpt-worker-1 (grace 0s)" for compact
// expectations.
std::vector<std::string> DescribeCreates(const Plan& plan);
std::vector<std::string> DescribeDeletes(const Plan& plan);
std::vector<std::string> EventReasons(const Plan& plan);

}  // namespace ddp::plan::testing

#endif  // DDP_TESTS_OPERATOR_PLANNER_FIXTURE_H_
