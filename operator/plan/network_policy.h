// Network isolation of a job (docs/security.md): one NetworkPolicy per job, owned by it, that
// lets only the job's own pods reach its pods (store, presence, rendezvous, metrics ports), and
// the metrics port also from the operator's namespace and a configured Prometheus namespace.
// Pure: the builder and the planner step; applying it is the controller's (local mode has no
// network to isolate and ignores it).
#ifndef DDP_OPERATOR_PLAN_NETWORK_POLICY_H_
#define DDP_OPERATOR_PLAN_NETWORK_POLICY_H_

#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/types.h"

namespace ddp::plan {

inline constexpr char kNetworkPolicyKind[] = "NetworkPolicy";
inline constexpr char kNetworkPolicyApiVersion[] = "networking.k8s.io/v1";
// The label every namespace carries since Kubernetes 1.21, set by the API server to its name.
inline constexpr char kNamespaceNameLabel[] = "kubernetes.io/metadata.name";

// The operator's settings (flags of `ddp-operator run`, chart values networkPolicy.*).
struct NetworkPolicyConfig {
  // Jobs without spec.runPolicy.networkPolicy get one when true (--network-policy). The
  // planner's default is off, so local mode, render and the planner's own tests create none
  // unless a job asks; `ddp-operator run` turns it on.
  bool enabled = false;
  // Namespaces whose pods may reach the metrics port ("" = none): the operator's own (it reads
  // /metrics for progress) and Prometheus' (--metrics-namespace).
  std::string operator_namespace;
  std::string metrics_namespace;
};

// "<job>", as the Service (another kind, so no clash).
std::string NetworkPolicyName(const api::DDPJob& job);

// Whether `job` gets a NetworkPolicy: its spec.runPolicy.networkPolicy, else config.enabled.
bool WantsNetworkPolicy(const api::DDPJob& job, const NetworkPolicyConfig& config);

// The NetworkPolicy (networking.k8s.io/v1) selecting the job's pods (label ddp.dev/job-name),
// policy type Ingress only: every port from pods with the same label in the job's namespace;
// spec.metrics.port (TCP) also from pods of the operator's and the metrics namespace (selected
// by kubernetes.io/metadata.name; a rule only for those set). Labelled with the job's name and
// owned (controller reference) by the job when it has a uid, so the garbage collector deletes
// it with the job. Egress is not restricted. REQUIRES: job defaulted.
nlohmann::json BuildNetworkPolicy(const api::DDPJob& job, const NetworkPolicyConfig& config);

namespace internal {
struct Pass;
// PlanReconcile's step for a job that runs: creates the policy when the job wants one and
// Observed::network_policy_exists is false (before the Service and pods, so no pod of the job
// is ever reachable unprotected); deletes it when the job no longer wants one; patches its spec
// (an RFC 7386 merge patch of the fields that differ, with an UpdatingNetworkPolicy event) when
// Observed::network_policy is the job's own (controller reference to job.uid) and its spec
// differs from BuildNetworkPolicy's, e.g. after the operator was restarted with another
// --metrics-namespace. A policy of the same name owned by someone else is left alone. Once the
// job has finished nothing is planned: the garbage collector deletes it with the job.
void PlanNetworkPolicy(Pass* p, const NetworkPolicyConfig& config);
}  // namespace internal

}  // namespace ddp::plan

#endif  // DDP_OPERATOR_PLAN_NETWORK_POLICY_H_
