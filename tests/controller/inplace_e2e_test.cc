// `ddp-operator run` against the fake API server with failurePolicy.recovery InPlace (DESIGN.md
// "Hot spares", "Drains, silent nodes and the budget"): every round gets a rendezvous pod and the
// spares; a failed pod, pod 0 included, is replaced alone in the same round while the other pods
// (the rendezvous pod and the spare too) stay the same objects; the rendezvous pod's /metrics
// (served here) reaches the status and fences a pod; pods that never start cost nothing. The test
// plays the kubelet; no fixed sleeps.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>

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
    for (const auto& e : c.value("env", json::array())) {
      if (e["name"] == name) return e.value("value", "");
    }
  }
  return "<unset>";
}

std::string Label(const json& pod, const std::string& key) {
  return pod["metadata"].value("labels", json::object()).value(key, "<unset>");
}

bool HasEvent(World& w, const std::string& reason, const std::string& text) {
  for (const auto& e : w.server().Objects("/api/v1/namespaces/ml/events")) {
    if (e.value("reason", "") == reason && e.value("message", "").find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// The rendezvous pod's page (common/group_contract.h series), as the test sets it.
class FakeRendezvousPage {
 public:
  FakeRendezvousPage() {
    server_.Handle("/metrics", [this] {
      std::lock_guard<std::mutex> l(mu_);
      ++reads_;
      return HttpResponse{200, kPrometheusContentType, page_};
    });
    Status s = server_.Start("127.0.0.1:0");
    if (!s.ok()) throw std::runtime_error(s.ToString());
  }
  int port() const { return server_.port(); }
  int reads() {
    std::lock_guard<std::mutex> l(mu_);
    return reads_;
  }
  // members: pod -> node rank; fenced: pod -> uid.
  void Set(int recoveries, const std::map<std::string, int>& members,
           const std::vector<std::string>& spares, const std::map<std::string, std::string>& fenced) {
    std::string p = "# TYPE ddp_group_generation gauge\nddp_group_generation 3\n"
                    "# TYPE ddp_group_recoveries gauge\nddp_group_recoveries " +
                    std::to_string(recoveries) +
                    "\n# TYPE ddp_group_budget_left gauge\nddp_group_budget_left 1\n"
                    "# TYPE ddp_group_member gauge\n";
    for (const auto& [pod, rank] : members) {
      p += "ddp_group_member{pod=\"" + pod + "\",node_rank=\"" + std::to_string(rank) + "\"} 1\n";
    }
    p += "# TYPE ddp_group_spare gauge\n";
    for (const auto& pod : spares) p += "ddp_group_spare{pod=\"" + pod + "\"} 1\n";
    p += "# TYPE ddp_group_fenced gauge\n";
    for (const auto& [pod, uid] : fenced) {
      p += "ddp_group_fenced{pod=\"" + pod + "\",uid=\"" + uid + "\"} 1\n";
    }
    p += "# TYPE ddp_group_abandoned gauge\nddp_group_abandoned 0\n";
    std::lock_guard<std::mutex> l(mu_);
    page_ = p;
  }

 private:
  std::mutex mu_;
  std::string page_ = "# no group yet\n";
  int reads_ = 0;
  HttpServer server_;
};

TEST(InPlaceE2e, FailedPodZeroIsReplacedAloneAndTheOthersKeepTheirUids) {
  World w;
  auto op = w.StartOperator("op");
  w.CreateJob(World::Job("j", 3, {{"failurePolicy", {{"recovery", "InPlace"}, {"spares", 1}}}}));
  // 3 workers, the rendezvous pod and the spare.
  ASSERT_TRUE(w.RunRound("j", 0, 5, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor(
      [&] {
        json st = w.JobStatus("j");
        return st.value("phase", "") == "Running" && st.value("readySpares", -1) == 1;
      },
      kWait))
      << w.JobStatus("j").dump() << op->Log();
  EXPECT_EQ(w.JobStatus("j").value("spares", -1), 1);
  std::map<std::string, std::string> before;
  for (const char* name : {"j-worker-0", "j-worker-1", "j-worker-2", "j-rendezvous", "j-spare-0"}) {
    before[name] = Uid(w.GetPod(name));
    ASSERT_FALSE(before[name].empty()) << name;
  }
  const json rdzv = *w.GetPod("j-rendezvous");
  EXPECT_EQ(Label(rdzv, "ddp.dev/role"), "rendezvous");
  EXPECT_EQ(rdzv["spec"]["containers"][0]["command"], (json{"ddp-worker", "rendezvous"}));
  const json spare = *w.GetPod("j-spare-0");
  EXPECT_EQ(Label(spare, "ddp.dev/role"), "spare");
  EXPECT_EQ(Label(spare, "ddp.dev/spare-index"), "0");
  EXPECT_EQ(EnvValue(spare, "NODE_RANK"), "<unset>");
  EXPECT_EQ(EnvValue(spare, "DDP_POD_ROLE"), "spare");
  const json pod0 = *w.GetPod("j-worker-0");
  EXPECT_EQ(Label(pod0, "ddp.dev/role"), "worker");
  EXPECT_EQ(EnvValue(pod0, "DDP_RECOVERY"), "InPlace");
  EXPECT_EQ(EnvValue(pod0, "DDP_MAX_RECOVERIES"), "3");
  EXPECT_EQ(EnvValue(pod0, "DDP_STORE_ADDR"), "j-rendezvous.j.ml.svc");

  // Pod 0 is no longer the store's host: it is replaced alone like any other.
  ASSERT_TRUE(w.server().TerminatePod(World::kNs, "j-worker-0", 137));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto p = w.GetPod("j-worker-0");
        return p && Uid(p) != before["j-worker-0"] &&
               !(*p)["metadata"].contains("deletionTimestamp");
      },
      kWait))
      << w.JobStatus("j").dump() << op->Log();
  auto replacement = w.GetPod("j-worker-0");
  EXPECT_EQ(RoundOf(*replacement), 0);
  EXPECT_EQ(EnvValue(*replacement, "DDP_MAX_RECOVERIES"), "2");
  EXPECT_EQ(EnvValue(*replacement, "DDP_ROUND"), "0");
  w.server().SetPodPhase(World::kNs, "j-worker-0", "Running");
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
  EXPECT_EQ(st["lastFailure"]["pod"], "j-worker-0");
  EXPECT_EQ(st["lastFailure"]["exitCode"], 137);
  EXPECT_EQ(st["lastFailure"]["podUID"], before["j-worker-0"]);
  for (const char* name : {"j-worker-1", "j-worker-2", "j-rendezvous", "j-spare-0"}) {
    EXPECT_EQ(Uid(w.GetPod(name)), before[name]) << name;
  }
  EXPECT_EQ(w.PodsOfRound("j", 0).size(), 5u);
  ASSERT_TRUE(WaitFor(
      [&] { return HasEvent(w, "PodReplaced", "replacing pod j-worker-0 (rank 0 killed by signal 9"); },
      kWait))
      << op->Log();
  ASSERT_TRUE(WaitFor([&] { return op->MetricsPort() > 0; }, kWait));
  auto text = HttpGet("127.0.0.1", op->MetricsPort(), "/metrics");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(text->find("ddp_operator_job_restarts_total{kind=\"recovery\"} 1"), std::string::npos)
      << *text;
  // A recovery is no group restart: the failure series stays at its initial 0.
  EXPECT_NE(text->find("ddp_operator_job_restarts_total{kind=\"failure\"} 0\n"), std::string::npos)
      << *text;

  // The rendezvous pod fails: replaced alone, counted nowhere, the workers untouched.
  ASSERT_TRUE(w.server().TerminatePod(World::kNs, "j-rendezvous", 137));
  ASSERT_TRUE(WaitFor(
      [&] {
        auto p = w.GetPod("j-rendezvous");
        return p && Uid(p) != before["j-rendezvous"] &&
               !(*p)["metadata"].contains("deletionTimestamp");
      },
      kWait))
      << w.JobStatus("j").dump() << op->Log();
  ASSERT_TRUE(WaitFor([&] { return HasEvent(w, "RendezvousReplaced", "j-rendezvous"); }, kWait));
  st = w.JobStatus("j");
  EXPECT_EQ(st.value("round", -1), 0);
  EXPECT_EQ(st.value("recoveries", -1), 1);
  EXPECT_EQ(st.value("disruptions", -1), 0);
  EXPECT_EQ(Uid(w.GetPod("j-worker-1")), before["j-worker-1"]);
}

// The rendezvous pod's report reaches the status: in-pod recoveries are added, readySpares is the
// report's idle spares, and a pod the group fenced (by name and UID) is force-deleted at once,
// counted as a disruption, even though the pods' grace period is long.
TEST(InPlaceE2e, TheGroupReportCountsHealsAndFencesAPod) {
  World w(false, milliseconds(60000));  // a delete with the pod's grace waits a minute
  FakeRendezvousPage page;
  auto op = w.StartOperator("op");
  w.CreateJob(World::Job("g", 2,
                         {{"metrics", {{"port", page.port()}}},
                          {"failurePolicy", {{"recovery", "InPlace"}, {"spares", 1}}}}));
  ASSERT_TRUE(w.RunRound("g", 0, 4, kWait)) << op->Log();
  w.server().Mutate("/api/v1/namespaces/ml/pods/g-rendezvous",
                    [](json& pod) { pod["status"]["podIP"] = "127.0.0.1"; });
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("g").value("phase", "") == "Running"; }, kWait))
      << op->Log();

  // Two trainer restarts healed in the pods; the spare is registered and idle.
  page.Set(2, {{"g-worker-0", 0}, {"g-worker-1", 1}}, {"g-spare-0"}, {});
  ASSERT_TRUE(WaitFor(
      [&] {
        json st = w.JobStatus("g");
        return st.value("recoveries", -1) == 2 && st.value("readySpares", -1) == 1;
      },
      kWait))
      << w.JobStatus("g").dump() << op->Log();

  // The group declared pod 1 lost (frozen), and the spare took its rank.
  const std::string uid1 = Uid(w.GetPod("g-worker-1"));
  page.Set(2, {{"g-worker-0", 0}, {"g-spare-0", 1}}, {}, {{"g-worker-1", uid1}});
  ASSERT_TRUE(WaitFor(
      [&] {
        auto p = w.GetPod("g-worker-1");
        return p && Uid(p) != uid1;
      },
      kWait))
      << "the fenced pod was not force-deleted and recreated\n"
      << w.JobStatus("g").dump() << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("g").value("disruptions", -1) == 1; }, kWait))
      << w.JobStatus("g").dump() << op->Log();
  json st = w.JobStatus("g");
  EXPECT_EQ(st.value("recoveries", -1), 2) << "a fenced pod is never charged";
  EXPECT_EQ(st.value("restarts", -1), 0);
  EXPECT_EQ(st.value("round", -1), 0);
  EXPECT_EQ(st.value("readySpares", -1), 0);
  EXPECT_EQ(RoundOf(*w.GetPod("g-worker-1")), 0);
  EXPECT_TRUE(HasEvent(w, "ForceDeletingPod", "g-worker-1 declared lost and fenced by its group"));

  // The recreated pod 1 registers as the idle spare; the report's fence names the old UID only.
  w.server().SetPodPhase(World::kNs, "g-worker-1", "Running");
  const std::string uid1b = Uid(w.GetPod("g-worker-1"));
  page.Set(3, {{"g-worker-0", 0}, {"g-spare-0", 1}}, {"g-worker-1"}, {{"g-worker-1", uid1}});
  ASSERT_TRUE(WaitFor(
      [&] {
        json st = w.JobStatus("g");
        return st.value("phase", "") == "Running" && st.value("recoveries", -1) == 3 &&
               st.value("readySpares", -1) == 1;
      },
      kWait))
      << w.JobStatus("g").dump() << op->Log();
  EXPECT_EQ(Uid(w.GetPod("g-worker-1")), uid1b) << "a successor is not fenced by its old name";
  EXPECT_EQ(w.JobStatus("g").value("disruptions", -1), 1);
}

// Nothing ever starts (no node, no image): the operator creates the rendezvous pod, the workers
// and the spare once, and charges nothing while they wait.
TEST(InPlaceE2e, PodsThatNeverStartCostNothing) {
  World w;
  auto op = w.StartOperator("op");
  w.CreateJob(World::Job("p", 2, {{"failurePolicy", {{"recovery", "InPlace"}, {"spares", 1}}}}));
  ASSERT_TRUE(WaitFor([&] { return w.PodsOfRound("p", 0).size() == 4u; }, kWait)) << op->Log();
  std::map<std::string, std::string> uids;
  for (const json& pod : w.PodsOfRound("p", 0)) uids[pod["metadata"]["name"]] = Uid(pod);
  EXPECT_EQ(uids.size(), 4u);
  for (const char* name : {"p-rendezvous", "p-worker-0", "p-worker-1", "p-spare-0"}) {
    EXPECT_TRUE(uids.count(name)) << name;
  }
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("p").value("spares", -1) == 1; }, kWait));
  // A few reconciles (the operator resyncs and scrapes nothing): nothing may change. Polled,
  // so a wrong decision fails as soon as it shows.
  const auto changed = [&] {
    json st = w.JobStatus("p");
    if (st.value("phase", "") != "Pending" || st.value("restarts", 0) != 0 ||
        st.value("recoveries", 0) != 0 || st.value("disruptions", 0) != 0) {
      return true;
    }
    const auto pods = w.PodsOfRound("p", 0);
    if (pods.size() != 4u) return true;
    for (const json& pod : pods) {
      if (uids[pod["metadata"]["name"]] != Uid(pod)) return true;
    }
    return false;
  };
  EXPECT_FALSE(WaitFor(changed, milliseconds(3000))) << w.JobStatus("p").dump() << op->Log();
  EXPECT_EQ(w.JobStatus("p").value("readySpares", -1), 0);
}

}  // namespace
}  // namespace ddp::e2e
