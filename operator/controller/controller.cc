#include "operator/controller/controller.h"

#include <map>

#include "common/logging.h"
#include "operator/api/serialize.h"
#include "operator/api/utf8.h"
#include "operator/plan/names.h"
#include "operator/plan/observe.h"

namespace ddp::controller {
namespace {

using SteadyClock = std::chrono::steady_clock;

nlohmann::json WithoutManagedFields(const nlohmann::json& obj) {
  nlohmann::json copy = obj;
  if (auto m = copy.find("metadata"); m != copy.end() && m->is_object()) m->erase("managedFields");
  return copy;
}

std::string PhaseOf(const nlohmann::json& obj) {
  auto st = obj.find("status");
  if (st == obj.end() || !st->is_object()) return "";
  auto ph = st->find("phase");
  return ph != st->end() && ph->is_string() ? ph->get<std::string>() : "";
}

// The PodGroups of the operator's gang scheduler; nullptr without one.
const Resource* PodGroupResource(plan::GangScheduler s) {
  switch (s) {
    case plan::GangScheduler::kVolcano: return &kVolcanoPodGroups;
    case plan::GangScheduler::kCoscheduling: return &kCoschedulingPodGroups;
    case plan::GangScheduler::kNone: break;
  }
  return nullptr;
}

// The job's own objects found by its name label (its Service), keyed by the object's key;
// objects without the label are not the operator's.
std::optional<IndexedCache<std::string>::Entry> IndexByJobLabel(const nlohmann::json& obj) {
  std::string job = JobKeyFromLabel(obj, api::kJobNameLabel);
  if (job.empty()) return std::nullopt;
  return IndexedCache<std::string>::Entry{job, ObjectKey(obj)};
}

InformerOptions InformerFor(const Resource& r, const ControllerOptions& o, std::string selector) {
  InformerOptions i;
  i.resource = r;
  i.ns = o.ns;
  i.label_selector = std::move(selector);
  i.resync_period = o.resync_period;
  i.backoff_max = o.informer_backoff_max;
  return i;
}

}  // namespace

Controller::Controller(KubeClient* client, OperatorMetrics* metrics, ControllerOptions options)
    : client_(client),
      metrics_(metrics),
      options_(std::move(options)),
      expectations_(options_.expectations_timeout),
      jobs_(
          [](const nlohmann::json& obj) -> std::optional<IndexedCache<JobEntry>::Entry> {
            std::string key = ObjectKey(obj);
            if (key.empty()) return std::nullopt;
            // managedFields are the bulk of a real object and the controller never reads them.
            auto raw = std::make_shared<const nlohmann::json>(WithoutManagedFields(obj));
            return IndexedCache<JobEntry>::Entry{key, JobEntry{raw, PhaseOf(obj)}};
          },
          [this](const std::string& key, const JobEntry*, const JobEntry*) { queue_.Add(key); }),
      pods_(
          [](const nlohmann::json& obj) -> std::optional<IndexedCache<plan::ObservedPod>::Entry> {
            std::string job = JobKeyFromLabel(obj, api::kJobNameLabel);
            if (job.empty()) return std::nullopt;
            // Only the planner's facts are kept: a few hundred bytes per pod.
            return IndexedCache<plan::ObservedPod>::Entry{job, plan::ObservePod(obj)};
          },
          [this](const std::string& job, const plan::ObservedPod* old,
                 const plan::ObservedPod* now) { OnPodChange(job, old, now); }),
      services_(
          IndexByJobLabel,
          [this](const std::string& job, const std::string*, const std::string*) {
            queue_.Add(job);
          }),
      network_policies_(
          [](const nlohmann::json& obj)
              -> std::optional<IndexedCache<plan::ObservedNetworkPolicy>::Entry> {
            std::string job = JobKeyFromLabel(obj, api::kJobNameLabel);
            if (job.empty()) return std::nullopt;
            // Its spec: a policy written under other settings is updated (network_policy.h).
            return IndexedCache<plan::ObservedNetworkPolicy>::Entry{
                job, plan::ObserveNetworkPolicy(obj)};
          },
          [this](const std::string& job, const plan::ObservedNetworkPolicy*,
                 const plan::ObservedNetworkPolicy*) { queue_.Add(job); }),
      nodes_(
          [](const nlohmann::json& obj) -> std::optional<IndexedCache<plan::NodeHealth>::Entry> {
            std::string name = ObjectKey(obj);
            if (name.empty()) return std::nullopt;
            // Two facts per node, whatever the size of the object (images, addresses, ...).
            return IndexedCache<plan::NodeHealth>::Entry{name, plan::ObserveNode(obj)};
          },
          [this](const std::string& node, const plan::NodeHealth* old,
                 const plan::NodeHealth* now) { OnNodeChange(node, old, now); }),
      pod_groups_(
          [](const nlohmann::json& obj)
              -> std::optional<IndexedCache<plan::ObservedPodGroup>::Entry> {
            std::string job = JobKeyFromLabel(obj, api::kJobNameLabel);
            if (job.empty()) return std::nullopt;
            return IndexedCache<plan::ObservedPodGroup>::Entry{job, plan::ObservePodGroup(obj)};
          },
          [this](const std::string& job, const plan::ObservedPodGroup*,
                 const plan::ObservedPodGroup*) { queue_.Add(job); }),
      pod_group_resource_(PodGroupResource(options_.plan.gang.scheduler)) {
  job_informer_ = std::make_unique<Informer>(client_, InformerFor(kDDPJobs, options_, ""), &jobs_);
  pod_informer_ = std::make_unique<Informer>(
      client_, InformerFor(kPods, options_, api::kJobNameLabel), &pods_);
  service_informer_ = std::make_unique<Informer>(
      client_, InformerFor(kServices, options_, api::kJobNameLabel), &services_);
  InformerOptions policies = InformerFor(kNetworkPolicies, options_, api::kJobNameLabel);
  policies.forbidden_hint =
      "grant list, watch, create, patch and delete on networkpolicies.networking.k8s.io (the Helm "
      "chart's Role has them), or run with --network-policy=false";
  network_policy_informer_ = std::make_unique<Informer>(client_, policies, &network_policies_);
  // Nodes are cluster-scoped and cannot be label-selected by job: every node, kept small.
  InformerOptions nodes = InformerFor(kNodes, options_, "");
  nodes.ns = "";
  nodes.forbidden_hint =
      "grant list and watch on nodes (a ClusterRole; the Helm chart has one) so that pods stuck "
      "Terminating on a lost node are force-deleted; until then they are waited for";
  node_informer_ = std::make_unique<Informer>(client_, nodes, &nodes_);
  if (pod_group_resource_) {
    // The scheduler's CRD may be missing: then jobs wait with a Warning, the operator runs on.
    InformerOptions o = InformerFor(*pod_group_resource_, options_, api::kJobNameLabel);
    o.optional_resource = true;
    o.absent_retry = options_.pod_group_absent_retry;
    pod_group_informer_ = std::make_unique<Informer>(client_, o, &pod_groups_);
  }
  if (options_.progress) {
    scraper_ = std::make_unique<ProgressScraper>(
        *options_.progress, [this](const std::string& key) { queue_.Add(key); },
        [this](ScrapeResult r) {
          metrics_->progress_scrapes_total
              .Labels({r == ScrapeResult::kOk      ? kScrapeOk
                       : r == ScrapeResult::kError ? kScrapeError
                                                   : kScrapeRefused})
              .Inc();
        });
  }
}

Controller::~Controller() { Stop(); }

void Controller::OnPodChange(const std::string& job, const plan::ObservedPod* old,
                             const plan::ObservedPod* now) {
  if (now && !old) expectations_.CreationObserved(job, now->name);
  // A pod being deleted counts as deleted: its deletion was observed, the planner sees it as
  // `deleting` and waits for its name to free up.
  if (now && now->deleting && !(old && old->deleting)) expectations_.DeletionObserved(job, now->uid);
  if (!now && old) expectations_.DeletionObserved(job, old->uid);
  queue_.Add(job);
}

Status Controller::Start(std::chrono::milliseconds sync_timeout,
                         const std::atomic<bool>* cancel) {
  job_informer_->Start();
  pod_informer_->Start();
  service_informer_->Start();
  network_policy_informer_->Start();
  node_informer_->Start();  // optional: not waited for (see ObserveNodes)
  if (pod_group_informer_) pod_group_informer_->Start();
  auto deadline = SteadyClock::now() + sync_timeout;
  // Short slices, so a shutdown request is noticed while a cache is still filling.
  while (!Synced()) {
    if (cancel && cancel->load()) return Status::Unavailable("stopped before the caches synced");
    if (SteadyClock::now() >= deadline) {
      return Status::DeadlineExceeded("informers did not sync within " +
                                      std::to_string(sync_timeout.count()) + " ms");
    }
    job_informer_->WaitForSync(std::chrono::milliseconds(50));
    pod_informer_->WaitForSync(std::chrono::milliseconds(50));
    service_informer_->WaitForSync(std::chrono::milliseconds(50));
    network_policy_informer_->WaitForSync(std::chrono::milliseconds(50));
    if (pod_group_informer_) pod_group_informer_->WaitForSync(std::chrono::milliseconds(50));
  }
  DDP_LOG(INFO) << "controller: caches synced (" << jobs_.Size() << " jobs, " << pods_.Size()
                << " pods); starting " << options_.workers << " workers";
  if (scraper_) scraper_->Start();
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Worker(); });
  return Status::OK();
}

void Controller::Stop() {
  if (stopped_.exchange(true)) return;
  queue_.ShutDown();
  for (auto& w : workers_) w.join();
  workers_.clear();
  if (scraper_) scraper_->Stop();
  job_informer_->Stop();
  pod_informer_->Stop();
  service_informer_->Stop();
  network_policy_informer_->Stop();
  node_informer_->Stop();
  if (pod_group_informer_) pod_group_informer_->Stop();
}

bool Controller::Synced() const {
  return job_informer_->HasSynced() && pod_informer_->HasSynced() &&
         service_informer_->HasSynced() && network_policy_informer_->HasSynced() &&
         (!pod_group_informer_ || pod_group_informer_->HasSynced());
}

void Controller::UpdateGauges() {
  metrics_->queue_depth.Get().Set(static_cast<double>(queue_.Len()));
  std::map<std::string, int> by_phase;
  for (const char* p : {api::kPhasePending, api::kPhaseRunning, api::kPhaseRestarting,
                        api::kPhaseScaling, api::kPhaseSucceeded, api::kPhaseFailed,
                        api::kPhaseSuspended}) {
    by_phase[p] = 0;  // every phase is exported, so a rate or absence alert has a series
  }
  jobs_.ForEach([&](const std::string&, const JobEntry& e) {
    by_phase[e.phase.empty() ? api::kPhasePending : e.phase]++;
  });
  for (const auto& [phase, n] : by_phase) metrics_->jobs.Labels({phase}).Set(n);
  size_t flagged = 0;
  {
    std::lock_guard<std::mutex> l(stragglers_mu_);
    for (const auto& [key, s] : stragglers_) flagged += s->flagged.load();
  }
  metrics_->stragglers.Get().Set(static_cast<double>(flagged));
  UpdateJobGauges();
}

void Controller::Worker() {
  std::string key;
  while (queue_.Get(&key)) {
    auto start = SteadyClock::now();
    Status s = ReconcileIsolated(key);
    double secs = std::chrono::duration<double>(SteadyClock::now() - start).count();
    metrics_->reconcile_total.Get().Inc();
    metrics_->reconcile_duration_seconds.Get().Observe(secs);
    if (s.ok()) {
      queue_.Forget(key);
    } else {
      metrics_->reconcile_errors_total.Get().Inc();
      if (s.code() != StatusCode::kInternal) {
        DDP_LOG(WARNING) << key << ": reconcile failed, will retry with backoff: " << s.ToString();
      }
      queue_.AddRateLimited(key);
    }
    queue_.Done(key);
  }
}

Status Controller::ReconcileIsolated(const std::string& key) {
  std::string what;
  try {
    Status s = Reconcile(key);
    std::lock_guard<std::mutex> l(panics_mu_);
    panicked_.erase(key);
    return s;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  // A bug met by one object: that job waits (backoff), every other job is served. Logged once
  // per key and message, so a job retried for hours does not flood the log.
  metrics_->reconcile_panics_total.Get().Inc();
  const std::string message = key + ": reconcile threw: " + api::SanitizeUtf8(what);
  bool first = false;
  {
    std::lock_guard<std::mutex> l(panics_mu_);
    std::string& last = panicked_[key];
    first = last != message;
    last = message;
  }
  if (first) {
    DDP_LOG(ERROR) << message << " (a bug: please report it with the DDPJob; the job is retried "
                   << "with backoff, other jobs are not affected)";
  }
  return Status::Internal(message);
}

plan::Observed Controller::Observe(const std::string& key) const {
  plan::Observed seen;
  seen.pods = pods_.ByIndex(key);
  seen.service_exists = !services_.ByIndex(key).empty();
  // The job's own policy is named after it.
  const std::string job_name = key.substr(key.find('/') + 1);
  for (plan::ObservedNetworkPolicy& policy : network_policies_.ByIndex(key)) {
    if (policy.name != job_name) continue;
    seen.network_policy_exists = true;
    seen.network_policy = std::move(policy);
  }
  ObserveNodes(&seen);
  if (pod_group_informer_) {
    const std::string name = key.substr(key.find('/') + 1);
    for (plan::ObservedPodGroup& g : pod_groups_.ByIndex(key)) {
      if (g.name == name) seen.pod_group = std::move(g);
    }
    seen.pod_group_api_missing = pod_group_informer_->Absent();
  }
  return seen;
}

Status Controller::Reconcile(const std::string& key) {
  // A Conflict on the status write means our copy was stale: re-read, then plan again.
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::optional<JobEntry> entry = jobs_.Get(key);
    if (!entry) {
      expectations_.Forget(key);  // deleted: its pods go by owner-reference garbage collection
      ForgetProgress(key);
      std::lock_guard<std::mutex> lock(unknown_mu_);
      unknown_warned_.erase(key);
      return Status::OK();
    }
    SteadyClock::duration wait{};
    if (!expectations_.Satisfied(key, SteadyClock::now(), &wait)) {
      // The informer's events re-queue the key as soon as the cache catches up; this delayed
      // add only covers an event that never comes.
      DDP_LOG(DEBUG) << key << ": waiting for the cache to see our writes";
      queue_.AddAfter(key, wait);
      return Status::OK();
    }
    auto job = api::ParseDDPJobJson(*entry->raw);
    plan::Plan p;
    if (job.ok()) {
      WarnUnknownFields(*job, *entry->raw);
      plan::Observed seen = Observe(key);
      ObserveProgress(*job, &seen);
      ObserveSuspectNodes(*job, &seen);
      p = plan::PlanReconcile(*job, seen, std::chrono::system_clock::now(), options_.plan);
    } else {
      // A spec the CRD schema let through (stored before a CRD change): fail the job with a
      // condition and an event naming the field. Without even parseable metadata and status,
      // there is nothing to write to; the next edit re-queues it.
      const std::string error = std::string(job.status().message());
      nlohmann::json bare = *entry->raw;
      bare.erase("spec");
      job = api::ParseDDPJobJson(bare);
      if (!job.ok()) {
        bare.erase("status");
        job = api::ParseDDPJobJson(bare);
      }
      if (!job.ok()) {
        DDP_LOG(WARNING) << key << ": cannot parse DDPJob: " << error;
        return Status::OK();
      }
      p = plan::PlanUnparsableJob(*job, Observe(key), error, std::chrono::system_clock::now(),
                                  options_.plan.gang);
    }
    if (p.empty()) return Status::OK();
    DDP_LOG(DEBUG) << key << ": plan " << p.ToString();
    Status s = Apply(key, *job, *entry->raw, std::move(p));
    if (s.code() != StatusCode::kConflict) return s;
    DDP_LOG(INFO) << key << ": status write conflicted; re-reading";
    auto fresh = client_->Get(kDDPJobs, job->namespace_name, job->name);
    if (!fresh.ok() && fresh.status().code() == StatusCode::kNotFound) {
      jobs_.Remove(*entry->raw);
      return Status::OK();
    }
    if (!fresh.ok()) return fresh.status().WithContext(key + ": re-read after conflict");
    // Unless the watch delivered a newer spec or the deletion meanwhile (as in Apply).
    jobs_.UpsertUnless(*fresh, [&](const JobEntry* cur) {
      return cur == nullptr || CachedIsNewer(*cur->raw, *fresh);
    });
  }
  return Status::Conflict(key + ": status write kept conflicting");
}

}  // namespace ddp::controller
