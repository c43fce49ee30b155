// Lost nodes and fenced members; see lost_nodes.h.
#include "operator/plan/lost_nodes.h"

#include <algorithm>

#include "common/group_contract.h"
#include "operator/api/time_format.h"

namespace ddp::plan {
namespace {

using nlohmann::json;

std::string Str(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& Field(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string Seconds(std::chrono::system_clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + "s";
}

}  // namespace

NodeHealth ObserveNode(const json& node) {
  NodeHealth h;
  const json& conditions = Field(Field(node, "status"), "conditions");
  if (conditions.is_array()) {
    for (const json& c : conditions) {
      if (Str(c, "type") != "Ready") continue;
      const std::string status = Str(c, "status");
      if (status == "True") {
        for (const char* key : {"lastHeartbeatTime", "lastTransitionTime"}) {
          StatusOr<TimePoint> t = api::ParseTime(Str(c, key));
          if (t.ok() && (!h.ready_heartbeat || *t > *h.ready_heartbeat)) h.ready_heartbeat = *t;
        }
      }
      if (status == "False" || status == "Unknown") {
        h.lost = true;
        const std::string reason = Str(c, "reason");
        h.why = "Ready=" + status + (reason.empty() ? "" : " (" + reason + ")");
      }
    }
  }
  const json& taints = Field(Field(node, "spec"), "taints");
  if (taints.is_array()) {
    for (const json& t : taints) {
      const std::string key = Str(t, "key");
      if (key != kTaintUnreachable && key != kTaintNotReady && key != kTaintOutOfService) continue;
      h.lost = true;
      const std::string what = "tainted " + key;  // once, though a key comes with two effects
      if (h.why.find(what) == std::string::npos) h.why += (h.why.empty() ? "" : ", ") + what;
    }
  }
  return h;
}

bool NodeLostPastMargin(const ObservedPod& pod, std::chrono::seconds margin, TimePoint now,
                        std::optional<TimePoint>* due) {
  if (!pod.node_lost) return false;
  if (!pod.node_lost_since || now >= *pod.node_lost_since + margin) return true;
  if (due != nullptr) *due = *pod.node_lost_since + margin;
  return false;
}

LostPodDecision DecideLostPod(const ObservedPod& pod, bool may_rejoin, const PlanOptions& options,
                              TimePoint now) {
  LostPodDecision d;
  // Exited or not: a fenced pod is a disruption whatever its exit code (classify.h), so its
  // record decides nothing and its name is wanted back at once.
  if (pod.fenced) {
    d.verdict = LostPodDecision::kForceDelete;
    d.why = pod.lost_with_store ? "lost with its node: silent with the rendezvous pod"
                                : "declared lost and fenced by its group";
    return d;
  }
  // A deletion whose time the API server did not say cannot be timed: a live kubelet's job.
  if (!pod.deleting || !pod.node_lost || !pod.deletion_timestamp) return d;
  const auto margin = may_rejoin ? options.unfenced_lost_pod_margin : options.lost_pod_margin;
  d.due = *pod.deletion_timestamp + margin;
  if (now < d.due) {
    d.verdict = LostPodDecision::kWait;
    return d;
  }
  d.verdict = LostPodDecision::kForceDelete;
  // Terminating since the delete: the grace period before deletionTimestamp, when known.
  const TimePoint since =
      *pod.deletion_timestamp - std::chrono::seconds(pod.deletion_grace_seconds.value_or(0));
  d.why = "Terminating on lost node " + (pod.node_name.empty() ? "?" : pod.node_name) + " for " +
          Seconds(now - since);
  return d;
}

namespace internal {

void ForceDeleteLostPods(Pass* p, const PlanOptions& options) {
  for (const ObservedPod& pod : p->seen->pods) {
    // A worker or spare pod of the current round (IsCurrent is false under Restart for a spare
    // name); the rendezvous pod trains nothing and its successor starts a new store.
    const bool may_rejoin = InPlace(*p) && IsCurrent(*p, pod) &&
                            pod.role != group::kRoleRendezvous;
    const LostPodDecision d = DecideLostPod(pod, may_rejoin, options, p->now);
    if (d.verdict == LostPodDecision::kWait) Requeue(p, d.due);
    if (d.verdict != LostPodDecision::kForceDelete) continue;
    // Force-deleted already (still visible: a finalizer, or local mode reaping it): once is enough.
    if (pod.deleting && pod.deletion_grace_seconds == 0) continue;
    auto planned = std::find_if(p->plan.deletes.begin(), p->plan.deletes.end(),
                                [&](const Delete& del) {
                                  return del.kind == "Pod" && del.name == pod.name &&
                                         del.uid == pod.uid;
                                });
    if (planned == p->plan.deletes.end()) {
      p->plan.deletes.push_back({"Pod", pod.name, pod.uid, 0});
    } else {
      planned->grace_period_seconds = 0;
    }
    AddEvent(p, "Warning", kReasonForceDeleted,
             "round " + std::to_string(p->round) + ": pod " + pod.name + " " + d.why +
                 ": force-deleted");
  }
}

}  // namespace internal
}  // namespace ddp::plan
