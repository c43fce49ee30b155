// Internal to the planner: an InPlace job's rendezvous pod lost with its node (DESIGN.md
// "In-place recovery"; docs/in-place-recovery.md "The store's node lost"). The rendezvous pod
// holds no rank: the group trains on without it and its replacement is a new store the pods
// register with again (worker/group/rejoin.h). So the operator does not wait for Kubernetes to
// call its node NotReady (about 40 s) and evict it (300 s): it replaces the pod as soon as its
// page has been silent for the liveness timeout, or once its node has been lost for a margin.
// A member (worker or spare) holds a rank and may still train: it is force-deleted only on
// evidence from two sides, never on the operator's failure to reach it alone. Pure.
//
// The rules, for the current round's rendezvous pod:
//   1. its page answered at least once and every read since `last_ok` got no answer (any HTTP
//      answer counts: progress_scraper.h): once spec.failurePolicy.livenessTimeoutSeconds have
//      passed since `last_ok`, it is force-deleted (grace 0, its UID as a precondition) and its
//      node marked suspect (suspect_nodes.h); before that, a requeue at the deadline. A page that
//      never answered decides nothing (the pod may still be starting, or the operator cannot
//      reach pods at all). A partition between the operator and a live node ends here too: the
//      store is replaced, which costs its group one registration (rejoin.h), while waiting for
//      Kubernetes' word on a dead node would leave the whole group without a store for a minute;
//   2. its node has been lost (ObservedPod::node_lost) for PlanOptions::node_lost_margin and its
//      page does not answer (it fails, or was never read): force-deleted at once, deleting
//      already or not (unless force-deleted already). A node lost for less than the margin (a
//      NotReady flap: a kubelet restart, a PLEG or runtime hiccup) replaces nothing: a requeue at
//      its end. A pod whose page answers is alive, whatever Kubernetes says of its node (a dead
//      kubelet kills no process), and is left to rule 1;
//   3. with rule 2, each running worker or spare pod of the round on the same node whose own
//      page (its /healthz, probed by the reader while the rendezvous page fails:
//      RendezvousReads::node_mates) was probed at least kMinUnansweredProbes times since the
//      rendezvous page went silent and never answered, on that node lost for the margin, is lost
//      with its node (ObservedPod::lost_with_store): replaced at once like a pod its group
//      fenced, instead of after the new store's rejoin window plus a second pod start. Its
//      replacement registers with the new store beside the survivors, and the new authority,
//      finding another pod under the member's name, declares the member lost at once
//      (worker/group/rejoin.h). Without Kubernetes' word (rule 1 alone: the operator merely
//      cannot reach the node, or the node is not called lost yet) no member is touched: the new
//      store's authority fences those that do not register again within its rejoin window, and
//      the operator replaces them on that word (lost_nodes.h). A pod whose page answers, or
//      that was probed fewer times, decides nothing.
// CreateMissing creates its name again once it is gone, kept off suspect nodes.
#ifndef DDP_OPERATOR_PLAN_SILENT_RENDEZVOUS_H_
#define DDP_OPERATOR_PLAN_SILENT_RENDEZVOUS_H_

#include "operator/plan/pass.h"

namespace ddp::plan::internal {

// The reason of the Warning Event for a rendezvous pod replaced by these rules.
inline constexpr char kReasonRendezvousSilent[] = "RendezvousSilent";

// Rule 3's least number of probes of a pod, all unanswered: one is a hiccup of the operator's.
inline constexpr int kMinUnansweredProbes = 2;

// Rules 1-2. Call after the round's decisions and before TrackSuspectNodes and CreateMissing.
void ReplaceSilentRendezvous(Pass* p, const PlanOptions& options);

// Rule 3 for `pod`: whether it is lost with the silent rendezvous pod of its node. PlanReconcile
// calls it while it builds the pass's pods, so the round's decisions replace it.
bool LostWithStore(const api::DDPJob& job, const Observed& seen, const ObservedPod& pod,
                   TimePoint now, const PlanOptions& options);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_SILENT_RENDEZVOUS_H_
