// Internal to the planner: elastic in place (recovery InPlace with spec.elastic; docs/
// in-place-recovery.md "Resize in place"). The round keeps its pods and its number; the group
// (the rendezvous pod's authority) changes its size at its next generation. Two sizes:
//   - the round's size (status.replicas, p->size): the worker pods that exist, spec.replicas
//     clamped into the elastic bounds. A change of spec.replicas changes it in the same round:
//     the pods past it are deleted (the group lets them go first), the missing ones created;
//   - the group's size (the rendezvous pod's ddp.dev/group-size annotation, projected into a
//     file it reads): the round's size less the highest pods unschedulable past
//     pendingTimeoutSeconds, never below minReplicas. Such a pod is left Pending; once it is bound and starts, the
//     group grows back by itself.
// Pure.
#ifndef DDP_OPERATOR_PLAN_RESIZE_H_
#define DDP_OPERATOR_PLAN_RESIZE_H_

#include <string>

#include "operator/plan/pass.h"

namespace ddp::plan::internal {

inline constexpr char kReasonResizedInPlace[] = "ResizedInPlace";
inline constexpr char kReasonGroupResized[] = "GroupResized";
// BelowSize's reason while the group runs without members lost with no spare (it grows back).
inline constexpr char kReasonMemberLost[] = "MemberLost";

// Recovery InPlace, spec.elastic, and no Kueue (a Kueue round is one pod group that never gets
// pods added: a resize there is a new round).
bool ResizesInPlace(const Pass& p);

// The group's size: see above. The round's size when !ResizesInPlace. Arms the requeue for a
// pod still inside its pendingTimeoutSeconds.
int GroupSize(Pass* p);

// Whether pods unschedulable past the timeout have indices below GroupSize (a lost pod's
// replacement that cannot be scheduled) that the group has not gone on without: more of them than
// the node ranks it gave up on losses (ddp_group_shrunk_nodes: a survivor moved into each such
// rank; worker/group/authority.h rule 10). Then that shrink is a new round, as without InPlace
// (plan.cc ShrinkTarget); a job with no room to shrink on a loss (at minReplicas) gets there.
bool UnschedulableBelowTop(Pass* p);

// Changes the round's size to `to` pods without a new round: an Event (ResizedInPlace) and the
// status; the rest follows (DeleteStalePods, CreateMissing, PlanGroupSize).
void ResizeInPlace(Pass* p, int to, const std::string& why);

// Keeps the rendezvous pod's annotation at GroupSize (a merge patch of that pod when it differs;
// an Event GroupResized saying why), the status's worldSize at the group's as its rendezvous
// pod reports it, and the BelowSize condition: True while the group runs below the round's
// size (its reason: PendingTimeout; MemberLost while it runs without members lost with no
// spare, until their replacements join; Growing while pods join), False once it is whole.
void PlanGroupSize(Pass* p);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_RESIZE_H_
