// Controller::Apply: turns one Plan into API writes. Idempotent by construction: a create that
// finds the object and a delete that misses it are success, so re-applying a plan is harmless.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "common/logging.h"
#include "operator/api/serialize.h"
#include "operator/controller.h"
#include "operator/kube/events.h"

namespace ddp::controller {
namespace {

using SteadyClock = std::chrono::steady_clock;

const Resource* ResourceForKind(const std::string& kind) {
  if (kind == "Pod") return &kPods;
  if (kind == "Service") return &kServices;
  if (kind == "DDPJob") return &kDDPJobs;
  return nullptr;
}

std::string NameOf(const nlohmann::json& obj) {
  auto m = obj.find("metadata");
  return m != obj.end() && m->is_object() ? m->value("name", "") : "";
}

// Runs fn(i) for i in [0, n) on up to kMaxParallelWrites threads; returns the first error (all
// are attempted). Bounded so a 1,000-replica job does not start 1,000 threads.
constexpr size_t kMaxParallelWrites = 16;
Status ParallelFor(size_t n, const std::function<Status(size_t)>& fn) {
  if (n == 0) return Status::OK();
  if (n == 1) return fn(0);
  std::mutex mu;
  Status first;
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t i = next++; i < n; i = next++) {
      Status s = fn(i);
      std::lock_guard<std::mutex> l(mu);
      if (!s.ok() && first.ok()) first = s;
    }
  };
  std::vector<std::thread> threads;
  for (size_t t = 0; t < std::min(n, kMaxParallelWrites); ++t) threads.emplace_back(run);
  for (auto& t : threads) t.join();
  return first;
}

}  // namespace

Status Controller::ApplyDeletes(const std::string& key, const api::DDPJob& job,
                                const std::vector<plan::Delete>& deletes) {
  std::vector<const plan::Delete*> todo;
  for (const auto& d : deletes) {
    if (d.kind == "DDPJob") continue;  // the job itself goes last (Plan::delete_job)
    todo.push_back(&d);
  }
  return ParallelFor(todo.size(), [&](size_t i) {
    const plan::Delete& d = *todo[i];
    const Resource* r = ResourceForKind(d.kind);
    if (!r) return Status::Internal(key + ": plan deletes unknown kind " + d.kind);
    bool is_pod = r == &kPods;
    if (is_pod) expectations_.ExpectDelete(key, d.uid, SteadyClock::now());
    DeleteOptions opts;
    opts.propagation_policy = "Background";
    opts.precondition_uid = d.uid;
    Status s = client_->Delete(*r, job.namespace_name, d.name, opts);
    // NotFound: already gone. Conflict: the uid precondition failed, so the object under that
    // name is a newer incarnation that this plan did not mean.
    bool gone = s.ok() || s.code() == StatusCode::kNotFound || s.code() == StatusCode::kConflict;
    if (is_pod && !s.ok()) expectations_.DeletionObserved(key, d.uid);  // no event will come
    if (s.ok() && is_pod) metrics_->pods_deleted_total.Get().Inc();
    if (s.ok()) DDP_LOG(INFO) << key << ": deleted " << d.kind << " " << d.name;
    return gone ? Status::OK() : s.WithContext(key + ": delete " + d.kind + " " + d.name);
  });
}

Status Controller::ApplyCreates(const std::string& key, const api::DDPJob& job,
                                const std::vector<nlohmann::json>& creates) {
  // The Service first (pods resolve rank 0 through it), then every pod at once.
  std::vector<const nlohmann::json*> first, rest;
  for (const auto& obj : creates) {
    (obj.value("kind", "") == "Service" ? first : rest).push_back(&obj);
  }
  auto create = [&](const nlohmann::json& obj) {
    std::string kind = obj.value("kind", "");
    std::string name = NameOf(obj);
    const Resource* r = ResourceForKind(kind);
    if (!r) return Status::Internal(key + ": plan creates unknown kind " + kind);
    bool is_pod = r == &kPods;
    if (is_pod) expectations_.ExpectCreate(key, name, SteadyClock::now());
    auto created = client_->Create(*r, job.namespace_name, obj);
    // Unless it was created, the informer may never report it: stop expecting it.
    if (is_pod && !created.ok()) expectations_.CreationObserved(key, name);
    if (created.ok()) {
      if (is_pod) metrics_->pods_created_total.Get().Inc();
      DDP_LOG(DEBUG) << key << ": created " << kind << " " << name;
      return Status::OK();
    }
    if (created.status().code() == StatusCode::kAlreadyExists) return Status::OK();
    return created.status().WithContext(key + ": create " + kind + " " + name);
  };
  for (const auto* obj : first) DDP_RETURN_IF_ERROR(create(*obj));
  return ParallelFor(rest.size(), [&](size_t i) { return create(*rest[i]); });
}

void Controller::CountRestarts(const api::DDPJob& job, const api::DDPJobStatus& next) {
  int failures = next.restarts - job.status.restarts;
  int disruptions = next.disruptions - job.status.disruptions;
  if (failures > 0) metrics_->job_restarts_total.Labels({"failure"}).Inc(failures);
  if (disruptions > 0) metrics_->job_restarts_total.Labels({"disruption"}).Inc(disruptions);
}

void Controller::EmitEvents(const api::DDPJob& job, const std::vector<plan::Event>& events) {
  const std::string key = job.namespace_name + "/" + job.name;
  auto now = std::chrono::system_clock::now();
  for (const auto& e : events) {
    // The decision's one log line (DESIGN.md rule 7).
    if (e.type == "Warning") {
      DDP_LOG(WARNING) << key << ": " << e.message << " (" << e.reason << ")";
    } else {
      DDP_LOG(INFO) << key << ": " << e.message << " (" << e.reason << ")";
    }
    auto s = client_->Create(kEvents, job.namespace_name, BuildEvent(job, e, now, options_.instance));
    // An event is a record, not state: losing one must not fail or repeat the pass.
    if (!s.ok()) DDP_LOG(WARNING) << key << ": event " << e.reason << " not recorded: " << s.status().message();
  }
}

Status Controller::Apply(const std::string& key, const api::DDPJob& job,
                         const nlohmann::json& raw, const plan::Plan& p) {
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
    // The cache now holds what we wrote, so the next pass does not plan from the old status
    // while the watch event is in flight; unless the watch already delivered a newer spec (an
    // edit right after our write: a higher generation) or the deletion of the job. Storing ours
    // over those would hide the change until the next resync.
    jobs_.UpsertUnless(*written, [&](const JobEntry* cur) {
      return cur == nullptr || GenerationOf(*cur->raw) > GenerationOf(*written);
    });
  }
  // 2. Deletes, then 3. creates (the Service first). Both are attempted even if the other
  // failed: they touch disjoint names. A crash or an error from here on converges on a later pass:
  // the planner deletes pods of rounds other than status.round and recreates every name of that
  // round that no pod holds.
  Status deletes = ApplyDeletes(key, job, p.deletes);
  Status creates = ApplyCreates(key, job, p.creates);
  // 4. Events describe the transition the status now records; a later pass would not repeat
  // them, so they go out even when some pod writes are left for that pass.
  EmitEvents(job, p.events);
  DDP_RETURN_IF_ERROR(deletes);
  DDP_RETURN_IF_ERROR(creates);
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
