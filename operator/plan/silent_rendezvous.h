// Internal to the planner: an InPlace job's rendezvous pod lost with its node (DESIGN.md
// "In-place recovery"; docs/in-place-recovery.md "The store's node lost"). The rendezvous pod
// holds no rank: the group trains on without it and its replacement is a new store the pods
// register with again (worker/group/rejoin.h). So the operator does not wait for Kubernetes to
// call its node NotReady (about 40 s) and evict it (300 s): it replaces the pod as soon as its
// page has been silent for the liveness timeout, or at once when its node is lost. Pure.
//
// The rules, for the current round's rendezvous pod:
//   1. its page answered at least once and every read since `last_ok` got no answer: once
//      spec.failurePolicy.livenessTimeoutSeconds have passed since `last_ok`, it is force-deleted
//      (grace 0, its UID as a precondition) and its node marked suspect (suspect_nodes.h); before
//      that, a requeue at the deadline. A page that never answered decides nothing (the pod may
//      still be starting, or the operator cannot reach pods at all);
//   2. its node is lost: force-deleted at once, deleting already or not (unless force-deleted
//      already);
//   3. with rule 1, each running worker or spare pod of the round on the same node whose own page
//      (its /healthz, probed by the reader while the rendezvous page fails: RendezvousReads::
//      node_mates) got no answer since the rendezvous page went silent, probed at least once, is
//      lost with its node (ObservedPod::lost_with_store): replaced at once like a pod its group
//      fenced, instead of after the new store's rejoin window plus a second pod start. Its
//      replacement registers with the new store beside the survivors, and the new authority,
//      finding another pod under the member's name, declares the member lost at once
//      (worker/group/rejoin.h). A pod whose page answers (only the store froze) is left alone;
//      a pod never probed decides nothing.
// CreateMissing creates its name again once it is gone, kept off suspect nodes.
#ifndef DDP_OPERATOR_PLAN_SILENT_RENDEZVOUS_H_
#define DDP_OPERATOR_PLAN_SILENT_RENDEZVOUS_H_

#include "operator/plan/pass.h"

namespace ddp::plan::internal {

// The reason of the Warning Event for a rendezvous pod replaced by these rules.
inline constexpr char kReasonRendezvousSilent[] = "RendezvousSilent";

// Rules 1-2. Call after the round's decisions and before TrackSuspectNodes and CreateMissing.
void ReplaceSilentRendezvous(Pass* p);

// Rule 3 for `pod`: whether it is lost with the silent rendezvous pod of its node. PlanReconcile
// calls it while it builds the pass's pods, so the round's decisions replace it.
bool LostWithStore(const api::DDPJob& job, const Observed& seen, const ObservedPod& pod,
                   TimePoint now);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_SILENT_RENDEZVOUS_H_
