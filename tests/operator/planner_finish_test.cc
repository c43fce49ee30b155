// Succeeded means trained (DESIGN.md "Worker exit codes"): an exit 0 is a finish only with the
// pod's `ddp: Finished: step N of N`, when the job runs ddp-worker (always under InPlace; under
// Restart once its progress was read or a pod spoke); a finished job's status holds the step
// every rank reached and no ETA. Images that say nothing (torchrun) are taken at their word.
#include <gtest/gtest.h>

#include "operator/plan/builders.h"
#include "operator/plan/classify.h"
#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;

constexpr int64_t kSteps = 6000;

ObservedPod Finished(ObservedPod p, int64_t steps = kSteps) {
  p.message = group::FormatFinished({steps, std::nullopt});
  return p;
}
ObservedPod Said(ObservedPod p, const std::string& message) {
  p.message = message;
  return p;
}
// A Restart job in round 0, Running, whose progress was read from rank 0's page.
api::DDPJob WithProgress(api::DDPJob j, int64_t step) {
  j.status.progress = api::Progress{};
  j.status.progress->step = step;
  j.status.progress->total_steps = kSteps;
  j.status.progress->eta_seconds = 42;
  j.status.progress->tokens_per_second = 1000;
  return j;
}

TEST(ExitedWithoutFinishingTest, OnlyAFinishOfTheLastStepOrASilentImageIsAFinish) {
  const ObservedPod done = Exited(0, 0, 0);
  EXPECT_FALSE(ExitedWithoutFinishing(Finished(done), true));
  EXPECT_FALSE(ExitedWithoutFinishing(Finished(done), false));
  EXPECT_TRUE(ExitedWithoutFinishing(done, true)) << "ddp-worker always says Finished";
  EXPECT_FALSE(ExitedWithoutFinishing(done, false)) << "a torchrun pod says nothing";
  for (const char* m : {"ddp: Stopped: the job stopped together", "ddp: Finished: step 12 of 6000",
                        "ddp: Departed: left", "ddp: Finished"}) {
    EXPECT_TRUE(ExitedWithoutFinishing(Said(done, m), false)) << m;
  }
  EXPECT_FALSE(ExitedWithoutFinishing(Said(done, "ddp: Released: held no rank"), true));
  EXPECT_FALSE(ExitedWithoutFinishing(Exited(0, 0, 75), true)) << "not exit 0: not this rule";
}

TEST(PlannerFinishTest, RestartPodsThatSayNothingAfterProgressWasReadAreFailures) {
  const api::DDPJob job = WithProgress(InPhase(Job(2), "Running", 0, 2), 1184);
  const Plan plan = PlanReconcile(job, World({Exited(0, 0, 0), Exited(1, 0, 0)}), At(10));
  ASSERT_TRUE(plan.status);
  EXPECT_NE(plan.status->phase, "Succeeded");
  EXPECT_EQ(plan.status->round, 1) << "OnFailure restarts it";
  EXPECT_EQ(plan.status->restarts, 1);
  ASSERT_FALSE(plan.events.empty());
  EXPECT_NE(plan.events[0].message.find("rank 0 exited 0 without saying it trained to the end"),
            std::string::npos)
      << plan.events[0].message;
}

TEST(PlannerFinishTest, RestartPodsThatFinishedEndTheJobAtTheTotalStepWithoutAnEta) {
  const api::DDPJob job = WithProgress(InPhase(Job(2), "Running", 0, 2), 5900);
  const Plan plan =
      PlanReconcile(job, World({Finished(Exited(0, 0, 0)), Finished(Exited(1, 0, 0))}), At(10));
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, "Succeeded");
  ASSERT_TRUE(plan.status->progress);
  EXPECT_EQ(plan.status->progress->step, kSteps);
  EXPECT_EQ(plan.status->progress->total_steps, kSteps);
  EXPECT_FALSE(plan.status->progress->eta_seconds);
  EXPECT_FALSE(plan.status->progress->tokens_per_second);
}

TEST(PlannerFinishTest, APodThatSaysItStoppedNeverEndsTheJobEvenWithoutProgress) {
  const api::DDPJob job = InPhase(Job(2), "Running", 0, 2);
  const Plan plan = PlanReconcile(
      job, World({Finished(Exited(0, 0, 0)), Said(Exited(1, 0, 0), "ddp: Stopped: stopped")}),
      At(10));
  ASSERT_TRUE(plan.status);
  EXPECT_NE(plan.status->phase, "Succeeded");
  ASSERT_TRUE(plan.status->last_failure);
  EXPECT_EQ(plan.status->last_failure->pod, "mingpt-worker-1");
}

TEST(PlannerFinishTest, ATorchrunJobThatSaysNothingStillSucceeds) {
  const api::DDPJob job = InPhase(Job(2), "Running", 0, 2);
  const Plan plan = PlanReconcile(job, World({Exited(0, 0, 0), Exited(1, 0, 0)}), At(10));
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, "Succeeded");
  EXPECT_FALSE(plan.status->progress) << "no steps known: none invented";
}

TEST(PlannerFinishTest, InPlacePodsThatFinishedEndTheJobAtTheirStep) {
  api::DDPJob job = WithProgress(InPlace(InPhase(Job(2), "Running", 0, 2)), 5990);
  Observed w = GroupWorld(2, 0, 0, "Running");
  w = With(w, Finished(Exited(0, 0, 0)));
  w = With(w, Finished(Exited(1, 0, 0)));
  const Plan plan = PlanReconcile(job, w, At(10));
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->phase, "Succeeded");
  EXPECT_EQ(plan.status->progress->step, kSteps);
  EXPECT_FALSE(plan.status->progress->eta_seconds);
}

// A template that moves the termination message (terminationMessagePath: log shippers do). The
// container's side, as Kubernetes and ddp-worker do it: the kubelet creates one file, at the
// container's terminationMessagePath (default /dev/termination-log), and reports what is in it;
// ddp-worker writes to $DDP_TERMINATION_LOG when it is set, else to /dev/termination-log only
// where that file exists (worker/train/exit_codes.cc). Returns what the kubelet reports of a
// pod whose process wrote `written`.
std::string ReportedMessage(const json& pod, const std::string& written) {
  const json& c = pod["spec"]["containers"][WorkerContainerIndex(pod["spec"])];
  const std::string mounted = c.value("terminationMessagePath", group::kDefaultTerminationLog);
  std::optional<std::string> target;
  for (const json& e : c.value("env", json::array())) {
    if (e.value("name", "") == group::kEnvTerminationLog) target = e.value("value", "");
  }
  if (!target) target = mounted == group::kDefaultTerminationLog ? mounted : "";
  return *target == mounted ? written : "";
}

TEST(PlannerFinishTest, APodWhoseTemplateMovesTheTerminationMessageReadsAsFinished) {
  for (const bool in_place : {true, false}) {
    SCOPED_TRACE(in_place ? "InPlace" : "Restart (progress read)");
    api::DDPJob job = WithProgress(InPhase(Job(2), "Running", 0, 2), 5990);
    if (in_place) job = InPlace(job);
    job.spec.pod_template["spec"]["containers"][0]["terminationMessagePath"] = "/var/run/msg";
    Observed w = in_place ? GroupWorld(2, 0, 0, "Running") : World(Pods(2, 0, "Running"));
    for (int i = 0; i < 2; ++i) {
      const json built = BuildWorkerPod(job, i, 0, 2);
      w = With(w, Said(Exited(i, 0, 0),
                       ReportedMessage(built, group::FormatFinished({kSteps, std::nullopt}))));
    }
    const Plan plan = PlanReconcile(job, w, At(10));
    ASSERT_TRUE(plan.status) << plan.ToString();
    EXPECT_EQ(plan.status->phase, "Succeeded") << plan.ToString();
    EXPECT_EQ(plan.status->restarts + plan.status->recoveries, 0);
    EXPECT_EQ(plan.status->progress->step, kSteps);
  }
}

}  // namespace
}  // namespace ddp::plan::testing
