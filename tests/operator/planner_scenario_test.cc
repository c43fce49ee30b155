// Multi-pass scenarios: the planner driven against a simulated cluster until it settles, checking
// the invariants a single row cannot: two rounds never overlap, and the job reaches its end.
#include <gtest/gtest.h>

#include <set>

#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

// Drives PlanReconcile to a fixed point; pods being deleted vanish between passes (the kubelet).
class Cluster {
 public:
  explicit Cluster(api::DDPJob job) : job_(std::move(job)) {}

  // Plans and applies until a pass writes nothing. Fails the test on an overlap of rounds.
  void Settle(TimePoint now) {
    for (int pass = 0; pass < 20; ++pass) {
      Plan plan = PlanReconcile(job_, world_, now);
      for (const auto& e : plan.events) events_.push_back(e.message);
      CheckNoNameReuse(plan);
      if (plan.creates.empty() && plan.deletes.empty() && !plan.status && !plan.delete_job) return;
      Apply(plan, &job_, &world_, now);
      ReapDeleting(&world_);
    }
    ADD_FAILURE() << "planner did not settle in 20 passes";
  }
  // Every pod of the current round moves to `phase` (exit code for Succeeded/Failed).
  void SetAll(const std::string& phase) {
    for (auto& p : world_.pods) {
      p.phase = phase;
      p.ready = phase == "Running";
      if (phase == "Succeeded") p.exit_code = 0;
    }
  }
  void Exit(int index, int code) {
    for (auto& p : world_.pods) {
      if (p.index == index) {
        p.phase = code == 0 ? "Succeeded" : "Failed";
        p.exit_code = code;
        p.ready = false;
      }
    }
  }
  const api::DDPJob& job() const { return job_; }
  api::DDPJob& mutable_job() { return job_; }  // the user edits the spec
  const Observed& world() const { return world_; }
  const std::vector<std::string>& events() const { return events_; }
  std::set<int> Rounds() const {
    std::set<int> r;
    for (const auto& p : world_.pods) r.insert(p.round);
    return r;
  }

 private:
  // A create for a name that a pod still holds would put two rounds on one name.
  void CheckNoNameReuse(const Plan& plan) {
    for (const auto& obj : plan.creates) {
      if (obj["kind"] != "Pod") continue;
      for (const auto& p : world_.pods) {
        EXPECT_NE(p.name, obj["metadata"]["name"].get<std::string>())
            << "created over an existing pod";
      }
    }
  }
  api::DDPJob job_;
  Observed world_;
  std::vector<std::string> events_;
};

TEST(PlannerScenario, FailureRestartThenSuccess) {
  Cluster c(Policy(Job(3), api::RestartPolicy::kExitCode, 2));
  c.Settle(At(0));
  EXPECT_EQ(c.world().pods.size(), 3u);
  EXPECT_EQ(c.job().status.phase, "Pending");
  c.SetAll("Running");
  c.Settle(At(10));
  EXPECT_EQ(c.job().status.phase, "Running");

  c.Exit(1, 75);
  c.Settle(At(20));
  EXPECT_TRUE(c.world().pods.empty());  // old round gone, new one waits out the 1 s backoff
  c.Settle(At(21));
  EXPECT_EQ(c.job().status.round, 1);
  EXPECT_EQ(c.job().status.restarts, 1);
  EXPECT_EQ(c.Rounds(), std::set<int>{1});
  EXPECT_EQ(c.world().pods.size(), 3u);
  EXPECT_EQ(c.job().status.phase, "Restarting");
  ASSERT_TRUE(c.job().status.last_failure.has_value());
  EXPECT_EQ(c.job().status.last_failure->exit_code, 75);
  EXPECT_EQ(c.job().status.last_failure->pod, "mingpt-worker-1");

  c.SetAll("Running");
  c.Settle(At(30));
  EXPECT_EQ(c.job().status.phase, "Running");
  c.SetAll("Succeeded");
  c.Settle(At(40));
  EXPECT_EQ(c.job().status.phase, "Succeeded");
  EXPECT_EQ(c.job().status.completion_time, At(40));
  EXPECT_FALSE(c.world().service_exists);
  const auto& ev = c.events();
  EXPECT_NE(std::find(ev.begin(), ev.end(), "round 0 -> 1 (rank 1 exited 75; restart 1 of 2)"),
            ev.end());
}

TEST(PlannerScenario, RestartBudgetRunsOutThenFails) {
  Cluster c(Policy(Job(2), api::RestartPolicy::kOnFailure, 2));
  c.Settle(At(0));
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int t = 100 * attempt;
    c.Settle(At(t));  // past the previous restart's backoff: the round's pods exist
    ASSERT_EQ(c.world().pods.size(), 2u) << "attempt " << attempt;
    c.SetAll("Running");
    c.Settle(At(t + 1));
    c.Exit(0, 1);
    c.Settle(At(t + 2));
  }
  EXPECT_EQ(c.job().status.phase, "Failed");
  EXPECT_EQ(c.job().status.restarts, 2);
  EXPECT_EQ(c.job().status.round, 2);
  const api::Condition* failed = c.job().status.FindCondition("Failed");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->reason, "MaxRestartsExceeded");
}

TEST(PlannerScenario, ElasticResizeUpAndDownKeepsRoundsApart) {
  Cluster c(Elastic(Job(2), 1, 4, 60));
  c.Settle(At(0));
  c.SetAll("Running");
  c.Settle(At(1));
  c.mutable_job() = Scaled(c.job(), 4);  // `kubectl scale`: a new generation
  c.Settle(At(2));
  const Cluster& k = c;
  EXPECT_EQ(k.job().status.round, 1);
  EXPECT_EQ(k.job().status.replicas, 4);
  EXPECT_EQ(k.job().status.world_size, 4);
  EXPECT_EQ(k.world().pods.size(), 4u);
  EXPECT_EQ(k.Rounds(), std::set<int>{1});
  EXPECT_EQ(k.job().status.restarts, 0);

  c.SetAll("Running");
  c.Settle(At(3));
  EXPECT_EQ(c.job().status.phase, "Running");
  c.mutable_job() = Scaled(c.job(), 1);  // down to elastic min
  c.Settle(At(4));
  EXPECT_EQ(c.job().status.round, 2);
  EXPECT_EQ(c.job().status.replicas, 1);
  EXPECT_EQ(c.job().status.phase, "Scaling");
  ASSERT_EQ(c.world().pods.size(), 1u);
  EXPECT_EQ(c.world().pods[0].name, "mingpt-worker-0");
  EXPECT_EQ(c.Rounds(), std::set<int>{2});
}

TEST(PlannerScenario, ConditionTimesMoveOnlyOnTransitions) {
  Cluster c(Job(2));
  c.Settle(At(0));
  c.SetAll("Running");
  c.Settle(At(10));
  const api::Condition* running = c.job().status.FindCondition("Running");
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->last_transition_time, At(10));
  c.Settle(At(50));  // nothing happened: nothing moves
  EXPECT_EQ(c.job().status.FindCondition("Running")->last_transition_time, At(10));
  const api::Condition* created = c.job().status.FindCondition("Created");
  ASSERT_NE(created, nullptr);
  EXPECT_EQ(created->last_transition_time, At(0));
}

// A stored job whose spec does not parse fails like a validation failure, once: the second pass
// over the failed job (its status now written) plans nothing.
TEST(PlannerScenario, UnparsableSpecFailsOnceWithInvalidSpecNamingTheField) {
  api::DDPJob identity = Job(2);  // only metadata and status are read
  identity.spec = api::DDPJobSpec{};
  Observed world = World(Pods(2, 0, "Running"));
  const std::string error = "spec.failurePolicy.restartPolicy (\"Sometimes\") must be ...";
  Plan plan = PlanUnparsableJob(identity, world, error, At(3));
  ASSERT_TRUE(plan.status.has_value());
  EXPECT_EQ(plan.status->phase, "Failed");
  // The decision, then cleanPodPolicy Running's deletion of the running pods.
  ASSERT_EQ(plan.events.size(), 2u) << plan.ToString();
  EXPECT_EQ(plan.deletes.size(), 3u) << plan.ToString();  // 2 pods and the Service
  EXPECT_EQ(plan.events[0].type, "Warning");
  EXPECT_EQ(plan.events[0].reason, "InvalidSpec");
  EXPECT_NE(plan.events[0].message.find("spec.failurePolicy.restartPolicy"), std::string::npos);
  bool condition = false;
  for (const auto& c : plan.status->conditions) {
    condition |= c.type == "Failed" && c.status == "True" && c.reason == "InvalidSpec";
  }
  EXPECT_TRUE(condition);
  Apply(plan, &identity, &world, At(3));
  ReapDeleting(&world);
  EXPECT_TRUE(PlanUnparsableJob(identity, world, error, At(4)).empty())
      << PlanUnparsableJob(identity, world, error, At(4)).ToString();
}

}  // namespace
}  // namespace ddp::plan::testing
