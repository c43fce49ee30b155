// Reads a Kubernetes Pod object into the few facts the planner decides on. Pure.
#ifndef DDP_OPERATOR_PLAN_OBSERVE_H_
#define DDP_OPERATOR_PLAN_OBSERVE_H_

#include <nlohmann/json.hpp>

#include "operator/plan/plan.h"

namespace ddp::plan {

// Converts a Pod (as the API server returns it). Never fails: a malformed pod becomes one with
// index -1 (the planner deletes it as foreign to every round). Reads:
//  - role from kRoleLabel (worker when absent); index from kReplicaIndexLabel (a spare's from
//    kSpareIndexLabel, the rendezvous pod's is 0); round from kRoundLabel;
//  - exit_code from status.containerStatuses[name=="worker", else first].state.terminated
//    (lastState is ignored: pods run with restartPolicy Never);
//  - reason: status.reason (Evicted, Preempted, DeadlineExceeded, ...) else the container's
//    terminated reason (OOMKilled, Error, ...); message likewise;
//  - disruption_condition: condition DisruptionTarget=True;
//  - unschedulable_since, unschedulable_message: condition PodScheduled=False reason
//    Unschedulable, its transition time and message (the scheduler's: "0/1 nodes are
//    available: 1 Insufficient cpu.");
//  - deleting: metadata.deletionTimestamp set; deletion_timestamp and deletion_grace_seconds
//    from it and metadata.deletionGracePeriodSeconds;
//  - node_name: spec.nodeName (node_lost and fenced are not in the pod: the caller fills them);
//  - owner_uid: the uid of the ownerReference with controller: true.
//  - scheduling_gates: the names in spec.schedulingGates (Kueue's admission gate, ...).
ObservedPod ObservePod(const nlohmann::json& pod);

// Converts a PodGroup (either scheduler's). Never fails: missing fields read as empty.
ObservedPodGroup ObservePodGroup(const nlohmann::json& group);

// Converts a NetworkPolicy: its name, controller owner's uid and spec. Never fails.
ObservedNetworkPolicy ObserveNetworkPolicy(const nlohmann::json& policy);

// The uid of `obj`'s controller ownerReference, or "" when it has none.
std::string ControllerUid(const nlohmann::json& obj);

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_OBSERVE_H_
