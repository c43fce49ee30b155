// Defaulting and validation; every message names the field and the offending value.
#include "operator/api/validate.h"

#include <algorithm>
#include <regex>

#include "common/group_contract.h"
#include "operator/api/env_names.h"
#include "operator/api/json_fields.h"
#include "operator/api/labels.h"
#include "operator/api/pod_template.h"

namespace ddp::api {
namespace {

constexpr size_t kMaxLabelLength = 63;  // DNS label limit, for pod and service names
constexpr int kMaxSpares = 64;
// Bounds that keep one job's plan finite: every pod of a round is built in one pass, and the
// world size (replicas x nprocPerNode) must fit an int.
constexpr int kMaxReplicas = 10000;
constexpr int kMaxNprocPerNode = 1024;
constexpr int64_t kMaxGlobalBatch = int64_t{1} << 40;  // samples per step, as the worker's bound

bool IsDns1123Label(const std::string& s) {
  static const std::regex kRe("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= kMaxLabelLength && std::regex_match(s, kRe);
}

// Service names must also start with a letter.
bool IsDns1035Label(const std::string& s) {
  static const std::regex kRe("[a-z]([-a-z0-9]*[a-z0-9])?");
  return !s.empty() && s.size() <= kMaxLabelLength && std::regex_match(s, kRe);
}

// DNS-1123 subdomain: object names such as a Volcano queue or a PriorityClass.
bool IsDns1123Subdomain(const std::string& s) {
  static const std::regex kRe("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return !s.empty() && s.size() <= 253 && std::regex_match(s, kRe);
}

// User text in a message is cut (on a character boundary): a status holds every message.
std::string Quote(const std::string& s) { return "\"" + TruncateUtf8(s, 100) + "\""; }
std::string Num(int64_t v) { return "(" + std::to_string(v) + ")"; }

// The largest replica index any round of this job can have.
int MaxIndex(const DDPJob& job) {
  int n = job.spec.replicas;
  if (job.spec.elastic) n = std::max(n, job.spec.elastic->max_replicas);
  return std::max(n, 1) - 1;
}

void CheckNames(const DDPJob& job, std::vector<std::string>* errs) {
  if (job.name.empty()) {
    errs->push_back("metadata.name is required");
    return;
  }
  if (!IsDns1035Label(job.name)) {
    errs->push_back("metadata.name (" + Quote(job.name) +
                    ") must be a DNS-1035 label: at most 63 lowercase letters, digits or '-', "
                    "starting with a letter and ending with a letter or digit");
  }
  // Mirrors plan/names.h; the planner's names cannot be longer than these.
  std::vector<std::string> longest{job.name + "-worker-" + std::to_string(MaxIndex(job))};
  if (job.spec.failure_policy.recovery == Recovery::kInPlace) {
    longest.push_back(job.name + "-rendezvous");
    if (job.spec.failure_policy.spares > 0) {
      longest.push_back(job.name + "-spare-" + std::to_string(job.spec.failure_policy.spares - 1));
    }
  }
  for (const std::string& pod : longest) {
    if (pod.size() <= kMaxLabelLength) continue;
    errs->push_back("metadata.name (" + Quote(job.name) + ") is too long: pod name " + Quote(pod) +
                    " has " + std::to_string(pod.size()) + " characters, the limit is 63");
    break;
  }
  if (!job.namespace_name.empty() && !IsDns1123Label(job.namespace_name)) {
    errs->push_back("metadata.namespace (" + Quote(job.namespace_name) +
                    ") must be a DNS-1123 label");
  }
}

// spec.elastic.globalBatchSize: each rank of every world size the job may run at takes a whole
// share of it (the worker checks the share against its per-rank batch, which the spec does not
// hold: it exits 2 naming both).
void CheckGlobalBatch(const DDPJobSpec& spec, std::vector<std::string>* errs) {
  const ElasticPolicy& e = *spec.elastic;
  if (!e.global_batch_size) return;
  const int64_t g = *e.global_batch_size;
  if (e.batch_policy != BatchPolicy::kConstantGlobal) {
    errs->push_back("spec.elastic.globalBatchSize is set but spec.elastic.batchPolicy is " +
                    std::string(BatchPolicyName(e.batch_policy)) +
                    " (each rank's batch is fixed there): remove one of them");
    return;
  }
  if (g < 1 || g > kMaxGlobalBatch) {
    errs->push_back("spec.elastic.globalBatchSize " + std::to_string(g) + " must be in [1, " +
                    std::to_string(kMaxGlobalBatch) + "]");
    return;
  }
  const int nproc = spec.nproc_per_node;
  if (e.min_replicas < 1 || e.min_replicas > e.max_replicas || e.max_replicas > kMaxReplicas ||
      nproc < 1 || nproc > kMaxNprocPerNode) {
    return;  // reported above
  }
  std::vector<int64_t> bad;
  for (int n = e.min_replicas; n <= e.max_replicas; ++n) {
    if (g % (static_cast<int64_t>(n) * nproc) != 0) bad.push_back(static_cast<int64_t>(n) * nproc);
  }
  if (bad.empty()) return;
  std::string sizes;
  for (size_t i = 0; i < bad.size() && i < 8; ++i) sizes += (i ? ", " : "") + std::to_string(bad[i]);
  if (bad.size() > 8) sizes += " and " + std::to_string(bad.size() - 8) + " more";
  errs->push_back("spec.elastic.globalBatchSize " + std::to_string(g) +
                  " does not divide evenly over world size" + (bad.size() > 1 ? "s " : " ") +
                  sizes + " (spec.elastic.minReplicas " + std::to_string(e.min_replicas) +
                  " to maxReplicas " + std::to_string(e.max_replicas) + ", x spec.nprocPerNode " +
                  std::to_string(nproc) +
                  "): every world size the job may run at must divide it");
}

void CheckSizes(const DDPJobSpec& spec, std::vector<std::string>* errs) {
  if (spec.replicas < 1) errs->push_back("spec.replicas " + Num(spec.replicas) + " must be >= 1");
  if (spec.replicas > kMaxReplicas) {
    errs->push_back("spec.replicas " + Num(spec.replicas) + " must be <= " +
                    std::to_string(kMaxReplicas));
  }
  if (spec.nproc_per_node < 1) {
    errs->push_back("spec.nprocPerNode " + Num(spec.nproc_per_node) + " must be >= 1");
  } else if (spec.nproc_per_node > kMaxNprocPerNode) {
    errs->push_back("spec.nprocPerNode " + Num(spec.nproc_per_node) + " must be <= " +
                    std::to_string(kMaxNprocPerNode));
  }
  if (!spec.elastic) return;
  const ElasticPolicy& e = *spec.elastic;
  if (e.min_replicas < 1) {
    errs->push_back("spec.elastic.minReplicas " + Num(e.min_replicas) + " must be >= 1");
  }
  if (e.max_replicas > kMaxReplicas) {
    errs->push_back("spec.elastic.maxReplicas " + Num(e.max_replicas) + " must be <= " +
                    std::to_string(kMaxReplicas));
  }
  if (e.min_replicas > e.max_replicas) {
    errs->push_back("spec.elastic.minReplicas " + Num(e.min_replicas) +
                    " > spec.elastic.maxReplicas " + Num(e.max_replicas));
  } else if (spec.replicas < e.min_replicas || spec.replicas > e.max_replicas) {
    errs->push_back("spec.replicas " + Num(spec.replicas) + " is outside [spec.elastic.minReplicas " +
                    Num(e.min_replicas) + ", spec.elastic.maxReplicas " + Num(e.max_replicas) +
                    "]");
  }
  if (e.pending_timeout_seconds < 0) {
    errs->push_back("spec.elastic.pendingTimeoutSeconds " + Num(e.pending_timeout_seconds) +
                    " must be >= 0");
  }
  CheckGlobalBatch(spec, errs);
}

void CheckPort(const char* field, int port, std::vector<std::string>* errs) {
  if (port < 1 || port > 65535) {
    errs->push_back(std::string(field) + " " + Num(port) + " must be in 1..65535");
  }
}

void CheckPolicies(const DDPJobSpec& spec, std::vector<std::string>* errs) {
  CheckPort("spec.rendezvous.port", spec.rendezvous.port, errs);
  CheckPort("spec.metrics.port", spec.metrics.port, errs);
  if (spec.rendezvous.port == spec.metrics.port) {
    errs->push_back("spec.metrics.port " + Num(spec.metrics.port) +
                    " must differ from spec.rendezvous.port: rank 0 listens on both");
  }
  if (spec.rendezvous.timeout_seconds < 1) {
    errs->push_back("spec.rendezvous.timeoutSeconds " + Num(spec.rendezvous.timeout_seconds) +
                    " must be >= 1");
  }
  if (spec.failure_policy.max_restarts < 0) {
    errs->push_back("spec.failurePolicy.maxRestarts " + Num(spec.failure_policy.max_restarts) +
                    " must be >= 0");
  }
  if (const auto& hang = spec.failure_policy.hang_timeout_seconds; hang && *hang < 1) {
    errs->push_back("spec.failurePolicy.hangTimeoutSeconds " + Num(*hang) +
                    " must be >= 1 (leave it out to never call a job hung)");
  }
  const FailurePolicy& fp = spec.failure_policy;
  if (fp.spares < 0 || fp.spares > kMaxSpares) {
    errs->push_back("spec.failurePolicy.spares " + Num(fp.spares) + " must be in 0.." +
                    std::to_string(kMaxSpares));
  } else if (fp.spares > 0 && fp.recovery != Recovery::kInPlace) {
    errs->push_back("spec.failurePolicy.spares " + Num(fp.spares) +
                    " needs spec.failurePolicy.recovery InPlace (a spare takes a lost member's "
                    "rank in place; with Restart every failure starts a new round)");
  }
  if (fp.liveness_timeout_seconds < 1 || fp.liveness_timeout_seconds > 3600) {
    errs->push_back("spec.failurePolicy.livenessTimeoutSeconds " +
                    Num(fp.liveness_timeout_seconds) + " must be in 1..3600");
  }
  const auto& codes = spec.failure_policy.retryable_exit_codes;
  for (size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] < 1 || codes[i] > 255) {
      errs->push_back("spec.failurePolicy.retryableExitCodes[" + std::to_string(i) + "] " +
                      Num(codes[i]) + " must be in 1..255");
    }
  }
  const RunPolicy& run = spec.run_policy;
  if (run.active_deadline_seconds && *run.active_deadline_seconds < 1) {
    errs->push_back("spec.runPolicy.activeDeadlineSeconds " + Num(*run.active_deadline_seconds) +
                    " must be >= 1");
  }
  if (run.ttl_seconds_after_finished && *run.ttl_seconds_after_finished < 0) {
    errs->push_back("spec.runPolicy.ttlSecondsAfterFinished " +
                    Num(*run.ttl_seconds_after_finished) + " must be >= 0");
  }
  if (spec.checkpoint.path && (*spec.checkpoint.path).rfind('/', 0) != 0) {
    errs->push_back("spec.checkpoint.path (" + Quote(*spec.checkpoint.path) +
                    ") must be an absolute path");
  }
}

using internal::IsQuantity;
using internal::IsResourceName;

void CheckSchedulingPolicy(const DDPJobSpec& spec, std::vector<std::string>* errs) {
  if (!spec.run_policy.scheduling_policy) return;
  const SchedulingPolicy& g = *spec.run_policy.scheduling_policy;
  const std::string p = "spec.runPolicy.schedulingPolicy.";
  if (g.min_available) {
    // The largest round the job can have; a gang bigger than that could never start. Under
    // InPlace the round's rendezvous pod is in the gang too (plan/gang.h GangMinMember), so the
    // job can ask for its own default, workers plus the rendezvous pod.
    int most = spec.replicas;
    if (spec.elastic) most = std::max(most, spec.elastic->max_replicas);
    if (spec.failure_policy.recovery == Recovery::kInPlace) ++most;
    if (*g.min_available < 1) {
      errs->push_back(p + "minAvailable " + Num(*g.min_available) + " must be >= 1");
    } else if (*g.min_available > most) {
      errs->push_back(p + "minAvailable " + Num(*g.min_available) + " exceeds the job's largest " +
                      "round (" + std::to_string(most) + " pods): the gang could never start");
    }
  }
  if (!g.queue.empty() && !IsDns1123Subdomain(g.queue)) {
    errs->push_back(p + "queue (" + Quote(g.queue) +
                    ") must be a queue's name (DNS-1123 subdomain)");
  }
  if (!g.priority_class.empty() && !IsDns1123Subdomain(g.priority_class)) {
    errs->push_back(p + "priorityClass (" + Quote(g.priority_class) +
                    ") must be a PriorityClass name (DNS-1123 subdomain)");
  }
  for (const auto& [name, quantity] : g.min_resources) {
    if (!IsResourceName(name)) {
      errs->push_back(p + "minResources: " + Quote(name) + " is not a resource name");
    } else if (!IsQuantity(quantity)) {
      errs->push_back(p + "minResources." + name + " (" + Quote(quantity) +
                      ") must be a non-negative quantity such as \"8\", \"500m\" or \"64Gi\"");
    }
  }
  if (g.schedule_timeout_seconds && *g.schedule_timeout_seconds < 1) {
    errs->push_back(p + "scheduleTimeoutSeconds " + Num(*g.schedule_timeout_seconds) +
                    " must be >= 1 (leave it out for the scheduler's default)");
  }
}

// The gang keys are the operator's: a template that sets them would split the gang (Kueue would
// queue each pod alone) or point pods at a group the operator does not keep in step.
void CheckGangKeys(const DDPJob& job, std::vector<std::string>* errs) {
  if (auto q = job.labels.find(kKueueQueueNameLabel); q != job.labels.end()) {
    if (!IsDns1123Subdomain(q->second) || q->second.size() > kMaxLabelLength) {
      errs->push_back(std::string("metadata.labels[\"") + kKueueQueueNameLabel + "\"] (" +
                      Quote(q->second) + ") must name a Kueue LocalQueue");
    }
  }
  const nlohmann::json& tmpl = job.spec.pod_template;
  if (!tmpl.is_object() || !tmpl.contains("metadata") || !tmpl["metadata"].is_object()) return;
  const nlohmann::json& meta = tmpl["metadata"];
  auto check = [&](const char* field, std::initializer_list<const char*> keys) {
    if (!meta.contains(field) || !meta[field].is_object()) return;
    for (const char* key : keys) {
      if (!meta[field].contains(key)) continue;
      std::string msg = std::string("spec.template.metadata.") + field + "[\"" + key +
                        "\"] is set by the operator";
      msg += std::string(key) == kKueueQueueNameLabel
                 ? ": put it on the DDPJob's metadata.labels to queue the job with Kueue"
                 : " for the job's gang (see docs/gang-scheduling.md)";
      errs->push_back(msg);
    }
  };
  check("labels", {kKueueQueueNameLabel, kKueuePodGroupNameLabel, kCoschedulingPodGroupLabel});
  check("annotations", {kKueueGroupTotalCountAnnotation, kKueueRetriableInGroupAnnotation,
                        kVolcanoGroupNameAnnotation});
}

// Every field the operator reads, copies or hands to local mode is typed (pod_template.h). Only
// the worker container receives the operator's env, so only its env is checked for our names: a
// sidecar with its own RANK does not disturb rendezvous.
void CheckTemplate(const nlohmann::json& tmpl, std::vector<std::string>* errs) {
  const PodTemplate t = ParsePodTemplate(tmpl, errs);
  const int worker = t.WorkerIndex();
  if (worker < 0) return;
  const std::string path = "spec.template.spec.containers[" + std::to_string(worker) + "].env";
  const auto& reserved = ReservedEnvNames();
  const std::vector<EnvVar>& env = t.containers[worker].env;
  for (size_t i = 0; i < env.size(); ++i) {
    if (std::find(reserved.begin(), reserved.end(), env[i].name) != reserved.end()) {
      const bool log = env[i].name == group::kEnvTerminationLog;
      errs->push_back(path + "[" + std::to_string(i) + "].name (" + Quote(env[i].name) +
                      ") is reserved: the operator sets it" +
                      (log ? " to the container's terminationMessagePath (where the kubelet "
                             "reads ddp-worker's termination message); set that instead"
                           : " for rendezvous"));
    }
  }
}

}  // namespace

const std::vector<std::string>& ReservedEnvNames() { return OperatorEnvNames(); }

void ApplyDefaults(DDPJob* job) {
  if (job->namespace_name.empty()) job->namespace_name = "default";
  if (job->spec.elastic) {
    ElasticPolicy& e = *job->spec.elastic;
    if (e.min_replicas == 0) e.min_replicas = 1;
    if (e.max_replicas == 0) e.max_replicas = std::max(job->spec.replicas, e.min_replicas);
  }
}

std::vector<std::string> Validate(const DDPJob& job) {
  std::vector<std::string> errs;
  CheckNames(job, &errs);
  CheckSizes(job.spec, &errs);
  CheckPolicies(job.spec, &errs);
  CheckTemplate(job.spec.pod_template, &errs);
  CheckSchedulingPolicy(job.spec, &errs);
  CheckGangKeys(job, &errs);
  return errs;
}

Status ValidateStatus(const DDPJob& job) {
  std::vector<std::string> errs = Validate(job);
  if (errs.empty()) return Status::OK();
  std::string joined;
  for (const auto& e : errs) joined += (joined.empty() ? "" : "\n") + e;
  return Status::InvalidArgument(joined);
}

}  // namespace ddp::api
