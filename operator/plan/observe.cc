// Pod JSON -> ObservedPod. Tolerant: a field of the wrong type reads as absent.
#include "operator/plan/observe.h"

#include <cstdlib>

#include "common/group_contract.h"
#include "operator/api/time_format.h"
#include "operator/plan/builders.h"
#include "operator/plan/names.h"

namespace ddp::plan {
namespace {

using nlohmann::json;

const json& Get(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string Str(const json& obj, const char* key) {
  const json& v = Get(obj, key);
  return v.is_string() ? v.get<std::string>() : "";
}

// A non-negative decimal label value, or -1.
int ParseIndexLabel(const json& labels, const char* key) {
  const std::string s = Str(labels, key);
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::atoi(s.c_str());
}

std::optional<TimePoint> Time(const json& obj, const char* key) {
  const std::string s = Str(obj, key);
  if (s.empty()) return std::nullopt;
  StatusOr<TimePoint> t = api::ParseTime(s);
  if (!t.ok()) return std::nullopt;
  return *t;
}

// The status of the container that gets the operator's env (see WorkerContainerIndex).
const json* WorkerContainerStatus(const json& pod) {
  const json& statuses = Get(Get(pod, "status"), "containerStatuses");
  if (!statuses.is_array() || statuses.empty()) return nullptr;
  std::string want = kWorkerContainerName;
  const json& spec = Get(pod, "spec");
  const int w = WorkerContainerIndex(spec);
  if (w >= 0) want = Str(spec["containers"][w], "name");
  for (const auto& s : statuses) {
    if (Str(s, "name") == want) return &s;
  }
  return &statuses[0];
}

}  // namespace

std::string ControllerUid(const json& obj) {
  const json& refs = Get(Get(obj, "metadata"), "ownerReferences");
  if (!refs.is_array()) return "";
  for (const auto& ref : refs) {
    const json& controller = Get(ref, "controller");
    if (controller.is_boolean() && controller.get<bool>()) return Str(ref, "uid");
  }
  return "";
}

ObservedPod ObservePod(const json& pod) {
  ObservedPod out;
  const json& meta = Get(pod, "metadata");
  const json& status = Get(pod, "status");
  out.name = Str(meta, "name");
  out.uid = Str(meta, "uid");
  out.owner_uid = ControllerUid(pod);
  const json& labels = Get(meta, "labels");
  const std::string role = Str(labels, api::kRoleLabel);
  if (!role.empty()) out.role = role;
  if (out.role == group::kRoleSpare) {
    out.index = ParseIndexLabel(labels, api::kSpareIndexLabel);
  } else if (out.role == group::kRoleRendezvous) {
    out.index = 0;
  } else {
    out.index = ParseIndexLabel(labels, api::kReplicaIndexLabel);
  }
  out.round = ParseIndexLabel(labels, api::kRoundLabel);
  if (out.role == group::kRoleRendezvous) {
    out.group_size = ParseIndexLabel(Get(meta, "annotations"), group::kGroupSizeAnnotation);
  }
  out.deleting = !Get(meta, "deletionTimestamp").is_null();
  out.deletion_timestamp = Time(meta, "deletionTimestamp");
  const json& grace = Get(meta, "deletionGracePeriodSeconds");
  if (grace.is_number_integer()) out.deletion_grace_seconds = grace.get<int64_t>();
  out.node_name = Str(Get(pod, "spec"), "nodeName");
  if (auto t = Time(meta, "creationTimestamp")) out.created = *t;
  out.phase = Str(status, "phase");
  if (out.phase.empty()) out.phase = "Pending";
  out.reason = Str(status, "reason");
  out.message = Str(status, "message");
  out.pod_ip = Str(status, "podIP");

  if (const json* cs = WorkerContainerStatus(pod)) {
    const json& terminated = Get(Get(*cs, "state"), "terminated");
    const json& code = Get(terminated, "exitCode");
    if (code.is_number_integer()) out.exit_code = code.get<int>();
    out.finished_at = Time(terminated, "finishedAt");
    if (out.reason.empty()) out.reason = Str(terminated, "reason");
    if (out.message.empty()) out.message = Str(terminated, "message");
  }

  const json& gates = Get(Get(pod, "spec"), "schedulingGates");
  if (gates.is_array()) {
    for (const auto& g : gates) out.scheduling_gates.push_back(Str(g, "name"));
  }

  const json& conditions = Get(status, "conditions");
  if (conditions.is_array()) {
    for (const auto& c : conditions) {
      const std::string type = Str(c, "type");
      const std::string value = Str(c, "status");
      if (type == "Ready") out.ready = value == "True";
      if (type == "DisruptionTarget" && value == "True") {
        out.disruption_condition = true;
        if (out.reason.empty()) out.reason = Str(c, "reason");
      }
      if (type == "PodScheduled" && value == "False" && Str(c, "reason") == "Unschedulable") {
        out.unschedulable_since = Time(c, "lastTransitionTime");
        out.unschedulable_message = Str(c, "message");
        if (!out.unschedulable_since) out.unschedulable_since = out.created;
      }
    }
  }
  return out;
}

ObservedPodGroup ObservePodGroup(const json& group) {
  ObservedPodGroup out;
  const json& meta = Get(group, "metadata");
  out.name = Str(meta, "name");
  out.uid = Str(meta, "uid");
  out.api_version = Str(group, "apiVersion");
  out.owner_uid = ControllerUid(group);
  const json& spec = Get(group, "spec");
  if (spec.is_object()) out.spec = spec;
  out.phase = Str(Get(group, "status"), "phase");
  return out;
}

ObservedNetworkPolicy ObserveNetworkPolicy(const json& policy) {
  ObservedNetworkPolicy out;
  out.name = Str(Get(policy, "metadata"), "name");
  out.owner_uid = ControllerUid(policy);
  const json& spec = Get(policy, "spec");
  if (spec.is_object()) out.spec = spec;
  return out;
}

}  // namespace ddp::plan
