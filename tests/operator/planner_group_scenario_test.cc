// Multi-pass scenarios of recovery InPlace with the group's pods (DESIGN.md "Hot spares"): pods
// that never start, a spare taking over a lost member's rank and the lost pod coming back as a
// spare, the rendezvous pod lost mid-run, and the gang counting the group's pods. Each pass plans
// and applies, as the controller does; pods the test does not start stay Pending forever.
#include <gtest/gtest.h>

#include <map>

#include "operator/plan/gang.h"
#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using api::DDPJob;
using Strings = std::vector<std::string>;

// Plans and applies until nothing is written; deleted pods vanish between passes.
void Settle(DDPJob* job, Observed* world, TimePoint now, const PlanOptions& options = {}) {
  for (int pass = 0; pass < 20; ++pass) {
    const Plan plan = PlanReconcile(*job, *world, now, options);
    if (plan.creates.empty() && plan.deletes.empty() && !plan.status) return;
    Apply(plan, job, world, now);
    ReapDeleting(world);
  }
  ADD_FAILURE() << "planner did not settle in 20 passes";
}

void SetPhase(Observed* w, const std::string& name, const std::string& phase,
              std::optional<int> code = std::nullopt) {
  for (auto& p : w->pods) {
    if (p.name != name) continue;
    p.phase = phase;
    p.ready = phase == "Running";
    p.exit_code = code;
    p.reason = code && *code != 0 ? "Error" : "";
  }
}

void StartAll(Observed* w) {
  for (auto& p : w->pods) SetPhase(w, p.name, "Running");
}

std::map<std::string, std::string> UidsByName(const Observed& w) {
  std::map<std::string, std::string> out;
  for (const auto& p : w.pods) out[p.name] = p.uid;
  return out;
}

Strings Names(const Observed& w) {
  Strings out;
  for (const auto& p : w.pods) out.push_back(p.name + " " + p.role);
  return out;
}

// Nothing ever starts (no node fits, the image never pulls): the operator creates the rendezvous
// pod, the workers and the spares once, then waits. Nothing is charged, deleted or recreated
// however long it waits, and the job stays Pending (no deadline, no elastic timeout set).
TEST(GroupScenario, PodsThatNeverStartAreCreatedOnceAndNothingIsCharged) {
  DDPJob job = InPlace(Job(3), 2);
  Observed world = World({}, false);
  Settle(&job, &world, At(0));
  EXPECT_EQ(Names(world), (Strings{"mingpt-rendezvous rendezvous", "mingpt-worker-0 worker",
                                   "mingpt-worker-1 worker", "mingpt-worker-2 worker",
                                   "mingpt-spare-0 spare", "mingpt-spare-1 spare"}));
  const auto created = UidsByName(world);
  for (int t : {1, 60, 600, 3600, 86400}) {
    const Plan plan = PlanReconcile(job, world, At(t));
    EXPECT_TRUE(plan.empty()) << "at " << t << "s: " << plan.ToString();
  }
  EXPECT_EQ(job.status.phase, "Pending");
  EXPECT_EQ(job.status.round, 0);
  EXPECT_EQ(job.status.restarts + job.status.recoveries + job.status.disruptions, 0);
  EXPECT_EQ(job.status.spares, 2);
  EXPECT_EQ(job.status.ready_spares, 0);
  EXPECT_EQ(job.status.ready_replicas, 0);
  EXPECT_EQ(UidsByName(world), created);

  // Unschedulable ones as well (the scheduler says so): without elastic bounds no pod is
  // created, deleted or charged; the job only says why it waits (condition Unschedulable).
  for (auto& p : world.pods) p.unschedulable_since = At(1);
  const Plan waiting = PlanReconcile(job, world, At(86400));
  EXPECT_TRUE(waiting.creates.empty() && waiting.deletes.empty()) << waiting.ToString();
  ASSERT_TRUE(waiting.status) << waiting.ToString();
  EXPECT_EQ(waiting.status->phase, "Pending");
  EXPECT_EQ(waiting.status->restarts + waiting.status->recoveries + waiting.status->disruptions, 0);
  ASSERT_NE(waiting.status->FindCondition("Unschedulable"), nullptr) << waiting.ToString();
  EXPECT_EQ(waiting.status->FindCondition("Unschedulable")->status, "True");

  // The workers and the rendezvous pod start, the spares never do: Running, no spare ready.
  for (auto& p : world.pods) {
    if (p.role != group::kRoleSpare) SetPhase(&world, p.name, "Running");
  }
  Settle(&job, &world, At(86401));
  EXPECT_EQ(job.status.phase, "Running");
  EXPECT_EQ(job.status.spares, 2);
  EXPECT_EQ(job.status.ready_spares, 0);
  EXPECT_EQ(job.status.restarts + job.status.recoveries + job.status.disruptions, 0);
}

// Pod 0 fails; the group gives rank 0 to the spare and the recreated pod 0 registers as an idle
// spare; then the spare holding rank 0 fails and is replaced in turn. Each failure is one
// recovery, the round never changes, pod 1 and the rendezvous pod are the same objects
// throughout, and readySpares follows the report.
TEST(GroupScenario, ASpareTakesRankZeroAndTheLostPodComesBackAsASpare) {
  DDPJob job = InPlace(InPhase(Job(2), "Running", 0, 2), 1);
  Observed world = GroupWorld(2, 0, 1, "Running");
  world.group = Report(0, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}, {"mingpt-spare-0"});
  Settle(&job, &world, At(1));
  ASSERT_EQ(job.status.phase, "Running");
  EXPECT_EQ(job.status.ready_spares, 1);
  const auto before = UidsByName(world);

  // 1. Pod 0's trainer crashes past its in-pod restarts: the pod fails.
  SetPhase(&world, "mingpt-worker-0", "Failed", 137);
  Settle(&job, &world, At(10));
  EXPECT_EQ(job.status.recoveries, 1);
  EXPECT_EQ(job.status.last_failure->pod, "mingpt-worker-0");
  EXPECT_EQ(job.status.last_failure->rank, 0);
  // The group moved rank 0 to the spare before the replacement pod started.
  world.group = Report(0, {{"mingpt-spare-0", 0}, {"mingpt-worker-1", 1}}, {});
  Settle(&job, &world, At(11));
  EXPECT_EQ(job.status.phase, "Running") << "both ranks are held by running pods";
  EXPECT_EQ(job.status.ready_spares, 0);
  // The new pod 0 starts and registers as the idle spare.
  SetPhase(&world, "mingpt-worker-0", "Running");
  world.group = Report(0, {{"mingpt-spare-0", 0}, {"mingpt-worker-1", 1}}, {"mingpt-worker-0"});
  Settle(&job, &world, At(12));
  EXPECT_EQ(job.status.phase, "Running");
  EXPECT_EQ(job.status.ready_spares, 1);
  EXPECT_EQ(job.status.spares, 1);
  EXPECT_EQ(job.status.recoveries, 1);

  // 2. The spare holding rank 0 fails: a member's failure, charged, replaced alone.
  SetPhase(&world, "mingpt-spare-0", "Failed", 75);
  Settle(&job, &world, At(20));
  EXPECT_EQ(job.status.recoveries, 2);
  EXPECT_EQ(job.status.last_failure->pod, "mingpt-spare-0");
  EXPECT_EQ(job.status.last_failure->rank, 0);
  EXPECT_NE(job.status.phase, "Running") << "rank 0 is held by nobody yet";
  // The idle pod 0 takes rank 0 back; the new spare registers idle.
  StartAll(&world);
  world.group = Report(0, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}, {"mingpt-spare-0"});
  Settle(&job, &world, At(21));
  EXPECT_EQ(job.status.phase, "Running");
  EXPECT_EQ(job.status.ready_spares, 1);

  // 3. The idle spare is lost: replaced, nothing counted.
  SetPhase(&world, "mingpt-spare-0", "Failed", 137);
  Settle(&job, &world, At(30));
  EXPECT_EQ(job.status.recoveries, 2);
  EXPECT_EQ(job.status.disruptions, 0);
  EXPECT_EQ(job.status.restarts, 0);
  EXPECT_EQ(job.status.round, 0);
  const auto after = UidsByName(world);
  EXPECT_EQ(after.at("mingpt-worker-1"), before.at("mingpt-worker-1"));
  EXPECT_EQ(after.at("mingpt-rendezvous"), before.at("mingpt-rendezvous"));
  EXPECT_NE(after.at("mingpt-worker-0"), before.at("mingpt-worker-0"));
  EXPECT_NE(after.at("mingpt-spare-0"), before.at("mingpt-spare-0"));
}

// The rendezvous pod is lost twice mid-run: replaced each time in the same round, counted
// nowhere; its new store counts in-pod recoveries from 0 (a new baseline, progress.recoveries).
TEST(GroupScenario, TheRendezvousPodLostMidRunIsReplacedInTheSameRound) {
  DDPJob job = InPlace(InPhase(Job(2), "Running", 1, 2));
  Observed world = GroupWorld(2, 1, 0, "Running");
  world.group = Report(1, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}, {}, 1);
  Settle(&job, &world, At(1));
  EXPECT_EQ(job.status.recoveries, 1);
  const auto before = UidsByName(world);
  for (int k = 0; k < 2; ++k) {
    SetPhase(&world, "mingpt-rendezvous", "Failed", 137);
    Settle(&job, &world, At(10 + k * 10));
    StartAll(&world);
    world.group = Report(1, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}, {}, 0);
    Settle(&job, &world, At(11 + k * 10));
    EXPECT_EQ(job.status.phase, "Running");
  }
  EXPECT_EQ(job.status.round, 1);
  EXPECT_EQ(job.status.recoveries, 1);
  EXPECT_EQ(job.status.restarts, 0);
  EXPECT_EQ(job.status.disruptions, 0);
  const auto after = UidsByName(world);
  EXPECT_EQ(after.at("mingpt-worker-0"), before.at("mingpt-worker-0"));
  EXPECT_EQ(after.at("mingpt-worker-1"), before.at("mingpt-worker-1"));
  EXPECT_NE(after.at("mingpt-rendezvous"), before.at("mingpt-rendezvous"));
  // A heal after the new store started adds on top of the new baseline.
  world.group = Report(1, {{"mingpt-worker-0", 0}, {"mingpt-worker-1", 1}}, {}, 1);
  Settle(&job, &world, At(40));
  EXPECT_EQ(job.status.recoveries, 2);
}

// The gang is every pod of the round (workers, rendezvous pod, spares); the pods a round needs to
// start are the workers and the rendezvous pod (gang.h).
TEST(GroupGang, CountsTheRendezvousPodAndSpares) {
  struct Case {
    api::Recovery recovery;
    int spares, round_size, want_count, want_min;
  };
  const Case cases[] = {{api::Recovery::kRestart, 0, 4, 4, 4},
                        {api::Recovery::kInPlace, 0, 4, 5, 5},
                        {api::Recovery::kInPlace, 2, 4, 7, 5},
                        {api::Recovery::kInPlace, 1, 1, 3, 2}};
  for (const Case& c : cases) {
    DDPJob j = Job(4);
    j.spec.failure_policy.recovery = c.recovery;
    j.spec.failure_policy.spares = c.spares;
    EXPECT_EQ(GangPodCount(j, c.round_size), c.want_count) << c.spares << " " << c.round_size;
    EXPECT_EQ(GangMinMember(j, c.round_size), c.want_min) << c.spares << " " << c.round_size;
  }
}

// Under Kueue every pod of the round carries the whole group's size: 2 workers, the rendezvous
// pod and 1 spare are one pod group of 4.
TEST(GroupGang, KueueGroupIsEveryPodOfTheRound) {
  DDPJob job = InPlace(Job(2), 1);
  job.labels["kueue.x-k8s.io/queue-name"] = "team-a";
  const Plan plan = PlanReconcile(job, World({}, false), At(0));
  ASSERT_EQ(DescribeCreates(plan),
            (Strings{"Service mingpt", "Pod mingpt-rendezvous r0", "Pod mingpt-worker-0 r0",
                     "Pod mingpt-worker-1 r0", "Pod mingpt-spare-0 r0"}));
  for (size_t i = 1; i < plan.creates.size(); ++i) {
    const auto& meta = plan.creates[i]["metadata"];
    EXPECT_EQ(meta["annotations"]["kueue.x-k8s.io/pod-group-total-count"], "4") << meta["name"];
    EXPECT_EQ(meta["labels"]["kueue.x-k8s.io/pod-group-name"], "mingpt-r0") << meta["name"];
  }
}

}  // namespace
}  // namespace ddp::plan::testing
