// status.incidents (see incidents.h for the steps).
#include "operator/plan/incidents.h"

#include <algorithm>
#include <cmath>

#include "common/group_contract.h"
#include "operator/api/time_format.h"
#include "operator/plan/inplace.h"
#include "operator/plan/names.h"
#include "operator/plan/progress.h"

namespace ddp::plan::internal {
namespace {

using api::Incident;

double Unix(TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

TimePoint FromUnix(double s) {
  return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::duration<double>(s)));
}

// A record whose end is within this of an incident's (whole-second) time may be its stall.
constexpr double kTimeSlack = 1.0;
// A record no incident claimed is kept this long for a trainer exit whose count comes later.
constexpr double kUnclaimedWindow = 30.0;
// In place, a record with no start is a newcomer's first commit: a survivor's full record of the
// same stall may reach the page later (pages are copied at their own pace), so an open incident
// waits this long past its end for one before the operator measures the stall itself.
constexpr double kFullRecordWait = 10.0;

bool Open(const Incident& i) { return !i.Closed(); }

// How far a node's clock may be from the operator's, both ways.
constexpr double kClockSlack = 60.0;

// Whether a stall record's edges are times the operator can use: none before the job started or
// ahead of the pass's clock (each by more than kClockSlack). A trainer whose clock stepped after
// it started, or a page forged by the job's image, would otherwise give an incident a stall of
// decades (which the status reader then drops, with the goodput) or hold every later record off
// until a time in the future. Such a record is no measurement: it is ignored.
bool Plausible(const Pass& p, const metrics::StallRecord& r) {
  const double lo = p.st.start_time ? Unix(*p.st.start_time) - kClockSlack : 0.0;
  const double hi = Unix(p.now) + kClockSlack;
  for (const std::optional<double>& v : {std::optional<double>(r.end), r.start, r.detected}) {
    if (v && (*v < lo || *v > hi)) return false;
  }
  return true;
}

bool KnownUid(const Pass& p, const std::string& uid) {
  if (uid.empty()) return false;
  for (const Incident& i : p.st.incidents) {
    if (i.pod_uid == uid) return true;
  }
  return false;
}

// The pod's own time of its end, where the pod says: its container's finishedAt, or when its
// delete was asked (the deletion timestamp less its grace). Else the pass's.
TimePoint EndTime(const Pass& p, const ObservedPod& pod) {
  if (pod.finished_at && *pod.finished_at <= p.now) return *pod.finished_at;
  if (pod.deleting && pod.deletion_timestamp && pod.deletion_grace_seconds) {
    const TimePoint asked = *pod.deletion_timestamp - std::chrono::seconds(*pod.deletion_grace_seconds);
    if (asked <= p.now) return asked;
  }
  return p.now;
}

// SpareTookRank when a spare pod (not the incident's) now holds its rank; else HealedInPlace.
const char* InPlaceOutcome(const Pass& p, const Incident& i) {
  const metrics::GroupScrape* g = CurrentGroup(p);
  if (g == nullptr || i.rank < 0) return api::kOutcomeHealedInPlace;
  for (const auto& [pod, rank] : g->members) {
    if (rank != i.rank || pod == i.pod) continue;
    for (const ObservedPod* s : CurrentSpares(p)) {
      if (s != nullptr && s->name == pod) return api::kOutcomeSpareTookRank;
    }
    if (pod.find("-spare-") != std::string::npos) return api::kOutcomeSpareTookRank;
  }
  return api::kOutcomeHealedInPlace;
}

bool IsRendezvousIncident(const Pass& p, const Incident& i) {
  return i.rank < 0 && i.kind != api::kIncidentResize && i.pod == RendezvousPodName(p.job);
}

// A trainer is its pod and its local rank: the pod's supervisor counts that trainer's
// incarnations, and keeps counting when a rule-10 move gives the pod another node rank (so its
// global ranks change). Incidents say the node rank (Incident::rank) and the local rank.
struct Trainer {
  std::string pod;
  int node_rank = -1;
  int local_rank = -1;
};

// The trainer registered on global rank `rank` (the group's report, kGroupTrainerIncarnation).
// The rank arithmetic is the launcher's (worker/launch/launch_plan.h GlobalRank), inverted.
Trainer TrainerOn(const Pass& p, int rank, const std::string& pod) {
  const int nproc = std::max(1, p.job.spec.nproc_per_node);
  return Trainer{pod, rank / nproc, rank % nproc};
}

// The incarnation of `t` that incidents account for: the highest of its in-place exits since its
// pod was last replaced (any other incident of that pod: lost, drained, hung, failed, on a lost
// node; the new pod's supervisor counts from 0 again). Keyed by pod and local rank, not by a rank
// number: a replaced pod's incident says its node rank, a trainer exit its trainer, and a moved
// pod keeps its count (review F5: node rank 1's incident reset global rank 1's count, another
// pod's trainer under nprocPerNode > 1).
int Covered(const Pass& p, const Trainer& t) {
  int covered = 0;
  for (const Incident& i : p.st.incidents) {
    if (i.round != p.round || i.pod != t.pod || i.kind == api::kIncidentResize) continue;
    if (i.kind == api::kIncidentTrainerExit && i.incarnation > 0) {
      // An exit an older operator wrote has no local rank: its `rank` was the trainer's global
      // rank, which only one trainer a pod (local rank 0) makes a node rank.
      const int local = i.local_rank >= 0 ? i.local_rank : 0;
      if (local == t.local_rank) covered = std::max(covered, i.incarnation);
    } else {
      covered = 0;
    }
  }
  return covered;
}

// Names `i`, a trainer exit, after trainer `t` at incarnation `incarnation`.
void NameTrainerExit(const Pass& p, const Trainer& t, int global_rank, int incarnation,
                     Incident* i) {
  i->rank = t.node_rank;
  i->local_rank = t.local_rank;
  i->pod = t.pod;
  i->incarnation = incarnation;
  for (const ObservedPod& pod : p.seen->pods) {
    if (pod.name == t.pod && pod.round == p.round && !pod.deleting) i->node = pod.node_name;
  }
  i->message = "rank " + std::to_string(global_rank) + "'s trainer exited; its pod's supervisor "
               "restarted it (incarnation " + std::to_string(incarnation) + ")";
}

// Trainer exits the group healed inside their pods since the last pass (the increase of
// status.progress.recoveries), each named by the rank whose trainer incarnation rose.
void OpenTrainerExits(Pass* p) {
  if (!InPlace(*p)) return;
  const api::DDPJobStatus& was = p->job.status;
  int64_t before = was.progress ? was.progress->recoveries : 0;
  const int64_t after = p->st.progress ? p->st.progress->recoveries : 0;
  if (was.rendezvous_uid != p->st.rendezvous_uid && !was.rendezvous_uid.empty()) before = 0;
  if (was.round != p->round) before = 0;
  const int64_t healed = std::min<int64_t>(after - before, api::kMaxIncidents);
  if (healed <= 0) return;
  const metrics::GroupScrape* g = CurrentGroup(*p);
  // The count is read after the fact: when the page that shows it also carries the trainers'
  // record of the stall it caused, their time of seeing it is when it happened (and the record
  // is this incident's, however late the page was read).
  TimePoint when = p->now;
  if (const ObservedProgress* prog = CurrentProgress(*p)) {
    const auto& rec = prog->snapshot.last_stall;
    if (rec && rec->end > p->st.goodput.resumed_at + 1e-3 && Plausible(*p, *rec)) {
      when = std::min(when, FromUnix(rec->detected.value_or(rec->start.value_or(rec->end))));
    }
  }
  for (int64_t k = 0; k < healed; ++k) {
    // The trainer restarted more often than incidents say: most restarts first.
    Incident i;
    i.kind = api::kIncidentTrainerExit;
    i.message = "a trainer exited and was restarted inside its pod";
    int best_rank = -1, best_new = 0, best_covered = 0;
    if (g != nullptr) {
      for (const auto& [rank, t] : g->trainers) {
        const int covered = Covered(*p, TrainerOn(*p, rank, t.first));
        if (t.second - covered > best_new) {
          best_rank = rank, best_new = t.second - covered, best_covered = covered;
        }
      }
    }
    if (best_rank >= 0) {
      const Trainer t = TrainerOn(*p, best_rank, g->trainers.at(best_rank).first);
      NameTrainerExit(*p, t, best_rank, best_covered + 1, &i);
    }
    // A heal whose record came in before the group's count did: that stall is this one's.
    api::Goodput& gp = p->st.goodput;
    if (gp.unclaimed_end > 0 && gp.unclaimed_end > Unix(p->now) - kUnclaimedWindow) {
      i.stall_seconds = gp.unclaimed_stall;
      i.detection_seconds = gp.unclaimed_detection;
      i.source = api::kSourceWorkers;
      i.steps_lost = 0;
      i.outcome = api::kOutcomeHealedInPlace;
      const double seen = gp.unclaimed_end - gp.unclaimed_stall + gp.unclaimed_detection.value_or(0);
      when = std::min(when, FromUnix(seen));
      gp.unclaimed_end = 0;
      gp.unclaimed_stall = 0;
      gp.unclaimed_detection.reset();
    }
    i.time = when;
    OpenIncident(p, i);
  }
}

// Trainer exits opened before the group's report showed whose trainer was restarted (its count
// came first): named once a rank's incarnation rose past what incidents cover.
void NameTrainerExits(Pass* p) {
  const metrics::GroupScrape* g = CurrentGroup(*p);
  if (g == nullptr) return;
  for (Incident& i : p->st.incidents) {
    if (i.kind != api::kIncidentTrainerExit || i.round != p->round || i.rank >= 0) continue;
    for (const auto& [rank, t] : g->trainers) {
      const Trainer trainer = TrainerOn(*p, rank, t.first);
      const int covered = Covered(*p, trainer);
      if (t.second <= covered) continue;
      NameTrainerExit(*p, trainer, rank, covered + 1, &i);
      break;
    }
  }
}

// A lost rendezvous pod of the round: once per pod object. Seen ending (deleted, failed, fenced,
// on a lost node, or deleted by this pass for a reason of its own), or gone unseen: the pod whose
// page the status counted before this pass (status.rendezvousUID) no longer exists at all. A
// force delete (grace 0) sets the deletion timestamp and removes the pod in one request, so a
// pass that runs after both watch events never sees it ending. The job's own end deletes its
// rendezvous pod (cleanPodPolicy): that is no loss.
void OpenRendezvousLoss(Pass* p) {
  if (!InPlace(*p)) return;
  const bool job_ending = p->st.phase == api::kPhaseSucceeded || p->st.phase == api::kPhaseFailed;
  for (const ObservedPod& pod : p->seen->pods) {
    if (pod.role != group::kRoleRendezvous || pod.round != p->round || KnownUid(*p, pod.uid)) {
      continue;
    }
    bool deleted_now = false;
    for (const Delete& d : p->plan.deletes) deleted_now = deleted_now || (d.kind == "Pod" && d.uid == pod.uid);
    const bool ended = pod.deleting || pod.phase == "Failed" || pod.fenced || pod.node_lost ||
                       pod.lost_with_store || (deleted_now && !job_ending);
    if (!ended || pod.uid.empty()) continue;
    Incident i;
    i.kind = pod.node_lost || pod.lost_with_store ? api::kIncidentNodeLost : api::kIncidentPodLost;
    i.pod = pod.name;
    i.pod_uid = pod.uid;
    i.node = pod.node_name;
    i.time = EndTime(*p, pod);
    i.message = "rendezvous pod " + pod.name + " lost (" +
                DescribeOutcome(pod, pod.exit_code ? PodOutcome::kFailure : PodOutcome::kDisruption) +
                "); the group re-registers with a new one";
    OpenIncident(p, i);
  }
  const api::DDPJobStatus& was = p->job.status;
  const std::string& counted = was.rendezvous_uid;
  if (counted.empty() || was.round != p->round || KnownUid(*p, counted)) return;
  for (const ObservedPod& pod : p->seen->pods) {
    if (pod.uid == counted) return;  // still there: its end, if any, is seen above
  }
  Incident i;
  i.kind = api::kIncidentPodLost;
  i.pod = RendezvousPodName(p->job);
  i.pod_uid = counted;
  i.message = "rendezvous pod " + i.pod + " (uid " + counted + ") lost: gone without being seen "
              "ending (a force delete); the group re-registers with a new one";
  OpenIncident(p, i);
}

// The stall a record gives incidents it closes, and the goodput. Returns the seconds counted.
void ApplyRecord(Pass* p, const metrics::StallRecord& rec) {
  api::Goodput& gp = p->st.goodput;
  std::vector<Incident*> matched;
  for (Incident& i : p->st.incidents) {
    if (Open(i) && !i.stall_seconds && Unix(i.time) <= rec.end + kTimeSlack) matched.push_back(&i);
  }
  const bool first = gp.resumed_at <= 0;
  double stall = 0;
  if (rec.start) {
    stall = rec.end - *rec.start;
  } else if (!matched.empty()) {
    double earliest = rec.end;
    for (const Incident* i : matched) earliest = std::min(earliest, Unix(i->time));
    stall = rec.end - earliest;
  }
  stall = std::max(0.0, stall);
  for (Incident* i : matched) {
    i->stall_seconds = stall;
    i->source = rec.start ? api::kSourceWorkers : api::kSourceOperator;
    if (rec.start && rec.detected) i->detection_seconds = std::max(0.0, *rec.detected - *rec.start);
    if (rec.detected && FromUnix(*rec.detected) < i->time) i->time = api::TruncateToSeconds(FromUnix(*rec.detected));
    const int64_t resumed = static_cast<int64_t>(rec.step);
    i->steps_lost = i->outcome == api::kOutcomeNewRound ? std::max<int64_t>(0, i->step - resumed) : 0;
    if (i->outcome.empty()) i->outcome = InPlaceOutcome(*p, *i);
  }
  if (first && p->st.start_time) {
    gp.stalled_seconds += std::max(0.0, rec.end - Unix(*p->st.start_time));  // the start, too
  } else if (!first) {
    gp.stalled_seconds += stall;
  }
  if (!first && matched.empty() && rec.start) {
    gp.unclaimed_end = rec.end;
    gp.unclaimed_stall = stall;
    gp.unclaimed_detection.reset();
    if (rec.detected) gp.unclaimed_detection = std::max(0.0, *rec.detected - *rec.start);
  } else if (!matched.empty()) {
    gp.unclaimed_end = 0;
    gp.unclaimed_stall = 0;
    gp.unclaimed_detection.reset();
  }
  gp.resumed_at = rec.end;
}

// Whether to leave `rec` (no start: a newcomer's first commit) for a survivor's full record of the
// same stall, still to come (kFullRecordWait). Also when it is the first record read: a loss in
// the first second of training comes before the operator's first read of the start. (An incident
// open before training ever started has no survivor's record: it waits the bound, then the
// operator measures it.)
bool AwaitFullRecord(const Pass& p, const metrics::StallRecord& rec) {
  if (rec.start || !InPlace(p)) return false;
  if (Unix(p.now) - rec.end >= kFullRecordWait) return false;
  for (const Incident& i : p.st.incidents) {
    if (Open(i) && !i.stall_seconds && Unix(i.time) <= rec.end + kTimeSlack) return true;
  }
  return false;
}

// Pages without records: the first advance of the step after an incident ends its stall.
void ApplyAdvance(Pass* p, const metrics::ProgressSnapshot& s) {
  if (s.step <= 0 || s.last_advance == TimePoint{}) return;
  const double advanced = Unix(s.last_advance);
  api::Goodput& gp = p->st.goodput;
  if (advanced <= gp.resumed_at) return;
  metrics::StallRecord rec;
  rec.end = advanced;
  rec.step = s.step;
  bool any = gp.resumed_at <= 0;
  for (const Incident& i : p->st.incidents) any = any || (Open(i) && !i.stall_seconds && Unix(i.time) < advanced);
  if (any) ApplyRecord(p, rec);
}

}  // namespace

const char* IncidentKind(const ObservedPod& pod, PodOutcome outcome) {
  if (pod.node_lost || pod.lost_with_store) return api::kIncidentNodeLost;
  const auto end = group::ParseEnd(pod.message);
  if (end == group::EndReason::kDeparted || end == group::EndReason::kStopped ||
      pod.reason == "Evicted" || pod.reason == "Preempted") {
    return api::kIncidentDrain;
  }
  if (pod.fenced) return api::kIncidentHang;
  if (outcome == PodOutcome::kFailure && pod.exit_code) return api::kIncidentTrainerExit;
  if (pod.disruption_condition) return api::kIncidentDrain;
  return api::kIncidentPodLost;
}

void OpenPodIncident(Pass* p, const ObservedPod& pod, PodOutcome outcome, int rank,
                     const std::string& message) {
  if (KnownUid(*p, pod.uid)) return;
  Incident i;
  i.kind = IncidentKind(pod, outcome);
  i.pod = pod.name;
  i.pod_uid = pod.uid;
  i.node = pod.node_name;
  i.rank = rank;
  i.time = EndTime(*p, pod);
  i.message = message;
  OpenIncident(p, i);
}

void OpenIncident(Pass* p, Incident i) {
  if (i.round == 0) i.round = p->round;
  if (i.time == TimePoint{}) i.time = p->now;
  i.time = api::TruncateToSeconds(i.time);
  if (i.step == 0) {
    if (const ObservedProgress* prog = CurrentProgress(*p)) {
      i.step = static_cast<int64_t>(std::llround(prog->snapshot.step));
    } else if (p->st.progress) {
      i.step = p->st.progress->step;
    }
  }
  if (i.message.size() > api::kMaxIncidentMessage) i.message.resize(api::kMaxIncidentMessage);
  auto& list = p->st.incidents;
  list.push_back(std::move(i));
  if (list.size() > api::kMaxIncidents) {
    list.erase(list.begin(), list.end() - static_cast<std::ptrdiff_t>(api::kMaxIncidents));
  }
  p->st.incidents_total += 1;
}

void DecideOpenIncidents(Pass* p, const char* outcome) {
  const bool failed = std::string(outcome) == api::kOutcomeFailed;
  for (Incident& i : p->st.incidents) {
    if (i.round != p->round || !Open(i)) continue;
    if (i.outcome.empty() || failed) {
      if (i.outcome.empty()) i.outcome = outcome;
      if (failed && !i.stall_seconds) {
        i.stall_seconds = std::max(0.0, Unix(p->now) - Unix(i.time));
        i.source = api::kSourceOperator;
      }
    }
  }
}

void TrackIncidents(Pass* p) {
  OpenTrainerExits(p);
  NameTrainerExits(p);
  OpenRendezvousLoss(p);
  if (const ObservedProgress* prog = CurrentProgress(*p)) {
    const metrics::ProgressSnapshot& s = prog->snapshot;
    if (s.last_stall && !Plausible(*p, *s.last_stall)) {
      // Ignored (see Plausible); the next record that is a measurement counts.
    } else if (s.last_stall && s.last_stall->end > p->st.goodput.resumed_at + 1e-3) {
      if (!AwaitFullRecord(*p, *s.last_stall)) ApplyRecord(p, *s.last_stall);
    } else if (!s.stall_series) {
      ApplyAdvance(p, s);
    }
  }
  // A lost rendezvous pod that training went on through: healed once another one reports.
  const auto& g = p->seen->group;
  for (Incident& i : p->st.incidents) {
    if (!Open(i) || !IsRendezvousIncident(*p, i) || i.round != p->round) continue;
    if (!g || g->round != p->round || g->pod_uid.empty() || g->pod_uid == i.pod_uid) continue;
    if (!i.stall_seconds) {
      i.stall_seconds = 0;
      i.source = api::kSourceOperator;
      i.steps_lost = 0;
    }
    if (i.outcome.empty()) i.outcome = api::kOutcomeHealedInPlace;
  }
}

}  // namespace ddp::plan::internal
