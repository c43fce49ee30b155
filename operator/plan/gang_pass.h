// Internal to the planner: the job's gang in one reconcile pass. gang.h builds the objects; this
// decides when they are written and what the job's status says while its gang waits.
#ifndef DDP_OPERATOR_PLAN_GANG_PASS_H_
#define DDP_OPERATOR_PLAN_GANG_PASS_H_

#include <chrono>
#include <optional>

#include "operator/plan/pass.h"

namespace ddp::plan::internal {

// Reasons of the Queued condition and of the Event when it turns True: the round's pods carry
// Kueue's admission gate; the PodGroup is not placed yet; the PodGroup kind is not served (the
// scheduler's CRD is missing); the PodGroup's name is held by an object the job does not own.
inline constexpr char kReasonWaitingForAdmission[] = "WaitingForAdmission";
inline constexpr char kReasonWaitingForPodGroup[] = "WaitingForPodGroup";
inline constexpr char kReasonPodGroupUnavailable[] = "PodGroupUnavailable";
inline constexpr char kReasonPodGroupNotOwned[] = "PodGroupNotOwned";
// Queued turns False with this reason when the wait ends.
inline constexpr char kReasonAdmitted[] = "Admitted";
// A job that asks for gang scheduling this operator does not give (its event, at the start).
inline constexpr char kReasonGangSchedulingIgnored[] = "GangSchedulingIgnored";
// How often a job whose PodGroup kind is not served looks again (the informer re-lists too).
inline constexpr std::chrono::seconds kPodGroupApiRetry{30};

// Why the current round waits for its gang, or nullopt. Reads the observed world only.
std::optional<GangWait> FindGangWait(const Pass& p);

// Sets p->gang_wait and keeps the Queued condition in step: True with the wait's reason (phase
// Pending unless Running; one Event when a wait begins or its reason changes); when a wait ends,
// False/Admitted with an Event, and status.startTime moves forward by the time waited, so
// activeDeadlineSeconds counts only time the gang held its resources. Call once, before the
// round's decisions.
void RecordGangWait(Pass* p, std::optional<GangWait> wait);

// Creates the job's PodGroup for the current round, or patches it when its spec differs (a new
// round's size, an edited policy); with the kind not served, arms a kPodGroupApiRetry timer.
// Nothing without a gang scheduler or when the name is not the job's. Call after the decisions
// and before CreateMissing, so the PodGroup comes before the pods.
void PlanPodGroup(Pass* p);

// Whether the round's spares may be created now: always without a PodGroup scheduler (Kueue
// counts them in the group from the start); with one, once every worker pod and the rendezvous
// pod of the round is bound to a node. Volcano's minMember and the coscheduling plugin's Permit
// count the group's pods, not their roles: a spare placed first fills the count in a worker's
// place, the gang is admitted without that worker, and the round never trains.
bool SparesMayJoin(const Pass& p);

// Whether the current round's worker and rendezvous pods may be created now: always without a
// PodGroup scheduler; with one, once no pod of another round is left. The coscheduling plugin's
// Permit counts every pod that carries the group's label, a terminating pod of the old round
// among them: on a real cluster a new round's first pod was bound alone, before its sibling
// existed. Held until then, the round's pods are created in one pass, so the scheduler never
// sees part of a round.
bool RoundMayStart(const Pass& p);

// Deletes the job's PodGroup, if it has one: a finished or suspended job holds no gang.
void DeletePodGroup(Pass* p);

// At a job's start: one Warning Event when it asks for gang scheduling or Kueue queueing that
// this operator does not give (p->gang.none_reason says why).
void WarnGangIgnored(Pass* p);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_GANG_PASS_H_
