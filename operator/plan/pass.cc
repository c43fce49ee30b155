// Bookkeeping steps shared by every reconcile pass; see pass.h. Decisions live in plan.cc.
#include "operator/plan/pass.h"

#include <algorithm>

#include "common/group_contract.h"
#include "operator/api/time_format.h"
#include "operator/api/validate.h"
#include "operator/plan/builders.h"
#include "operator/plan/conditions.h"
#include "operator/plan/gang_pass.h"
#include "operator/plan/inplace.h"
#include "operator/plan/names.h"
#include "operator/plan/progress.h"
#include "operator/plan/replace.h"
#include "operator/plan/resize.h"
#include "operator/plan/suspect_nodes.h"
#include "operator/plan/unschedulable.h"

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

bool InPlace(const Pass& p) {
  return p.job.spec.failure_policy.recovery == api::Recovery::kInPlace;
}

int SpareCount(const Pass& p) { return InPlace(p) ? p.job.spec.failure_policy.spares : 0; }

bool IsCurrent(const Pass& p, const ObservedPod& pod) {
  if (pod.round != p.round || pod.index < 0) return false;
  if (pod.role == group::kRoleSpare) {
    return pod.index < SpareCount(p) && pod.name == SparePodName(p.job, pod.index);
  }
  if (pod.role == group::kRoleRendezvous) return InPlace(p) && pod.name == RendezvousPodName(p.job);
  return pod.role == group::kRoleWorker && pod.index < p.size && pod.name == PodName(p.job, pod.index);
}

std::vector<const ObservedPod*> CurrentPods(const Pass& p) {
  std::vector<const ObservedPod*> by_index(static_cast<size_t>(p.size), nullptr);
  for (const auto& pod : p.seen->pods) {
    if (!pod.deleting && pod.role == group::kRoleWorker && IsCurrent(p, pod)) {
      by_index[static_cast<size_t>(pod.index)] = &pod;
    }
  }
  return by_index;
}

std::vector<const ObservedPod*> CurrentSpares(const Pass& p) {
  std::vector<const ObservedPod*> by_index(static_cast<size_t>(SpareCount(p)), nullptr);
  for (const auto& pod : p.seen->pods) {
    if (!pod.deleting && pod.role == group::kRoleSpare && IsCurrent(p, pod)) {
      by_index[static_cast<size_t>(pod.index)] = &pod;
    }
  }
  return by_index;
}

const ObservedPod* CurrentRendezvous(const Pass& p) {
  for (const auto& pod : p.seen->pods) {
    if (!pod.deleting && pod.role == group::kRoleRendezvous && IsCurrent(p, pod)) return &pod;
  }
  return nullptr;
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
  std::vector<std::string> names, past;
  for (const auto& pod : p->seen->pods) {
    if (IsCurrent(*p, pod) || pod.deleting) continue;
    p->plan.deletes.push_back({"Pod", pod.name, pod.uid});
    // Elastic in place: a pod of this round past its size (the group shrank without it).
    (pod.round == p->round ? past : names).push_back(pod.name + " (round " + std::to_string(pod.round) + ")");
  }
  if (!past.empty()) {
    std::string list;
    for (const auto& n : past) list += (list.empty() ? "" : ", ") + n;
    AddEvent(p, "Normal", "DeletingPods",
             "round " + std::to_string(p->round) + ": deleting " + Plural(past.size(), "pod") +
                 " past the round's size of " + std::to_string(p->size) + ": " + list);
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
  int created = 0, waiting = 0, spares = 0, held = 0;
  bool rendezvous = false;
  // A pod's DDP_MAX_RECOVERIES is the budget left under the status being written now.
  api::DDPJob at_creation = p->job;
  at_creation.status = p->st;
  // A name still held by a pod of another round (or a foreign one) is created only once that
  // pod is gone, so two rounds never overlap.
  auto free_name = [&](const std::string& name) {
    if (const ObservedPod* holder = PodNamed(*p, name)) {
      if (holder->round != p->round || holder->deleting) ++waiting;
      return false;
    }
    if (std::find(p->foreign_names.begin(), p->foreign_names.end(), name) !=
        p->foreign_names.end()) {
      ++waiting;  // not ours to delete: its owner (or the garbage collector) removes it
      return false;
    }
    return true;
  };
  // Every pod of the round carries the gang's keys (gang.h counts the rendezvous pod and the
  // spares in the gang: a round is all of them or none).
  auto create = [&](nlohmann::json pod) {
    AddGangKeys(at_creation, p->gang, p->round, p->size, &pod);
    AvoidNodes(SuspectNames(p->st), &pod);  // suspect_nodes.h
    p->plan.creates.push_back(std::move(pod));
  };
  // Under a PodGroup scheduler a round starts whole, once the old round's pods are gone.
  const bool round_starts = RoundMayStart(*p);  // gang_pass.h
  if (!hold_pods && InPlace(*p) && free_name(RendezvousPodName(p->job))) {
    if (round_starts) {
      create(BuildRendezvousPod(at_creation, p->round, p->size));
      rendezvous = true;
    } else {
      ++held;
    }
  }
  for (int i = 0; !hold_pods && i < p->size; ++i) {
    if (!free_name(PodName(p->job, i))) continue;
    if (!round_starts) {
      ++held;
      continue;
    }
    create(BuildWorkerPod(at_creation, i, p->round, p->size));
    ++created;
  }
  const bool spares_join = SparesMayJoin(*p);  // a gang's spares come after it (gang_pass.h)
  for (int k = 0; !hold_pods && spares_join && k < SpareCount(*p); ++k) {
    if (!free_name(SparePodName(p->job, k))) continue;
    create(BuildSparePod(at_creation, k, p->round, p->size));
    ++spares;
  }
  if (!service && created == 0 && spares == 0 && !rendezvous) return;
  std::string what = service ? "Service " + ServiceName(p->job) : "";
  auto add = [&](const std::string& part) { what += (what.empty() ? "" : " and ") + part; };
  if (rendezvous) add("rendezvous pod " + RendezvousPodName(p->job));
  if (created > 0) add(Plural(static_cast<size_t>(created), "pod") + " of " + std::to_string(p->size));
  if (spares > 0) add(Plural(static_cast<size_t>(spares), "spare pod"));
  std::string waits =
      waiting > 0 ? "; " + std::to_string(waiting) + " wait for their old pod to go" : "";
  if (held > 0) waits += "; " + std::to_string(held) + " wait for the other rounds' pods to go";
  // One decision, one event: a new job's creates are part of its JobCreated event.
  if (!p->plan.events.empty() && p->plan.events.back().reason == kReasonJobCreated) {
    p->plan.events.back().message += "; creating " + what + waits;
    return;
  }
  if (created == 0 && spares == 0 && !rendezvous) {
    AddEvent(p, "Normal", "CreatingService", "creating headless " + what);
    return;
  }
  AddEvent(p, "Normal", "CreatingPods",
           "round " + std::to_string(p->round) + ": creating " + what + " (world size " +
               std::to_string(p->size * p->job.spec.nproc_per_node) + ")" + waits);
}

void Summarize(Pass* p) {
  RecordUnschedulable(p);
  int ready = 0, started = 0;
  // The pods holding the world's ranks: the worker pods, or under InPlace whichever pods the
  // group's report names (a spare that took a rank counts, the pod it replaced does not).
  for (const ObservedPod* pod : MemberPods(*p)) {
    // A pod being replaced is going, however it looks (a fenced pod still runs).
    if (AlreadyReplacing(*p, *pod)) continue;
    if (pod->ready) ++ready;
    if (pod->phase == "Running" || pod->phase == "Succeeded") ++started;
  }
  p->st.round = p->round;
  p->st.replicas = p->size;
  p->st.world_size = p->size * p->job.spec.nproc_per_node;
  // A pod the report does not list yet (a replacement about to register as a spare) may count
  // beside the spare that holds its rank: never more than the round's ranks.
  p->st.ready_replicas = std::min(ready, p->size);
  // Spares: the spare pods that exist once this plan is applied (those it replaces are going,
  // those it creates are there), so the next pass finds the same count; ready ones as the group
  // reports them (an idle spare pod, or a pod whose rank a spare took), else the spare pods
  // whose container is ready.
  int spares = 0, ready_spares = 0;
  for (const ObservedPod* pod : CurrentSpares(*p)) {
    if (!pod || AlreadyReplacing(*p, *pod) || ReplacedInThisPass(*p, pod->name)) continue;
    ++spares;
    if (pod->ready) ++ready_spares;
  }
  for (const nlohmann::json& obj : p->plan.creates) {
    const nlohmann::json labels =
        obj.value("metadata", nlohmann::json::object()).value("labels", nlohmann::json::object());
    if (obj.value("kind", "") == "Pod" && labels.value(api::kRoleLabel, "") == group::kRoleSpare) {
      ++spares;
    }
  }
  int silent_held = 0;
  if (p->seen->group && p->seen->group->round == p->round && p->seen->group->report.present) {
    ready_spares = static_cast<int>(p->seen->group->report.spares.size());
    silent_held = static_cast<int>(p->seen->group->report.silent_held);
  }
  p->st.spares = spares;
  p->st.ready_spares = InPlace(*p) ? ready_spares : 0;
  p->st.silent_pods_held = InPlace(*p) ? silent_held : 0;
  if (InPlace(*p)) {
    const ObservedPod* rdzv = CurrentRendezvous(*p);
    if (!rdzv || (rdzv->phase != "Running" && rdzv->phase != "Succeeded")) return;
  }
  // Elastic in place: a pod left Pending (unschedulable) is not waited for (resize.h), nor the
  // pods of node ranks the group went on without after losses (it trains smaller: BelowSize).
  const metrics::GroupScrape* g = CurrentGroup(*p);
  const int shrunk = g != nullptr ? static_cast<int>(g->shrunk_nodes) : 0;
  if (p->st.phase == api::kPhaseRunning || started < GroupSize(p) - shrunk) return;
  const std::string msg =
      "round " + std::to_string(p->round) + ": " +
      (shrunk > 0 ? "the group trains on without " + Plural(static_cast<size_t>(shrunk), "lost pod") +
                        " until the replacements are ready"
                  : "all " + Plural(static_cast<size_t>(p->size), "pod") + " running") +
      " (world size " + std::to_string(p->st.world_size) + ")";
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
