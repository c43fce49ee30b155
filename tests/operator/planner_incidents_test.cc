// status.incidents (operator/plan/incidents.h): which failure opens which incident, with which
// pod, node and rank; its outcome; its stall from the trainers' own record (or the operator's
// estimate where none exists); the goodput's stalled seconds; the bound on the status; and the
// wire form (malformed rows dropped). Each pass plans and applies, as the controller does.
// Expected figures are derived from the rows' own times: a record's end minus its start, etc.
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

double Unix(TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

// Plans and applies until nothing is written; deleted pods vanish between passes.
void Settle(DDPJob* job, Observed* world, TimePoint now) {
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
void Pass(DDPJob* job, Observed* world, TimePoint now) {
  Apply(PlanReconcile(*job, *world, now), job, world, now);
  ReapDeleting(world);
}

void StartAll(Observed* w) {
  for (auto& p : w->pods) {
    if (p.deleting || p.phase == "Failed") continue;
    p.phase = "Running";
    p.ready = true;
    p.node_name = p.name == "mingpt-worker-1" ? "node-b" : "node-a";
  }
}

// Rank 0's page as the scraper keeps it: `step`, seen advancing at `advanced`, and its record.
ObservedProgress Page(int round, double step, TimePoint advanced,
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

metrics::StallRecord Record(std::optional<double> start, std::optional<double> detected,
                            double end, double step) {
  metrics::StallRecord r;
  r.start = start;
  r.detected = detected;
  r.end = end;
  r.step = step;
  return r;
}

// Someone deletes worker-1 (on node-b) at At(50) with a 30 s grace period.
void DeleteWorker1(Observed* w) {
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
    world.progress = Page(0, 100, At(20), Record(std::nullopt, std::nullopt, Unix(At(10)) + 0.5, 0));
    Settle(&job, &world, At(20));
  }
};

TEST(Incidents, TheStartIsStalledTimeButNoIncident) {
  InPlaceRun r;
  EXPECT_EQ(r.job.status.phase, "Running");
  EXPECT_TRUE(r.job.status.incidents.empty());
  EXPECT_EQ(r.job.status.incidents_total, 0);
  // From startTime (At(0)) to the first commit.
  EXPECT_DOUBLE_EQ(r.job.status.goodput.stalled_seconds, 10.5);
  EXPECT_DOUBLE_EQ(r.job.status.goodput.resumed_at, Unix(At(10)) + 0.5);
}

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
    if (pod.name == "mingpt-worker-1") pod.uid = "mingpt-worker-1-first";  // Apply's uid is the replacement's
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
