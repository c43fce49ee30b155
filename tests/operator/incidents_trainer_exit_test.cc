// Trainer exits healed inside their pods (operator/plan/incidents.h step 1): each is named by the
// trainer, its pod and local rank, whose incarnation rose past what the incidents already name,
// at its pod's node rank; its stall is the trainers' record of it, however late either is read.
#include <gtest/gtest.h>

#include "operator/api/incident_fields.h"
#include "tests/operator/incident_run.h"

namespace ddp::plan::testing {
namespace {

TEST(Incidents, TrainerExitHealedInsideItsPodIsNamedByItsIncarnation) {
  InPlaceRun r;
  // Rank 1's trainer died and its supervisor restarted it: the group charged one recovery and
  // rank 1's trainer is incarnation 1. The survivors' record: last commit at 30.2, the failure
  // seen at 30.25, the next commit at 31.0.
  r.world.group->report.recoveries = 1;
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 1};
  const double start = Unix(At(30)) + 0.2, seen = start + 0.05, end = Unix(At(31));
  r.world.progress = Page(0, 160, At(31), Record(start, seen, end, 150));
  Settle(&r.job, &r.world, At(31));
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  const Incident& i = r.job.status.incidents[0];
  EXPECT_EQ(i.kind, api::kIncidentTrainerExit);
  EXPECT_EQ(i.pod, "mingpt-worker-1");
  EXPECT_EQ(i.node, "node-b");
  EXPECT_EQ(i.rank, 1);
  EXPECT_EQ(i.incarnation, 1);
  EXPECT_EQ(i.outcome, api::kOutcomeHealedInPlace);
  EXPECT_EQ(i.source, api::kSourceWorkers);
  ASSERT_TRUE(i.stall_seconds && i.detection_seconds);
  EXPECT_NEAR(*i.stall_seconds, end - start, 1e-9);
  EXPECT_NEAR(*i.detection_seconds, seen - start, 1e-9);
  EXPECT_EQ(i.steps_lost, 0);
  EXPECT_EQ(i.time, At(30));  // when the group saw it, whole seconds
  EXPECT_EQ(r.job.status.recoveries, 1);
  EXPECT_NEAR(r.job.status.goodput.stalled_seconds, 10.5 + (end - start), 1e-9);

  // Twice more on rank 0 between two reads: two incidents, incarnations 1 and 2.
  r.world.group->report.recoveries = 3;
  r.world.group->report.trainers[0] = {"mingpt-worker-0", 2};
  Settle(&r.job, &r.world, At(40));
  ASSERT_EQ(r.job.status.incidents.size(), 3u);
  EXPECT_EQ(r.job.status.incidents[1].rank, 0);
  EXPECT_EQ(r.job.status.incidents[1].incarnation, 1);
  EXPECT_EQ(r.job.status.incidents[2].incarnation, 2);
  EXPECT_EQ(r.job.status.incidents_total, 3);
  EXPECT_TRUE(r.job.status.incidents[2].outcome.empty()) << "no record yet: still recovering";
  // A second identical pass writes nothing (the record and the counts are consumed).
  EXPECT_TRUE(PlanReconcile(r.job, r.world, At(41)).empty());
}

// The count rose before the report showed whose trainer came back (a frozen trainer restarted
// by its supervisor registers later): the incident is named once the incarnation shows.
TEST(Incidents, ATrainerExitCountedBeforeItsRankShowsIsNamedLater) {
  InPlaceRun r;
  r.world.group->report.recoveries = 1;
  Settle(&r.job, &r.world, At(31));
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  EXPECT_EQ(r.job.status.incidents[0].rank, -1);
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 1};
  Settle(&r.job, &r.world, At(33));
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  const Incident& i = r.job.status.incidents[0];
  EXPECT_EQ(i.rank, 1);
  EXPECT_EQ(i.pod, "mingpt-worker-1");
  EXPECT_EQ(i.node, "node-b");
  EXPECT_EQ(i.incarnation, 1);
  EXPECT_NE(i.message.find("rank 1's trainer exited"), std::string::npos) << i.message;
  // A later restart of rank 1 is a new incident, incarnation 2, not this one renamed.
  r.world.group->report.recoveries = 2;
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 2};
  Settle(&r.job, &r.world, At(40));
  ASSERT_EQ(r.job.status.incidents.size(), 2u);
  EXPECT_EQ(r.job.status.incidents[1].rank, 1);
  EXPECT_EQ(r.job.status.incidents[1].incarnation, 2);
}

// A replaced pod's trainer counts its incarnations from 0 again: its first restart in place is
// named although an earlier pod of the same name had one too (seen on the kit: kill-trainer,
// delete-pod, then freeze-pod on rank 1).
TEST(Incidents, ATrainerExitInAReplacedPodIsNamedFromItsOwnIncarnations) {
  InPlaceRun r;
  r.world.group->report.recoveries = 1;
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 1};
  Settle(&r.job, &r.world, At(31));
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  // The group fences pod 1 (a Hang); its replacement's trainer holds rank 1 from incarnation 0.
  r.world.group->report.fenced = {{"mingpt-worker-1", r.Uid("mingpt-worker-1")}};
  Pass(&r.job, &r.world, At(51));
  ASSERT_EQ(r.job.status.incidents.size(), 2u);
  EXPECT_EQ(r.job.status.incidents[1].kind, api::kIncidentHang);
  r.world.group->report.fenced = {};
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 0};  // the new pod's trainer
  Pass(&r.job, &r.world, At(55));
  r.world.group->report.recoveries = 2;
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 1};
  Pass(&r.job, &r.world, At(60));
  ASSERT_EQ(r.job.status.incidents.size(), 3u);
  const Incident& i = r.job.status.incidents[2];
  EXPECT_EQ(i.kind, api::kIncidentTrainerExit);
  EXPECT_EQ(i.rank, 1);
  EXPECT_EQ(i.pod, "mingpt-worker-1");
  EXPECT_EQ(i.incarnation, 1);
}

// Two trainers a pod (review F5): a trainer exit names its pod, the node rank the pod holds and
// its local rank, as a pod's own incident names the node rank. Pod 0's trainer on global rank 1
// restarts, pod 1 is replaced, then pod 1's new trainer on global rank 3 and pod 0's on global
// rank 0 restart. Before, trainer exits were named by global rank and the replaced pod's incident
// (node rank 1) reset global rank 1's count, pod 0's trainer: the second restart was named as
// rank 1 of pod 0.
TEST(Incidents, WithTwoTrainersAPodEachExitNamesItsPodNodeRankAndLocalRank) {
  InPlaceRun r(/*spares=*/0, /*nproc=*/2);
  r.world.group->report.recoveries = 1;
  r.world.group->report.trainers[1] = {"mingpt-worker-0", 1};
  Settle(&r.job, &r.world, At(31));
  for (auto& pod : r.world.pods) {
    // The fixture's Apply gives the replacement the uid "<name>-new" the first pod has too.
    if (pod.name == "mingpt-worker-1") pod.uid = "mingpt-worker-1-first";
  }
  DeleteWorker1(&r.world);
  Settle(&r.job, &r.world, At(51));
  StartAll(&r.world);
  r.world.group->report.trainers[2] = {"mingpt-worker-1", 0};  // the new pod's trainers
  r.world.group->report.trainers[3] = {"mingpt-worker-1", 0};
  Settle(&r.job, &r.world, At(55));
  r.world.group->report.recoveries = 2;
  r.world.group->report.trainers[3] = {"mingpt-worker-1", 1};
  Settle(&r.job, &r.world, At(60));
  r.world.group->report.recoveries = 3;
  r.world.group->report.trainers[0] = {"mingpt-worker-0", 1};
  Settle(&r.job, &r.world, At(70));

  struct Want {
    const char* kind;
    const char* pod;
    int rank, local_rank, incarnation;
    const char* says;
  };
  const std::vector<Want> want = {
      {api::kIncidentTrainerExit, "mingpt-worker-0", 0, 1, 1, "rank 1's trainer exited"},
      {api::kIncidentPodLost, "mingpt-worker-1", 1, -1, 0, ""},
      {api::kIncidentTrainerExit, "mingpt-worker-1", 1, 1, 1, "rank 3's trainer exited"},
      {api::kIncidentTrainerExit, "mingpt-worker-0", 0, 0, 1, "rank 0's trainer exited"},
  };
  const auto& got = r.job.status.incidents;
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    SCOPED_TRACE("incident " + std::to_string(k) + ": " + got[k].message);
    EXPECT_EQ(got[k].kind, want[k].kind);
    EXPECT_EQ(got[k].pod, want[k].pod);
    EXPECT_EQ(got[k].rank, want[k].rank);
    EXPECT_EQ(got[k].local_rank, want[k].local_rank);
    EXPECT_EQ(got[k].incarnation, want[k].incarnation);
    EXPECT_NE(got[k].message.find(want[k].says), std::string::npos);
  }
  // The fields survive the status's wire form.
  api::Incident back;
  ASSERT_TRUE(api::internal::ParseIncident(api::internal::IncidentToJson(got[2]), &back));
  EXPECT_EQ(back, got[2]);
}

// A pod given another node rank (rule 10: worker-1 takes worker-0's lost rank) keeps its
// trainers' count: the exit of a trainer restarted before the move is named with its next
// incarnation, at the pod's new node rank.
TEST(Incidents, APodGivenAnotherNodeRankKeepsItsTrainersCount) {
  InPlaceRun r(/*spares=*/0, /*nproc=*/2);
  r.world.group->report.recoveries = 1;
  r.world.group->report.trainers[3] = {"mingpt-worker-1", 1};
  Settle(&r.job, &r.world, At(31));
  r.world.group->report.members = {{"mingpt-worker-1", 0}};
  r.world.group->report.trainers = {{0, {"mingpt-worker-1", 0}}, {1, {"mingpt-worker-1", 1}}};
  Settle(&r.job, &r.world, At(40));
  r.world.group->report.recoveries = 2;
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 2};
  Settle(&r.job, &r.world, At(45));
  const auto& got = r.job.status.incidents;
  ASSERT_FALSE(got.empty());
  const Incident& i = got.back();
  EXPECT_EQ(i.kind, api::kIncidentTrainerExit);
  EXPECT_EQ(i.pod, "mingpt-worker-1");
  EXPECT_EQ(i.rank, 0);
  EXPECT_EQ(i.local_rank, 1);
  EXPECT_EQ(i.incarnation, 2) << i.message;
}

// A status an operator before localRank wrote (one trainer a pod): its trainer exit has no local
// rank, and still counts for the pod's trainer, so the next restart is incarnation 2, not 1 again.
TEST(Incidents, ATrainerExitWrittenWithoutALocalRankStillCounts) {
  InPlaceRun r;
  r.world.group->report.recoveries = 1;
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 1};
  Settle(&r.job, &r.world, At(31));
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  r.job.status.incidents[0].local_rank = -1;  // as parsed from the older status
  r.world.group->report.recoveries = 2;
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 2};
  Settle(&r.job, &r.world, At(40));
  ASSERT_EQ(r.job.status.incidents.size(), 2u);
  EXPECT_EQ(r.job.status.incidents[1].rank, 1);
  EXPECT_EQ(r.job.status.incidents[1].local_rank, 0);
  EXPECT_EQ(r.job.status.incidents[1].incarnation, 2);
}

// The group's count is read seconds after the heal (a slow page): the record on the same page is
// still this incident's, and the incident happened when the trainers saw it, not when it was read.
TEST(Incidents, ATrainerExitReadLateKeepsItsOwnStallAndTime) {
  InPlaceRun r;
  r.world.group->report.recoveries = 1;
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 1};
  const double start = Unix(At(40)) + 0.5, seen = start + 0.25, end = Unix(At(41)) + 0.5;
  r.world.progress = Page(0, 160, At(42), Record(start, seen, end, 150));
  Settle(&r.job, &r.world, At(47));
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  EXPECT_EQ(r.job.status.incidents[0].time, At(40));
  ASSERT_TRUE(r.job.status.incidents[0].stall_seconds);
  EXPECT_NEAR(*r.job.status.incidents[0].stall_seconds, end - start, 1e-9);
}

// The group reads its budget's count a few ticks after the heal: the trainers' record comes one
// page before the count. The record is kept unclaimed and the trainer exit opened next takes it.
TEST(Incidents, ARecordBeforeTheCountIsTheTrainerExitsStall) {
  InPlaceRun r;
  const double start = Unix(At(50)) + 0.1, seen = start + 0.3, end = Unix(At(51)) + 0.4;
  r.world.progress = Page(0, 200, At(52), Record(start, seen, end, 190));
  Settle(&r.job, &r.world, At(52));
  EXPECT_TRUE(r.job.status.incidents.empty());
  EXPECT_EQ(r.job.status.goodput.unclaimed_end, end);
  r.world.group->report.recoveries = 1;
  r.world.group->report.trainers[1] = {"mingpt-worker-1", 1};
  Settle(&r.job, &r.world, At(55));
  ASSERT_EQ(r.job.status.incidents.size(), 1u);
  const Incident& i = r.job.status.incidents[0];
  ASSERT_TRUE(i.Closed());
  EXPECT_NEAR(*i.stall_seconds, end - start, 1e-9);
  EXPECT_NEAR(*i.detection_seconds, seen - start, 1e-9);
  EXPECT_EQ(i.time, At(50));
  EXPECT_EQ(r.job.status.goodput.unclaimed_end, 0);
  EXPECT_NEAR(r.job.status.goodput.stalled_seconds, 10.5 + (end - start), 1e-9) << "counted once";
}

}  // namespace
}  // namespace ddp::plan::testing
