// Internal to the planner: keeping a job's pods off the nodes its pods were lost on (DESIGN.md
// "Drains, silent nodes and the budget"; docs/failures-and-elasticity.md "A silent node"). A
// frozen node still looks Ready for about 40 s (the node lifecycle controller's grace) and the
// scheduler may well prefer it: a replacement bound there never starts. So the job remembers
// each node it lost a pod on (status.suspectNodes: survives an operator restart) and every pod it
// creates carries a required node affinity `kubernetes.io/hostname NotIn [...]`, merged into the
// template's own. Pure.
//
// The rules:
//   1. a node becomes suspect when a pod of the job on it is fenced by its group, when a pod's
//      node has been lost (NotReady/Unknown, tainted unreachable, not-ready or out-of-service,
//      gone) for PlanOptions::node_lost_margin (a shorter loss may be a flap), and when the job's
//      rendezvous pod on it went silent (silent_rendezvous.h);
//   2. it stops being suspect once it proves itself alive: Ready with a heartbeat newer than the
//      loss, or still Ready (not lost) `suspect_node_proof` after the loss (a node that stops
//      renewing its lease is called NotReady well before that). A node the operator does not
//      know (no node watch) stays suspect; at most kMaxSuspectNodes are kept, oldest dropped;
//   3. a pod of the current round bound to a suspect node, or to one lost for the margin, that
//      never started (Pending) is force-deleted at once and created again elsewhere, counted
//      nowhere: it held nothing.
#ifndef DDP_OPERATOR_PLAN_SUSPECT_NODES_H_
#define DDP_OPERATOR_PLAN_SUSPECT_NODES_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/plan/pass.h"

namespace ddp::plan {

// The label every node carries with its name.
inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";

// Merges `node NotIn names` into pod.spec.affinity.nodeAffinity's required terms: the expression
// is added to every nodeSelectorTerm (terms are ORed) but an empty one (no expressions, no
// fields: it matches no node, and with the expression it would match every other one), or one
// term holds it when there are none; everything else of the template's affinity is kept. A pod
// whose affinity has the wrong shape anywhere is left as it is, untouched. Nothing when `names`
// is empty.
void AvoidNodes(const std::vector<std::string>& names, nlohmann::json* pod);

namespace internal {

// The reason of the Event when a node becomes suspect, and of a pod moved off one.
inline constexpr char kReasonNodeSuspect[] = "NodeSuspect";
inline constexpr char kReasonPodOffLostNode[] = "PodOffLostNode";

// Marks `node` suspect (rule 1) with one Event naming `why`; nothing when it is already.
void MarkSuspect(Pass* p, const std::string& node, const std::string& why);

// Rules 1 (fenced pods, pods on lost nodes), 2 and 3. Call after the round's decisions and
// before CreateMissing, which gives every pod it creates AvoidNodes(SuspectNames(st)).
void TrackSuspectNodes(Pass* p, const PlanOptions& options);

std::vector<std::string> SuspectNames(const api::DDPJobStatus& st);

}  // namespace internal
}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_SUSPECT_NODES_H_
