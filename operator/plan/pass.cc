// Bookkeeping steps shared by every reconcile pass; see pass.h. Decisions live in plan.cc.
#include "operator/plan/pass.h"

#include <algorithm>

#include "operator/api/time_format.h"
#include "operator/api/validate.h"
#include "operator/plan/builders.h"
#include "operator/plan/conditions.h"
#include "operator/plan/gang_pass.h"
#include "operator/plan/names.h"
#include "operator/plan/progress.h"

namespace ddp::plan::internal {
namespace {

std::string Plural(size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

bool IsActivePhase(const std::string& phase) {
  return phase == "Pending" || phase == "Running" || phase == "Unknown" || phase.empty();
}

}  // namespace

int DesiredSize(const api::DDPJob& job) {
  int n = job.spec.replicas;
  if (job.spec.elastic) {
    n = std::min(std::max(n, job.spec.elastic->min_replicas), job.spec.elastic->max_replicas);
  }
  return std::max(n, 1);
}

Pass BeginPass(const api::DDPJob& job, const Observed& seen, TimePoint now,
               const GangConfig& gang) {
  Pass p;
  p.job = job;
  p.gang = gang;
  api::ApplyDefaults(&p.job);
  p.seen = &seen;
  p.now = api::TruncateToSeconds(now);
  p.st = job.status;
  p.st.observed_generation = job.generation;
  p.st.selector = Selector(p.job);
  // Pods are the ground truth for the round: if a status write was lost after pods of a newer
  // round were created, continue that round instead of deleting it.
  p.round = job.status.round;
  for (const auto& pod : seen.pods) {
    if (!pod.deleting && pod.round > p.round) p.round = pod.round;
  }
  if (p.round != job.status.round) {
    AddEvent(&p, "Warning", "RoundAdopted",
             "round " + std::to_string(job.status.round) + " -> " + std::to_string(p.round) +
                 " (found pods of round " + std::to_string(p.round) +
                 ": a status write was lost; continuing that round)");
  }
  p.size = job.status.replicas > 0 ? job.status.replicas : DesiredSize(p.job);
  return p;
}

Plan FinishPass(Pass* p) {
  if (p->st != p->job.status) p->plan.status = p->st;
  return std::move(p->plan);
}

std::vector<const ObservedPod*> CurrentPods(const Pass& p) {
  std::vector<const ObservedPod*> by_index(static_cast<size_t>(p.size), nullptr);
  for (const auto& pod : p.seen->pods) {
    if (pod.round == p.round && !pod.deleting && pod.index >= 0 && pod.index < p.size &&
        pod.name == PodName(p.job, pod.index)) {
      by_index[static_cast<size_t>(pod.index)] = &pod;
    }
  }
  return by_index;
}

const ObservedPod* PodNamed(const Pass& p, const std::string& name) {
  for (const auto& pod : p.seen->pods) {
    if (pod.name == name) return &pod;
  }
  return nullptr;
}

void AddEvent(Pass* p, const std::string& type, const std::string& reason,
              const std::string& message) {
  p->plan.events.push_back({type, reason, message});
}

void Requeue(Pass* p, TimePoint at) {
  auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(at - p->now);
  if (wait < std::chrono::milliseconds(0)) wait = std::chrono::milliseconds(0);
  if (!p->plan.requeue_after || wait < *p->plan.requeue_after) p->plan.requeue_after = wait;
}

void DeleteStalePods(Pass* p) {
  std::vector<std::string> names;
  for (const auto& pod : p->seen->pods) {
    const bool current = pod.round == p->round && pod.index >= 0 && pod.index < p->size &&
                         pod.name == PodName(p->job, pod.index);
    if (current || pod.deleting) continue;
    p->plan.deletes.push_back({"Pod", pod.name, pod.uid});
    names.push_back(pod.name + " (round " + std::to_string(pod.round) + ")");
  }
  if (names.empty()) return;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  AddEvent(p, "Normal", "DeletingPods",
           "round " + std::to_string(p->round) + ": deleting " + Plural(names.size(), "pod") +
               " of other rounds: " + list);
}

void CreateMissing(Pass* p, bool hold_pods) {
  const bool service = !p->seen->service_exists;
  if (service) p->plan.creates.push_back(BuildService(p->job));
  int created = 0, waiting = 0;
  // A pod's DDP_MAX_RECOVERIES is the budget left under the status being written now.
  api::DDPJob at_creation;
  for (int i = 0; !hold_pods && i < p->size; ++i) {
    // A name still held by a pod of another round is recreated only once that pod is gone, so
    // two rounds never overlap.
    const std::string name = PodName(p->job, i);
    const ObservedPod* holder = PodNamed(*p, name);
    if (holder) {
      if (holder->round != p->round || holder->deleting) ++waiting;
      continue;
    }
    if (std::find(p->foreign_names.begin(), p->foreign_names.end(), name) !=
        p->foreign_names.end()) {
      ++waiting;  // not ours to delete: its owner (or the garbage collector) removes it
      continue;
    }
    if (created == 0) {
      at_creation = p->job;
      at_creation.status = p->st;
    }
    nlohmann::json pod = BuildWorkerPod(at_creation, i, p->round, p->size);
    AddGangKeys(at_creation, p->gang, p->round, p->size, &pod);
    p->plan.creates.push_back(std::move(pod));
    ++created;
  }
  if (!service && created == 0) return;
  std::string what = service ? "Service " + ServiceName(p->job) : "";
  if (created > 0) {
    what += (service ? " and " : "") + Plural(static_cast<size_t>(created), "pod") + " of " +
            std::to_string(p->size);
  }
  const std::string waits =
      waiting > 0 ? "; " + std::to_string(waiting) + " wait for their old pod to go" : "";
  // One decision, one event: a new job's creates are part of its JobCreated event.
  if (!p->plan.events.empty() && p->plan.events.back().reason == kReasonJobCreated) {
    p->plan.events.back().message += "; creating " + what + waits;
    return;
  }
  if (created == 0) {
    AddEvent(p, "Normal", "CreatingService", "creating headless " + what);
    return;
  }
  AddEvent(p, "Normal", "CreatingPods",
           "round " + std::to_string(p->round) + ": creating " + what + " (world size " +
               std::to_string(p->size * p->job.spec.nproc_per_node) + ")" + waits);
}

void Summarize(Pass* p) {
  const auto pods = CurrentPods(*p);
  int ready = 0, started = 0;
  for (const ObservedPod* pod : pods) {
    if (!pod) continue;
    if (pod->ready) ++ready;
    if (pod->phase == "Running" || pod->phase == "Succeeded") ++started;
  }
  p->st.round = p->round;
  p->st.replicas = p->size;
  p->st.world_size = p->size * p->job.spec.nproc_per_node;
  p->st.ready_replicas = ready;
  if (p->st.phase == api::kPhaseRunning || started < p->size) return;
  const std::string msg = "round " + std::to_string(p->round) + ": all " +
                          Plural(static_cast<size_t>(p->size), "pod") + " running (world size " +
                          std::to_string(p->st.world_size) + ")";
  p->st.phase = api::kPhaseRunning;
  RecordRecovery(p);
  SetCondition(&p->st, api::kCondRunning, "True", "AllPodsRunning", msg, p->now, p->job.generation);
  ClearCondition(&p->st, api::kCondRestarting, "AllPodsRunning", msg, p->now, p->job.generation);
  AddEvent(p, "Normal", "Running", msg);
}

void CleanUpFinished(Pass* p) {
  const api::RunPolicy& run = p->job.spec.run_policy;
  if (run.clean_pod_policy != api::CleanPodPolicy::kNone) {
    size_t n = 0;
    for (const auto& pod : p->seen->pods) {
      if (pod.deleting) continue;
      if (run.clean_pod_policy == api::CleanPodPolicy::kRunning && !IsActivePhase(pod.phase)) {
        continue;  // finished pods stay for their logs
      }
      p->plan.deletes.push_back({"Pod", pod.name, pod.uid});
      ++n;
    }
    // Rendezvous is over; the Service has nothing left to resolve.
    if (p->seen->service_exists) p->plan.deletes.push_back({"Service", ServiceName(p->job), ""});
    if (n > 0) {
      AddEvent(p, "Normal", "CleaningPods",
               "job " + p->st.phase + ": deleting " + Plural(n, "pod") + " (cleanPodPolicy " +
                   api::CleanPodPolicyName(run.clean_pod_policy) + ")");
    }
  }
  // The gang is over whatever the policy keeps: a PodGroup left behind would hold its queue.
  DeletePodGroup(p);
  if (!run.ttl_seconds_after_finished || !p->st.completion_time) return;
  const TimePoint expires =
      *p->st.completion_time + std::chrono::seconds(*run.ttl_seconds_after_finished);
  if (p->now >= expires) {
    p->plan.delete_job = true;
    AddEvent(p, "Normal", "TTLExpired",
             "deleting the job: finished " + api::FormatTime(*p->st.completion_time) +
                 ", ttlSecondsAfterFinished " +
                 std::to_string(*run.ttl_seconds_after_finished));
  } else {
    Requeue(p, expires);
  }
}

}  // namespace ddp::plan::internal
