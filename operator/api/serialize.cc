// DDPJob <-> JSON. Parsing reads known fields into the structs and keeps the whole object in
// DDPJob::raw; serializing overlays the structs on raw so unknown fields survive.
#include "operator/api/serialize.h"

#include "operator/api/json_fields.h"
#include "operator/api/incident_fields.h"
#include "operator/api/progress_fields.h"
#include "operator/api/scheduling_fields.h"
#include "operator/api/time_format.h"
#include "operator/api/utf8.h"
#include "operator/api/yaml_json.h"

namespace ddp::api {
namespace {

using internal::Describe;
using internal::ReadBool;
using internal::ReadInt;
using internal::ReadInt64;
using internal::ReadObject;
using internal::ReadString;
using internal::ReadStringList;
using internal::ReadStringMap;
using internal::ReadTime;
using nlohmann::json;

Status ParseElastic(const json& e, ElasticPolicy* out) {
  DDP_RETURN_IF_ERROR(ReadInt(e, "minReplicas", "spec.elastic", &out->min_replicas));
  DDP_RETURN_IF_ERROR(ReadInt(e, "maxReplicas", "spec.elastic", &out->max_replicas));
  DDP_RETURN_IF_ERROR(
      ReadInt(e, "pendingTimeoutSeconds", "spec.elastic", &out->pending_timeout_seconds));
  std::string policy;
  DDP_RETURN_IF_ERROR(ReadString(e, "batchPolicy", "spec.elastic", &policy));
  if (!policy.empty() && !ParseBatchPolicy(policy, &out->batch_policy)) {
    return Status::InvalidArgument("spec.elastic.batchPolicy (\"" + policy +
                                   "\") must be one of ConstantGlobal, ConstantPerRank");
  }
  return ReadInt64(e, "globalBatchSize", "spec.elastic", &out->global_batch_size);
}

Status ParseFailurePolicy(const json& f, FailurePolicy* out) {
  std::string policy;
  DDP_RETURN_IF_ERROR(ReadString(f, "restartPolicy", "spec.failurePolicy", &policy));
  if (!policy.empty() && !ParseRestartPolicy(policy, &out->restart_policy)) {
    return Status::InvalidArgument("spec.failurePolicy.restartPolicy (\"" + policy +
                                   "\") must be one of OnFailure, ExitCode, Never");
  }
  DDP_RETURN_IF_ERROR(ReadInt(f, "maxRestarts", "spec.failurePolicy", &out->max_restarts));
  std::string recovery;
  DDP_RETURN_IF_ERROR(ReadString(f, "recovery", "spec.failurePolicy", &recovery));
  if (!recovery.empty() && !ParseRecovery(recovery, &out->recovery)) {
    return Status::InvalidArgument("spec.failurePolicy.recovery (\"" + recovery +
                                   "\") must be one of Restart, InPlace");
  }
  DDP_RETURN_IF_ERROR(
      ReadInt64(f, "hangTimeoutSeconds", "spec.failurePolicy", &out->hang_timeout_seconds));
  DDP_RETURN_IF_ERROR(ReadInt(f, "spares", "spec.failurePolicy", &out->spares));
  std::optional<int64_t> liveness;
  DDP_RETURN_IF_ERROR(ReadInt64(f, "livenessTimeoutSeconds", "spec.failurePolicy", &liveness));
  if (liveness) out->liveness_timeout_seconds = *liveness;
  auto it = f.find("retryableExitCodes");
  if (it != f.end() && !it->is_null()) {
    if (!it->is_array()) {
      return Status::InvalidArgument(
          "spec.failurePolicy.retryableExitCodes: expected a list of integers, got " +
          Describe(*it));
    }
    out->retryable_exit_codes.clear();
    for (size_t i = 0; i < it->size(); ++i) {
      int code = 0;
      json holder = {{"v", (*it)[i]}};
      Status s = ReadInt(holder, "v", "", &code);
      if (!s.ok() || (*it)[i].is_null()) {
        return Status::InvalidArgument("spec.failurePolicy.retryableExitCodes[" +
                                       std::to_string(i) + "]: expected an integer, got " +
                                       Describe((*it)[i]));
      }
      out->retryable_exit_codes.push_back(code);
    }
  }
  return Status::OK();
}

Status ParseRunPolicy(const json& r, RunPolicy* out) {
  const std::string p = "spec.runPolicy";
  DDP_RETURN_IF_ERROR(ReadInt64(r, "activeDeadlineSeconds", p, &out->active_deadline_seconds));
  DDP_RETURN_IF_ERROR(
      ReadInt64(r, "ttlSecondsAfterFinished", p, &out->ttl_seconds_after_finished));
  DDP_RETURN_IF_ERROR(ReadBool(r, "suspend", p, &out->suspend));
  std::string clean;
  DDP_RETURN_IF_ERROR(ReadString(r, "cleanPodPolicy", p, &clean));
  if (!clean.empty() && !ParseCleanPodPolicy(clean, &out->clean_pod_policy)) {
    return Status::InvalidArgument("spec.runPolicy.cleanPodPolicy (\"" + clean +
                                   "\") must be one of None, Running, All");
  }
  if (auto np = r.find("networkPolicy"); np != r.end() && !np->is_null()) {
    bool on = true;
    DDP_RETURN_IF_ERROR(ReadBool(r, "networkPolicy", p, &on));
    out->network_policy = on;
  }
  const json* sched = nullptr;
  DDP_RETURN_IF_ERROR(ReadObject(r, "schedulingPolicy", p, &sched));
  if (sched) {
    out->scheduling_policy.emplace();
    DDP_RETURN_IF_ERROR(internal::ParseSchedulingPolicy(*sched, &*out->scheduling_policy));
  }
  return Status::OK();
}

Status ParseSpec(const json& s, DDPJobSpec* out) {
  DDP_RETURN_IF_ERROR(ReadInt(s, "replicas", "spec", &out->replicas));
  DDP_RETURN_IF_ERROR(ReadInt(s, "nprocPerNode", "spec", &out->nproc_per_node));
  const json* sub = nullptr;
  DDP_RETURN_IF_ERROR(ReadObject(s, "elastic", "spec", &sub));
  if (sub) {
    out->elastic.emplace();
    DDP_RETURN_IF_ERROR(ParseElastic(*sub, &*out->elastic));
  }
  DDP_RETURN_IF_ERROR(ReadObject(s, "rendezvous", "spec", &sub));
  if (sub) {
    DDP_RETURN_IF_ERROR(ReadInt(*sub, "port", "spec.rendezvous", &out->rendezvous.port));
    DDP_RETURN_IF_ERROR(
        ReadInt(*sub, "timeoutSeconds", "spec.rendezvous", &out->rendezvous.timeout_seconds));
  }
  DDP_RETURN_IF_ERROR(ReadObject(s, "failurePolicy", "spec", &sub));
  if (sub) DDP_RETURN_IF_ERROR(ParseFailurePolicy(*sub, &out->failure_policy));
  DDP_RETURN_IF_ERROR(ReadObject(s, "runPolicy", "spec", &sub));
  if (sub) DDP_RETURN_IF_ERROR(ParseRunPolicy(*sub, &out->run_policy));
  DDP_RETURN_IF_ERROR(ReadObject(s, "checkpoint", "spec", &sub));
  if (sub) {
    std::string path;
    DDP_RETURN_IF_ERROR(ReadString(*sub, "path", "spec.checkpoint", &path));
    if (!path.empty()) out->checkpoint.path = path;
  }
  DDP_RETURN_IF_ERROR(ReadObject(s, "metrics", "spec", &sub));
  if (sub) DDP_RETURN_IF_ERROR(ReadInt(*sub, "port", "spec.metrics", &out->metrics.port));
  DDP_RETURN_IF_ERROR(ReadObject(s, "template", "spec", &sub));
  if (sub) out->pod_template = *sub;
  return Status::OK();
}

Status ParseCondition(const json& c, const std::string& path, Condition* out) {
  DDP_RETURN_IF_ERROR(ReadString(c, "type", path, &out->type));
  DDP_RETURN_IF_ERROR(ReadString(c, "status", path, &out->status));
  DDP_RETURN_IF_ERROR(ReadString(c, "reason", path, &out->reason));
  DDP_RETURN_IF_ERROR(ReadString(c, "message", path, &out->message));
  std::optional<TimePoint> t;
  DDP_RETURN_IF_ERROR(ReadTime(c, "lastTransitionTime", path, &t));
  if (t) out->last_transition_time = *t;
  std::optional<int64_t> gen;
  DDP_RETURN_IF_ERROR(ReadInt64(c, "observedGeneration", path, &gen));
  out->observed_generation = gen.value_or(0);
  return Status::OK();
}

// Overlays `value` at obj[key], creating obj as an object when needed.
json Overlay(const json& base, const char* key) {
  if (base.is_object()) {
    auto it = base.find(key);
    if (it != base.end() && it->is_object()) return *it;
  }
  return json::object();
}

void SetOrErase(json* obj, const char* key, const std::optional<int64_t>& v) {
  if (v) {
    (*obj)[key] = *v;
  } else {
    obj->erase(key);
  }
}

}  // namespace

StatusOr<DDPJobStatus> ParseStatusJson(const json& s) {
  DDPJobStatus out;
  if (s.is_null()) return out;
  if (!s.is_object()) return Status::InvalidArgument("status: expected an object, got " + Describe(s));
  DDP_RETURN_IF_ERROR(ReadString(s, "phase", "status", &out.phase));
  auto conds = s.find("conditions");
  if (conds != s.end() && conds->is_array()) {
    for (size_t i = 0; i < conds->size(); ++i) {
      Condition c;
      DDP_RETURN_IF_ERROR(
          ParseCondition((*conds)[i], "status.conditions[" + std::to_string(i) + "]", &c));
      out.conditions.push_back(c);
    }
  }
  std::optional<int64_t> gen;
  DDP_RETURN_IF_ERROR(ReadInt64(s, "observedGeneration", "status", &gen));
  out.observed_generation = gen.value_or(0);
  DDP_RETURN_IF_ERROR(ReadInt(s, "replicas", "status", &out.replicas));
  DDP_RETURN_IF_ERROR(ReadInt(s, "readyReplicas", "status", &out.ready_replicas));
  DDP_RETURN_IF_ERROR(ReadInt(s, "worldSize", "status", &out.world_size));
  DDP_RETURN_IF_ERROR(ReadInt(s, "round", "status", &out.round));
  DDP_RETURN_IF_ERROR(ReadInt(s, "restarts", "status", &out.restarts));
  DDP_RETURN_IF_ERROR(ReadInt(s, "disruptions", "status", &out.disruptions));
  DDP_RETURN_IF_ERROR(ReadInt(s, "recoveries", "status", &out.recoveries));
  DDP_RETURN_IF_ERROR(ReadInt(s, "spares", "status", &out.spares));
  DDP_RETURN_IF_ERROR(ReadInt(s, "readySpares", "status", &out.ready_spares));
  DDP_RETURN_IF_ERROR(ReadInt(s, "silentPodsHeld", "status", &out.silent_pods_held));
  DDP_RETURN_IF_ERROR(ReadString(s, "selector", "status", &out.selector));
  DDP_RETURN_IF_ERROR(ReadTime(s, "startTime", "status", &out.start_time));
  DDP_RETURN_IF_ERROR(ReadTime(s, "completionTime", "status", &out.completion_time));
  const json* lf = nullptr;
  DDP_RETURN_IF_ERROR(ReadObject(s, "lastFailure", "status", &lf));
  if (lf && !lf->empty()) {
    LastFailure f;
    const std::string p = "status.lastFailure";
    DDP_RETURN_IF_ERROR(ReadString(*lf, "pod", p, &f.pod));
    DDP_RETURN_IF_ERROR(ReadInt(*lf, "rank", p, &f.rank));
    std::optional<int64_t> code;
    DDP_RETURN_IF_ERROR(ReadInt64(*lf, "exitCode", p, &code));
    if (code) f.exit_code = static_cast<int>(*code);
    DDP_RETURN_IF_ERROR(ReadString(*lf, "reason", p, &f.reason));
    DDP_RETURN_IF_ERROR(ReadString(*lf, "message", p, &f.message));
    DDP_RETURN_IF_ERROR(ReadTime(*lf, "time", p, &f.time));
    DDP_RETURN_IF_ERROR(ReadString(*lf, "podUID", p, &f.pod_uid));
    DDP_RETURN_IF_ERROR(internal::ReadNumber(*lf, "recoverySeconds", p, &f.recovery_seconds));
    out.last_failure = f;
  }
  DDP_RETURN_IF_ERROR(ReadStringList(s, "countedPods", "status", &out.counted_pods));
  if (out.counted_pods.size() > kMaxCountedPods) {
    return Status::InvalidArgument("status.countedPods: " + std::to_string(out.counted_pods.size()) +
                                   " entries, more than " + std::to_string(kMaxCountedPods));
  }
  DDP_RETURN_IF_ERROR(ReadString(s, "rendezvousUID", "status", &out.rendezvous_uid));
  DDP_RETURN_IF_ERROR(internal::ParseProgress(s, &out.progress));
  // Written by the operator alone; an entry that is not one (hand-edited) is dropped, not an
  // error: forgetting a suspect node costs at most a pod placed on it again.
  auto suspects = s.find("suspectNodes");
  if (suspects != s.end() && suspects->is_array()) {
    for (const json& e : *suspects) {
      if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
          !e.contains("since") || !e["since"].is_string()) {
        continue;
      }
      const std::string name = e["name"].get<std::string>();
      StatusOr<TimePoint> since = ParseTime(e["since"].get<std::string>());
      if (name.empty() || name.size() > 253 || !since.ok()) continue;
      out.suspect_nodes.push_back({name, *since});
    }
    if (out.suspect_nodes.size() > kMaxSuspectNodes) {
      out.suspect_nodes.erase(out.suspect_nodes.begin(),
                              out.suspect_nodes.end() - static_cast<std::ptrdiff_t>(kMaxSuspectNodes));
    }
  }
  internal::ParseIncidents(s, &out);
  return out;
}

StatusOr<DDPJob> ParseDDPJobJson(const json& object) {
  if (!object.is_object()) {
    return Status::InvalidArgument("expected a DDPJob object, got " + Describe(object));
  }
  DDPJob job;
  job.raw = object;
  std::string api_version, kind;
  DDP_RETURN_IF_ERROR(ReadString(object, "apiVersion", "", &api_version));
  DDP_RETURN_IF_ERROR(ReadString(object, "kind", "", &kind));
  // Lists from some clients omit apiVersion/kind per item; a present but wrong one is an error.
  if (!api_version.empty() && api_version != kApiVersion) {
    return Status::InvalidArgument("apiVersion (\"" + api_version + "\") must be \"" +
                                   kApiVersion + "\"");
  }
  if (!kind.empty() && kind != kKind) {
    return Status::InvalidArgument("kind (\"" + kind + "\") must be \"" + kKind + "\"");
  }
  const json* meta = nullptr;
  DDP_RETURN_IF_ERROR(ReadObject(object, "metadata", "", &meta));
  if (meta) {
    DDP_RETURN_IF_ERROR(ReadString(*meta, "name", "metadata", &job.name));
    DDP_RETURN_IF_ERROR(ReadString(*meta, "namespace", "metadata", &job.namespace_name));
    DDP_RETURN_IF_ERROR(ReadString(*meta, "uid", "metadata", &job.uid));
    std::optional<int64_t> gen;
    DDP_RETURN_IF_ERROR(ReadInt64(*meta, "generation", "metadata", &gen));
    job.generation = gen.value_or(0);
    DDP_RETURN_IF_ERROR(ReadString(*meta, "resourceVersion", "metadata", &job.resource_version));
    DDP_RETURN_IF_ERROR(ReadStringMap(*meta, "labels", "metadata", &job.labels));
    DDP_RETURN_IF_ERROR(
        ReadTime(*meta, "deletionTimestamp", "metadata", &job.deletion_timestamp));
  }
  const json* spec = nullptr;
  DDP_RETURN_IF_ERROR(ReadObject(object, "spec", "", &spec));
  if (spec) DDP_RETURN_IF_ERROR(ParseSpec(*spec, &job.spec));
  auto status = object.find("status");
  if (status != object.end()) {
    StatusOr<DDPJobStatus> st = ParseStatusJson(*status);
    if (!st.ok()) return st.status();
    job.status = std::move(st).value();
  }
  return job;
}

StatusOr<std::vector<DDPJob>> ParseDDPJobYaml(const std::string& text) {
  StatusOr<std::vector<json>> docs = ParseYamlDocuments(text);
  if (!docs.ok()) return docs.status();
  std::vector<DDPJob> jobs;
  for (size_t i = 0; i < docs->size(); ++i) {
    const json& doc = (*docs)[i];
    const std::string where = "document " + std::to_string(i + 1) + ": ";
    if (!doc.is_object() || !doc.contains("kind")) {
      return Status::InvalidArgument(where + "not a DDPJob (no kind)");
    }
    StatusOr<DDPJob> job = ParseDDPJobJson(doc);
    if (!job.ok()) return job.status().WithContext(where.substr(0, where.size() - 2));
    jobs.push_back(std::move(job).value());
  }
  return jobs;
}

json SpecToJson(const DDPJobSpec& spec, json base) {
  if (!base.is_object()) base = json::object();
  base["replicas"] = spec.replicas;
  base["nprocPerNode"] = spec.nproc_per_node;
  if (spec.elastic) {
    json e = Overlay(base, "elastic");
    e["minReplicas"] = spec.elastic->min_replicas;
    e["maxReplicas"] = spec.elastic->max_replicas;
    e["pendingTimeoutSeconds"] = spec.elastic->pending_timeout_seconds;
    e["batchPolicy"] = BatchPolicyName(spec.elastic->batch_policy);
    SetOrErase(&e, "globalBatchSize", spec.elastic->global_batch_size);
    base["elastic"] = e;
  } else {
    base.erase("elastic");
  }
  json r = Overlay(base, "rendezvous");
  r["port"] = spec.rendezvous.port;
  r["timeoutSeconds"] = spec.rendezvous.timeout_seconds;
  base["rendezvous"] = r;
  json f = Overlay(base, "failurePolicy");
  f["restartPolicy"] = RestartPolicyName(spec.failure_policy.restart_policy);
  f["maxRestarts"] = spec.failure_policy.max_restarts;
  f["retryableExitCodes"] = spec.failure_policy.retryable_exit_codes;
  f["recovery"] = RecoveryName(spec.failure_policy.recovery);
  SetOrErase(&f, "hangTimeoutSeconds", spec.failure_policy.hang_timeout_seconds);
  f["spares"] = spec.failure_policy.spares;
  f["livenessTimeoutSeconds"] = spec.failure_policy.liveness_timeout_seconds;
  base["failurePolicy"] = f;
  json run = Overlay(base, "runPolicy");
  SetOrErase(&run, "activeDeadlineSeconds", spec.run_policy.active_deadline_seconds);
  SetOrErase(&run, "ttlSecondsAfterFinished", spec.run_policy.ttl_seconds_after_finished);
  run["suspend"] = spec.run_policy.suspend;
  run["cleanPodPolicy"] = CleanPodPolicyName(spec.run_policy.clean_pod_policy);
  if (spec.run_policy.network_policy) {
    run["networkPolicy"] = *spec.run_policy.network_policy;
  } else {
    run.erase("networkPolicy");
  }
  if (const auto& g = spec.run_policy.scheduling_policy) {
    run["schedulingPolicy"] =
        internal::SchedulingPolicyToJson(*g, Overlay(run, "schedulingPolicy"));
  } else {
    run.erase("schedulingPolicy");
  }
  base["runPolicy"] = run;
  json c = Overlay(base, "checkpoint");
  if (spec.checkpoint.path) {
    c["path"] = *spec.checkpoint.path;
  } else {
    c.erase("path");
  }
  base["checkpoint"] = c;
  json m = Overlay(base, "metrics");
  m["port"] = spec.metrics.port;
  base["metrics"] = m;
  base["template"] = spec.pod_template;
  return base;
}

json StatusToJson(const DDPJobStatus& s) {
  json out = json::object();
  if (!s.phase.empty()) out["phase"] = s.phase;
  json conds = json::array();
  for (const auto& c : s.conditions) {
    conds.push_back({{"type", c.type},
                     {"status", c.status},
                     {"reason", SanitizeUtf8(c.reason)},
                     {"message", SanitizeUtf8(c.message)},
                     {"lastTransitionTime", FormatTime(c.last_transition_time)},
                     {"observedGeneration", c.observed_generation}});
  }
  out["conditions"] = conds;
  out["observedGeneration"] = s.observed_generation;
  out["replicas"] = s.replicas;
  out["readyReplicas"] = s.ready_replicas;
  out["worldSize"] = s.world_size;
  out["round"] = s.round;
  out["restarts"] = s.restarts;
  out["disruptions"] = s.disruptions;
  out["recoveries"] = s.recoveries;
  out["spares"] = s.spares;
  out["readySpares"] = s.ready_spares;
  if (s.silent_pods_held > 0) out["silentPodsHeld"] = s.silent_pods_held;  // absent: none
  if (s.last_failure) {
    const LastFailure& f = *s.last_failure;
    // Texts from pods (termination messages) may be anything: a status write must not throw.
    json lf = {{"pod", f.pod},
               {"rank", f.rank},
               {"reason", SanitizeUtf8(f.reason)},
               {"message", SanitizeUtf8(f.message)}};
    if (f.exit_code) lf["exitCode"] = *f.exit_code;
    if (f.time) lf["time"] = FormatTime(*f.time);
    if (!f.pod_uid.empty()) lf["podUID"] = f.pod_uid;
    if (f.recovery_seconds) lf["recoverySeconds"] = *f.recovery_seconds;
    out["lastFailure"] = lf;
  }
  if (!s.counted_pods.empty()) out["countedPods"] = s.counted_pods;
  if (!s.rendezvous_uid.empty()) out["rendezvousUID"] = s.rendezvous_uid;
  if (s.progress) out["progress"] = internal::ProgressToJson(*s.progress);
  if (!s.suspect_nodes.empty()) {
    json list = json::array();
    for (const SuspectNode& n : s.suspect_nodes) {
      list.push_back({{"name", SanitizeUtf8(n.name)}, {"since", FormatTime(n.since)}});
    }
    out["suspectNodes"] = list;
  }
  internal::IncidentsToJson(s, &out);
  out["selector"] = s.selector;
  if (s.start_time) out["startTime"] = FormatTime(*s.start_time);
  if (s.completion_time) out["completionTime"] = FormatTime(*s.completion_time);
  return out;
}

json ToJson(const DDPJob& job) {
  json out = job.raw.is_object() ? job.raw : json::object();
  if (!out.contains("apiVersion")) out["apiVersion"] = kApiVersion;
  if (!out.contains("kind")) out["kind"] = kKind;
  json meta = Overlay(out, "metadata");
  meta["name"] = job.name;
  if (!job.namespace_name.empty()) meta["namespace"] = job.namespace_name;
  if (!job.labels.empty()) meta["labels"] = job.labels;
  out["metadata"] = meta;
  out["spec"] = SpecToJson(job.spec, Overlay(out, "spec"));
  // A manifest without status stays without one until the operator has something to say.
  if (out.contains("status") || job.status != DDPJobStatus{}) {
    json st = Overlay(out, "status");
    for (const char* optional_key : {"lastFailure", "countedPods", "rendezvousUID", "progress", "startTime",
                                     "completionTime", "phase", "suspectNodes",
                                     "incidents", "incidentsTotal", "goodput"}) {
      st.erase(optional_key);  // absent in the struct -> absent on the wire
    }
    const json fresh = StatusToJson(job.status);
    for (const auto& [k, v] : fresh.items()) st[k] = v;
    out["status"] = st;
  }
  return out;
}

}  // namespace ddp::api
