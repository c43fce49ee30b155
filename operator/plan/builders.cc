// Service and worker Pod builders. They start from the user's template and add to it; nothing the
// user wrote is dropped except fields the operator must own (name, restartPolicy, hostname, ...).
#include "operator/plan/builders.h"

#include <algorithm>

#include "common/group_contract.h"
#include "operator/plan/env.h"
#include "operator/plan/names.h"
#include "operator/plan/security.h"

namespace ddp::plan {
namespace {

using nlohmann::json;

json ObjectAt(const json& parent, const char* key) {
  if (parent.is_object()) {
    auto it = parent.find(key);
    if (it != parent.end() && it->is_object()) return *it;
  }
  return json::object();
}

// The string at `key`, or "" when absent or not a string. Never throws: user data is read only
// through these (api::ParsePodTemplate rejected ill-typed templates before any builder runs).
std::string StringAt(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

// Adds a named container port unless the container already exposes that port number.
void EnsurePort(json* container, const char* name, int port) {
  json& ports = (*container)["ports"];
  if (!ports.is_array()) ports = json::array();
  for (const auto& p : ports) {
    if (!p.is_object()) continue;
    auto number = p.find("containerPort");
    if (number != p.end() && number->is_number() && *number == port) return;
    if (StringAt(p, "name") == name) return;  // names must stay unique
  }
  ports.push_back({{"name", name}, {"containerPort", port}, {"protocol", "TCP"}});
}

}  // namespace

json OwnerReference(const api::DDPJob& job) {
  return {{"apiVersion", api::kApiVersion}, {"kind", api::kKind},         {"name", job.name},
          {"uid", job.uid},                 {"controller", true},        {"blockOwnerDeletion", true}};
}

int WorkerContainerIndex(const json& pod_spec) {
  if (!pod_spec.is_object()) return -1;
  auto it = pod_spec.find("containers");
  if (it == pod_spec.end() || !it->is_array() || it->empty()) return -1;
  const json& containers = *it;
  for (size_t i = 0; i < containers.size(); ++i) {
    if (StringAt(containers[i], "name") == kWorkerContainerName) {
      return static_cast<int>(i);
    }
  }
  return containers[0].is_object() ? 0 : -1;
}

json BuildService(const api::DDPJob& job) {
  const int port = job.spec.rendezvous.port;
  json meta = {{"name", ServiceName(job)},
               {"namespace", job.namespace_name},
               {"labels", {{api::kJobNameLabel, job.name}}}};
  if (!job.uid.empty()) meta["ownerReferences"] = json::array({OwnerReference(job)});
  return {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata", meta},
      {"spec",
       {{"clusterIP", "None"},
        // Rank 0 must be resolvable before it is Ready: readiness needs the group to form.
        {"publishNotReadyAddresses", true},
        {"selector", {{api::kJobNameLabel, job.name}}},
        {"ports", json::array({{{"name", kRendezvousPortName},
                                {"port", port},
                                {"targetPort", port},
                                {"protocol", "TCP"}}})}}},
  };
}

namespace {

// The env entries of the worker container: ours (RendezvousEnv, with the downward API's UID and
// IP under InPlace, and DDP_TERMINATION_LOG: where the kubelet reads this container's
// termination message), then the user's own, whose names validation keeps apart from ours.
json ContainerEnv(const api::DDPJob& job, const json& container, EnvList ours, int metrics_port) {
  json env = json::array();
  for (auto& [name, value] : ours) {
    if (name == api::kEnvMetricsPort) value = std::to_string(metrics_port);
    env.push_back({{"name", name}, {"value", value}});
  }
  // A template may move the message (log shippers do): ddp-worker's `Finished` must go there,
  // or the kubelet reports none and a finished run reads as a failure.
  const std::string message_path = StringAt(container, "terminationMessagePath");
  env.push_back({{"name", group::kEnvTerminationLog},
                 {"value", message_path.empty() ? group::kDefaultTerminationLog : message_path}});
  if (job.spec.failure_policy.recovery == api::Recovery::kInPlace) {
    env.push_back({{"name", group::kEnvPodUid},
                   {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.uid"}}}}}});
    env.push_back({{"name", group::kEnvPodIp},
                   {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}});
  }
  // Ours first, so the user's values may refer to them as $(MASTER_ADDR). Validation rejects
  // user entries with our names; an unvalidated duplicate is dropped rather than let it win.
  const std::vector<std::string>& reserved = api::OperatorEnvNames();
  auto user = container.is_object() ? container.find("env") : container.end();
  if (container.is_object() && user != container.end() && user->is_array()) {
    for (const auto& e : *user) {
      const std::string n = StringAt(e, "name");
      if (std::find(reserved.begin(), reserved.end(), n) == reserved.end()) env.push_back(e);
    }
  }
  return env;
}

json Metadata(const api::DDPJob& job, const std::string& name, const char* role,
              const char* index_label, int index, int round) {
  json meta = ObjectAt(job.spec.pod_template, "metadata");
  meta.erase("generateName");
  meta.erase("creationTimestamp");
  meta["name"] = name;
  meta["namespace"] = job.namespace_name;
  json labels = ObjectAt(meta, "labels");
  labels[api::kJobNameLabel] = job.name;
  if (index_label != nullptr) labels[index_label] = std::to_string(index);
  labels[api::kRoundLabel] = std::to_string(round);
  if (job.spec.failure_policy.recovery == api::Recovery::kInPlace) labels[api::kRoleLabel] = role;
  meta["labels"] = std::move(labels);
  // A job that was never stored (render's dry run) has no uid to point at.
  if (!job.uid.empty()) meta["ownerReferences"] = json::array({OwnerReference(job)});
  return meta;
}

// A worker or spare pod: the user's template with ours added.
json BuildTrainingPod(const api::DDPJob& job, const std::string& name, const char* role,
                      const char* index_label, int index, int node_index, int round, int replicas,
                      const PodOverrides& overrides) {
  json meta = Metadata(job, name, role, index_label, index, round);
  json spec = ObjectAt(job.spec.pod_template, "spec");
  spec["hostname"] = name;
  spec["subdomain"] = ServiceName(job);
  // The operator decides about restarts (a new round), never the kubelet.
  spec["restartPolicy"] = "Never";
  const int w = WorkerContainerIndex(spec);
  if (w >= 0) {
    json& container = spec["containers"][w];
    const int metrics_port = overrides.metrics_port > 0 ? overrides.metrics_port
                                                        : job.spec.metrics.port;
    container["env"] = ContainerEnv(job, container,
                                    RendezvousEnv(job, node_index, round, replicas,
                                                  overrides.master_addr, overrides.master_port,
                                                  name, role),
                                    metrics_port);
    EnsurePort(&container, kRendezvousPortName, job.spec.rendezvous.port);
    EnsurePort(&container, kMetricsPortName, metrics_port);
  }
  ApplyRunAsGroup(&spec);  // the image's group, not root's, beside runAsUser (security.h)
  // Moved in, not listed in an initializer (which copies every node).
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  pod["metadata"] = std::move(meta);
  pod["spec"] = std::move(spec);
  return pod;
}

}  // namespace

json BuildWorkerPod(const api::DDPJob& job, int index, int round, int replicas,
                    const PodOverrides& overrides) {
  return BuildTrainingPod(job, PodName(job, index), group::kRoleWorker, api::kReplicaIndexLabel,
                          index, index, round, replicas, overrides);
}

json BuildSparePod(const api::DDPJob& job, int k, int round, int replicas,
                   const PodOverrides& overrides) {
  return BuildTrainingPod(job, SparePodName(job, k), group::kRoleSpare, api::kSpareIndexLabel, k,
                          -1, round, replicas, overrides);
}

json BuildRendezvousPod(const api::DDPJob& job, int round, int replicas,
                        const PodOverrides& overrides) {
  const std::string name = RendezvousPodName(job);
  json meta = Metadata(job, name, group::kRoleRendezvous, nullptr, 0, round);
  const json tmpl_spec = ObjectAt(job.spec.pod_template, "spec");
  json spec = json::object();
  for (const char* key : {"nodeSelector", "tolerations", "affinity", "imagePullSecrets",
                          "serviceAccountName", "securityContext", "priorityClassName",
                          "schedulerName", "runtimeClassName", "dnsPolicy", "dnsConfig"}) {
    if (auto v = tmpl_spec.find(key); v != tmpl_spec.end()) spec[key] = *v;
  }
  spec["hostname"] = name;
  spec["subdomain"] = ServiceName(job);
  spec["restartPolicy"] = "Never";
  const int w = WorkerContainerIndex(tmpl_spec);
  const json worker = w >= 0 ? (*tmpl_spec.find("containers"))[w] : json::object();
  const int metrics_port = overrides.metrics_port > 0 ? overrides.metrics_port
                                                      : job.spec.metrics.port;
  json c = {{"name", "rendezvous"}, {"command", json::array({"ddp-worker", "rendezvous"})}};
  for (const char* key : {"image", "imagePullPolicy", "securityContext"}) {
    if (!worker.is_object()) break;
    if (auto v = worker.find(key); v != worker.end()) c[key] = *v;
  }
  c["env"] = ContainerEnv(job, json::object(),
                          RendezvousEnv(job, -1, round, replicas, overrides.master_addr,
                                        overrides.master_port, name, group::kRoleRendezvous),
                          metrics_port);
  // Small and accelerator-free: it serves a key-value store and a page.
  c["resources"] = {{"requests", {{"cpu", "100m"}, {"memory", "256Mi"}}},
                    {"limits", {{"memory", "1Gi"}}}};
  json probe = {{"httpGet", {{"path", "/healthz"}, {"port", metrics_port}}},
                {"periodSeconds", 5}, {"timeoutSeconds", 3}, {"failureThreshold", 3}};
  c["readinessProbe"] = probe;
  c["livenessProbe"] = probe;
  EnsurePort(&c, kRendezvousPortName, job.spec.rendezvous.port);
  EnsurePort(&c, kMetricsPortName, metrics_port);
  if (job.spec.elastic) {
    // Elastic in place: the size the planner asks the group for, as an annotation the kubelet
    // projects into a file; the planner patches the annotation, never the running pod's env.
    json annotations = ObjectAt(meta, "annotations");
    annotations[group::kGroupSizeAnnotation] = std::to_string(replicas);
    meta["annotations"] = std::move(annotations);
    c["volumeMounts"] = json::array({{{"name", "ddp-group"}, {"mountPath", kGroupSizeDir},
                                      {"readOnly", true}}});
    spec["volumes"] = json::array({{{"name", "ddp-group"},
                                    {"downwardAPI",
                                     {{"items", json::array({{{"path", "size"},
                                                              {"fieldRef",
                                                               {{"fieldPath",
                                                                 std::string("metadata.annotations['") +
                                                                     group::kGroupSizeAnnotation +
                                                                     "']"}}}}})}}}}});
  }
  spec["containers"] = json::array({std::move(c)});
  ApplyRunAsGroup(&spec);  // no volumes here: runAsGroup only
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}};
  pod["metadata"] = std::move(meta);
  pod["spec"] = std::move(spec);
  return pod;
}

}  // namespace ddp::plan
