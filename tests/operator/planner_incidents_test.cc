// status.incidents (operator/plan/incidents.h): which failure opens which incident, with which
// pod, node and rank; its outcome; its stall from the trainers' own record (or the operator's
// estimate where none exists); the goodput's stalled seconds; the bound on the status; and the
// wire form (malformed rows dropped). Each pass plans and applies, as the controller does.
// Expected figures are derived from the rows' own times: a record's end minus its start, etc.
// Trainer exits healed inside their pods: incidents_trainer_exit_test.cc.
#include <gtest/gtest.h>

#include <algorithm>

#include "operator/api/serialize.h"
#include "operator/plan/plan.h"
#include "tests/operator/incident_run.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

TEST(Incidents, TheStartIsStalledTimeButNoIncident) {
  InPlaceRun r;
  EXPECT_EQ(r.job.status.phase, "Running");
  EXPECT_TRUE(r.job.status.incidents.empty());
  EXPECT_EQ(r.job.status.incidents_total, 0);
  // From startTime (At(0)) to the first commit.
  EXPECT_DOUBLE_EQ(r.job.status.goodput.stalled_seconds, 10.5);
  EXPECT_DOUBLE_EQ(r.job.status.goodput.resumed_at, Unix(At(10)) + 0.5);
}

TEST(Incidents, DeletedPodIsPodLostAndASpareTakingItsRankSaysSo) {
  InPlaceRun r(/*spares=*/1);
  DeleteWorker1(&r.world);
  Pass(&r.job, &r.world, At(51));
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  EXPECT_EQ(r.job.status.incidents[0].kind, api::kIncidentPodLost);
  EXPECT_EQ(r.job.status.incidents[0].rank, 1);
  EXPECT_EQ(r.job.status.incidents[0].node, "node-b");
  EXPECT_EQ(r.job.status.incidents[0].time, At(50)) << "the delete's request, not the pass";
  EXPECT_EQ(r.job.status.disruptions, 1);
  // The spare took rank 1 and the group committed again.
  r.world.group->report.members = {{"mingpt-worker-0", 0}, {"mingpt-spare-0", 1}};
  r.world.group->report.spares = {};
  const double start = Unix(At(49)) + 0.9, end = Unix(At(52)) + 0.4;
  r.world.progress = Page(0, 300, At(53), Record(start, start + 0.1, end, 290));
  Pass(&r.job, &r.world, At(53));
  const Incident& i = r.job.status.incidents[0];
  EXPECT_EQ(i.outcome, api::kOutcomeSpareTookRank);
  ASSERT_TRUE(i.stall_seconds);
  EXPECT_NEAR(*i.stall_seconds, end - start, 1e-9);
}

// A stall record is trusted only as times the operator can use (review F6): edges from before
// the job started (a trainer whose clock stepped after it began) or ahead of the operator's
// clock (skew, a forged page) make no stall. Before, the first gave the incident a stall of
// decades, which the status reader drops, and the second held every later record off.
TEST(Incidents, StallRecordsOutsideTheJobsTimeAreIgnored) {
  struct Row {
    const char* what;
    std::optional<double> start;
    double end;
  };
  const double now = Unix(At(53));
  for (const Row& row : std::vector<Row>{{"a start near the epoch", 1.0, Unix(At(52))},
                                         {"an end an hour ahead", Unix(At(49)), now + 3600}}) {
    SCOPED_TRACE(row.what);
    InPlaceRun r;
    const double stalled_before = r.job.status.goodput.stalled_seconds;
    DeleteWorker1(&r.world);
    Pass(&r.job, &r.world, At(51));
    ASSERT_EQ(r.job.status.incidents.size(), 1u);
    r.world.progress = Page(0, 300, At(53), Record(row.start, std::nullopt, row.end, 290));
    Pass(&r.job, &r.world, At(53));
    EXPECT_FALSE(r.job.status.incidents[0].stall_seconds);
    EXPECT_EQ(r.job.status.goodput.stalled_seconds, stalled_before);
    // The next record that is a measurement closes it.
    const double start = Unix(At(49)) + 0.9, end = Unix(At(54)) + 0.4;
    r.world.progress = Page(0, 310, At(55), Record(start, std::nullopt, end, 290));
    Pass(&r.job, &r.world, At(55));
    ASSERT_TRUE(r.job.status.incidents[0].stall_seconds);
    EXPECT_NEAR(*r.job.status.incidents[0].stall_seconds, end - start, 1e-9);
    EXPECT_NEAR(r.job.status.goodput.stalled_seconds, stalled_before + (end - start), 1e-6);
  }
}

TEST(Incidents, FencedSilentPodIsAHang) {
  InPlaceRun r;
  r.world.group->report.fenced = {{"mingpt-worker-1", r.Uid("mingpt-worker-1")}};
  Pass(&r.job, &r.world, At(60));
  ASSERT_FALSE(r.job.status.incidents.empty());
  EXPECT_EQ(r.job.status.incidents[0].kind, api::kIncidentHang);
  EXPECT_EQ(r.job.status.incidents[0].pod, "mingpt-worker-1");
  EXPECT_EQ(r.job.status.incidents[0].rank, 1);
}

// Pod 1 fenced at 60; the replacement's page is read first (its first commit at 66.3, no start),
// then rank 0's record of the same stall (its last commit at 58.1, the loss seen at 63.2): the
// incident waits for the survivor's record and takes its stall and detection.
void NewcomerThenSurvivor(InPlaceRun* r) {
  r->world.group->report.fenced = {{"mingpt-worker-1", r->Uid("mingpt-worker-1")}};
  Pass(&r->job, &r->world, At(60));
  ASSERT_EQ(r->job.status.incidents.size(), 1u);
  const double end = Unix(At(66)) + 0.3;
  r->world.progress = Page(0, 400, At(67), Record(std::nullopt, std::nullopt, end, 390));
  Pass(&r->job, &r->world, At(67));
  EXPECT_FALSE(r->job.status.incidents[0].stall_seconds) << "a survivor's record is still to come";
  const double start = Unix(At(58)) + 0.1, seen = Unix(At(63)) + 0.2;
  r->world.progress = Page(0, 410, At(68), Record(start, seen, end - 0.2, 390));
  Pass(&r->job, &r->world, At(68));
  const Incident& i = r->job.status.incidents[0];
  ASSERT_TRUE(i.stall_seconds && i.detection_seconds);
  EXPECT_EQ(i.source, api::kSourceWorkers);
  EXPECT_NEAR(*i.stall_seconds, end - 0.2 - start, 1e-9);
  EXPECT_NEAR(*i.detection_seconds, seen - start, 1e-9);
  EXPECT_DOUBLE_EQ(r->job.status.goodput.resumed_at, end - 0.2);
}

TEST(Incidents, ANewcomersFirstCommitWaitsForTheSurvivorsRecordOfTheSameStall) {
  InPlaceRun r;
  NewcomerThenSurvivor(&r);
}

// The loss came before the operator read any record (a trainer killed in the first second of
// training, its page read every 2 s): the first record it reads is the newcomer's first commit,
// and the survivor's record of the same stall is still waited for (seen in LocalChaosTest: the
// operator's 0.58 s where rank 0 logged 0.44 s).
TEST(Incidents, ANewcomersFirstCommitWaitsEvenWhenItIsTheFirstRecordRead) {
  InPlaceRun r;
  r.job.status.goodput = {};  // no record read before the loss
  r.world.progress = Page(0, 100, At(20));
  NewcomerThenSurvivor(&r);
}

TEST(Incidents, WithNoSurvivorsRecordTheOperatorMeasuresTheStallAfterAWait) {
  InPlaceRun r;
  r.world.group->report.fenced = {{"mingpt-worker-1", r.Uid("mingpt-worker-1")}};
  Pass(&r.job, &r.world, At(60));
  const double end = Unix(At(66)) + 0.3;
  r.world.progress = Page(0, 400, At(67), Record(std::nullopt, std::nullopt, end, 390));
  Pass(&r.job, &r.world, At(70));
  EXPECT_FALSE(r.job.status.incidents[0].stall_seconds);
  Pass(&r.job, &r.world, At(77));  // 10 s past the record's end
  const Incident& i = r.job.status.incidents[0];
  ASSERT_TRUE(i.stall_seconds);
  EXPECT_EQ(i.source, api::kSourceOperator);
  EXPECT_NEAR(*i.stall_seconds, end - Unix(At(60)), 1e-9) << "from the incident's time";
}

TEST(Incidents, LostRendezvousPodHealsWhenAnotherReportsWithoutAStall) {
  InPlaceRun r;
  for (auto& p : r.world.pods) {
    if (p.name == "mingpt-rendezvous") {
      p.phase = "Failed";
      p.exit_code = 137;
    }
  }
  Settle(&r.job, &r.world, At(70));
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  EXPECT_EQ(r.job.status.incidents[0].kind, api::kIncidentPodLost);
  EXPECT_EQ(r.job.status.incidents[0].pod, "mingpt-rendezvous");
  EXPECT_EQ(r.job.status.incidents[0].rank, -1);
  EXPECT_TRUE(r.job.status.incidents[0].outcome.empty());
  StartAll(&r.world);
  r.world.group->pod_uid = "another-rendezvous";
  Settle(&r.job, &r.world, At(72));
  EXPECT_EQ(r.job.status.incidents[0].outcome, api::kOutcomeHealedInPlace);
  EXPECT_EQ(r.job.status.incidents[0].stall_seconds, 0.0);
}

// A force delete (grace 0) sets the deletion timestamp and removes the pod in one request: a
// pass that runs after both watch events never sees the rendezvous pod ending, only gone (the
// kit's chaos run 4: no incident). The pod whose page the status counted is lost all the same:
// one PodLost, healed once the rendezvous pod created again reports.
TEST(Incidents, AForceDeletedRendezvousPodIsLostThoughNoPassSawItEnd) {
  InPlaceRun r;
  const std::string old_uid = r.Uid("mingpt-rendezvous");
  ASSERT_EQ(r.job.status.rendezvous_uid, old_uid);
  auto& pods = r.world.pods;
  pods.erase(std::remove_if(pods.begin(), pods.end(),
                            [](const ObservedPod& p) { return p.name == "mingpt-rendezvous"; }),
             pods.end());
  Settle(&r.job, &r.world, At(70));  // the scraper still holds the old pod's last page
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  const Incident& i = r.job.status.incidents[0];
  EXPECT_EQ(i.kind, api::kIncidentPodLost);
  EXPECT_EQ(i.pod, "mingpt-rendezvous");
  EXPECT_EQ(i.pod_uid, old_uid);
  EXPECT_EQ(i.rank, -1);
  EXPECT_TRUE(i.outcome.empty());
  EXPECT_EQ(r.job.status.incidents_total, 1);
  EXPECT_EQ(r.job.status.round, 0);
  // The pod the planner created again (a new object: the fixture names uids by pod name).
  bool recreated = false;
  for (auto& p : r.world.pods) {
    if (p.name != "mingpt-rendezvous") continue;
    p.uid = "mingpt-rendezvous-again";
    recreated = true;
  }
  ASSERT_TRUE(recreated) << "the planner creates the rendezvous pod again";
  StartAll(&r.world);
  r.world.group->pod_uid = "mingpt-rendezvous-again";
  Settle(&r.job, &r.world, At(72));
  ASSERT_EQ(r.job.status.incidents.size(), 1u) << "once per pod object";
  EXPECT_EQ(r.job.status.incidents[0].outcome, api::kOutcomeHealedInPlace);
  EXPECT_EQ(r.job.status.incidents[0].stall_seconds, 0.0);
  EXPECT_EQ(r.job.status.rendezvous_uid, "mingpt-rendezvous-again");
}

// The job's own end deletes its running rendezvous pod (cleanPodPolicy Running, the default):
// that is the cleanup, not a lost pod (the kit's run 4 opened a PodLost for it).
TEST(Incidents, TheJobsCleanupOfItsRendezvousPodIsNoLoss) {
  InPlaceRun r;
  for (int i = 0; i < 2; ++i) {
    ObservedPod done = Exited(i, 0, 0);
    done.message = group::FormatFinished({100, std::nullopt});
    r.world = With(r.world, done);
  }
  const Plan plan = PlanReconcile(r.job, r.world, At(70));
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, "Succeeded");
  const auto deletes = DescribeDeletes(plan);
  EXPECT_NE(std::find(deletes.begin(), deletes.end(), "Pod mingpt-rendezvous"), deletes.end())
      << "the cleanup deletes the running rendezvous pod";
  for (const Incident& i : plan.status->incidents) ADD_FAILURE() << i.kind << ": " << i.message;
  EXPECT_EQ(plan.status->incidents_total, 0);
}

TEST(Incidents, RestartIsANewRoundAndItsStallEndsAtTheNewRanksFirstCommit) {
  DDPJob job = InPhase(Job(2), "Running", 0, 2);
  Observed world = World(Pods(2, 0, "Running"));
  world.progress = Page(0, 100, At(20), Record(std::nullopt, std::nullopt, Unix(At(5)), 0));
  Settle(&job, &world, At(20));
  world = With(world, ExitedAt(1, 0, 137, At(29)));
  Settle(&job, &world, At(30));
  ASSERT_EQ(job.status.incidents.size(), 1u);
  EXPECT_EQ(job.status.incidents[0].kind, api::kIncidentTrainerExit);
  EXPECT_EQ(job.status.incidents[0].outcome, api::kOutcomeNewRound);
  EXPECT_EQ(job.status.incidents[0].time, At(29)) << "the container's finishedAt";
  EXPECT_EQ(job.status.incidents[0].step, 100);
  EXPECT_EQ(job.status.round, 1);
  // Round 1 runs; its rank 0 resumed from the checkpoint of step 80 and committed at 41.5.
  for (auto& p : world.pods) p.deleting = p.round == 0 || p.deleting;
  ReapDeleting(&world);
  Settle(&job, &world, At(40));
  StartAll(&world);
  world.progress = Page(1, 85, At(42), Record(std::nullopt, std::nullopt, Unix(At(41)) + 0.5, 80));
  Settle(&job, &world, At(42));
  const Incident& i = job.status.incidents[0];
  ASSERT_TRUE(i.stall_seconds);
  EXPECT_NEAR(*i.stall_seconds, Unix(At(41)) + 0.5 - Unix(At(29)), 1e-9);
  EXPECT_EQ(i.source, api::kSourceOperator) << "the start is the pod's finishedAt";
  EXPECT_EQ(i.steps_lost, 20);
}

TEST(Incidents, FailedJobEndsItsOpenIncidents) {
  DDPJob job = Policy(InPhase(Job(2), "Running", 0, 2), api::RestartPolicy::kNever, 3);
  Observed world = World(Pods(2, 0, "Running"));
  world = With(world, Exited(1, 0, 3));
  Settle(&job, &world, At(30));
  EXPECT_EQ(job.status.phase, "Failed");
  ASSERT_EQ(job.status.incidents.size(), 1u);
  EXPECT_EQ(job.status.incidents[0].outcome, api::kOutcomeFailed);
  EXPECT_TRUE(job.status.incidents[0].Closed());
}

TEST(Incidents, ResizeInPlaceSaysWhichWay) {
  DDPJob job = Elastic(InPlace(Job(3)), 1, 4, 60);
  job.status = {};
  Observed world = World({}, false);
  Settle(&job, &world, At(0));
  StartAll(&world);
  Settle(&job, &world, At(5));
  job = Scaled(job, 2);
  Settle(&job, &world, At(10));
  ASSERT_FALSE(job.status.incidents.empty());
  EXPECT_EQ(job.status.incidents.back().kind, api::kIncidentResize);
  EXPECT_EQ(job.status.incidents.back().outcome, api::kOutcomeShrank);
  EXPECT_EQ(job.status.incidents.back().rank, -1);
}

// The bound: a thousand heals in one job keep the newest 20, count all, and the whole object
// (worst case: the longest names and messages) stays under 64 KiB.
TEST(Incidents, AThousandIncidentsKeepTheObjectUnder64KiB) {
  InPlaceRun r;
  r.job.spec.failure_policy.max_restarts = 5000;  // heals are charged: leave room for them
  for (int k = 1; k <= 1000; ++k) {
    r.world.group->report.recoveries = k;
    r.world.group->report.trainers[k % 2] = {"mingpt-worker-" + std::to_string(k % 2), (k + 1) / 2};
    const double end = Unix(At(100 + 2 * k));
    r.world.progress = Page(0, 1000 + k, At(100 + 2 * k), Record(end - 1.25, end - 1.0, end, 999 + k));
    Settle(&r.job, &r.world, At(100 + 2 * k));
  }
  EXPECT_EQ(r.job.status.incidents.size(), api::kMaxIncidents);
  EXPECT_EQ(r.job.status.incidents_total, 1000);
  EXPECT_NEAR(r.job.status.goodput.stalled_seconds, 10.5 + 1000 * 1.25, 1e-6);
  for (Incident& i : r.job.status.incidents) {
    i.pod = std::string(253, 'p');
    i.node = std::string(253, 'n');
    i.pod_uid = std::string(36, 'u');
    i.message = std::string(api::kMaxIncidentMessage, 'm');
  }
  const std::string wire = api::ToJson(r.job).dump();
  EXPECT_LT(wire.size(), 64u * 1024) << wire.size();
}

}  // namespace
}  // namespace ddp::plan::testing
