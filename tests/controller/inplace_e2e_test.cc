// `ddp-operator run` against the fake API server with failurePolicy.recovery InPlace: a failed
// pod other than pod 0 is replaced alone, in the same round, and the other pods are the same
// objects (same UIDs) before and after. The test plays the kubelet; no fixed sleeps.
#include <gtest/gtest.h>

#include <map>

#include "common/http_server.h"
#include "tests/controller/e2e_harness.h"

namespace ddp::e2e {
namespace {

constexpr milliseconds kWait{20000};

std::string Uid(const std::optional<json>& pod) {
  return pod ? (*pod)["metadata"].value("uid", "") : "";
}

std::string EnvValue(const json& pod, const std::string& name) {
  for (const auto& c : pod["spec"]["containers"]) {
    if (c.value("name", "") != "worker") continue;
    for (const auto& e : c.value("env", json::array())) {
      if (e["name"] == name) return e.value("value", "");
    }
  }
  return "<unset>";
}

TEST(InPlaceE2e, FailedPodOneIsReplacedAloneAndTheOthersKeepTheirUids) {
  World w;
  auto op = w.StartOperator("op");
  w.CreateJob(World::Job("j", 3, {{"failurePolicy", {{"recovery", "InPlace"}}}}));
  ASSERT_TRUE(w.RunRound("j", 0, 3, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("j").value("phase", "") == "Running"; }, kWait))
      << w.JobStatus("j").dump() << op->Log();
  std::map<std::string, std::string> before;
  for (const char* name : {"j-worker-0", "j-worker-1", "j-worker-2"}) {
    before[name] = Uid(w.GetPod(name));
    ASSERT_FALSE(before[name].empty()) << name;
    EXPECT_EQ(EnvValue(*w.GetPod(name), "DDP_RECOVERY"), "InPlace");
    EXPECT_EQ(EnvValue(*w.GetPod(name), "DDP_MAX_RECOVERIES"), "3");
  }

  ASSERT_TRUE(w.server().TerminatePod(World::kNs, "j-worker-1", 137));
  // The replacement: the same name, a new object, still round 0.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto p = w.GetPod("j-worker-1");
        return p && Uid(p) != before["j-worker-1"] &&
               !(*p)["metadata"].contains("deletionTimestamp");
      },
      kWait))
      << w.JobStatus("j").dump() << op->Log();
  auto replacement = w.GetPod("j-worker-1");
  EXPECT_EQ(RoundOf(*replacement), 0);
  EXPECT_EQ(EnvValue(*replacement, "DDP_MAX_RECOVERIES"), "2");
  EXPECT_EQ(EnvValue(*replacement, "DDP_ROUND"), "0");
  w.server().SetPodPhase(World::kNs, "j-worker-1", "Running");
  ASSERT_TRUE(WaitFor(
      [&] {
        json st = w.JobStatus("j");
        return st.value("phase", "") == "Running" && st.value("recoveries", 0) == 1;
      },
      kWait))
      << w.JobStatus("j").dump() << op->Log();

  json st = w.JobStatus("j");
  EXPECT_EQ(st.value("round", -1), 0);
  EXPECT_EQ(st.value("restarts", -1), 0);
  EXPECT_EQ(st.value("disruptions", -1), 0);
  EXPECT_EQ(st["lastFailure"]["pod"], "j-worker-1");
  EXPECT_EQ(st["lastFailure"]["exitCode"], 137);
  EXPECT_EQ(st["lastFailure"]["podUID"], before["j-worker-1"]);
  EXPECT_EQ(Uid(w.GetPod("j-worker-0")), before["j-worker-0"]);
  EXPECT_EQ(Uid(w.GetPod("j-worker-2")), before["j-worker-2"]);
  EXPECT_EQ(w.PodsOfRound("j", 0).size(), 3u);
  bool event = false;
  for (const auto& e : w.server().Objects("/api/v1/namespaces/ml/events")) {
    if (e.value("reason", "") == "PodReplaced" &&
        e.value("message", "").find("replacing pod j-worker-1 (rank 1 killed by signal 9") !=
            std::string::npos) {
      event = true;
    }
  }
  EXPECT_TRUE(event) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return op->MetricsPort() > 0; }, kWait));
  auto text = HttpGet("127.0.0.1", op->MetricsPort(), "/metrics");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("ddp_operator_job_restarts_total{kind=\"recovery\"} 1"), std::string::npos)
      << *text;
  // A recovery is no group restart: the failure series stays at its initial 0.
  EXPECT_NE(text->find("ddp_operator_job_restarts_total{kind=\"failure\"} 0\n"), std::string::npos)
      << *text;
}

}  // namespace
}  // namespace ddp::e2e
