// The incident tests' run (planner_incidents_test.cc, incidents_trainer_exit_test.cc): an InPlace
// job trained to step 100, and the passes that move it on, as the controller makes them.
#ifndef DDP_TESTS_OPERATOR_INCIDENT_RUN_H_
#define DDP_TESTS_OPERATOR_INCIDENT_RUN_H_

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {

using api::DDPJob;
using api::Incident;

inline double Unix(TimePoint t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// Plans and applies until nothing is written; deleted pods vanish between passes.
inline void Settle(DDPJob* job, Observed* world, TimePoint now) {
  for (int pass = 0; pass < 20; ++pass) {
    const Plan plan = PlanReconcile(*job, *world, now);
    if (plan.creates.empty() && plan.deletes.empty() && !plan.status) return;
    Apply(plan, job, world, now);
    ReapDeleting(world);
  }
  ADD_FAILURE() << "planner did not settle in 20 passes: "
                << PlanReconcile(*job, *world, now).ToString();
}

// One pass, applied, as the controller makes it (a pod being deleted goes before the next).
inline void Pass(DDPJob* job, Observed* world, TimePoint now) {
  Apply(PlanReconcile(*job, *world, now), job, world, now);
  ReapDeleting(world);
}

inline void StartAll(Observed* w) {
  for (auto& p : w->pods) {
    if (p.deleting || p.phase == "Failed") continue;
    p.phase = "Running";
    p.ready = true;
    p.node_name = p.name == "mingpt-worker-1" ? "node-b" : "node-a";
  }
}

// Rank 0's page as the scraper keeps it: `step`, seen advancing at `advanced`, and its record.
inline ObservedProgress Page(int round, double step, TimePoint advanced,
                      std::optional<metrics::StallRecord> stall = std::nullopt) {
  ObservedProgress p;
  p.round = round;
  p.snapshot.step = step;
  p.snapshot.last_advance = advanced;
  p.snapshot.scraped_at = advanced;
  p.snapshot.last_stall = stall;
  p.snapshot.stall_series = true;
  return p;
}

inline metrics::StallRecord Record(std::optional<double> start, std::optional<double> detected,
                            double end, double step) {
  metrics::StallRecord r;
  r.start = start;
  r.detected = detected;
  r.end = end;
  r.step = step;
  return r;
}

// Someone deletes worker-1 (on node-b) at At(50) with a 30 s grace period.
inline void DeleteWorker1(Observed* w) {
  for (auto& p : w->pods) {
    if (p.name != "mingpt-worker-1") continue;
    p.deleting = true;
    p.deletion_grace_seconds = 30;
    p.deletion_timestamp = At(80);
  }
}

// An InPlace job of 2 pods of `nproc` trainers each, trained to step 100 in round 0: started at
// At(0), whose first step was committed at At(10) + 0.5 s (the start record), running since.
struct InPlaceRun {
  std::string Uid(const std::string& name) const {
    for (const auto& p : world.pods) {
      if (p.name == name && !p.deleting) return p.uid;
    }
    return "";
  }
  DDPJob job = InPhase(InPlace(Job(2)), "Pending", 0, 2);
  Observed world;
  explicit InPlaceRun(int spares = 0, int nproc = 1) {
    job = InPlace(Job(2), spares);
    job.spec.nproc_per_node = nproc;
    job.status = {};
    world = World({}, false);
    Settle(&job, &world, At(0));
    StartAll(&world);
    std::map<std::string, int> members = {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}};
    std::vector<std::string> idle;
    for (int k = 0; k < spares; ++k) idle.push_back("mingpt-spare-" + std::to_string(k));
    world.group = Report(0, members, idle);
    world.group->pod_uid = Uid("mingpt-rendezvous");
    for (int rank = 0; rank < 2 * nproc; ++rank) {
      world.group->report.trainers[rank] = {"mingpt-worker-" + std::to_string(rank / nproc), 0};
    }
    world.progress =
        Page(0, 100, At(20), Record(std::nullopt, std::nullopt, Unix(At(10)) + 0.5, 0));
    Settle(&job, &world, At(20));
  }
};

}  // namespace ddp::plan::testing

#endif  // DDP_TESTS_OPERATOR_INCIDENT_RUN_H_
