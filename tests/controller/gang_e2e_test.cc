// `ddp-operator run --gang-scheduler-name ...` and Kueue-labelled jobs against the fake API
// server. The test plays the kubelet, the gang scheduler (it writes the PodGroup's status) and
// Kueue (its admission gate, its preemption). The PodGroup CRDs are served only when a test
// registers them, with the fields their published schemas declare. No fixed sleeps.
#include <gtest/gtest.h>

#include "tests/controller/e2e_harness.h"

namespace ddp::e2e {
namespace {

constexpr milliseconds kWait{20000};
constexpr char kVolcanoGroups[] = "/apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups/";
constexpr char kCoschedGroups[] = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/";

void RegisterVolcano(fake::FakeApiServer& s) {
  s.RegisterCrd({"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", true,
                 {"minMember", "minTaskMember", "queue", "priorityClassName", "minResources",
                  "networkTopology"}});
}

void RegisterCoscheduling(fake::FakeApiServer& s) {
  s.RegisterCrd({"scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup", true,
                 {"minMember", "minResources", "scheduleTimeoutSeconds"}});
}

std::string Condition(const json& status, const std::string& type) {
  for (const auto& c : status.value("conditions", json::array())) {
    if (c.value("type", "") == type) return c.value("status", "") + "/" + c.value("reason", "");
  }
  return "absent";
}

bool HasEvent(fake::FakeApiServer& s, const std::string& reason, const std::string& type) {
  for (const auto& e : s.Objects("/api/v1/namespaces/ml/events")) {
    if (e.value("reason", "") == reason && e.value("type", "") == type) return true;
  }
  return false;
}

// The scheduler's status write on the PodGroup.
void SetGroupPhase(fake::FakeApiServer& s, const std::string& path, const std::string& phase) {
  ASSERT_TRUE(s.Mutate(path, [&](json& g) { g["status"] = {{"phase", phase}}; })) << path;
}

TEST(GangE2e, VolcanoPodGroupIsOwnedFollowsResizesAndGoesWithTheJob) {
  World w;
  RegisterVolcano(w.server());
  auto op = w.StartOperator("op", {"--gang-scheduler-name", "volcano"});
  w.CreateJob(World::Job("big", 2, {{"runPolicy", {{"schedulingPolicy",
                                                   {{"queue", "research"},
                                                    {"minResources", {{"cpu", "16"}}}}}}}}));
  const std::string path = std::string(kVolcanoGroups) + "big";
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("big", 0).size() == 2; }, kWait)) << op->Log();
  std::optional<json> group = w.server().GetObject(path);
  ASSERT_TRUE(group) << op->Log();
  EXPECT_EQ((*group)["spec"], json({{"minMember", 2}, {"queue", "research"},
                                    {"minResources", {{"cpu", "16"}}}}));
  const json job = *w.GetJob("big");
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["uid"], job["metadata"]["uid"]);
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["controller"], true);
  for (const json& pod : w.PodsOfRound("big", 0)) {
    EXPECT_EQ(pod["spec"]["schedulerName"], "volcano");
    EXPECT_EQ(pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "big");
  }

  // Volcano has not placed the gang: Pending and Queued, never Failed.
  SetGroupPhase(w.server(), path, "Inqueue");
  ASSERT_TRUE(WaitFor([&] {
    return Condition(w.JobStatus("big"), "Queued") == "True/WaitingForPodGroup";
  }, kWait)) << w.JobStatus("big").dump() << op->Log();
  EXPECT_EQ(w.JobStatus("big")["phase"], "Pending");

  // Placed: Volcano binds every pod, they run, the wait ends.
  SetGroupPhase(w.server(), path, "Running");
  ASSERT_TRUE(w.RunRound("big", 0, 2, kWait));
  ASSERT_TRUE(WaitFor([&] {
    const json st = w.JobStatus("big");
    return st.value("phase", "") == "Running" && Condition(st, "Queued") == "False/Admitted";
  }, kWait)) << w.JobStatus("big").dump() << op->Log();

  // A resize is a new round: minMember follows before the new round's pods exist.
  ASSERT_TRUE(w.client().MergePatch(controller::kDDPJobs, World::kNs, "big",
                                    {{"spec", {{"replicas", 3}}}}).ok());
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("big", 1).size() == 3; }, kWait)) << op->Log();
  EXPECT_EQ((*w.server().GetObject(path))["spec"]["minMember"], 3);

  // Deleting the job takes the PodGroup with it (owner reference, garbage collection).
  ASSERT_TRUE(w.client().Delete(controller::kDDPJobs, World::kNs, "big", {}).ok());
  ASSERT_TRUE(WaitFor([&] { return !w.server().GetObject(path); }, kWait));
  EXPECT_FALSE(op->ExitCode()) << "the operator keeps running";
}

TEST(GangE2e, CoschedulingPodGroupCarriesTheTimeoutAndPodsTheLabel) {
  World w;
  RegisterCoscheduling(w.server());
  auto op = w.StartOperator("op", {"--gang-scheduler-name=scheduler-plugins-scheduler"});
  w.CreateJob(World::Job("co", 3, {{"runPolicy", {{"schedulingPolicy",
                                                  {{"minAvailable", 2},
                                                   {"scheduleTimeoutSeconds", 45}}}}}}));
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("co", 0).size() == 3; }, kWait)) << op->Log();
  std::optional<json> group = w.server().GetObject(std::string(kCoschedGroups) + "co");
  ASSERT_TRUE(group);
  EXPECT_EQ((*group)["spec"], json({{"minMember", 2}, {"scheduleTimeoutSeconds", 45}}));
  for (const json& pod : w.PodsOfRound("co", 0)) {
    EXPECT_EQ(pod["spec"]["schedulerName"], "scheduler-plugins-scheduler");
    EXPECT_EQ(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "co");
  }
}

// The scheduler's CRD is not installed: the operator starts, the job that needs a PodGroup
// gets a Warning Event and waits with no pods; nothing crash-loops.
TEST(GangE2e, AbsentPodGroupCrdIsAWarningOnTheJobNotACrash) {
  World w;
  auto op = w.StartOperator("op", {"--gang-scheduler-name", "volcano"});
  w.CreateJob(World::Job("waits", 2));
  ASSERT_TRUE(WaitFor([&] { return HasEvent(w.server(), "PodGroupUnavailable", "Warning"); },
                      kWait)) << op->Log();
  const json st = w.JobStatus("waits");
  EXPECT_EQ(st["phase"], "Pending");
  EXPECT_EQ(Condition(st, "Queued"), "True/PodGroupUnavailable");
  EXPECT_TRUE(w.PodsOfRound("waits", 0).empty()) << "no pod without its PodGroup";
  EXPECT_FALSE(op->ExitCode()) << op->Log();
  // The operator keeps reconciling: a second job is planned (and waits) too.
  w.CreateJob(World::Job("also", 1));
  ASSERT_TRUE(WaitFor([&] {
    return Condition(w.JobStatus("also"), "Queued") == "True/PodGroupUnavailable";
  }, kWait)) << op->Log();
}

// Kueue's pod-group integration: the job's queue label goes to every pod with the round's group
// and size; gated pods leave the job Pending/Queued; Kueue's preemption (it deletes the group's
// pods) is a disruption and the next round is a new group of the same size.
TEST(GangE2e, KueueGroupIsOneRoundAndPreemptionStartsTheNext) {
  World w;
  auto op = w.StartOperator("op");
  json job = World::Job("queued", 2);
  job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "team-a"}};
  w.CreateJob(job);
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("queued", 0).size() == 2; }, kWait)) << op->Log();
  // Kueue's webhook gates every pod of the group until the Workload is admitted, and holds it
  // with its finalizer until the group is finished.
  for (const json& pod : w.PodsOfRound("queued", 0)) {
    const std::string name = pod["metadata"]["name"];
    ASSERT_TRUE(w.server().Mutate("/api/v1/namespaces/ml/pods/" + name, [](json& p) {
      p["spec"]["schedulingGates"] = {{{"name", "kueue.x-k8s.io/admission"}}};
      p["metadata"]["finalizers"] = {"kueue.x-k8s.io/managed"};
    }));
    const json& labels = pod["metadata"]["labels"];
    const json& annotations = pod["metadata"]["annotations"];
    EXPECT_EQ(labels["kueue.x-k8s.io/queue-name"], "team-a");
    EXPECT_EQ(labels["kueue.x-k8s.io/pod-group-name"], "queued-r0");
    EXPECT_EQ(annotations["kueue.x-k8s.io/pod-group-total-count"], "2");
    EXPECT_EQ(annotations["kueue.x-k8s.io/retriable-in-group"], "false");
  }
  ASSERT_TRUE(WaitFor([&] {
    return Condition(w.JobStatus("queued"), "Queued") == "True/WaitingForAdmission";
  }, kWait)) << w.JobStatus("queued").dump() << op->Log();
  EXPECT_EQ(w.JobStatus("queued")["phase"], "Pending");

  // Admitted: the gates go, the pods run.
  for (const json& pod : w.PodsOfRound("queued", 0)) {
    const std::string name = pod["metadata"]["name"];
    ASSERT_TRUE(w.server().Mutate("/api/v1/namespaces/ml/pods/" + name,
                                  [](json& p) { p["spec"].erase("schedulingGates"); }));
  }
  ASSERT_TRUE(w.RunRound("queued", 0, 2, kWait));
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("queued").value("phase", "") == "Running"; }, kWait))
      << w.JobStatus("queued").dump() << op->Log();

  // Preempted: Kueue deletes every pod of the group (the operator may delete the rest first).
  // Its finalizer keeps them until the group is finished: the next round waits for the names.
  const std::vector<json> preempted = w.PodsOfRound("queued", 0);
  for (const json& pod : preempted) {
    const Status s = w.client().Delete(controller::kPods, World::kNs,
                                       pod["metadata"]["name"].get<std::string>(), {});
    ASSERT_TRUE(s.ok() || s.code() == StatusCode::kNotFound) << s.ToString();
  }
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("queued").value("round", 0) == 1; }, kWait))
      << op->Log();
  EXPECT_EQ(w.JobStatus("queued")["phase"], "Restarting");
  // The pods terminate; every one says retriable-in-group "false", so Kueue finishes the group
  // and lets them go. Only then does round 1, a new group, get its pods.
  for (const json& pod : preempted) {
    const std::string path =
        "/api/v1/namespaces/ml/pods/" + pod["metadata"]["name"].get<std::string>();
    ASSERT_TRUE(w.server().Mutate(path, [](json& p) { p["metadata"].erase("finalizers"); }));
    ASSERT_TRUE(w.server().RemoveObject(path));
  }
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("queued", 1).size() == 2; }, kWait)) << op->Log();
  const json st = w.JobStatus("queued");
  EXPECT_EQ(st["restarts"], 0) << "preemption is not the program's failure";
  EXPECT_EQ(st["disruptions"], 1);
  for (const json& pod : w.PodsOfRound("queued", 1)) {
    EXPECT_EQ(pod["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"], "queued-r1");
    EXPECT_EQ(pod["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"], "2");
  }
}

}  // namespace
}  // namespace ddp::e2e
