// The job's NetworkPolicy: the builder (tables against literal objects) and the planner step
// (created once, before the Service and pods; idempotent; deleted when turned off; left to the
// garbage collector with the job).
#include <gtest/gtest.h>

#include "operator/plan/network_policy.h"
#include "operator/plan/plan.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;
using Strings = std::vector<std::string>;

NetworkPolicyConfig Config(bool enabled, std::string operator_ns = "ddp-system",
                           std::string metrics_ns = "monitoring") {
  return {enabled, std::move(operator_ns), std::move(metrics_ns)};
}

api::DDPJob WithSpecPolicy(api::DDPJob j, std::optional<bool> on) {
  j.spec.run_policy.network_policy = on;
  return j;
}

TEST(NetworkPolicyBuilderTest, AdmitsTheJobsPodsAndTheScrapersToTheMetricsPort) {
  const json want = json::parse(R"({
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {
      "name": "mingpt", "namespace": "ml",
      "labels": {"ddp.dev/job-name": "mingpt"},
      "ownerReferences": [{"apiVersion": "ddp.dev/v1alpha1", "kind": "DDPJob", "name": "mingpt",
                           "uid": "uid-1", "controller": true, "blockOwnerDeletion": true}]
    },
    "spec": {
      "podSelector": {"matchLabels": {"ddp.dev/job-name": "mingpt"}},
      "policyTypes": ["Ingress"],
      "ingress": [
        {"from": [{"podSelector": {"matchLabels": {"ddp.dev/job-name": "mingpt"}}}]},
        {"from": [
           {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ddp-system"}}},
           {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
         "ports": [{"protocol": "TCP", "port": 9400}]}
      ]
    }
  })");
  EXPECT_EQ(BuildNetworkPolicy(Job(2), Config(true)), want)
      << BuildNetworkPolicy(Job(2), Config(true)).dump(2);
}

// The metrics rule names the namespaces that are set, each once, and the job's metrics port.
TEST(NetworkPolicyBuilderTest, MetricsRuleTable) {
  struct Row {
    std::string name;
    NetworkPolicyConfig config;
    int metrics_port;
    Strings scrapers;  // namespaces of the metrics rule; empty: no metrics rule at all
  };
  const std::vector<Row> rows = {
      {"both", Config(true), 9400, {"ddp-system", "monitoring"}},
      {"operator only", Config(true, "ddp-system", ""), 9400, {"ddp-system"}},
      {"prometheus only", Config(true, "", "monitoring"), 9400, {"monitoring"}},
      {"the same namespace once", Config(true, "ops", "ops"), 9400, {"ops"}},
      {"none", Config(true, "", ""), 9400, {}},
      {"the job's own port", Config(true), 9555, {"ddp-system", "monitoring"}},
  };
  for (const Row& r : rows) {
    api::DDPJob job = Job(1);
    job.spec.metrics.port = r.metrics_port;
    const json np = BuildNetworkPolicy(job, r.config);
    const json& ingress = np["spec"]["ingress"];
    ASSERT_EQ(ingress.size(), r.scrapers.empty() ? 1u : 2u) << r.name << "\n" << np.dump(2);
    // The first rule is always the job's own pods, on every port.
    EXPECT_EQ(ingress[0], json::parse(R"({"from": [{"podSelector": {"matchLabels":
                                          {"ddp.dev/job-name": "mingpt"}}}]})"))
        << r.name;
    if (r.scrapers.empty()) continue;
    Strings got;
    for (const json& peer : ingress[1]["from"]) {
      got.push_back(
          peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"].get<std::string>());
    }
    EXPECT_EQ(got, r.scrapers) << r.name;
    EXPECT_EQ(ingress[1]["ports"], json::array({{{"protocol", "TCP"}, {"port", r.metrics_port}}}))
        << r.name;
  }
}

TEST(NetworkPolicyBuilderTest, AJobWithoutUidHasNoOwnerReference) {
  api::DDPJob job = Job(1);
  job.uid.clear();  // render: never stored
  EXPECT_FALSE(BuildNetworkPolicy(job, Config(true))["metadata"].contains("ownerReferences"));
}

TEST(NetworkPolicyBuilderTest, TheSpecFieldWinsOverTheOperatorDefault) {
  struct Row {
    std::optional<bool> spec;
    bool operator_default;
    bool want;
  };
  for (const Row& r : {Row{std::nullopt, true, true}, Row{std::nullopt, false, false},
                       Row{false, true, false}, Row{true, false, true}, Row{true, true, true},
                       Row{false, false, false}}) {
    EXPECT_EQ(WantsNetworkPolicy(WithSpecPolicy(Job(1), r.spec), Config(r.operator_default)),
              r.want)
        << "spec " << (r.spec ? (*r.spec ? "true" : "false") : "unset") << ", default "
        << r.operator_default;
  }
}

// Nothing to write (a timer may remain).
bool NoWrites(const Plan& p) {
  return p.creates.empty() && p.deletes.empty() && p.patches.empty() && !p.status &&
         !p.delete_job;
}

PlanOptions Options(bool enabled) {
  PlanOptions o;
  o.network_policy = Config(enabled);
  return o;
}

TEST(NetworkPolicyPlannerTest, ANewJobGetsItsPolicyBeforeItsServiceAndPodsOnce) {
  api::DDPJob job = Job(2);
  Observed world = World({}, /*service=*/false);
  Plan first = PlanReconcile(job, world, At(0), Options(true));
  EXPECT_EQ(DescribeCreates(first), (Strings{"NetworkPolicy mingpt", "Service mingpt",
                                             "Pod mingpt-worker-0 r0", "Pod mingpt-worker-1 r0"}));
  ASSERT_EQ(EventReasons(first), (Strings{"JobCreated"}));
  EXPECT_NE(first.events[0].message.find("NetworkPolicy mingpt"), std::string::npos)
      << first.events[0].message;
  // Idempotent: once it exists, no pass creates it again, whatever the pods do.
  Apply(first, &job, &world, At(0));
  Plan again = PlanReconcile(job, world, At(1), Options(true));
  EXPECT_TRUE(DescribeCreates(again).empty()) << again.ToString();
  EXPECT_TRUE(DescribeDeletes(again).empty()) << again.ToString();
  world.pods = Pods(2, 0, "Running");
  Plan running = PlanReconcile(job, world, At(5), Options(true));
  EXPECT_TRUE(DescribeCreates(running).empty()) << running.ToString();
  Apply(running, &job, &world, At(5));
  EXPECT_TRUE(NoWrites(PlanReconcile(job, world, At(6), Options(true))));
}

TEST(NetworkPolicyPlannerTest, APolicyDeletedBySomeoneIsCreatedAgainWithAnEvent) {
  api::DDPJob job = InPhase(Job(2), api::kPhaseRunning, 0, 2);
  Observed world = World(Pods(2, 0, "Running"));  // no policy
  Plan p = PlanReconcile(job, world, At(10), Options(true));
  EXPECT_EQ(DescribeCreates(p), (Strings{"NetworkPolicy mingpt"}));
  EXPECT_EQ(EventReasons(p), (Strings{"CreatingNetworkPolicy"}));
  Apply(p, &job, &world, At(10));
  EXPECT_TRUE(NoWrites(PlanReconcile(job, world, At(11), Options(true))));
}

TEST(NetworkPolicyPlannerTest, OffNothingIsCreatedAndAnExistingOneIsDeleted) {
  // Off by the operator's default, or by the job against an operator default of on.
  for (const auto& [job, options] : {std::pair{Job(2), Options(false)},
                                     std::pair{WithSpecPolicy(Job(2), false), Options(true)}}) {
    Plan p = PlanReconcile(job, World({}, false), At(0), options);
    EXPECT_EQ(DescribeCreates(p), (Strings{"Service mingpt", "Pod mingpt-worker-0 r0",
                                           "Pod mingpt-worker-1 r0"}));
  }
  // On by the job against an operator default of off.
  Plan asked = PlanReconcile(WithSpecPolicy(Job(1), true), World({}, false), At(0), Options(false));
  EXPECT_EQ(DescribeCreates(asked).front(), "NetworkPolicy mingpt");
  // Turned off while it runs: the policy goes, once.
  api::DDPJob job = WithSpecPolicy(InPhase(Job(2), api::kPhaseRunning, 0, 2), false);
  Observed world = World(Pods(2, 0, "Running"));
  world.network_policy_exists = true;
  Plan off = PlanReconcile(job, world, At(10), Options(true));
  EXPECT_EQ(DescribeDeletes(off), (Strings{"NetworkPolicy mingpt"}));
  EXPECT_EQ(EventReasons(off), (Strings{"DeletingNetworkPolicy"}));
  EXPECT_TRUE(DescribeCreates(off).empty());
  Apply(off, &job, &world, At(10));
  EXPECT_TRUE(NoWrites(PlanReconcile(job, world, At(11), Options(true))));
}

// A policy the job owns is brought to the operator's settings when they changed (say the chart's
// networkPolicy.prometheusNamespace, read at the operator's start): the metrics port's rule is
// replaced in place by a merge patch, with an event; anything else is left as it is.
TEST(NetworkPolicyPlannerTest, AnOwnedPolicyIsUpdatedToTheOperatorsSettings) {
  const api::DDPJob job = InPhase(Job(2), api::kPhaseRunning, 0, 2);
  // The rule the operator's settings (ddp-system, monitoring) give, written from the docs
  // (docs/security.md): the metrics port 9400/TCP from pods of either namespace.
  const json metrics_rule = json::parse(R"({
    "from": [
      {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ddp-system"}}},
      {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
    "ports": [{"protocol": "TCP", "port": 9400}]})");
  const json job_rule = json::parse(
      R"({"from": [{"podSelector": {"matchLabels": {"ddp.dev/job-name": "mingpt"}}}]})");
  auto observed = [&](json ingress, std::string owner) {
    ObservedNetworkPolicy np;
    np.name = "mingpt";
    np.owner_uid = std::move(owner);
    np.spec = {{"podSelector", {{"matchLabels", {{"ddp.dev/job-name", "mingpt"}}}}},
               {"policyTypes", {"Ingress"}},
               {"ingress", std::move(ingress)}};
    return np;
  };
  const json old_rule = json::parse(R"({
    "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ddp-system"}}}],
    "ports": [{"protocol": "TCP", "port": 9400}]})");
  struct Row {
    std::string name;
    std::optional<ObservedNetworkPolicy> seen;  // absent: exists, spec not read (local mode)
    json want_patch;                            // null: no patch, no event
  };
  json server_defaulted = observed({job_rule, metrics_rule}, "uid-1").spec;
  server_defaulted["egress"] = json::array();  // a field the operator does not set
  ObservedNetworkPolicy defaulted = observed({job_rule, metrics_rule}, "uid-1");
  defaulted.spec = server_defaulted;
  const std::vector<Row> rows = {
      {"the same spec: nothing", observed({job_rule, metrics_rule}, "uid-1"), nullptr},
      {"a field the operator does not set (egress): nothing", defaulted, nullptr},
      {"written before prometheusNamespace was set: the ingress rules",
       observed({job_rule, old_rule}, "uid-1"),
       {{"spec", {{"ingress", {job_rule, metrics_rule}}}}}},
      {"written for another Prometheus namespace: the ingress rules",
       observed({job_rule, json::parse(R"({"from": [
           {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ddp-system"}}},
           {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "prom-old"}}}],
         "ports": [{"protocol": "TCP", "port": 9400}]})")}, "uid-1"),
       {{"spec", {{"ingress", {job_rule, metrics_rule}}}}}},
      {"not the job's (another owner): untouched", observed({job_rule, old_rule}, "uid-other"),
       nullptr},
      {"not the job's (no owner): untouched", observed({job_rule, old_rule}, ""), nullptr},
      {"its spec not read: untouched", std::nullopt, nullptr},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    api::DDPJob j = job;
    Observed world = World(Pods(2, 0, "Running"));
    world.network_policy_exists = true;
    world.network_policy = r.seen;
    Plan p = PlanReconcile(j, world, At(10), Options(true));
    EXPECT_TRUE(DescribeCreates(p).empty()) << p.ToString();
    EXPECT_TRUE(DescribeDeletes(p).empty()) << p.ToString();
    if (r.want_patch.is_null()) {
      EXPECT_TRUE(p.patches.empty()) << p.ToString();
      EXPECT_TRUE(EventReasons(p).empty()) << p.ToString();
      continue;
    }
    ASSERT_EQ(p.patches.size(), 1u) << p.ToString();
    EXPECT_EQ(p.patches[0], (Patch{"networking.k8s.io/v1", "NetworkPolicy", "mingpt", r.want_patch}))
        << p.patches[0].merge_patch.dump(2);
    ASSERT_EQ(EventReasons(p), (Strings{"UpdatingNetworkPolicy"}));
    EXPECT_NE(p.events[0].message.find("namespaces ddp-system, monitoring"), std::string::npos)
        << p.events[0].message;
    // Applied, the next pass writes nothing.
    Apply(p, &j, &world, At(10));
    EXPECT_EQ(world.network_policy->spec["ingress"], json::array({job_rule, metrics_rule}));
    EXPECT_TRUE(NoWrites(PlanReconcile(j, world, At(11), Options(true))));
  }
}

// Deleting the job deletes the policy through its owner reference (the garbage collector), as
// the pods and the Service: the planner writes nothing for a job being deleted, and a finished
// job is not given a policy.
TEST(NetworkPolicyPlannerTest, DeletedAndFinishedJobsPlanNoPolicy) {
  api::DDPJob deleting = InPhase(Job(2), api::kPhaseRunning, 0, 2);
  deleting.deletion_timestamp = At(20);
  Observed world = World(Pods(2, 0, "Running"));
  world.network_policy_exists = true;
  EXPECT_TRUE(PlanReconcile(deleting, world, At(21), Options(true)).empty());
  const json owner = BuildNetworkPolicy(deleting, Config(true))["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["uid"], "uid-1");
  EXPECT_EQ(owner["controller"], true);
  api::DDPJob done = InPhase(Job(2), api::kPhaseSucceeded, 0, 2);
  done.status.completion_time = At(30);
  Plan p = PlanReconcile(done, World(Pods(2, 0, "Succeeded"), false), At(31), Options(true));
  for (const std::string& c : DescribeCreates(p)) {
    EXPECT_EQ(c.find("NetworkPolicy"), std::string::npos) << c;
  }
}

}  // namespace
}  // namespace ddp::plan::testing
