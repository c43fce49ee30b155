// The round model's transitions (see round.h).
#include "operator/plan/round.h"

#include <algorithm>

#include "operator/plan/conditions.h"
#include "operator/plan/incidents.h"
#include "operator/plan/progress.h"

namespace ddp::plan::internal {

std::string RoundChange(int from, int to, const std::string& why) {
  return "round " + std::to_string(from) + " -> " + std::to_string(to) + " (" + why + ")";
}

Plan EndJob(Pass* p, bool succeeded, const std::string& reason, const std::string& message) {
  const int64_t gen = p->job.generation;
  p->st.phase = succeeded ? api::kPhaseSucceeded : api::kPhaseFailed;
  p->st.completion_time = p->now;
  SetCondition(&p->st, succeeded ? api::kCondSucceeded : api::kCondFailed, "True", reason, message,
               p->now, gen);
  ClearCondition(&p->st, api::kCondRunning, reason, message, p->now, gen);
  ClearCondition(&p->st, api::kCondRestarting, reason, message, p->now, gen);
  ClearCondition(&p->st, api::kCondQueued, reason, message, p->now, gen);
  AddEvent(p, succeeded ? "Normal" : "Warning", reason, message);
  CleanUpFinished(p);
  UpdateProgress(p);  // the last progress read rides along with the final status
  TrackIncidents(p);  // the last stall record too
  if (!succeeded) DecideOpenIncidents(p, api::kOutcomeFailed);
  if (succeeded) RecordFinish(p);  // then the step every rank reached, no ETA
  return FinishPass(p);
}

void RecordFailure(Pass* p, const ObservedPod& pod, PodOutcome outcome, int rank) {
  api::LastFailure f;
  f.pod = pod.name;
  f.rank = rank >= 0 ? rank : pod.index;
  f.exit_code = pod.exit_code;  // a disruption may have one too (preempted after a checkpoint)
  f.reason = pod.reason.empty() ? (outcome == PodOutcome::kFailure ? "Error" : "Disrupted")
                                : pod.reason;
  f.message = pod.message;
  f.time = p->now;
  f.pod_uid = pod.uid;
  p->st.last_failure = f;
  OpenPodIncident(p, pod, outcome, f.rank,
                  "rank " + std::to_string(f.rank) + " " + DescribeOutcome(pod, outcome));
  auto& counted = p->st.counted_pods;
  if (pod.uid.empty() || std::find(counted.begin(), counted.end(), pod.uid) != counted.end()) return;
  counted.push_back(pod.uid);
  if (counted.size() > api::kMaxCountedPods) counted.erase(counted.begin());
}

bool CountedThisRound(const Pass& p, const ObservedPod& pod) {
  if (pod.uid.empty()) return false;
  const api::DDPJobStatus& st = p.job.status;  // as the pass found it
  if (st.last_failure && st.last_failure->pod_uid == pod.uid) return true;
  return std::find(st.counted_pods.begin(), st.counted_pods.end(), pod.uid) != st.counted_pods.end();
}

void StartNewRound(Pass* p, int size, const char* phase, const std::string& reason,
                   const std::string& why, bool warning) {
  const std::string msg = RoundChange(p->round, p->round + 1, why);
  if (reason == "Resumed") {
    p->st.goodput = api::Goodput{};  // the goodput counts from the resume, as startTime does
  } else if (reason == "Resized" || reason == "PendingTimeout") {
    api::Incident i;
    i.kind = api::kIncidentResize;
    i.outcome = size < p->size ? api::kOutcomeShrank : api::kOutcomeNewRound;
    i.message = msg;
    OpenIncident(p, i);
  }
  DecideOpenIncidents(p, api::kOutcomeNewRound);
  p->round += 1;
  p->size = size;
  p->st.phase = phase;
  // The new round's rendezvous pod counts in-place recoveries from 0 (progress.h).
  if (p->st.progress) p->st.progress->recoveries = 0;
  p->st.rendezvous_uid.clear();
  p->st.counted_pods.clear();  // the old round's pods are deleted as one, never counted again
  SetCondition(&p->st, api::kCondRestarting, "True", reason, msg, p->now, p->job.generation);
  ClearCondition(&p->st, api::kCondRunning, reason, msg, p->now, p->job.generation);
  AddEvent(p, warning ? "Warning" : "Normal", reason, msg);
}

int RestartSize(const Pass& p) {
  return p.job.generation != p.job.status.observed_generation ? DesiredSize(p.job) : p.size;
}

}  // namespace ddp::plan::internal
