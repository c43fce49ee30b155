// ObservePod: Kubernetes Pod objects -> the facts the planner decides on.
#include <gtest/gtest.h>

#include "operator/plan/observe.h"
#include "tests/operator/planner_fixture.h"

namespace ddp::plan::testing {
namespace {

using nlohmann::json;

json BasePod() {
  return json::parse(R"({
    "metadata": {"name": "mingpt-worker-2", "uid": "u2", "creationTimestamp": "2026-01-01T00:00:00Z",
                 "labels": {"ddp.dev/job-name": "mingpt", "ddp.dev/replica-index": "2",
                            "ddp.dev/round": "4"}},
    "spec": {"containers": [{"name": "sidecar"}, {"name": "worker"}]},
    "status": {"phase": "Running"}})");
}

TEST(ObservePod, ReadsLabelsPhaseAndIdentity) {
  const ObservedPod p = ObservePod(BasePod());
  EXPECT_EQ(p.name, "mingpt-worker-2");
  EXPECT_EQ(p.uid, "u2");
  EXPECT_EQ(p.index, 2);
  EXPECT_EQ(p.round, 4);
  EXPECT_EQ(p.phase, "Running");
  EXPECT_EQ(p.created, T0());
  EXPECT_FALSE(p.deleting);
  EXPECT_FALSE(p.exit_code.has_value());
}

TEST(ObservePod, ExitCodeComesFromTheWorkerContainerNotTheFirst) {
  json pod = BasePod();
  pod["status"] = json::parse(R"({"phase": "Failed", "containerStatuses": [
      {"name": "sidecar", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
      {"name": "worker", "state": {"terminated": {"exitCode": 75, "reason": "Error",
                                                  "message": "peer lost",
                                                  "finishedAt": "2026-01-01T00:00:07Z"}}}]})");
  const ObservedPod p = ObservePod(pod);
  ASSERT_TRUE(p.exit_code.has_value());
  EXPECT_EQ(*p.exit_code, 75);
  ASSERT_TRUE(p.finished_at.has_value());
  EXPECT_EQ(*p.finished_at, *api::ParseTime("2026-01-01T00:00:00Z") + std::chrono::seconds(7));
  EXPECT_EQ(p.reason, "Error");
  EXPECT_EQ(p.message, "peer lost");
}

TEST(ObservePod, EvictionReasonWinsAndHasNoExitCode) {
  json pod = BasePod();
  pod["status"] = {{"phase", "Failed"}, {"reason", "Evicted"}, {"message", "low on memory"}};
  const ObservedPod p = ObservePod(pod);
  EXPECT_EQ(p.reason, "Evicted");
  EXPECT_FALSE(p.exit_code.has_value());
}

TEST(ObservePod, ConditionsGiveReadyDisruptionAndUnschedulable) {
  json pod = BasePod();
  pod["status"] = json::parse(R"({"phase": "Pending", "conditions": [
      {"type": "Ready", "status": "False"},
      {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
      {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
       "lastTransitionTime": "2026-01-01T00:02:00Z"}]})");
  const ObservedPod p = ObservePod(pod);
  EXPECT_FALSE(p.ready);
  EXPECT_TRUE(p.disruption_condition);
  EXPECT_EQ(p.reason, "PreemptionByScheduler");
  ASSERT_TRUE(p.unschedulable_since.has_value());
  EXPECT_EQ(*p.unschedulable_since, At(120));
}

TEST(ObservePod, DeletionTimestampMeansDeleting) {
  json pod = BasePod();
  pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z";
  EXPECT_TRUE(ObservePod(pod).deleting);
}

// What lost_nodes.h times a stuck pod by, and the node it names; the node's state and the
// group's fence are not in the pod.
TEST(ObservePod, DeletionTimesAndNode) {
  json pod = BasePod();
  EXPECT_FALSE(ObservePod(pod).deletion_timestamp.has_value());
  EXPECT_EQ(ObservePod(pod).node_name, "");
  pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:35Z";
  pod["metadata"]["deletionGracePeriodSeconds"] = 30;
  pod["spec"]["nodeName"] = "n3";
  const ObservedPod p = ObservePod(pod);
  ASSERT_TRUE(p.deletion_timestamp.has_value());
  EXPECT_EQ(*p.deletion_timestamp, At(35));
  EXPECT_EQ(p.deletion_grace_seconds, 30);
  EXPECT_EQ(p.node_name, "n3");
  EXPECT_FALSE(p.node_lost);
  EXPECT_FALSE(p.fenced);
}

TEST(ObservePod, MalformedLabelsReadAsMinusOne) {
  json pod = BasePod();
  pod["metadata"]["labels"]["ddp.dev/replica-index"] = "two";
  pod["metadata"]["labels"].erase("ddp.dev/round");
  const ObservedPod p = ObservePod(pod);
  EXPECT_EQ(p.index, -1);
  EXPECT_EQ(p.round, -1);
  EXPECT_EQ(ObservePod(json::object()).index, -1);  // never throws on junk
  EXPECT_EQ(ObservePod(json::array()).phase, "Pending");
}

TEST(ObservePod, SchedulingGatesAreRead) {
  json pod = BasePod();
  pod["status"]["phase"] = "Pending";
  pod["spec"]["schedulingGates"] = {{{"name", "kueue.x-k8s.io/admission"}}, {{"name", "x/y"}}};
  EXPECT_EQ(ObservePod(pod).scheduling_gates,
            (std::vector<std::string>{"kueue.x-k8s.io/admission", "x/y"}));
  EXPECT_TRUE(ObservePod(BasePod()).scheduling_gates.empty());
}

TEST(ObservePodGroup, ReadsIdentityOwnerSpecAndPhase) {
  const json group = json::parse(R"({
    "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
    "metadata": {"name": "mingpt", "uid": "g1",
                 "ownerReferences": [{"uid": "other"}, {"uid": "job-uid", "controller": true}]},
    "spec": {"minMember": 4, "queue": "default"},
    "status": {"phase": "Inqueue"}})");
  const ObservedPodGroup g = ObservePodGroup(group);
  EXPECT_EQ(g.name, "mingpt");
  EXPECT_EQ(g.uid, "g1");
  EXPECT_EQ(g.api_version, "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(g.owner_uid, "job-uid");
  EXPECT_EQ(g.spec, json({{"minMember", 4}, {"queue", "default"}}));
  EXPECT_EQ(g.phase, "Inqueue");
  EXPECT_EQ(ObservePodGroup(json::array()).phase, "");  // never throws on junk
}

}  // namespace
}  // namespace ddp::plan::testing
