// The job's NetworkPolicy: builder and planner step (see network_policy.h).
#include "operator/plan/network_policy.h"

#include <algorithm>

#include "operator/plan/builders.h"
#include "operator/plan/names.h"
#include "operator/plan/pass.h"

namespace ddp::plan {

using nlohmann::json;

std::string NetworkPolicyName(const api::DDPJob& job) { return job.name; }

bool WantsNetworkPolicy(const api::DDPJob& job, const NetworkPolicyConfig& config) {
  return job.spec.run_policy.network_policy.value_or(config.enabled);
}

json BuildNetworkPolicy(const api::DDPJob& job, const NetworkPolicyConfig& config) {
  const json job_pods = {{"matchLabels", {{api::kJobNameLabel, job.name}}}};
  json ingress = json::array();
  // 1. Every port from the job's own pods: the store, the presence and rendezvous ports, and
  //    the metrics the rendezvous pod reads from each pod.
  ingress.push_back({{"from", json::array({{{"podSelector", job_pods}}})}});
  // 2. The metrics port from the namespaces that scrape it.
  json scrapers = json::array();
  for (const std::string& ns : {config.operator_namespace, config.metrics_namespace}) {
    if (ns.empty()) continue;
    json peer = {{"namespaceSelector", {{"matchLabels", {{kNamespaceNameLabel, ns}}}}}};
    if (std::find(scrapers.begin(), scrapers.end(), peer) == scrapers.end()) scrapers.push_back(peer);
  }
  if (!scrapers.empty()) {
    ingress.push_back({{"from", scrapers},
                       {"ports", json::array({{{"protocol", "TCP"},
                                               {"port", job.spec.metrics.port}}})}});
  }
  json meta = {{"name", NetworkPolicyName(job)},
               {"namespace", job.namespace_name},
               {"labels", {{api::kJobNameLabel, job.name}}}};
  if (!job.uid.empty()) meta["ownerReferences"] = json::array({OwnerReference(job)});
  return {{"apiVersion", kNetworkPolicyApiVersion},
          {"kind", kNetworkPolicyKind},
          {"metadata", meta},
          {"spec",
           {{"podSelector", job_pods},
            {"policyTypes", json::array({"Ingress"})},
            {"ingress", ingress}}}};
}

namespace internal {
namespace {

// The namespaces `config` admits to the metrics port, as "a, b", or "none".
std::string Scrapers(const NetworkPolicyConfig& config) {
  std::string out;
  for (const std::string& ns : {config.operator_namespace, config.metrics_namespace}) {
    if (ns.empty() || (!out.empty() && out == ns)) continue;
    out += (out.empty() ? "" : ", ") + ns;
  }
  return out.empty() ? "none" : out;
}

// The top-level fields of `desired` that `current` lacks or holds otherwise (a merge patch of
// the spec), or null when none. Fields only `current` has are left alone: the API server may
// default some, and the policy types the operator sets make any other inert.
json SpecPatch(const json& current, const json& desired) {
  json patch = json::object();
  for (const auto& [key, value] : desired.items()) {
    if (!current.is_object() || !current.contains(key) || current[key] != value) patch[key] = value;
  }
  return patch.empty() ? json() : patch;
}

}  // namespace

void PlanNetworkPolicy(Pass* p, const NetworkPolicyConfig& config) {
  const bool want = WantsNetworkPolicy(p->job, config);
  const std::string name = NetworkPolicyName(p->job);
  if (want && !p->seen->network_policy_exists) {
    p->plan.creates.push_back(BuildNetworkPolicy(p->job, config));
    const std::string what = "NetworkPolicy " + name + " (only the job's pods reach its pods)";
    // One decision, one event: a new job's policy is part of its JobCreated event.
    if (!p->plan.events.empty() && p->plan.events.back().reason == kReasonJobCreated) {
      p->plan.events.back().message += "; creating " + what;
    } else {
      AddEvent(p, "Normal", "CreatingNetworkPolicy", "creating " + what);
    }
  } else if (want && p->seen->network_policy &&
             (p->job.uid.empty() || p->seen->network_policy->owner_uid == p->job.uid)) {
    // Ours, and its spec known: the operator's settings may have changed since it was written
    // (another --metrics-namespace or --operator-namespace, spec.metrics.port).
    json desired = BuildNetworkPolicy(p->job, config)["spec"];
    json patch = SpecPatch(p->seen->network_policy->spec, desired);
    if (patch.is_null()) return;
    std::string fields;
    for (const auto& [key, value] : patch.items()) fields += (fields.empty() ? "" : ", ") + key;
    AddEvent(p, "Normal", "UpdatingNetworkPolicy",
             "updating NetworkPolicy " + name + ": its " + fields +
                 " differ from the operator's settings (metrics port " +
                 std::to_string(p->job.spec.metrics.port) + " open to namespaces " +
                 Scrapers(config) + ")");
    p->plan.patches.push_back(
        {kNetworkPolicyApiVersion, kNetworkPolicyKind, name, {{"spec", std::move(patch)}}});
  } else if (!want && p->seen->network_policy_exists) {
    p->plan.deletes.push_back({kNetworkPolicyKind, name, ""});
    AddEvent(p, "Normal", "DeletingNetworkPolicy",
             "deleting NetworkPolicy " + name +
                 ": network isolation is off (spec.runPolicy.networkPolicy or the operator's "
                 "--network-policy)");
  }
}

}  // namespace internal
}  // namespace ddp::plan
