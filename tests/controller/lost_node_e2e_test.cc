// `ddp-operator run` against the fake API server when a node goes silent: the node turns
// Ready=Unknown, the taint manager deletes the job's pod on it, and that pod stays Terminating
// (no kubelet confirms it). The operator force-deletes it after its grace plus the margin and
// recreates the name on a Ready node, under recovery Restart and InPlace (whose rendezvous pod
// stays on a Ready node). The test plays the scheduler, the kubelets and the taint manager; no
// fixed sleeps.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/controller/e2e_harness.h"

namespace ddp::e2e {
namespace {

using Clock = std::chrono::steady_clock;

constexpr milliseconds kWait{20000};
constexpr milliseconds kGrace{1000};  // every pod's deletion grace period in these tests
// The operator's margins: short, and far enough apart to tell which one applied.
const std::vector<std::string> kMarginFlags = {"--lost-pod-margin=1s",
                                               "--unfenced-lost-pod-margin=3s"};

std::string Uid(const std::optional<json>& pod) {
  return pod ? (*pod)["metadata"].value("uid", "") : "";
}

// The scheduler and the kubelets: once `job` has `nodes.size()` worker pods and `others` other
// pods (InPlace: the rendezvous pod) of `round`, binds worker pod i to nodes[i], the others to
// n2, and marks them all Running.
bool ScheduleRound(World& w, const std::string& job, int round,
                   const std::vector<std::string>& nodes, size_t others = 0) {
  const size_t n = nodes.size() + others;
  if (!WaitFor([&] { return w.PodsOfRound(job, round).size() == n; }, kWait)) return false;
  for (const json& pod : w.PodsOfRound(job, round)) {
    const std::string name = pod["metadata"]["name"];
    const json& labels = pod["metadata"]["labels"];
    std::string node = "n2";
    if (labels.value("ddp.dev/role", "worker") == "worker") {
      node = nodes.at(static_cast<size_t>(std::stoi(labels.value("ddp.dev/replica-index", "0"))));
    }
    if (!w.server().BindPod(World::kNs, name, node) ||
        !w.server().SetPodPhase(World::kNs, name, "Running")) {
      return false;
    }
  }
  return true;
}

bool PhaseIs(World& w, const std::string& job, const std::string& phase, int round) {
  const json st = w.JobStatus(job);
  return st.value("phase", "") == phase && st.value("round", -1) == round;
}

// The message of the first event with `reason` whose message contains `text`; "" when none.
std::string EventMessage(World& w, const std::string& reason, const std::string& text) {
  for (const auto& e : w.server().Objects("/api/v1/namespaces/ml/events")) {
    const std::string m = e.value("message", "");
    if (e.value("reason", "") == reason && m.find(text) != std::string::npos) return m;
  }
  return "";
}

// Node n3 goes silent under pod 1 of a running job, and the taint manager deletes that pod.
// Returns when the delete was issued.
Clock::time_point SilenceNodeUnderPod1(World& w) {
  EXPECT_TRUE(w.server().SetNodeReady("n3", "Unknown"));
  const Clock::time_point at = Clock::now();
  Status s = w.client().Delete(controller::kPods, World::kNs, "j-worker-1", {});
  EXPECT_TRUE(s.ok()) << s.ToString();
  return at;
}

class LostNodeE2e : public ::testing::Test {
 protected:
  LostNodeE2e() : w_(false, kGrace) {
    for (const char* n : {"n1", "n2", "n3"}) EXPECT_TRUE(w_.server().AddNode(n));
  }
  World w_;
};

TEST_F(LostNodeE2e, RestartRecreatesTheNameOfAPodStuckOnASilentNode) {
  auto op = w_.StartOperator("op", kMarginFlags);
  w_.CreateJob(World::Job("j", 3));
  ASSERT_TRUE(ScheduleRound(w_, "j", 0, {"n1", "n3", "n2"})) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return PhaseIs(w_, "j", "Running", 0); }, kWait)) << op->Log();
  PodRecorder recorder(&w_.client(), World::kNs);
  const std::string stuck = Uid(w_.GetPod("j-worker-1"));

  const Clock::time_point deleted = SilenceNodeUnderPod1(w_);
  ASSERT_TRUE(WaitFor([&] { return Uid(w_.GetPod("j-worker-1")) != stuck; }, kWait))
      << w_.JobStatus("j").dump() << op->Log();
  // Not before its grace ended (deletionTimestamp, whole seconds after the delete) + 1 s.
  EXPECT_GE(Clock::now() - deleted, milliseconds(1000));
  ASSERT_TRUE(ScheduleRound(w_, "j", 1, {"n1", "n2", "n2"})) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return PhaseIs(w_, "j", "Running", 1); }, kWait))
      << w_.JobStatus("j").dump() << op->Log();

  const json st = w_.JobStatus("j");
  EXPECT_EQ(st.value("disruptions", -1), 1);  // the taint manager's delete, counted once
  EXPECT_EQ(st.value("restarts", -1), 0);
  EXPECT_NE(EventMessage(w_, "ForceDeletingPod", "round 1: pod j-worker-1 Terminating on lost "
                                                 "node n3 for "),
            "")
      << op->Log();
  EXPECT_NE(op->Log().find("deleted Pod j-worker-1 (force, grace 0)"), std::string::npos);
  // The stuck incarnation went (by the force delete) before its name came back in round 1.
  const auto events = recorder.Events();
  auto gone = std::find_if(events.begin(), events.end(), [&](const PodEvent& e) {
    return e.type == "DELETED" && e.uid == stuck;
  });
  auto back = std::find_if(events.begin(), events.end(), [&](const PodEvent& e) {
    return e.type == "ADDED" && e.name == "j-worker-1" && e.round == 1;
  });
  ASSERT_NE(gone, events.end());
  ASSERT_NE(back, events.end());
  EXPECT_LT(gone - events.begin(), back - events.begin());
}

TEST_F(LostNodeE2e, InPlaceReplacesAPodStuckOnASilentNodeAfterTheUnfencedMargin) {
  auto op = w_.StartOperator("op", kMarginFlags);
  w_.CreateJob(World::Job("j", 3, {{"failurePolicy", {{"recovery", "InPlace"}}}}));
  ASSERT_TRUE(ScheduleRound(w_, "j", 0, {"n1", "n3", "n2"}, /*others=*/1)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return PhaseIs(w_, "j", "Running", 0); }, kWait)) << op->Log();
  const std::string uid0 = Uid(w_.GetPod("j-worker-0")), uid2 = Uid(w_.GetPod("j-worker-2"));
  const std::string rdzv = Uid(w_.GetPod("j-rendezvous"));
  const std::string stuck = Uid(w_.GetPod("j-worker-1"));

  const Clock::time_point deleted = SilenceNodeUnderPod1(w_);
  ASSERT_TRUE(WaitFor([&] {
    auto p = w_.GetPod("j-worker-1");
    return p && Uid(p) != stuck;
  }, kWait)) << w_.JobStatus("j").dump() << op->Log();
  // Pod 1 could rejoin round 0 and nothing fenced it: the 3 s margin, not the 1 s one.
  EXPECT_GE(Clock::now() - deleted, milliseconds(3000));
  auto replacement = w_.GetPod("j-worker-1");
  EXPECT_EQ(RoundOf(*replacement), 0);
  ASSERT_TRUE(w_.server().BindPod(World::kNs, "j-worker-1", "n2"));
  ASSERT_TRUE(w_.server().SetPodPhase(World::kNs, "j-worker-1", "Running"));
  ASSERT_TRUE(WaitFor([&] { return PhaseIs(w_, "j", "Running", 0); }, kWait))
      << w_.JobStatus("j").dump() << op->Log();

  const json st = w_.JobStatus("j");
  EXPECT_EQ(st.value("disruptions", -1), 1);
  EXPECT_EQ(st.value("recoveries", -1), 0);
  EXPECT_EQ(st.value("restarts", -1), 0);
  EXPECT_EQ(Uid(w_.GetPod("j-worker-0")), uid0);  // the survivors are untouched
  EXPECT_EQ(Uid(w_.GetPod("j-worker-2")), uid2);
  EXPECT_EQ(Uid(w_.GetPod("j-rendezvous")), rdzv);
  EXPECT_NE(EventMessage(w_, "ForceDeletingPod", "round 0: pod j-worker-1 Terminating on lost "
                                                 "node n3 for "),
            "")
      << op->Log();
}

// Without RBAC on nodes the operator says so once and runs jobs as before (no crash loop).
TEST(LostNodeE2eRbac, WithoutPermissionOnNodesJobsStillRun) {
  World w;
  w.server().FailNext("", "nodes", 403, 1000000);
  auto op = w.StartOperator("op");
  w.CreateJob(World::Job("j", 2));
  ASSERT_TRUE(w.RunRound("j", 0, 2, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return PhaseIs(w, "j", "Running", 0); }, kWait)) << op->Log();
  const std::string hint = "grant list and watch on nodes";
  ASSERT_TRUE(WaitFor([&] { return op->Log().find(hint) != std::string::npos; }, kWait))
      << op->Log();
  EXPECT_FALSE(op->ExitCode().has_value());
  const std::string log = op->Log();
  EXPECT_EQ(log.find(hint), log.rfind(hint)) << "the hint is logged once:\n" << log;
}

}  // namespace
}  // namespace ddp::e2e
