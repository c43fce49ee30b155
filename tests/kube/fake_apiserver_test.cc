// The test API server's fault injection, kubelet helpers and remaining conventions, observed
// through the REST client (the way the operator sees them).
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "tests/kube/client_test_util.h"

namespace ddp::controller {
namespace {

using json = nlohmann::json;

class FakeApiServerTest : public FakeServerTest {
 protected:
  json Pod(const std::string& name) { return *client_->Get(kPods, "ml", name); }
};

TEST_F(FakeApiServerTest, KubeletHelpersEditPodStatusAndNotifyWatchers) {
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p")).ok());
  EXPECT_EQ(Pod("p")["status"]["phase"], "Pending");
  int64_t rv = server_->resource_version();
  ASSERT_TRUE(server_->SetPodPhase("ml", "p", "Running"));
  EXPECT_EQ(server_->resource_version(), rv + 1);
  EXPECT_EQ(Pod("p")["status"]["phase"], "Running");
  EXPECT_EQ(Pod("p")["status"]["containerStatuses"][0]["name"], "worker");

  ASSERT_TRUE(server_->TerminatePod("ml", "p", 75));
  json st = Pod("p")["status"];
  EXPECT_EQ(st["phase"], "Failed");
  EXPECT_EQ(st["containerStatuses"][0]["state"]["terminated"]["exitCode"], 75);
  EXPECT_EQ(Pod("p")["metadata"]["generation"], 1);  // status edits are not spec changes

  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("q")).ok());
  ASSERT_TRUE(server_->EvictPod("ml", "q"));
  st = Pod("q")["status"];
  EXPECT_EQ(st["phase"], "Failed");
  EXPECT_EQ(st["reason"], "Evicted");
  EXPECT_FALSE(st.contains("containerStatuses"));  // a disruption carries no exit code

  ASSERT_TRUE(server_->SetPodUnschedulable("ml", "p"));
  EXPECT_EQ(Pod("p")["status"]["conditions"][0]["reason"], "Unschedulable");
  EXPECT_FALSE(server_->SetPodPhase("ml", "absent", "Running"));
}

TEST_F(FakeApiServerTest, ScaleSubresourceMapsToSpecReplicas) {
  json job = {{"metadata", {{"name", "j"}}}, {"spec", {{"replicas", 2}}}};
  ASSERT_TRUE(client_->Create(kDDPJobs, "ml", job).ok());
  ASSERT_TRUE(client_->MergePatchStatus(kDDPJobs, "ml", "j",
                                        {{"status", {{"replicas", 2}, {"selector", "ddp.dev/job-name=j"}}}}).ok());
  // The client has no scale verb: reach /scale through a Resource whose name carries it.
  StatusOr<json> scale = client_->Get(kDDPJobs, "ml", "j/scale");
  ASSERT_TRUE(scale.ok()) << scale.status().ToString();
  EXPECT_EQ((*scale)["kind"], "Scale");
  EXPECT_EQ((*scale)["spec"]["replicas"], 2);
  EXPECT_EQ((*scale)["status"]["selector"], "ddp.dev/job-name=j");
  StatusOr<json> patched = client_->MergePatch(kDDPJobs, "ml", "j/scale", {{"spec", {{"replicas", 4}}}});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ((*patched)["spec"]["replicas"], 4);
  json stored = *client_->Get(kDDPJobs, "ml", "j");
  EXPECT_EQ(stored["spec"]["replicas"], 4);
  EXPECT_EQ(stored["metadata"]["generation"], 2);
  EXPECT_EQ(client_->MergePatch(kDDPJobs, "ml", "j/scale", {{"spec", {{"replicas", -1}}}}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(FakeApiServerTest, GraceElapsesWithoutAKubelet) {
  fake::FakeApiServerOptions opts;
  opts.pod_grace = std::chrono::milliseconds(200);
  StartServer(opts);
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p")).ok());
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client_->Delete(kPods, "ml", "p", {}).ok());
  EXPECT_TRUE(client_->Get(kPods, "ml", "p").ok());  // still there, terminating
  ASSERT_TRUE(Eventually([&] {
    return client_->Get(kPods, "ml", "p").status().code() == StatusCode::kNotFound;
  }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
}

TEST_F(FakeApiServerTest, FinalizersHoldDeletionUntilRemoved) {
  json cm = {{"metadata", {{"name", "c"}, {"finalizers", {"ddp.dev/cleanup"}}}}, {"data", json::object()}};
  Resource configmaps{"", "v1", "configmaps", "ConfigMap", true};
  ASSERT_TRUE(client_->Create(configmaps, "ml", cm).ok());
  ASSERT_TRUE(client_->Delete(configmaps, "ml", "c", {}).ok());
  StatusOr<json> got = client_->Get(configmaps, "ml", "c");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE((*got)["metadata"].contains("deletionTimestamp"));
  ASSERT_TRUE(client_->MergePatch(configmaps, "ml", "c", {{"metadata", {{"finalizers", nullptr}}}}).ok());
  EXPECT_EQ(client_->Get(configmaps, "ml", "c").status().code(), StatusCode::kNotFound);
}

TEST_F(FakeApiServerTest, GenerateNameAndServerOwnedMetadata) {
  json obj = PodObject("");
  obj["metadata"].erase("name");
  obj["metadata"]["generateName"] = "x-";
  obj["metadata"]["uid"] = "client-chosen";
  StatusOr<json> c = client_->Create(kPods, "ml", obj);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  std::string name = (*c)["metadata"]["name"];
  EXPECT_EQ(name.rfind("x-", 0), 0u);
  EXPECT_EQ(name.size(), 7u);
  EXPECT_NE((*c)["metadata"]["uid"], "client-chosen");
  json upd = *c;
  upd["metadata"]["uid"] = "changed";
  StatusOr<json> u = client_->Update(kPods, "ml", name, upd);
  ASSERT_TRUE(u.ok());
  EXPECT_EQ((*u)["metadata"]["uid"], (*c)["metadata"]["uid"]);
}

TEST_F(FakeApiServerTest, FailForAndErrorRate) {
  server_->FailFor(std::chrono::seconds(30), 500);
  ClientConfig cfg;
  cfg.server = server_->url();
  cfg.max_retries = 0;
  cfg.qps = 0;
  auto c = NewRestClient(cfg);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->List(kPods, "ml", {}).status().code(), StatusCode::kUnavailable);
  server_->ClearFaults();
  EXPECT_TRUE((*c)->List(kPods, "ml", {}).ok());

  server_->SetErrorRate(0.5);
  int failures = 0;
  for (int i = 0; i < 200; ++i) failures += (*c)->List(kPods, "ml", {}).ok() ? 0 : 1;
  EXPECT_GT(failures, 60);  // ~100 expected; wide bounds, the sequence is deterministic anyway
  EXPECT_LT(failures, 140);
}

TEST_F(FakeApiServerTest, LatencyAndRequestCounters) {
  server_->SetLatency(std::chrono::milliseconds(100));
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(client_->List(kPods, "ml", {}).ok());
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(100));
  server_->SetLatency(std::chrono::milliseconds(0));
  server_->ResetCounters();
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p")).ok());
  (void)client_->Get(kPods, "ml", "p");
  (void)client_->Get(kPods, "ml", "p");
  EXPECT_EQ(server_->RequestCount("create"), 1);
  EXPECT_EQ(server_->RequestCount("get"), 2);
  EXPECT_EQ(server_->RequestCount(""), 3);
}

TEST_F(FakeApiServerTest, ClientRateLimiterBoundsTheRequestRate) {
  ClientConfig cfg;
  cfg.server = server_->url();
  cfg.qps = 20;
  cfg.burst = 2;
  auto c = NewRestClient(cfg);
  ASSERT_TRUE(c.ok());
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 12; ++i) ASSERT_TRUE((*c)->List(kPods, "ml", {}).ok());
  // 2 from the burst, then 10 at 20/s: at least 0.5 s.
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(480));
}

// A CRD that is not installed is a resource the server does not serve: 404 on every verb (the
// operator must start anyway). Once registered it is served with its kind, and its structural
// schema prunes spec fields it does not declare.
TEST_F(FakeApiServerTest, CustomResourcesAreServedOnlyOnceTheirCrdIsRegistered) {
  json group = {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                {"kind", "PodGroup"},
                {"metadata", {{"name", "g"}}},
                {"spec", {{"minMember", 2}, {"notInTheSchema", true}}}};
  EXPECT_EQ(client_->List(kVolcanoPodGroups, "ml", {}).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->Create(kVolcanoPodGroups, "ml", group).status().code(), StatusCode::kNotFound);
  server_->RegisterCrd({"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", true,
                        {"minMember", "queue", "priorityClassName", "minResources"}});
  StatusOr<json> made = client_->Create(kVolcanoPodGroups, "ml", group);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ((*made)["kind"], "PodGroup");
  EXPECT_EQ((*made)["spec"], json({{"minMember", 2}}));
  StatusOr<json> patched = client_->MergePatch(kVolcanoPodGroups, "ml", "g",
                                               {{"spec", {{"queue", "q"}, {"bogus", 1}}}});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ((*patched)["spec"], json({{"minMember", 2}, {"queue", "q"}}));
  // The other scheduler's PodGroup is still not served.
  EXPECT_EQ(client_->List(kCoschedulingPodGroups, "ml", {}).status().code(), StatusCode::kNotFound);
}

TEST_F(FakeApiServerTest, ConcurrentWritersGetUniqueResourceVersions) {
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::string> rvs;
  std::atomic<int> errors{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto r = client_->Create(kPods, "ml", PodObject("p" + std::to_string(t) + "-" + std::to_string(i)));
        if (!r.ok()) {
          ++errors;
          continue;
        }
        std::lock_guard<std::mutex> lock(mu);
        rvs.insert((*r)["metadata"]["resourceVersion"].get<std::string>());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(rvs.size(), 200u);
  EXPECT_EQ(ListAll(*client_, kPods, "ml", ListOptions{"", "", 50, "", ""})->at("items").size(), 200u);
}

}  // namespace
}  // namespace ddp::controller
