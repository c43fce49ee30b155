// The job's gang in a reconcile pass; see gang_pass.h.
#include "operator/plan/gang_pass.h"

#include <algorithm>

#include "operator/api/labels.h"
#include "operator/plan/conditions.h"

namespace ddp::plan::internal {
namespace {

bool HasGate(const ObservedPod& pod, const char* gate) {
  return std::find(pod.scheduling_gates.begin(), pod.scheduling_gates.end(), gate) !=
         pod.scheduling_gates.end();
}

// PodGroup phases in which the scheduler says it has not placed the gang yet. Volcano: Pending
// (not enqueued), Inqueue (enqueued, pods being bound). Coscheduling: Pending, PreScheduling,
// Scheduling (some members wait at Permit). No phase yet is not a wait: the scheduler has not
// looked at the group.
bool PodGroupWaiting(GangScheduler s, const std::string& phase) {
  if (phase == "Pending") return true;
  if (s == GangScheduler::kVolcano) return phase == "Inqueue";
  return phase == "PreScheduling" || phase == "Scheduling";
}

bool OwnsPodGroup(const Pass& p) {
  const auto& pg = p.seen->pod_group;
  return pg && (p.job.uid.empty() || pg->owner_uid == p.job.uid);
}

std::string RoundPrefix(const Pass& p) { return "round " + std::to_string(p.round) + ": "; }

// What the scheduler said about the round's first unschedulable pod (by name), as
// "; pod NAME: MESSAGE", or "": why the gang is not placed in the scheduler's own words (Volcano:
// "3/3 tasks in gang unschedulable: ..."; the plugin: "0/2 nodes are available: ..."). The
// Unschedulable condition is not set while a gang waits, so this is where a user reads it.
std::string SchedulerSays(const Pass& p) {
  std::vector<const ObservedPod*> pods = CurrentPods(p);
  if (InPlace(p)) pods.push_back(CurrentRendezvous(p));
  const ObservedPod* first = nullptr;
  for (const ObservedPod* pod : pods) {
    if (!pod || pod->phase != "Pending" || !pod->unschedulable_since ||
        pod->unschedulable_message.empty()) {
      continue;
    }
    if (!first || pod->name < first->name) first = pod;
  }
  return first ? "; pod " + first->name + ": " + first->unschedulable_message : "";
}

}  // namespace

std::optional<GangWait> FindGangWait(const Pass& p) {
  const GangConfig& g = p.gang;
  const std::string name = PodGroupName(p.job);
  if (g.scheduler != GangScheduler::kNone) {
    if (p.seen->pod_group_api_missing) {
      return GangWait{kReasonPodGroupUnavailable,
                      std::string("the API server does not serve ") +
                          PodGroupApiVersion(g.scheduler) + " PodGroups: install " +
                          GangSchedulerDisplay(g.scheduler) +
                          " (its CRD), or run the operator without --gang-scheduler-name; the "
                          "pods are created once PodGroups are served",
                      true};
    }
    if (p.seen->pod_group && !OwnsPodGroup(p)) {
      return GangWait{kReasonPodGroupNotOwned,
                      "PodGroup " + name + " exists and is not this job's: delete it, or rename "
                      "the job",
                      true};
    }
  }
  int created = 0, gated = 0, started = 0;
  for (const ObservedPod* pod : CurrentPods(p)) {
    if (!pod) continue;
    ++created;
    if (HasGate(*pod, api::kKueueAdmissionGate)) ++gated;
    if (pod->phase == "Running" || pod->phase == "Succeeded") ++started;
  }
  if (gated > 0) {
    const std::string queue = KueueQueue(p.job, g);
    std::string msg = RoundPrefix(p) + std::to_string(gated) + " of " + std::to_string(p.size) +
                      " pods wait for Kueue to admit";
    if (!queue.empty()) {
      msg += " pod group " + KueueGroupName(p.job, p.round) + " (LocalQueue " + queue + ")";
    }
    return GangWait{kReasonWaitingForAdmission, msg, false};
  }
  const auto& pg = p.seen->pod_group;
  if (g.scheduler != GangScheduler::kNone && pg && created > 0 && started < p.size &&
      PodGroupWaiting(g.scheduler, pg->phase)) {
    return GangWait{kReasonWaitingForPodGroup,
                    RoundPrefix(p) + "PodGroup " + name + " is " +
                        (pg->phase.empty() ? "not placed yet" : pg->phase) + " (minMember " +
                        std::to_string(GangMinMember(p.job, p.size)) + "): " +
                        GangSchedulerDisplay(g.scheduler) + " starts the gang's pods together" +
                        SchedulerSays(p),
                    false};
  }
  return std::nullopt;
}

void RecordGangWait(Pass* p, std::optional<GangWait> wait) {
  p->gang_wait = std::move(wait);
  const api::Condition* c = p->st.FindCondition(api::kCondQueued);
  const int64_t gen = p->job.generation;
  if (const auto& w = p->gang_wait) {
    const bool begins = !c || c->status != "True" || c->reason != w->reason;
    if (p->st.phase != api::kPhaseRunning) p->st.phase = api::kPhasePending;
    SetCondition(&p->st, api::kCondQueued, "True", w->reason, w->message, p->now, gen);
    if (begins) {
      AddEvent(p, w->hold_pods ? "Warning" : "Normal", w->reason, w->message);
    }
    return;
  }
  if (!c || c->status != "True") return;
  const auto waited =
      std::chrono::duration_cast<std::chrono::seconds>(p->now - c->last_transition_time);
  if (p->st.start_time) p->st.start_time = std::min(*p->st.start_time + waited, p->now);
  const std::string msg = RoundPrefix(*p) + "the gang was admitted after " +
                          std::to_string(waited.count()) + "s";
  ClearCondition(&p->st, api::kCondQueued, kReasonAdmitted, msg, p->now, gen);
  AddEvent(p, "Normal", kReasonAdmitted, msg);
}

void PlanPodGroup(Pass* p) {
  const GangConfig& g = p->gang;
  if (g.scheduler == GangScheduler::kNone) return;
  if (p->seen->pod_group_api_missing) {
    Requeue(p, p->now + kPodGroupApiRetry);
    return;
  }
  nlohmann::json desired = BuildPodGroup(p->job, g, p->size);
  const std::string name = PodGroupName(p->job);
  const std::string min_member = std::to_string(desired["spec"].value("minMember", 0));
  if (!p->seen->pod_group) {
    // One decision, one event: a new job's PodGroup is part of its JobCreated event.
    const std::string what = "PodGroup " + name + " (minMember " + min_member + ")";
    if (!p->plan.events.empty() && p->plan.events.back().reason == kReasonJobCreated) {
      p->plan.events.back().message += "; creating " + what;
    } else {
      AddEvent(p, "Normal", "CreatingPodGroup", RoundPrefix(*p) + "creating " + what);
    }
    p->plan.creates.push_back(std::move(desired));
    return;
  }
  if (!OwnsPodGroup(*p)) return;
  nlohmann::json patch = PodGroupSpecPatch(p->seen->pod_group->spec, desired["spec"]);
  if (patch.is_null()) return;
  AddEvent(p, "Normal", "UpdatingPodGroup",
           RoundPrefix(*p) + "updating PodGroup " + name + " (minMember " + min_member + "): " +
               patch.dump());
  p->plan.patches.push_back(
      {PodGroupApiVersion(g.scheduler), kPodGroupKind, name, {{"spec", std::move(patch)}}});
}

bool SparesMayJoin(const Pass& p) {
  if (p.gang.scheduler == GangScheduler::kNone) return true;
  auto placed = [](const ObservedPod* pod) {
    return pod != nullptr && (!pod->node_name.empty() || pod->phase == "Running" ||
                              pod->phase == "Succeeded" || pod->phase == "Failed");
  };
  for (const ObservedPod* pod : CurrentPods(p)) {
    if (!placed(pod)) return false;
  }
  return !InPlace(p) || placed(CurrentRendezvous(p));
}

bool RoundMayStart(const Pass& p) {
  if (p.gang.scheduler == GangScheduler::kNone) return true;
  return std::none_of(p.seen->pods.begin(), p.seen->pods.end(),
                      [&](const ObservedPod& pod) { return pod.round != p.round; });
}

void DeletePodGroup(Pass* p) {
  if (!OwnsPodGroup(*p)) return;
  const ObservedPodGroup& pg = *p->seen->pod_group;
  p->plan.deletes.push_back({kPodGroupKind, pg.name, pg.uid});
}

void WarnGangIgnored(Pass* p) {
  std::string what;
  if (p->job.spec.run_policy.scheduling_policy && p->gang.scheduler == GangScheduler::kNone) {
    what = "spec.runPolicy.schedulingPolicy";
  }
  if (!p->gang.kueue && p->job.labels.count(api::kKueueQueueNameLabel)) {
    what += std::string(what.empty() ? "" : " and ") + "the label " + api::kKueueQueueNameLabel;
  }
  if (what.empty()) return;
  AddEvent(p, "Warning", kReasonGangSchedulingIgnored, what + " ignored: " + p->gang.none_reason);
}

}  // namespace ddp::plan::internal
