// PodGroups and gang keys; see gang.h.
#include "operator/plan/gang.h"

#include <algorithm>
#include <regex>

#include "operator/api/labels.h"
#include "operator/plan/builders.h"

namespace ddp::plan {
namespace {

using nlohmann::json;

json& ObjectAt(json* parent, const char* key) {
  json& v = (*parent)[key];
  if (!v.is_object()) v = json::object();
  return v;
}

}  // namespace

bool ParseGangSchedulerName(const std::string& name, GangConfig* out) {
  if (name.empty()) {
    out->scheduler = GangScheduler::kNone;
    out->scheduler_name.clear();
    return true;
  }
  static const std::regex kSubdomain(
      "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  if (name.size() > 253 || !std::regex_match(name, kSubdomain)) return false;
  out->scheduler = name == "volcano" ? GangScheduler::kVolcano : GangScheduler::kCoscheduling;
  out->scheduler_name = name;
  return true;
}

const char* PodGroupApiVersion(GangScheduler s) {
  switch (s) {
    case GangScheduler::kVolcano: return kVolcanoPodGroupApiVersion;
    case GangScheduler::kCoscheduling: return kCoschedulingPodGroupApiVersion;
    case GangScheduler::kNone: break;
  }
  return "";
}

const char* GangSchedulerDisplay(GangScheduler s) {
  switch (s) {
    case GangScheduler::kVolcano: return "Volcano";
    case GangScheduler::kCoscheduling: return "the coscheduling plugin";
    case GangScheduler::kNone: break;
  }
  return "no gang scheduler";
}

namespace {

// Recovery InPlace adds the rendezvous pod (needed to train) and the spares (not needed).
bool InPlaceJob(const api::DDPJob& job) {
  return job.spec.failure_policy.recovery == api::Recovery::kInPlace;
}

}  // namespace

int GangPodCount(const api::DDPJob& job, int round_size) {
  return round_size + (InPlaceJob(job) ? 1 + job.spec.failure_policy.spares : 0);
}

int GangMinMember(const api::DDPJob& job, int round_size) {
  // The pods a round cannot train without: the workers and, InPlace, the rendezvous pod. Spares
  // are in the group but not required to start it.
  const int count = round_size + (InPlaceJob(job) ? 1 : 0);
  const auto& policy = job.spec.run_policy.scheduling_policy;
  if (!policy || !policy->min_available) return count;
  return std::min(*policy->min_available, count);
}

std::string KueueQueue(const api::DDPJob& job, const GangConfig& config) {
  if (!config.kueue) return "";
  auto it = job.labels.find(api::kKueueQueueNameLabel);
  return it == job.labels.end() ? "" : it->second;
}

std::string KueueGroupName(const api::DDPJob& job, int round) {
  return job.name + "-r" + std::to_string(round);
}

std::string PodGroupName(const api::DDPJob& job) { return job.name; }

json BuildPodGroup(const api::DDPJob& job, const GangConfig& config, int round_size) {
  json meta = {{"name", PodGroupName(job)},
               {"namespace", job.namespace_name},
               {"labels", {{api::kJobNameLabel, job.name}}}};
  if (!job.uid.empty()) meta["ownerReferences"] = json::array({OwnerReference(job)});
  json spec = {{"minMember", GangMinMember(job, round_size)}};
  if (const auto& policy = job.spec.run_policy.scheduling_policy) {
    if (!policy->min_resources.empty()) spec["minResources"] = policy->min_resources;
    if (config.scheduler == GangScheduler::kVolcano) {
      if (!policy->queue.empty()) spec["queue"] = policy->queue;
      if (!policy->priority_class.empty()) spec["priorityClassName"] = policy->priority_class;
    } else if (policy->schedule_timeout_seconds) {
      spec["scheduleTimeoutSeconds"] = *policy->schedule_timeout_seconds;
    }
  }
  json group = {{"apiVersion", PodGroupApiVersion(config.scheduler)}, {"kind", kPodGroupKind}};
  group["metadata"] = std::move(meta);
  group["spec"] = std::move(spec);
  return group;
}

json PodGroupSpecPatch(const json& current, const json& desired) {
  json patch = json::object();
  for (const auto& [key, value] : desired.items()) {
    if (!current.is_object() || !current.contains(key) || current[key] != value) patch[key] = value;
  }
  if (current.is_object() && current.contains("minResources") &&
      !desired.contains("minResources")) {
    patch["minResources"] = nullptr;
  }
  return patch.empty() ? json() : patch;
}

void AddGangKeys(const api::DDPJob& job, const GangConfig& config, int round, int round_size,
                 json* pod) {
  json& meta = ObjectAt(pod, "metadata");
  if (config.scheduler != GangScheduler::kNone) {
    ObjectAt(pod, "spec")["schedulerName"] = config.scheduler_name;
    if (config.scheduler == GangScheduler::kVolcano) {
      ObjectAt(&meta, "annotations")[api::kVolcanoGroupNameAnnotation] = PodGroupName(job);
    } else {
      ObjectAt(&meta, "labels")[api::kCoschedulingPodGroupLabel] = PodGroupName(job);
    }
  }
  const std::string queue = KueueQueue(job, config);
  if (queue.empty()) return;
  json& labels = ObjectAt(&meta, "labels");
  labels[api::kKueueQueueNameLabel] = queue;
  labels[api::kKueuePodGroupNameLabel] = KueueGroupName(job, round);
  json& annotations = ObjectAt(&meta, "annotations");
  annotations[api::kKueueGroupTotalCountAnnotation] = std::to_string(GangPodCount(job, round_size));
  annotations[api::kKueueRetriableInGroupAnnotation] = "false";
}

}  // namespace ddp::plan
