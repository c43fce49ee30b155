// Internal to the planner: status.incidents, what each failure, loss, drain, hang or resize of a
// job cost (docs/metrics.md "Incidents and goodput"). Pure bookkeeping over the pass: the
// decisions themselves are plan.cc's; these steps record them.
//
// 1. An incident opens where the planner decides about it: a pod's end (RecordFailure), a hang,
//    a resize, a trainer exit the group healed inside its pod (the group's report: the recovery
//    count rose, and the trainer, a pod's local rank, whose incarnation rose is the one), a lost
//    rendezvous pod. Every incident's rank is a node rank; a trainer exit's also a local rank.
//    Its time is the pod's own (its container's finishedAt, or its delete's request) where
//    known, else the pass's.
// 2. Its outcome is decided with the job's next decision: a new round (NewRound), a resize's
//    direction (Shrank, Grew), the job's failure (Failed), else once training advances again:
//    SpareTookRank when a spare pod now holds its rank, else HealedInPlace.
// 3. Its stall comes from the trainers' own record (common/worker_progress.h StallRecord): the
//    first record that ended after the incident, from its last commit before to its first
//    after (source "workers"); a record that saw no start (a process that just began: a new
//    round, a healed newcomer on the page read) ends at the record and starts at the incident's
//    time (source "operator"). Pages without records (another image): the first advance of the
//    step the operator reads after it (source "operator"). Every incident a record closes gets
//    that one stall (pods lost together stood still together); the goodput counts it once.
// 4. status.incidents keeps the newest kMaxIncidents; incidentsTotal counts every one, and
//    goodput.stalledSeconds every second training stood still since startTime: until the first
//    record of the job (its start), and every record since (with or without an incident).
#ifndef DDP_OPERATOR_PLAN_INCIDENTS_H_
#define DDP_OPERATOR_PLAN_INCIDENTS_H_

#include "operator/plan/classify.h"
#include "operator/plan/pass.h"

namespace ddp::plan::internal {

// The kind of incident `pod`'s end is: NodeLost (its node lost, or lost with the store), Hang
// (declared lost by its group while it may still run: silent), Drain (evicted, a disruption
// target, departed or the group stopped), TrainerExit (an exit code), else PodLost.
const char* IncidentKind(const ObservedPod& pod, PodOutcome outcome);

// Step 1 for a pod's end; `rank` the node rank it held (-1: none). Once per pod object (uid).
void OpenPodIncident(Pass* p, const ObservedPod& pod, PodOutcome outcome, int rank,
                     const std::string& message);
// Step 1 for anything else; i.round, i.step and i.time are filled from the pass when unset.
void OpenIncident(Pass* p, api::Incident i);
// Step 2: every incident of the round still without an outcome gets `outcome`. A Failed job's
// open incidents also end: they stood still until now.
void DecideOpenIncidents(Pass* p, const char* outcome);

// Steps 1-4 that need the whole pass (call after the decisions, before Summarize): trainer
// exits healed inside pods, a lost rendezvous pod, stalls, outcomes and the goodput.
void TrackIncidents(Pass* p);

}  // namespace ddp::plan::internal

#endif  // DDP_OPERATOR_PLAN_INCIDENTS_H_
