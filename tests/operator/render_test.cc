// RenderNewJob (operator/plan/render.h): `ddp-operator render` is the planner's own first pass
// (and, under a gang scheduler, the pass that adds the spares once the gang is bound).
// Rows: what a new job gets, in order, for each kind of job and operator setting (written out
// from the docs' rules: docs/in-place-recovery.md "The pods of an InPlace job", docs/security.md,
// docs/gang-scheduling.md), and that once it exists the planner creates nothing more for the
// round: render leaves nothing of a new round out.
#include <gtest/gtest.h>

#include "operator/api/labels.h"
#include "operator/plan/render.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;

std::vector<std::string> Describe(const std::vector<json>& objects) {
  Plan p;
  p.creates = objects;
  return DescribeCreates(p);
}

PlanOptions Options(bool network_policy, GangScheduler gang = GangScheduler::kNone) {
  PlanOptions o;
  o.network_policy.enabled = network_policy;
  o.network_policy.operator_namespace = "ddp-system";
  if (gang != GangScheduler::kNone) {
    EXPECT_TRUE(ParseGangSchedulerName(gang == GangScheduler::kVolcano ? "volcano" : "gang", &o.gang));
  }
  return o;
}

struct Row {
  const char* name;
  api::DDPJob job;
  PlanOptions options;
  std::vector<std::string> want;
};

TEST(RenderNewJob, EverythingTheOperatorCreatesForANewJobInItsOrder) {
  api::DDPJob isolated = Job(2);
  isolated.spec.run_policy.network_policy = true;
  const std::vector<Row> rows = {
      {"Restart, no isolation: the Service and the worker pods", Job(2), Options(false),
       {"Service mingpt", "Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0"}},
      {"Restart, the operator's default isolation: the policy first", Job(2), Options(true),
       {"NetworkPolicy mingpt", "Service mingpt", "Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0"}},
      {"a job asking for isolation gets it whatever the operator's default", isolated,
       Options(false),
       {"NetworkPolicy mingpt", "Service mingpt", "Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0"}},
      {"InPlace with spares: the rendezvous pod before the workers, the spares after",
       InPlace(Job(2), 2), Options(true),
       {"NetworkPolicy mingpt", "Service mingpt", "Pod mingpt-rendezvous r0",
        "Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0", "Pod mingpt-spare-0 r0",
        "Pod mingpt-spare-1 r0"}},
      {"a gang scheduler: the PodGroup before everything", InPlace(Job(2), 1),
       Options(true, GangScheduler::kVolcano),
       {"PodGroup mingpt", "NetworkPolicy mingpt", "Service mingpt", "Pod mingpt-rendezvous r0",
        "Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0", "Pod mingpt-spare-0 r0"}},
      {"coscheduling, Restart", Job(1), Options(false, GangScheduler::kCoscheduling),
       {"PodGroup mingpt", "Service mingpt", "Pod mingpt-worker-0 r0"}},
  };
  for (const Row& r : rows) {
    const std::vector<json> objects = RenderNewJob(r.job, 0, r.options, T0());
    EXPECT_EQ(Describe(objects), r.want) << r.name;
    // The planner's own passes, and nothing is missing from them: the first creates the round
    // (under a gang scheduler all but the spares, which a pass after the gang is bound adds);
    // with every object in place, its pods bound and running, the next pass creates nothing.
    api::DDPJob job = r.job;
    Observed world;
    std::vector<json> made;
    int pass = 0;
    for (; pass < 4; ++pass) {
      const Plan p = PlanReconcile(job, world, At(pass), r.options);
      if (p.creates.empty()) break;
      made.insert(made.end(), p.creates.begin(), p.creates.end());
      Apply(p, &job, &world, At(pass));
      for (auto& pod : world.pods) {
        pod.phase = "Running";
        pod.node_name = "node-a";
      }
      if (world.pod_group) world.pod_group->phase = "Running";
    }
    EXPECT_EQ(made, objects) << r.name;
    EXPECT_LT(pass, 4) << r.name << ": the planner still creates objects after 4 passes";
  }
}

TEST(RenderNewJob, TheGangCountsThePodsItRenders) {
  PlanOptions options = Options(false, GangScheduler::kVolcano);
  api::DDPJob job = InPlace(Job(3), 2);
  job.labels[api::kKueueQueueNameLabel] = "q";
  const std::vector<json> objects = RenderNewJob(job, 0, options, T0());
  int pods = 0, must_start = 0;
  for (const json& o : objects) {
    if (o["kind"] != "Pod") continue;
    ++pods;
    if (o["metadata"]["labels"][api::kRoleLabel] != "spare") ++must_start;
  }
  ASSERT_EQ(objects[0]["kind"], "PodGroup");
  EXPECT_EQ(objects[0]["spec"]["minMember"], must_start);  // 3 workers + the rendezvous pod
  for (const json& o : objects) {
    if (o["kind"] != "Pod") continue;
    EXPECT_EQ(o["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"],
              std::to_string(pods));  // 6: every pod rendered
  }
}

// A manifest read back from the cluster (`kubectl get ddpj -o yaml`) carries the job's status,
// maybe a deletionTimestamp or suspend: render shows the objects of a job starting in `round`.
TEST(RenderNewJob, IgnoresTheManifestsStatusAndRendersTheRoundAsked) {
  api::DDPJob job = InPhase(Job(2), api::kPhaseRunning, 5, 2, 2);
  job.deletion_timestamp = At(0);
  job.spec.run_policy.suspend = true;
  const std::vector<json> objects = RenderNewJob(job, 3, Options(false), T0());
  ASSERT_EQ(Describe(objects),
            (std::vector<std::string>{"Service mingpt", "Pod mingpt-worker-0 r3", "Pod mingpt-worker-1 r3"}));
  std::map<std::string, std::string> env;
  for (const json& e : objects[1]["spec"]["containers"][0]["env"]) env[e["name"]] = e.value("value", "");
  EXPECT_EQ(env["DDP_ROUND"], "3");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "3");
}

}  // namespace
}  // namespace ddp::plan::testing
