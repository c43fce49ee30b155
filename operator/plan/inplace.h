// Internal to the planner: what recovery InPlace adds to a reconcile pass (DESIGN.md "Drains,
// silent nodes and the budget", "Hot spares"). The group of an InPlace job (its rendezvous pod)
// knows which pod holds which rank, which spares are idle, whom it fenced, and how many trainer
// restarts it healed inside the pods; the pods' termination messages say why a supervised pod
// ended. These steps turn that into decisions; plan.cc calls them. Pure.
#ifndef DDP_OPERATOR_PLAN_INPLACE_H_
#define DDP_OPERATOR_PLAN_INPLACE_H_

#include <optional>
#include <vector>

#include "operator/plan/pass.h"

namespace ddp::plan::internal {

// The current round's group report, or nullptr (none read yet, an older round's, not InPlace).
const metrics::GroupScrape* CurrentGroup(const Pass& p);

// The pods whose end is a member's: the worker pods, and spare pods the group says hold a rank;
// minus the pods the group lists as idle spares (a worker pod whose rank a spare took). Worker
// pods first, by index, then spares; no nullptr.
std::vector<const ObservedPod*> MemberPods(const Pass& p);

// Whether `pod` (current, deleting or not) is a member: MemberPods' rule for one pod.
bool IsMember(const Pass& p, const ObservedPod& pod);

// Whether the group's report lists `pod` holding a node rank; without a report (none read yet,
// or recovery Restart), IsMember. For a pod that vanished unseen: only the report can say
// whether it still held a rank (a pod whose rank a spare took and that was being recreated
// did not).
bool HeldARank(const Pass& p, const ObservedPod& pod);

// The node rank the group gives `pod`, else its index (a worker's own rank).
int GroupRank(const Pass& p, const ObservedPod& pod);

// Whether no member pod of the round is left running to hand its state to a replacement: every
// member pod is being deleted, ended, fenced or replaced in this pass (a pod still Pending holds
// nothing). Then a disruption is a new round from the checkpoint, not a pod replaced alone.
// False unless InPlace.
bool NoSurvivor(const Pass& p);

// Member pods of the round being deleted that no decision counted yet (a pod deleted while
// another is being replaced is taken for part of that replacement otherwise), when NoSurvivor:
// every pod of a job deleted at once, seen one pass apart. Empty otherwise.
std::vector<const ObservedPod*> TakenWithoutSurvivor(const Pass& p);

// The InPlace steps before the round's failure decisions:
//   1. a pod that ended BudgetSpent fails the job (MaxRestartsExceeded): the group charged the
//      whole budget; status.recoveries becomes maxRestarts - restarts;
//   2. a pod that ended GroupAbandoned starts a new round at once; it is charged (a restart,
//      with backoff) only when the group never formed (no earlier failure was charged); one that
//      ended Stopped (the group stopped together, with a checkpoint, though the job was not
//      stopped: every member got SIGTERM at once) starts a new round that resumes from that
//      checkpoint, one disruption, never a success;
//   3. the rendezvous pod ended: deleted and replaced, counted nowhere (a permanent error, exit
//      2/126/127, fails the job: InPlace needs the ddp-worker image); one already being deleted
//      is left to go (its name is recreated once it is gone);
//   4. an idle spare pod (or a worker pod whose rank a spare took) that ended is replaced
//      without a charge: the group never needed it.
// Returns the plan when the job ended.
std::optional<Plan> DecideGroup(Pass* p);

// Adds the trainer restarts the group healed inside the pods since the last pass to
// status.recoveries (status.progress.recoveries remembers how many of this round's are in).
// Past maxRestarts (the group and the operator each charged near the limit at once) the job fails.
std::optional<Plan> MirrorGroup(Pass* p);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_INPLACE_H_
