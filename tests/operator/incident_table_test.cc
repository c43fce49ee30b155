// status.incidents as a table and on the wire (operator/plan/incidents.h): which failure opens
// which incident kind, with which pod and rank and outcome; malformed rows dropped when read
// back. The incidents' stalls and goodput over passes are planner_incidents_test.cc's.
#include <gtest/gtest.h>

#include <algorithm>

#include "operator/api/incident_fields.h"
#include "operator/api/serialize.h"
#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using api::DDPJob;
using api::Incident;

// Which pod's end opens which incident, with which outcome (incidents.h IncidentKind and step 2),
// one pass from a running job: the rules, row by row.
struct KindRow {
  std::string name;
  DDPJob job;
  Observed seen;
  std::string kind, pod, outcome;
  int rank;
};

ObservedPod OnLostNode(ObservedPod p) {
  p.node_lost = true;
  p.deleting = true;
  return p;
}

TEST(IncidentTable, EachEndOpensItsKind) {
  const DDPJob restart = InPhase(Job(2), "Running", 0, 2);
  const DDPJob exit_code = Policy(restart, api::RestartPolicy::kExitCode, 3);
  const DDPJob inplace = InPhase(InPlace(Job(2)), "Running", 0, 2);
  auto running = [](int n) { return World(Pods(n, 0, "Running")); };
  const std::vector<KindRow> rows = {
      {"killed_trainer_restart", restart, With(running(2), Exited(1, 0, 137)), "TrainerExit",
       "mingpt-worker-1", "NewRound", 1},
      {"permanent_exit_fails", exit_code, With(running(2), Exited(1, 0, 3)), "TrainerExit",
       "mingpt-worker-1", "Failed", 1},
      {"evicted_is_a_drain", restart, With(running(2), Evicted(0, 0)), "Drain", "mingpt-worker-0",
       "NewRound", 0},
      {"deleted_is_pod_lost", restart, With(running(2), Deleting(Pod(1, 0, "Running"))), "PodLost",
       "mingpt-worker-1", "NewRound", 1},
      {"node_lost", restart, With(running(2), OnLostNode(Pod(1, 0, "Running"))), "NodeLost",
       "mingpt-worker-1", "NewRound", 1},
      {"departed_in_place_is_a_drain_being_healed", inplace,
       With(GroupWorld(2, 0, 0, "Running"), Ends(Pod(1, 0, "Running"), group::EndReason::kDeparted, "SIGTERM")),
       "Drain", "mingpt-worker-1", "", 1},
      {"crash_in_place_is_a_trainer_exit_being_healed", inplace,
       With(GroupWorld(2, 0, 0, "Running"), Exited(1, 0, 75)), "TrainerExit", "mingpt-worker-1", "", 1},
  };
  for (const KindRow& r : rows) {
    SCOPED_TRACE(r.name);
    const Plan plan = PlanReconcile(r.job, r.seen, At(100));
    ASSERT_TRUE(plan.status) << plan.ToString();
    ASSERT_EQ(plan.status->incidents.size(), 1u) << plan.ToString();
    const Incident& i = plan.status->incidents[0];
    EXPECT_EQ(i.kind, r.kind);
    EXPECT_EQ(i.pod, r.pod);
    EXPECT_EQ(i.rank, r.rank);
    EXPECT_EQ(i.outcome, r.outcome);
    EXPECT_EQ(i.round, 0);
    EXPECT_EQ(plan.status->incidents_total, 1);
    // Planned again on what the plan wrote: no second incident for the same pod.
    DDPJob again = r.job;
    again.status = *plan.status;
    const Plan next = PlanReconcile(again, r.seen, At(101));
    if (next.status) EXPECT_EQ(next.status->incidents_total, 1) << next.ToString();
  }
}

TEST(IncidentWire, RoundTripsAndDropsMalformedRows) {
  Incident i;
  i.kind = api::kIncidentNodeLost;
  i.pod = "mingpt-worker-1";
  i.pod_uid = "u1";
  i.node = "kit-1";
  i.rank = 1;
  i.round = 2;
  i.time = At(7);
  i.step = 700;
  i.detection_seconds = 10.1234;
  i.stall_seconds = 12.5;
  i.steps_lost = 0;
  i.outcome = api::kOutcomeSpareTookRank;
  i.source = api::kSourceWorkers;
  i.message = "rank 1 disrupted";
  Incident back;
  ASSERT_TRUE(api::internal::ParseIncident(api::internal::IncidentToJson(i), &back));
  i.detection_seconds = 10.123;  // written to the millisecond
  EXPECT_EQ(back, i);

  const nlohmann::json good = api::internal::IncidentToJson(i);
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json r = good;
    r[key] = std::move(v);
    return r;
  };
  for (const nlohmann::json& bad :
       {nlohmann::json("not a row"), with("kind", "Meteor"), with("kind", 3),
        with("outcome", "Shrugged"), with("time", "yesterday"), with("rank", -2),
        with("rank", 1.5), with("stallSeconds", -1), with("stallSeconds", "1"),
        with("detectionSeconds", 1e12), with("message", std::string(257, 'x')),
        with("pod", std::string(254, 'x')), with("source", "rumour"), with("stepsLost", -3)}) {
    Incident out;
    EXPECT_FALSE(api::internal::ParseIncident(bad, &out)) << bad.dump();
  }
  nlohmann::json status = {{"incidents", nlohmann::json::array({good, with("kind", "?"), good})},
                           {"incidentsTotal", 1},
                           {"goodput", {{"stalledSeconds", 3.5}, {"resumedAt", 1e9}}}};
  api::DDPJobStatus st;
  api::internal::ParseIncidents(status, &st);
  EXPECT_EQ(st.incidents.size(), 2u);
  EXPECT_EQ(st.incidents_total, 2) << "never fewer than the rows kept";
  EXPECT_EQ(st.goodput.stalled_seconds, 3.5);
  nlohmann::json many = {{"incidents", nlohmann::json::array()}};
  for (int k = 0; k < 50; ++k) many["incidents"].push_back(good);
  api::internal::ParseIncidents(many, &st);
  EXPECT_EQ(st.incidents.size(), api::kMaxIncidents);
}

}  // namespace
}  // namespace ddp::plan::testing
