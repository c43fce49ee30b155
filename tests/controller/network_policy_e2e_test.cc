// `ddp-operator run` creates each job's NetworkPolicy (network isolation) against the fake API
// server: owned by the job, before its pods, created again when someone deletes it, and not
// created when the operator's default or the job's spec turns it off. No fixed sleeps.
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

}  // namespace
}  // namespace ddp::e2e
