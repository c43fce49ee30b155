// `ddp-operator run` creates each job's NetworkPolicy (network isolation) against the fake API
// server: owned by the job, before its pods, created again when someone deletes it, not
// created when the operator's default or the job's spec turns it off, and patched in place when
// an operator restarted with another --metrics-namespace finds it. No fixed sleeps.
#include <csignal>

#include <gtest/gtest.h>

#include "operator/kube/resource.h"
#include "tests/controller/e2e_harness.h"

namespace ddp::e2e {
namespace {

constexpr milliseconds kWait{20000};
constexpr char kPolicies[] = "/apis/networking.k8s.io/v1/namespaces/ml/networkpolicies/";

int64_t Version(const json& obj) {
  return std::stoll(obj["metadata"]["resourceVersion"].get<std::string>());
}

TEST(NetworkPolicyE2e, EachJobIsIsolatedByDefaultUnlessItsSpecSaysOtherwise) {
  World w;
  auto op = w.StartOperator("op", {"--operator-namespace", "ddp-system", "--metrics-namespace",
                                   "monitoring"});
  w.CreateJob(World::Job("iso", 2));
  w.CreateJob(World::Job("open", 1, {{"runPolicy", {{"networkPolicy", false}}}}));
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("iso", 0).size() == 2; }, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("open", 0).size() == 1; }, kWait)) << op->Log();

  std::optional<json> np = w.server().GetObject(std::string(kPolicies) + "iso");
  ASSERT_TRUE(np) << op->Log();
  const json job = *w.GetJob("iso");
  EXPECT_EQ((*np)["metadata"]["ownerReferences"][0]["uid"], job["metadata"]["uid"]);
  EXPECT_EQ((*np)["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ((*np)["spec"]["podSelector"], json({{"matchLabels", {{"ddp.dev/job-name", "iso"}}}}));
  EXPECT_EQ((*np)["spec"]["policyTypes"], json::array({"Ingress"}));
  const json& ingress = (*np)["spec"]["ingress"];
  ASSERT_EQ(ingress.size(), 2u) << np->dump(2);
  EXPECT_EQ(ingress[0]["from"][0]["podSelector"]["matchLabels"]["ddp.dev/job-name"], "iso");
  EXPECT_EQ(ingress[1]["from"][0]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "ddp-system");
  EXPECT_EQ(ingress[1]["from"][1]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "monitoring");
  EXPECT_EQ(ingress[1]["ports"][0]["port"], 9400);
  // Written before any pod of the job: no pod is reachable unprotected.
  for (const json& pod : w.PodsOfRound("iso", 0)) EXPECT_LT(Version(*np), Version(pod));
  // The job that turned it off has none, and nothing else has one.
  EXPECT_FALSE(w.server().GetObject(std::string(kPolicies) + "open"));
  EXPECT_EQ(w.server().Objects(kPolicies).size(), 1u);

  // Someone deletes it: the operator creates it again (its informer re-queues the job).
  controller::DeleteOptions opts;
  ASSERT_TRUE(w.client().Delete(controller::kNetworkPolicies, "ml", "iso", opts).ok());
  ASSERT_TRUE(WaitFor([&] {
    std::optional<json> again = w.server().GetObject(std::string(kPolicies) + "iso");
    return again && (*again)["metadata"]["uid"] != (*np)["metadata"]["uid"];
  }, kWait)) << op->Log();
  EXPECT_FALSE(op->ExitCode().has_value()) << op->Log();
}

TEST(NetworkPolicyE2e, OperatorDefaultOffStillIsolatesAJobThatAsks) {
  World w;
  auto op = w.StartOperator("op", {"--network-policy=false"});
  w.CreateJob(World::Job("plain", 1));
  w.CreateJob(World::Job("asked", 1, {{"runPolicy", {{"networkPolicy", true}}}}));
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("plain", 0).size() == 1; }, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("asked", 0).size() == 1; }, kWait)) << op->Log();
  EXPECT_TRUE(w.server().GetObject(std::string(kPolicies) + "asked")) << op->Log();
  EXPECT_FALSE(w.server().GetObject(std::string(kPolicies) + "plain"));
}

// The chart's networkPolicy.prometheusNamespace changed: the operator restarts with another
// --metrics-namespace and brings the running job's policy to it, the same object patched in
// place (its uid kept), with an event; a policy of the job's name owned by no job is left alone.
TEST(NetworkPolicyE2e, AnOperatorWithAnotherMetricsNamespaceUpdatesTheRunningJobsPolicy) {
  World w;
  auto first = w.StartOperator("op1", {"--operator-namespace", "ddp-system", "--metrics-namespace",
                                       "monitoring"});
  w.CreateJob(World::Job("iso", 2));
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("iso", 0).size() == 2; }, kWait)) << first->Log();
  // Someone else's policy under a job's name: created before that job, owned by nothing.
  json foreign = {{"apiVersion", "networking.k8s.io/v1"}, {"kind", "NetworkPolicy"},
                  {"metadata", {{"name", "theirs"}, {"namespace", "ml"},
                                {"labels", {{"ddp.dev/job-name", "theirs"}}}}},
                  {"spec", {{"podSelector", json::object()}, {"policyTypes", {"Ingress"}}}}};
  ASSERT_TRUE(w.client().Create(controller::kNetworkPolicies, "ml", foreign).ok());
  w.CreateJob(World::Job("theirs", 1));
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("theirs", 0).size() == 1; }, kWait)) << first->Log();
  std::optional<json> before = w.server().GetObject(std::string(kPolicies) + "iso");
  ASSERT_TRUE(before) << first->Log();
  ASSERT_TRUE(first->Signal(SIGTERM, milliseconds(20000)).has_value()) << first->Log();

  auto second = w.StartOperator("op2", {"--operator-namespace", "ddp-system", "--metrics-namespace",
                                        "prom-new"});
  auto metrics_from = [](const json& np) {
    std::vector<std::string> out;
    for (const json& peer : np["spec"]["ingress"][1]["from"]) {
      out.push_back(peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]);
    }
    return out;
  };
  ASSERT_TRUE(WaitFor([&] {
    std::optional<json> np = w.server().GetObject(std::string(kPolicies) + "iso");
    return np && metrics_from(*np) == std::vector<std::string>{"ddp-system", "prom-new"};
  }, kWait)) << second->Log();
  std::optional<json> after = w.server().GetObject(std::string(kPolicies) + "iso");
  EXPECT_EQ((*after)["metadata"]["uid"], (*before)["metadata"]["uid"]) << "patched, not recreated";
  EXPECT_EQ((*after)["spec"]["ingress"][0], (*before)["spec"]["ingress"][0]) << after->dump(2);
  EXPECT_EQ((*after)["spec"]["ingress"][1]["ports"], (*before)["spec"]["ingress"][1]["ports"]);
  bool evented = false;
  ASSERT_TRUE(WaitFor([&] {
    for (const json& e : w.server().Objects("/api/v1/namespaces/ml/events")) {
      if (e.value("reason", "") == "UpdatingNetworkPolicy" &&
          e["involvedObject"].value("name", "") == "iso") {
        evented = true;
      }
    }
    return evented;
  }, kWait)) << second->Log();
  std::optional<json> theirs = w.server().GetObject(std::string(kPolicies) + "theirs");
  ASSERT_TRUE(theirs);
  EXPECT_EQ((*theirs)["spec"], foreign["spec"]) << "not the job's: untouched";
  EXPECT_FALSE(second->ExitCode().has_value()) << second->Log();
}

}  // namespace
}  // namespace ddp::e2e
