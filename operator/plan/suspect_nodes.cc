// Suspect nodes; see suspect_nodes.h.
#include "operator/plan/suspect_nodes.h"

#include <algorithm>

#include "common/group_contract.h"
#include "operator/plan/lost_nodes.h"

namespace ddp::plan {
namespace {

using nlohmann::json;

// The object at obj[key], created when absent; nullptr when present with another type.
json* ObjectAt(json* obj, const char* key) {
  if (!obj->contains(key) || (*obj)[key].is_null()) (*obj)[key] = json::object();
  json& v = (*obj)[key];
  return v.is_object() ? &v : nullptr;
}

bool IsSuspect(const api::DDPJobStatus& st, const std::string& node) {
  return std::any_of(st.suspect_nodes.begin(), st.suspect_nodes.end(),
                     [&](const api::SuspectNode& s) { return s.name == node; });
}

// Kubernetes: a nodeSelectorTerm with no expressions and no fields matches no node.
bool MatchesNoNode(const json& term) {
  for (const char* key : {"matchExpressions", "matchFields"}) {
    auto it = term.find(key);
    if (it != term.end() && it->is_array() && !it->empty()) return false;
  }
  return true;
}

}  // namespace

void AvoidNodes(const std::vector<std::string>& names, json* pod) {
  if (names.empty() || !pod->is_object()) return;
  // Edited on a copy, kept only when every part had the right shape: a malformed term found
  // after well-formed ones must not leave those changed.
  json out = *pod;
  json* spec = ObjectAt(&out, "spec");
  json* affinity = spec ? ObjectAt(spec, "affinity") : nullptr;
  json* node = affinity ? ObjectAt(affinity, "nodeAffinity") : nullptr;
  json* required = node ? ObjectAt(node, "requiredDuringSchedulingIgnoredDuringExecution") : nullptr;
  if (required == nullptr) return;
  json& terms = (*required)["nodeSelectorTerms"];
  if (terms.is_null()) terms = json::array();
  if (!terms.is_array()) return;
  const json avoid = {{"key", kHostnameLabel}, {"operator", "NotIn"}, {"values", names}};
  if (terms.empty()) {  // no required terms: one that holds the expression
    terms.push_back({{"matchExpressions", json::array({avoid})}});
    *pod = std::move(out);
    return;
  }
  for (json& term : terms) {
    if (!term.is_object()) return;
    for (const char* key : {"matchExpressions", "matchFields"}) {
      if (term.contains(key) && !term[key].is_null() && !term[key].is_array()) return;
    }
  }
  for (json& term : terms) {
    // An empty term matches no node; with the expression it would match every other node.
    if (MatchesNoNode(term)) continue;
    json& exprs = term["matchExpressions"];
    if (exprs.is_null()) exprs = json::array();
    exprs.push_back(avoid);
  }
  *pod = std::move(out);
}

namespace internal {

std::vector<std::string> SuspectNames(const api::DDPJobStatus& st) {
  std::vector<std::string> out;
  for (const api::SuspectNode& s : st.suspect_nodes) out.push_back(s.name);
  std::sort(out.begin(), out.end());
  return out;
}

void MarkSuspect(Pass* p, const std::string& node, const std::string& why) {
  if (node.empty() || IsSuspect(p->st, node)) return;
  auto& list = p->st.suspect_nodes;
  list.push_back({node, p->now});
  if (list.size() > api::kMaxSuspectNodes) list.erase(list.begin());
  AddEvent(p, "Warning", kReasonNodeSuspect,
           "node " + node + " is suspect (" + why +
               "): the job's new pods are kept off it until it proves itself alive");
}

void TrackSuspectNodes(Pass* p, const PlanOptions& options) {
  // A node called lost only for a moment may be flapping: it counts once the margin is over.
  auto lost = [&](const ObservedPod& pod) {
    std::optional<TimePoint> due;
    if (NodeLostPastMargin(pod, options.node_lost_margin, p->now, &due)) return true;
    if (due) Requeue(p, *due);
    return false;
  };
  // 1. Losses seen in this pass.
  for (const ObservedPod& pod : p->seen->pods) {
    if (pod.node_name.empty()) continue;
    if (pod.fenced) {
      MarkSuspect(p, pod.node_name,
                  pod.lost_with_store ? "pod " + pod.name + " went silent with the rendezvous pod"
                                      : "its group declared pod " + pod.name + " lost");
    }
    if (lost(pod)) MarkSuspect(p, pod.node_name, "pod " + pod.name + "'s node is lost");
  }
  // 2. Nodes that proved themselves alive.
  auto& list = p->st.suspect_nodes;
  for (auto it = list.begin(); it != list.end();) {
    auto n = p->seen->nodes.find(it->name);
    const bool known = n != p->seen->nodes.end();
    const bool beat = known && !n->second.lost && n->second.ready_heartbeat &&
                      *n->second.ready_heartbeat > it->since;
    const bool outlived = known && !n->second.lost && p->now >= it->since + options.suspect_node_proof;
    if (beat || outlived) {
      AddEvent(p, "Normal", kReasonNodeSuspect,
               "node " + it->name + " is no longer suspect: " +
                   (beat ? "Ready with a heartbeat newer than the loss"
                         : "still Ready " + std::to_string(options.suspect_node_proof.count()) +
                               "s after the loss"));
      it = list.erase(it);
      continue;
    }
    // Look again when it may have proved itself; a lost node that comes back later is seen at
    // the job's next pass (a pod event, the resync).
    if (p->now < it->since + options.suspect_node_proof) Requeue(p, it->since + options.suspect_node_proof);
    ++it;
  }
  // 3. Pods bound to a lost or suspect node that never started.
  for (const ObservedPod& pod : p->seen->pods) {
    if (pod.deleting || pod.phase != "Pending" || pod.node_name.empty() || !IsCurrent(*p, pod)) {
      continue;
    }
    const bool on_lost = lost(pod);
    if (!on_lost && !IsSuspect(p->st, pod.node_name)) continue;
    const bool planned = std::any_of(p->plan.deletes.begin(), p->plan.deletes.end(),
                                     [&](const Delete& d) { return d.kind == "Pod" && d.name == pod.name; });
    if (planned) continue;
    p->plan.deletes.push_back({"Pod", pod.name, pod.uid, 0});
    AddEvent(p, "Warning", kReasonPodOffLostNode,
             "round " + std::to_string(p->round) + ": pod " + pod.name + " was bound to " +
                 (on_lost ? "lost" : "suspect") + " node " + pod.node_name +
                 " and never started: force-deleted, created again elsewhere (not counted)");
  }
}

}  // namespace internal
}  // namespace ddp::plan
