// Controller::Apply: turns one Plan into API writes. Idempotent by construction: a create that
// finds the object and a delete that misses it are success, so re-applying a plan is harmless.

#include "common/logging.h"
#include "operator/api/serialize.h"
#include "operator/controller/controller.h"
#include "operator/controller/events.h"

namespace ddp::controller {
namespace {

using SteadyClock = std::chrono::steady_clock;

// `pod_groups`: the gang scheduler's PodGroup resource, or nullptr without one.
const Resource* ResourceForKind(const std::string& kind, const Resource* pod_groups) {
  if (kind == "Pod") return &kPods;
  if (kind == "Service") return &kServices;
  if (kind == "DDPJob") return &kDDPJobs;
  if (kind == plan::kPodGroupKind) return pod_groups;
  if (kind == plan::kNetworkPolicyKind) return &kNetworkPolicies;
  return nullptr;
}

std::string NameOf(const nlohmann::json& obj) {
  auto m = obj.find("metadata");
  return m != obj.end() && m->is_object() ? m->value("name", "") : "";
}

}  // namespace

Status Controller::ApplyDeletes(const std::string& key, const api::DDPJob& job,
                                const std::vector<plan::Delete>& deletes) {
  std::vector<const plan::Delete*> todo;
  std::vector<DeleteCall> calls;
  for (const auto& d : deletes) {
    if (d.kind == "DDPJob") continue;  // the job itself goes last (Plan::delete_job)
    const Resource* r = ResourceForKind(d.kind, pod_group_resource_);
    if (!r) return Status::Internal(key + ": plan deletes unknown kind " + d.kind);
    DeleteOptions opts;
    opts.propagation_policy = "Background";
    opts.precondition_uid = d.uid;
    opts.grace_period_seconds = d.grace_period_seconds;  // 0: a force delete (lost_nodes.h)
    todo.push_back(&d);
    calls.push_back({r, job.namespace_name, d.name, opts});
  }
  if (calls.empty()) return Status::OK();
  for (size_t i = 0; i < todo.size(); ++i) {
    if (calls[i].resource != &kPods) continue;
    expectations_.ExpectDelete(key, todo[i]->uid, SteadyClock::now());
  }
  std::vector<Status> results = client_->DeleteAll(calls);
  Status first;
  for (size_t i = 0; i < todo.size(); ++i) {
    const plan::Delete& d = *todo[i];
    const Status& s = results[i];
    bool is_pod = calls[i].resource == &kPods;
    // NotFound: already gone. Conflict: the uid precondition failed, so the object under that
    // name is a newer incarnation that this plan did not mean.
    bool gone = s.ok() || s.code() == StatusCode::kNotFound || s.code() == StatusCode::kConflict;
    if (is_pod && !s.ok()) expectations_.DeletionObserved(key, d.uid);  // no event will come
    if (s.ok() && is_pod) metrics_->pods_deleted_total.Get().Inc();
    if (s.ok()) {
      DDP_LOG(INFO) << key << ": deleted " << d.kind << " " << d.name
                    << (d.grace_period_seconds == 0 ? " (force, grace 0)" : "");
    }
    if (!gone && first.ok()) first = s.WithContext(key + ": delete " + d.kind + " " + d.name);
  }
  return first;
}

Status Controller::ApplyPatches(const std::string& key, const api::DDPJob& job,
                                const std::vector<plan::Patch>& patches, Status* policy_error) {
  for (const plan::Patch& p : patches) {
    // Only the PodGroup, the NetworkPolicy's spec and a rendezvous pod's group-size annotation
    // (elastic in place) are patched; a plan that patches anything else is a bug.
    const bool pod = p.kind == "Pod" && p.api_version == "v1" && p.merge_patch.size() == 1 &&
                     p.merge_patch.contains("metadata");
    const bool policy = p.kind == plan::kNetworkPolicyKind &&
                        p.api_version == plan::kNetworkPolicyApiVersion &&
                        p.merge_patch.size() == 1 && p.merge_patch.contains("spec");
    if (!pod && !policy &&
        (p.kind != plan::kPodGroupKind || !pod_group_resource_ ||
         p.api_version != pod_group_resource_->ApiVersion())) {
      return Status::Internal(key + ": plan patches " + p.api_version + " " + p.kind);
    }
    auto patched =
        pod      ? client_->MergePatch(kPods, job.namespace_name, p.name, p.merge_patch)
        : policy ? client_->MergePatch(kNetworkPolicies, job.namespace_name, p.name, p.merge_patch)
                 : client_->MergePatch(*pod_group_resource_, job.namespace_name, p.name,
                                       p.merge_patch);
    if (!patched.ok() && policy) {
      *policy_error = patched.status().WithContext(key + ": patch " + p.kind + " " + p.name);
      continue;
    }
    if (!patched.ok()) {
      return patched.status().WithContext(key + ": patch " + p.kind + " " + p.name);
    }
    DDP_LOG(INFO) << key << ": patched " << p.kind << " " << p.name << " " << p.merge_patch.dump();
  }
  return Status::OK();
}

Status Controller::ApplyCreates(const std::string& key, const api::DDPJob& job,
                                std::vector<nlohmann::json> creates) {
  // The PodGroup (pods join it), the NetworkPolicy (no pod is reachable before it) and the
  // Service (pods resolve rank 0 through it) first, then every pod at once.
  std::vector<CreateCall> first, rest;
  for (auto& obj : creates) {
    std::string kind = obj.value("kind", "");
    const Resource* r = ResourceForKind(kind, pod_group_resource_);
    if (!r) return Status::Internal(key + ": plan creates unknown kind " + kind);
    (r == &kPods ? rest : first).push_back({r, job.namespace_name, std::move(obj)});
  }
  auto send = [&](const std::vector<CreateCall>& calls) {
    for (const auto& c : calls) {
      if (c.resource != &kPods) continue;
      expectations_.ExpectCreate(key, NameOf(c.object), SteadyClock::now());
    }
    std::vector<Status> results = client_->CreateAll(calls);
    Status err;
    for (size_t i = 0; i < calls.size(); ++i) {
      const CreateCall& c = calls[i];
      std::string kind = c.object.value("kind", ""), name = NameOf(c.object);
      bool is_pod = c.resource == &kPods;
      // Unless it was created, the informer may never report it: stop expecting it.
      if (is_pod && !results[i].ok()) expectations_.CreationObserved(key, name);
      if (results[i].ok()) {
        if (is_pod) metrics_->pods_created_total.Get().Inc();
        DDP_LOG(DEBUG) << key << ": created " << kind << " " << name;
      } else if (results[i].code() != StatusCode::kAlreadyExists && err.ok()) {
        err = results[i].WithContext(key + ": create " + kind + " " + name);
      }
    }
    return err;
  };
  DDP_RETURN_IF_ERROR(send(first));
  return send(rest);
}

void Controller::CountRestarts(const api::DDPJob& job, const api::DDPJobStatus& next) {
  int failures = next.restarts - job.status.restarts;
  int disruptions = next.disruptions - job.status.disruptions;
  if (failures > 0) metrics_->job_restarts_total.Labels({kRestartKindFailure}).Inc(failures);
  if (disruptions > 0) metrics_->job_restarts_total.Labels({kRestartKindDisruption}).Inc(disruptions);
  int recoveries = next.recoveries - job.status.recoveries;
  if (recoveries > 0) metrics_->job_restarts_total.Labels({kRestartKindRecovery}).Inc(recoveries);
  const auto& was = job.status.last_failure;
  const auto& now = next.last_failure;
  if (now && now->recovery_seconds && !(was && was->recovery_seconds)) {
    metrics_->recovery_seconds.Get().Observe(*now->recovery_seconds);
  }
}

void Controller::EmitEvents(const api::DDPJob& job, const std::vector<plan::Event>& events) {
  const std::string key = job.namespace_name + "/" + job.name;
  auto now = std::chrono::system_clock::now();
  std::vector<CreateCall> calls;
  for (const auto& e : events) {
    // The decision's one log line (DESIGN.md rule 7).
    if (e.type == "Warning") {
      DDP_LOG(WARNING) << key << ": " << e.message << " (" << e.reason << ")";
    } else {
      DDP_LOG(INFO) << key << ": " << e.message << " (" << e.reason << ")";
    }
    calls.push_back({&kEvents, job.namespace_name, BuildEvent(job, e, now, options_.instance)});
  }
  if (calls.empty()) return;
  std::vector<Status> results = client_->CreateAll(calls);
  for (size_t i = 0; i < results.size(); ++i) {
    // An event is a record, not state: losing one must not fail or repeat the pass.
    if (!results[i].ok()) {
      DDP_LOG(WARNING) << key << ": event " << events[i].reason
                       << " not recorded: " << results[i].message();
    }
  }
}

Status Controller::Apply(const std::string& key, const api::DDPJob& job,
                         const nlohmann::json& raw, plan::Plan p) {
  // 1. The status first: it carries the round and the counters, the planner's only memory, so the
  // decision is durable before any pod is touched. If this write fails nothing else was written,
  // and the next pass (after a re-read on Conflict) makes the decision again from the same pods.
  // Written the other way round, a lost write would leave this round's pods being deleted under
  // the old status.round, and the next pass would count a failure restart as a disruption.
  if (p.status) {
    nlohmann::json obj = raw;  // every field we do not know survives
    obj["status"] = api::StatusToJson(*p.status);
    auto written = client_->UpdateStatus(kDDPJobs, job.namespace_name, job.name, obj);
    if (!written.ok()) {
      if (written.status().code() == StatusCode::kNotFound) return Status::OK();  // job deleted
      return written.status().code() == StatusCode::kConflict
                 ? written.status()
                 : written.status().WithContext(key + ": update status");
    }
    CountRestarts(job, *p.status);
    CountIncidents(job, *p.status);
    // The cache now holds what we wrote, so the next pass does not plan from the old status
    // while the watch event is in flight; unless the watch already delivered a later version
    // (an edit or a status write right after ours: a higher resourceVersion, whatever the
    // generation) or the deletion of the job. Storing ours over those would hide the change
    // until the next resync.
    jobs_.UpsertUnless(*written, [&](const JobEntry* cur) {
      return cur == nullptr || CachedIsNewer(*cur->raw, *written);
    });
  }
  // 2. Deletes, then 3. patches and creates (the PodGroup and the Service first). Deletes and
  // creates are attempted even if the other failed: they touch disjoint names. No pod is created
  // when a PodGroup patch failed: a round's pods must meet its PodGroup (a NetworkPolicy patch
  // does not hold them back: they keep the policy they have). A crash or an error from
  // here on converges on a later pass: the planner deletes pods of rounds other than
  // status.round and recreates every name of that round that no pod holds.
  Status deletes = ApplyDeletes(key, job, p.deletes);
  Status policy;
  Status patches = ApplyPatches(key, job, p.patches, &policy);
  Status creates = patches.ok() ? ApplyCreates(key, job, std::move(p.creates)) : Status::OK();
  // 4. Events describe the transition the status now records; a later pass would not repeat
  // them, so they go out even when some pod writes are left for that pass.
  EmitEvents(job, p.events);
  DDP_RETURN_IF_ERROR(deletes);
  DDP_RETURN_IF_ERROR(patches);
  DDP_RETURN_IF_ERROR(creates);
  DDP_RETURN_IF_ERROR(policy);
  if (p.delete_job) {
    DeleteOptions opts;
    opts.precondition_uid = job.uid;
    Status s = client_->Delete(kDDPJobs, job.namespace_name, job.name, opts);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s.WithContext(key + ": delete job");
    DDP_LOG(INFO) << key << ": deleted (ttlSecondsAfterFinished elapsed)";
  }
  if (p.requeue_after) queue_.AddAfter(key, *p.requeue_after);
  return Status::OK();
}

}  // namespace ddp::controller
