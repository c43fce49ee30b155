// Progress in the status, hang detection and recovery time: the planner's decisions over
// Observed::progress (DESIGN.md "Progress, hangs and recovery time in the status").
#include <gtest/gtest.h>

#include "operator/api/serialize.h"
#include "operator/api/validate.h"
#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A Running 2-pod job in round `round`, its pods running, its status settled at At(1).
struct Running {
  api::DDPJob job;
  Observed world;
};
Running RunningJob(int round = 0, std::optional<int64_t> hang = std::nullopt) {
  api::DDPJob j = InPhase(Job(2), api::kPhaseRunning, round, 2);
  j.spec.failure_policy.hang_timeout_seconds = hang;
  Running r{j, World(Pods(2, round, "Running"))};
  Apply(PlanReconcile(r.job, r.world, At(1)), &r.job, &r.world, At(1));
  return r;
}

// Rank 0 at `step` of 400, last advanced at `advanced`, 2 steps/s.
ObservedProgress Progress(int round, double step, TimePoint advanced) {
  ObservedProgress p;
  p.round = round;
  p.snapshot.step = step;
  p.snapshot.total_steps = 400;
  p.snapshot.loss = 2.5;
  p.snapshot.tokens_per_second = 1000;
  p.snapshot.steps_per_second = 2;
  p.snapshot.last_advance = advanced;
  p.snapshot.scraped_at = advanced;
  return p;
}

// Applies `plan` and plans again at the same time: a settled world plans nothing.
void ExpectSettles(const Plan& plan, Running r, TimePoint now) {
  Apply(plan, &r.job, &r.world, now);
  Plan again = PlanReconcile(r.job, r.world, now);
  EXPECT_FALSE(again.status) << again.ToString();
  EXPECT_TRUE(again.creates.empty() && again.deletes.empty()) << again.ToString();
}

TEST(PlannerProgress, FirstProgressIsWrittenAtOnce) {
  Running r = RunningJob();
  r.world.progress = Progress(0, 100, At(50));
  Plan plan = PlanReconcile(r.job, r.world, At(52));
  ASSERT_TRUE(plan.status && plan.status->progress) << plan.ToString();
  const api::Progress& p = *plan.status->progress;
  EXPECT_EQ(p.step, 100);
  EXPECT_EQ(p.total_steps, 400);
  EXPECT_EQ(p.loss, 2.5);
  EXPECT_EQ(p.tokens_per_second, 1000);
  EXPECT_EQ(p.eta_seconds, (400 - 100) / 2);  // steps left / steps per second
  EXPECT_EQ(p.updated_at, At(52));
  EXPECT_TRUE(plan.events.empty());
  ExpectSettles(plan, r, At(52));
}

TEST(PlannerProgress, UnchangedProgressWritesNothing) {
  Running r = RunningJob();
  r.world.progress = Progress(0, 100, At(50));
  Apply(PlanReconcile(r.job, r.world, At(52)), &r.job, &r.world, At(52));
  Plan plan = PlanReconcile(r.job, r.world, At(500));  // long after: still the same values
  EXPECT_TRUE(plan.empty()) << plan.ToString();
}

TEST(PlannerProgress, ProgressOnlyWritesAreRateLimited) {
  Running r = RunningJob();
  r.world.progress = Progress(0, 100, At(50));
  Apply(PlanReconcile(r.job, r.world, At(50)), &r.job, &r.world, At(50));
  r.world.progress = Progress(0, 120, At(60));
  Plan early = PlanReconcile(r.job, r.world, At(60));
  EXPECT_FALSE(early.status) << early.ToString();
  ASSERT_TRUE(early.requeue_after);
  EXPECT_EQ(*early.requeue_after, milliseconds(seconds(20)));  // due at 50 + 30
  Plan due = PlanReconcile(r.job, r.world, At(80));
  ASSERT_TRUE(due.status && due.status->progress) << due.ToString();
  EXPECT_EQ(due.status->progress->step, 120);
  EXPECT_EQ(due.status->progress->updated_at, At(80));
}

TEST(PlannerProgress, ProgressRidesAlongAnotherStatusChange) {
  Running r = RunningJob();
  r.world.progress = Progress(0, 100, At(50));
  Apply(PlanReconcile(r.job, r.world, At(50)), &r.job, &r.world, At(50));
  r.world.pods[1].ready = false;  // readyReplicas changes: a write happens anyway
  r.world.progress = Progress(0, 110, At(55));
  Plan plan = PlanReconcile(r.job, r.world, At(55));
  ASSERT_TRUE(plan.status && plan.status->progress) << plan.ToString();
  EXPECT_EQ(plan.status->ready_replicas, 1);
  EXPECT_EQ(plan.status->progress->step, 110);
}

TEST(PlannerProgress, AnOlderRoundsProgressIsIgnored) {
  Running r = RunningJob(/*round=*/2);
  r.world.progress = Progress(1, 100, At(50));
  EXPECT_TRUE(PlanReconcile(r.job, r.world, At(52)).empty());
}

TEST(PlannerProgress, TheLastProgressRidesAlongTheEnd) {
  Running r = RunningJob();
  r.world.progress = Progress(0, 100, At(50));
  Apply(PlanReconcile(r.job, r.world, At(50)), &r.job, &r.world, At(50));
  // The last read (step 390 of 400, an ETA) predates the end; the pods say they finished.
  r.world.progress = Progress(0, 390, At(55));
  r.world.pods = Pods(2, 0, "Succeeded");
  for (auto& pod : r.world.pods) pod.message = group::FormatFinished({400, std::nullopt});
  Plan plan = PlanReconcile(r.job, r.world, At(56));
  ASSERT_TRUE(plan.status && plan.status->progress) << plan.ToString();
  EXPECT_EQ(plan.status->phase, api::kPhaseSucceeded);
  EXPECT_EQ(plan.status->progress->step, 400);
  EXPECT_EQ(plan.status->progress->total_steps, 400);
  EXPECT_FALSE(plan.status->progress->eta_seconds) << "a finished job has no ETA";
  EXPECT_EQ(plan.status->progress->loss, 2.5) << "the last read's loss rides along";
}

// A job whose ddp-worker progress was read and whose pods exit 0 without saying they finished
// (told to stop, say) is not done: a failure, restarted under OnFailure.
TEST(PlannerProgress, PodsThatExitZeroWithoutFinishingAfterProgressAreNoSuccess) {
  Running r = RunningJob();
  r.world.progress = Progress(0, 100, At(50));
  Apply(PlanReconcile(r.job, r.world, At(50)), &r.job, &r.world, At(50));
  r.world.pods = Pods(2, 0, "Succeeded");
  Plan plan = PlanReconcile(r.job, r.world, At(56));
  ASSERT_TRUE(plan.status) << plan.ToString();
  EXPECT_EQ(plan.status->phase, api::kPhaseRestarting);
  EXPECT_EQ(plan.status->restarts, 1);
}

TEST(PlannerHang, StepNotAdvancingForTheTimeoutRestarts) {
  Running r = RunningJob(0, /*hang=*/60);
  r.world.progress = Progress(0, 120, At(100));
  Apply(PlanReconcile(r.job, r.world, At(100)), &r.job, &r.world, At(100));
  Plan before = PlanReconcile(r.job, r.world, At(159));
  EXPECT_FALSE(before.status) << before.ToString();
  ASSERT_TRUE(before.requeue_after);
  EXPECT_EQ(*before.requeue_after, milliseconds(seconds(1)));  // the hang deadline, 100 + 60

  Plan plan = PlanReconcile(r.job, r.world, At(160));
  ASSERT_TRUE(plan.status) << plan.ToString();
  EXPECT_EQ(plan.status->phase, api::kPhaseRestarting);
  EXPECT_EQ(plan.status->round, 1);
  EXPECT_EQ(plan.status->restarts, 1);
  ASSERT_TRUE(plan.status->last_failure);
  EXPECT_EQ(plan.status->last_failure->reason, "Hung");
  EXPECT_EQ(plan.status->last_failure->pod, "mingpt-worker-0");
  EXPECT_EQ(plan.status->last_failure->time, At(160));
  EXPECT_EQ(DescribeDeletes(plan),
            (std::vector<std::string>{"Pod mingpt-worker-0", "Pod mingpt-worker-1"}));
  std::vector<std::string> hung;
  for (const auto& e : plan.events) {
    if (e.reason == "Hung") hung.push_back(e.message);
  }
  ASSERT_EQ(hung.size(), 1u) << plan.ToString();
  EXPECT_NE(hung[0].find("last step 120 seen at " + api::FormatTime(At(100))), std::string::npos)
      << hung[0];
  EXPECT_NE(hung[0].find("no step progress for 60s"), std::string::npos) << hung[0];
}

TEST(PlannerHang, AJobWithoutMetricsIsNeverHung) {
  Running r = RunningJob(0, /*hang=*/60);
  Plan plan = PlanReconcile(r.job, r.world, At(100000));
  EXPECT_TRUE(plan.empty()) << plan.ToString();
}

TEST(PlannerHang, OnlyARunningJobIsHung) {
  Running r = RunningJob(0, /*hang=*/60);
  r.job.status.phase = api::kPhasePending;
  r.world.pods[1].phase = "Pending";
  r.world.progress = Progress(0, 120, At(0));
  Plan plan = PlanReconcile(r.job, r.world, At(1000));
  EXPECT_TRUE(!plan.status || plan.status->phase == api::kPhasePending) << plan.ToString();
  EXPECT_TRUE(plan.deletes.empty());
}

TEST(PlannerHang, NeverPolicyFailsTheJob) {
  Running r = RunningJob(0, /*hang=*/60);
  r.job.spec.failure_policy.restart_policy = api::RestartPolicy::kNever;
  r.world.progress = Progress(0, 120, At(0));
  Plan plan = PlanReconcile(r.job, r.world, At(60));
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, api::kPhaseFailed);
  const api::Condition* c = plan.status->FindCondition(api::kCondFailed);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->reason, "Hung");
}

TEST(PlannerHang, CountsAgainstMaxRestarts) {
  Running r = RunningJob(3, /*hang=*/60);
  r.job = Policy(r.job, api::RestartPolicy::kOnFailure, 3);
  r.job.status.restarts = 3;
  r.world.progress = Progress(3, 120, At(0));
  Plan plan = PlanReconcile(r.job, r.world, At(61));
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, api::kPhaseFailed);
  EXPECT_EQ(plan.status->FindCondition(api::kCondFailed)->reason, "MaxRestartsExceeded");
}

TEST(PlannerRecovery, RecoverySecondsFromFailureToTheNewRoundRunning) {
  api::DDPJob j = InPhase(Job(2), api::kPhaseRestarting, 1, 2, 1);
  j.status.last_failure = api::LastFailure{"mingpt-worker-1", 1, 75, "Error", "", At(10), "", std::nullopt};
  Observed w = World(Pods(2, 1, "Running"));
  Plan plan = PlanReconcile(j, w, At(25));
  ASSERT_TRUE(plan.status && plan.status->last_failure) << plan.ToString();
  EXPECT_EQ(plan.status->phase, api::kPhaseRunning);
  EXPECT_EQ(plan.status->last_failure->recovery_seconds, 15.0);
  // Recorded once: a later pass (say after a resize back to Running) keeps it.
  Apply(plan, &j, &w, At(25));
  EXPECT_FALSE(PlanReconcile(j, w, At(90)).status);
}

TEST(PlannerRecovery, NotRecordedWhileTheRoundIsStarting) {
  api::DDPJob j = InPhase(Job(2), api::kPhaseRestarting, 1, 2, 1);
  j.status.last_failure = api::LastFailure{"mingpt-worker-1", 1, 75, "Error", "", At(10), "", std::nullopt};
  Observed w = World({Pod(0, 1, "Running"), Pod(1, 1, "Pending")});
  Plan plan = PlanReconcile(j, w, At(25));
  EXPECT_TRUE(!plan.status || !plan.status->last_failure->recovery_seconds) << plan.ToString();
}

TEST(ProgressApi, HangTimeoutMustBePositive) {
  api::DDPJob j = Job(2);
  j.spec.failure_policy.hang_timeout_seconds = 0;
  std::vector<std::string> errs = api::Validate(j);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0],
            "spec.failurePolicy.hangTimeoutSeconds (0) must be >= 1 (leave it out to never "
            "call a job hung)");
  j.spec.failure_policy.hang_timeout_seconds = 1;
  EXPECT_TRUE(api::Validate(j).empty());
}

TEST(ProgressApi, RoundTripsThroughJson) {
  api::DDPJob j = InPhase(Job(2), api::kPhaseRunning, 1, 2, 1);
  j.spec.failure_policy.hang_timeout_seconds = 600;
  j.status.progress = api::Progress{120, 400, 2.25, 1500.5, 140, At(30)};
  j.status.last_failure = api::LastFailure{"mingpt-worker-1", 1, 75, "Error", "m", At(10), "", 12.5};
  nlohmann::json wire = api::ToJson(j);
  EXPECT_EQ(wire["spec"]["failurePolicy"]["hangTimeoutSeconds"], 600);
  EXPECT_EQ(wire["status"]["progress"]["etaSeconds"], 140);
  EXPECT_EQ(wire["status"]["progress"]["updatedAt"], "2026-01-01T00:00:30Z");
  EXPECT_EQ(wire["status"]["lastFailure"]["recoverySeconds"], 12.5);
  auto back = api::ParseDDPJobJson(wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->spec.failure_policy.hang_timeout_seconds, 600);
  EXPECT_EQ(back->status, j.status);
}

TEST(ProgressApi, BadProgressFieldsAreNamed) {
  nlohmann::json wire = api::ToJson(Job(1));
  wire["status"]["progress"] = {{"step", 3}, {"loss", "low"}};
  auto bad = api::ParseDDPJobJson(wire);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("status.progress.loss: expected a number"),
            std::string::npos)
      << bad.status().message();
  wire["spec"]["failurePolicy"] = {{"hangTimeoutSeconds", "soon"}};
  wire["status"].erase("progress");
  bad = api::ParseDDPJobJson(wire);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("hangTimeoutSeconds"), std::string::npos);
}

}  // namespace
}  // namespace ddp::plan::testing

namespace ddp::plan::testing {
namespace {

// Trainer restarts healed inside the pods reach status.recoveries through the rendezvous pod's
// report, each counted once: the same reading again adds nothing, a higher one adds the
// difference, a new round's (or a new rendezvous pod's) count starts a new baseline.
ObservedGroup Group(int round, double recoveries) {
  return Report(round, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}, {}, recoveries);
}

// RunningJob under recovery InPlace: its round has a rendezvous pod as well, so plans settle.
Running RunningInPlace(int max_restarts) {
  api::DDPJob j = InPlace(InPhase(Job(2), api::kPhaseRunning, 0, 2));
  j.spec.failure_policy.max_restarts = max_restarts;
  Running r{j, GroupWorld(2, 0, 0, "Running")};
  Apply(PlanReconcile(r.job, r.world, At(1)), &r.job, &r.world, At(1));
  return r;
}

TEST(PlannerInPodRecoveries, AreAddedOncePerReadingAndAgainInANewRound) {
  Running r = RunningInPlace(10);  // a budget the readings below stay inside
  r.world.group = Group(0, 2);
  Plan plan = PlanReconcile(r.job, r.world, At(52));
  ASSERT_TRUE(plan.status) << plan.ToString();
  EXPECT_EQ(plan.status->recoveries, 2);
  EXPECT_EQ(plan.status->progress->recoveries, 2);
  EXPECT_TRUE(plan.events.empty()) << plan.ToString();
  ExpectSettles(plan, r, At(52));
  Apply(plan, &r.job, &r.world, At(52));
  Plan again = PlanReconcile(r.job, r.world, At(53));  // the same reading: nothing more
  EXPECT_TRUE(again.empty()) << again.ToString();

  r.world.group = Group(0, 3);  // one more
  Plan more = PlanReconcile(r.job, r.world, At(55));
  ASSERT_TRUE(more.status) << more.ToString();
  EXPECT_EQ(more.status->recoveries, 3);
  Apply(more, &r.job, &r.world, At(55));

  // A replaced rendezvous pod counts from 0: a new baseline, nothing subtracted.
  r.world.group = Group(0, 0);
  Plan reset = PlanReconcile(r.job, r.world, At(56));
  ASSERT_TRUE(reset.status) << reset.ToString();
  EXPECT_EQ(reset.status->recoveries, 3);
  EXPECT_EQ(reset.status->progress->recoveries, 0);
  Apply(reset, &r.job, &r.world, At(56));
  // ... and its next reading adds what it counted since.
  r.world.group = Group(0, 1);
  Plan after_reset = PlanReconcile(r.job, r.world, At(57));
  ASSERT_TRUE(after_reset.status) << after_reset.ToString();
  EXPECT_EQ(after_reset.status->recoveries, 4);
  Apply(after_reset, &r.job, &r.world, At(57));

  // A report of an older round counts for nothing.
  r.job.status.round = 1;
  r.job.status.progress->recoveries = 0;
  r.world = GroupWorld(2, 1, 0, "Running");
  r.world.group = Group(0, 5);
  Plan stale = PlanReconcile(r.job, r.world, At(60));
  EXPECT_TRUE(!stale.status || stale.status->recoveries == 4) << stale.ToString();
  // The new round's first reading adds in full.
  r.world.group = Group(1, 1);
  Plan next = PlanReconcile(r.job, r.world, At(61));
  ASSERT_TRUE(next.status) << next.ToString();
  EXPECT_EQ(next.status->recoveries, 5) << next.ToString();
  EXPECT_EQ(next.status->phase, api::kPhaseRunning);
}

// The group and the operator charge near the limit at once: the status never shows more than
// maxRestarts, and the job fails on the charge past it.
TEST(PlannerInPodRecoveries, PastMaxRestartsTheJobFails) {
  Running r = RunningInPlace(3);
  r.job.status.recoveries = 2;  // one pod replaced by the operator, one healed in a pod
  r.job.status.progress = api::Progress{};
  r.job.status.progress->recoveries = 1;
  r.world.group = Group(0, 3);  // two more healed in the pods: 4 failures for a budget of 3
  Plan plan = PlanReconcile(r.job, r.world, At(70));
  ASSERT_TRUE(plan.status) << plan.ToString();
  EXPECT_EQ(plan.status->phase, "Failed");
  EXPECT_EQ(plan.status->restarts + plan.status->recoveries, 3);
  EXPECT_EQ(plan.status->FindCondition(api::kCondFailed)->reason, "MaxRestartsExceeded");
  EXPECT_EQ(EventReasons(plan), (std::vector<std::string>{"MaxRestartsExceeded", "CleaningPods"}))
      << plan.ToString();
  // Reaching the limit exactly is no failure: 3 charged of 3.
  r.world.group = Group(0, 2);
  Plan at_limit = PlanReconcile(r.job, r.world, At(70));
  ASSERT_TRUE(at_limit.status) << at_limit.ToString();
  EXPECT_EQ(at_limit.status->phase, api::kPhaseRunning);
  EXPECT_EQ(at_limit.status->recoveries, 3);
}

TEST(PlannerProgress, ANewRankZeroAtStepZeroKeepsTheJobsProgress) {
  // Round 0 reached step 300; round 1's rank 0 shows step 0 before it resumes. The status keeps
  // step 300 (not 0) until round 1 reads a real step.
  Running r = RunningJob(1);
  r.world.progress = Progress(1, 300, At(50));
  Apply(PlanReconcile(r.job, r.world, At(50)), &r.job, &r.world, At(50));
  ASSERT_TRUE(r.job.status.progress);
  ObservedProgress starting = Progress(1, 0, At(90));
  starting.snapshot.steps_per_second.reset();
  r.world.progress = starting;
  Plan plan = PlanReconcile(r.job, r.world, At(90));
  EXPECT_FALSE(plan.status) << plan.ToString();
  r.world.progress = Progress(1, 310, At(95));
  plan = PlanReconcile(r.job, r.world, At(95));
  ASSERT_TRUE(plan.status && plan.status->progress) << plan.ToString();
  EXPECT_EQ(plan.status->progress->step, 310);
}

}  // namespace
}  // namespace ddp::plan::testing
