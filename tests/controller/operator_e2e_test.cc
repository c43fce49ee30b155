// `ddp-operator run` against the fake API server; the test plays the kubelet. No fixed sleeps:
// every wait polls a condition with a deadline.
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "common/http_server.h"
#include "tests/controller/e2e_harness.h"

namespace ddp::e2e {
namespace {

using std::chrono::seconds;
constexpr milliseconds kWait{20000};

std::map<std::string, std::string> EnvOf(const json& pod) {
  std::map<std::string, std::string> env;
  for (const auto& c : pod["spec"]["containers"]) {
    if (c.value("name", "") != "worker") continue;
    for (const auto& e : c.value("env", json::array())) env[e["name"]] = e.value("value", "");
  }
  return env;
}

int StatusInt(const json& st, const char* field) { return st.value(field, 0); }

class OperatorE2eTest : public ::testing::Test {
 protected:
  World w_;
};

TEST_F(OperatorE2eTest, NewJobGetsServicePodsWithRendezvousEnvThenRuns) {
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("mingpt", 2));
  ASSERT_TRUE(w_.RunRound("mingpt", 0, 2, kWait)) << op->Log();

  auto svc = w_.client().Get(controller::kServices, World::kNs, "mingpt");
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  EXPECT_EQ((*svc)["spec"]["clusterIP"], "None");
  EXPECT_EQ((*svc)["spec"]["publishNotReadyAddresses"], true);

  for (int i = 0; i < 2; ++i) {
    auto pod = w_.GetPod("mingpt-worker-" + std::to_string(i));
    ASSERT_TRUE(pod);
    auto env = EnvOf(*pod);
    EXPECT_EQ(env["MASTER_ADDR"], "mingpt-worker-0.mingpt.ml.svc");
    EXPECT_EQ(env["MASTER_PORT"], "29500");
    EXPECT_EQ(env["WORLD_SIZE"], "2");
    EXPECT_EQ(env["RANK"], std::to_string(i));
    EXPECT_EQ(env["NODE_RANK"], std::to_string(i));
    EXPECT_EQ(env["DDP_ROUND"], "0");
    EXPECT_EQ((*pod)["spec"]["restartPolicy"], "Never");
    EXPECT_EQ((*pod)["spec"]["hostname"], "mingpt-worker-" + std::to_string(i));
    EXPECT_EQ((*pod)["spec"]["subdomain"], "mingpt");
    EXPECT_EQ((*pod)["metadata"]["ownerReferences"][0]["kind"], "DDPJob");
  }
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("mingpt").value("phase", "") == "Running"; }, kWait))
      << w_.JobStatus("mingpt").dump() << op->Log();
  auto job = w_.GetJob("mingpt");
  EXPECT_EQ((*job)["spec"]["userNote"], "kept verbatim") << "unknown spec fields survive";
  EXPECT_EQ((*job)["metadata"]["annotations"]["team"], "vision");
  EXPECT_EQ((*job)["status"]["worldSize"], 2);

  // Events name the job; the metrics endpoint serves the agreed names.
  auto events = w_.server().Objects("/api/v1/namespaces/ml/events");
  ASSERT_FALSE(events.empty());
  for (const auto& e : events) EXPECT_EQ(e["involvedObject"]["name"], "mingpt");
  ASSERT_TRUE(WaitFor([&] { return op->MetricsPort() > 0; }, kWait));
  auto text = HttpGet("127.0.0.1", op->MetricsPort(), "/metrics");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  for (const char* name : {"ddp_operator_reconcile_total", "ddp_operator_reconcile_errors_total",
                           "ddp_operator_reconcile_duration_seconds_bucket",
                           "ddp_operator_queue_depth", "ddp_operator_jobs{phase=\"Running\"} 1",
                           "ddp_operator_pods_created_total 2", "ddp_operator_api_requests_total{",
                           "ddp_operator_leader 1", "process_cpu_seconds_total ",
                           "process_resident_memory_bytes ", "process_start_time_seconds "}) {
    EXPECT_NE(text->find(name), std::string::npos) << name << "\n" << *text;
  }
  std::smatch m;
  std::string log = op->Log();
  ASSERT_TRUE(std::regex_search(log, m, std::regex("health probe endpoint on port ([0-9]+)")));
  EXPECT_TRUE(HttpGet("127.0.0.1", std::stoi(m[1]), "/healthz").ok());
  EXPECT_TRUE(HttpGet("127.0.0.1", std::stoi(m[1]), "/readyz").ok());

  // The exposition is valid Prometheus text, checked by the reference linter when installed.
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    std::string path = w_.TempPath("metrics.txt");
    std::ofstream(path) << *text;
    std::string cmd = "promtool check metrics < '" + path + "' > '" + path + ".out' 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << *text;
  }
  EXPECT_EQ(op->Signal(SIGTERM, kWait), 0) << op->Log();
}

// A fresh operator with no job has counted nothing, so each series whose labels are known
// reads 0 (not absent): the dashboard's error, event and restart panels show 0, not "no data".
TEST_F(OperatorE2eTest, FreshOperatorExportsKnownSeriesAtZero) {
  auto op = w_.StartOperator("op-fresh");
  ASSERT_TRUE(WaitFor([&] { return op->MetricsPort() > 0; }, kWait)) << op->Log();
  std::string text;
  ASSERT_TRUE(WaitFor([&] {
    auto page = HttpGet("127.0.0.1", op->MetricsPort(), "/metrics");
    if (page.ok()) text = *page;
    return text.find("ddp_operator_leader 1\n") != std::string::npos;
  }, kWait)) << text << op->Log();
  for (const char* line : {"ddp_operator_reconcile_errors_total 0\n",
                           "ddp_operator_straggler_events_total 0\n",
                           "ddp_operator_stragglers 0\n",
                           "ddp_operator_job_restarts_total{kind=\"failure\"} 0\n",
                           "ddp_operator_job_restarts_total{kind=\"disruption\"} 0\n",
                           "ddp_operator_job_restarts_total{kind=\"recovery\"} 0\n",
                           "ddp_operator_recovery_seconds_count 0\n",
                           "ddp_operator_progress_scrapes_total{result=\"error\"} 0\n",
                           "ddp_operator_pods_deleted_total 0\n",
                           "ddp_operator_jobs{phase=\"Failed\"} 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
  EXPECT_EQ(op->Signal(SIGTERM, kWait), 0) << op->Log();
}

// A real API server speaks HTTPS: the binary trusts the kubeconfig's CA, creates the round and
// stops cleanly, with no TLS error in its log.
TEST(OperatorTlsE2eTest, NewJobOverHttpsWithTheKubeconfigCa) {
  World w(/*tls=*/true);
  ASSERT_EQ(w.server().url().rfind("https://", 0), 0u);
  auto op = w.StartOperator("op-tls");
  w.CreateJob(World::Job("mingpt", 3));
  ASSERT_TRUE(w.RunRound("mingpt", 0, 3, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w.JobStatus("mingpt").value("phase", "") == "Running"; }, kWait))
      << op->Log();
  EXPECT_EQ(op->Signal(SIGTERM, kWait), 0) << op->Log();
  std::string log = op->Log();
  for (const char* bad : {"certificate", "handshake", "ssl", "SSL"}) {
    EXPECT_EQ(log.find(bad), std::string::npos) << bad << "\n" << log;
  }
}

TEST_F(OperatorE2eTest, RetryableExitStartsNewRoundAfterEveryOldPodIsGone) {
  PodRecorder rec(&w_.client(), World::kNs);
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("j", 3));
  ASSERT_TRUE(w_.RunRound("j", 0, 3, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").value("phase", "") == "Running"; }, kWait));
  ASSERT_TRUE(w_.server().TerminatePod(World::kNs, "j-worker-1", 75));
  ASSERT_TRUE(w_.RunRound("j", 1, 3, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").value("phase", "") == "Running"; }, kWait));
  json st = w_.JobStatus("j");
  EXPECT_EQ(StatusInt(st, "round"), 1);
  EXPECT_EQ(StatusInt(st, "restarts"), 1);
  EXPECT_EQ(st["lastFailure"]["exitCode"], 75);

  // From the watch history: no round-1 pod was added while a round-0 pod still existed.
  bool saw_round1 = false;
  const auto overlapping = PodsAddedWhileOlderRoundLive(rec.Events(), 0, 1, &saw_round1);
  EXPECT_TRUE(overlapping.empty()) << ::testing::PrintToString(overlapping)
                                   << " added while round 0 pods remain";
  EXPECT_TRUE(saw_round1);
}

TEST_F(OperatorE2eTest, ExitCodePolicyPermanentExitFailsJobWithLastFailure) {
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("j", 2, {{"failurePolicy", {{"restartPolicy", "ExitCode"}}}}));
  ASSERT_TRUE(w_.RunRound("j", 0, 2, kWait)) << op->Log();
  ASSERT_TRUE(w_.server().TerminatePod(World::kNs, "j-worker-0", 2));
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").value("phase", "") == "Failed"; }, kWait))
      << w_.JobStatus("j").dump() << op->Log();
  json lf = w_.JobStatus("j")["lastFailure"];
  EXPECT_EQ(lf["exitCode"], 2);
  EXPECT_EQ(lf["pod"], "j-worker-0");
  EXPECT_EQ(lf["rank"], 0);
  EXPECT_EQ(StatusInt(w_.JobStatus("j"), "restarts"), 0);
}

// A spec the CRD schema would stop today but an older object carries: Failed, condition and an
// Event naming the field, as for a validation failure; no pods.
TEST_F(OperatorE2eTest, UnparsableSpecFailsWithInvalidSpecAndAnEventNamingTheField) {
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("bad", 2, {{"failurePolicy", {{"restartPolicy", "Sometimes"}}}}));
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("bad").value("phase", "") == "Failed"; }, kWait))
      << w_.JobStatus("bad").dump() << op->Log();
  const json status = w_.JobStatus("bad");
  bool condition = false;
  for (const auto& c : status["conditions"]) {
    condition |= c.value("type", "") == "Failed" && c.value("reason", "") == "InvalidSpec";
  }
  EXPECT_TRUE(condition) << status.dump();
  ASSERT_TRUE(WaitFor([&] {
    for (const auto& e : w_.server().Objects("/api/v1/namespaces/ml/events")) {
      if (e.value("reason", "") == "InvalidSpec" &&
          e.value("message", "").find("spec.failurePolicy.restartPolicy") != std::string::npos) {
        return true;
      }
    }
    return false;
  }, kWait)) << op->Log();
  EXPECT_TRUE(w_.Pods().empty());
}

// A job deleted and created again under its name while the old job's pods still exist (the
// garbage collector has not got to them; here they are orphaned): the new job counts only pods
// it controls, so the old Succeeded pods do not make it Succeeded, and it waits for their names.
TEST_F(OperatorE2eTest, RecreatedJobDoesNotAdoptTheOldJobsPods) {
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("j", 2));
  ASSERT_TRUE(w_.RunRound("j", 0, 2, kWait)) << op->Log();
  ASSERT_TRUE(w_.server().TerminatePod(World::kNs, "j-worker-0", 0));
  ASSERT_TRUE(w_.server().TerminatePod(World::kNs, "j-worker-1", 0));
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").value("phase", "") == "Succeeded"; }, kWait))
      << w_.JobStatus("j").dump() << op->Log();
  controller::DeleteOptions orphan;
  orphan.propagation_policy = "Orphan";
  ASSERT_TRUE(w_.client().Delete(controller::kDDPJobs, World::kNs, "j", orphan).ok());
  ASSERT_TRUE(WaitFor([&] { return !w_.GetJob("j").has_value(); }, kWait));
  w_.CreateJob(World::Job("j", 2));
  const std::string uid = (*w_.GetJob("j"))["metadata"]["uid"];
  auto owned_by_new = [&] {
    int n = 0;
    for (const auto& p : w_.Pods()) {
      const json refs = p["metadata"].value("ownerReferences", json::array());
      for (const auto& r : refs) n += r.value("uid", "") == uid ? 1 : 0;
    }
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").value("phase", "") == "Pending"; }, kWait))
      << w_.JobStatus("j").dump() << op->Log();
  EXPECT_EQ(owned_by_new(), 0) << "the old pods still hold both names";
  EXPECT_EQ(w_.Pods().size(), 2u) << "the old pods are not ours to delete";
  // The garbage collector (here: the test) removes the old pods; the new job creates its own.
  ASSERT_TRUE(w_.server().RemoveObject("/api/v1/namespaces/ml/pods/j-worker-0"));
  ASSERT_TRUE(w_.server().RemoveObject("/api/v1/namespaces/ml/pods/j-worker-1"));
  ASSERT_TRUE(WaitFor([&] { return owned_by_new() == 2; }, kWait)) << op->Log();
  ASSERT_TRUE(w_.RunRound("j", 0, 2, kWait));
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").value("phase", "") == "Running"; }, kWait))
      << w_.JobStatus("j").dump();
}

TEST_F(OperatorE2eTest, EvictionIsCountedAsDisruptionNotRestart) {
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("j", 2, {{"failurePolicy", {{"restartPolicy", "Never"}}}}));
  ASSERT_TRUE(w_.RunRound("j", 0, 2, kWait)) << op->Log();
  ASSERT_TRUE(w_.server().EvictPod(World::kNs, "j-worker-1"));
  ASSERT_TRUE(w_.RunRound("j", 1, 2, kWait)) << w_.JobStatus("j").dump() << op->Log();
  ASSERT_TRUE(WaitFor([&] { return StatusInt(w_.JobStatus("j"), "disruptions") == 1; }, kWait));
  EXPECT_EQ(StatusInt(w_.JobStatus("j"), "restarts"), 0);
  EXPECT_EQ(StatusInt(w_.JobStatus("j"), "round"), 1);
}

TEST_F(OperatorE2eTest, ReplicasChangeStartsResizeRound) {
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("j", 2));
  ASSERT_TRUE(w_.RunRound("j", 0, 2, kWait)) << op->Log();
  auto patched = w_.client().MergePatch(controller::kDDPJobs, World::kNs, "j",
                                        {{"spec", {{"replicas", 3}}}});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  ASSERT_TRUE(w_.RunRound("j", 1, 3, kWait)) << w_.JobStatus("j").dump() << op->Log();
  ASSERT_TRUE(WaitFor([&] { return StatusInt(w_.JobStatus("j"), "worldSize") == 3; }, kWait));
  EXPECT_EQ(StatusInt(w_.JobStatus("j"), "restarts"), 0);
  EXPECT_EQ(EnvOf(*w_.GetPod("j-worker-2"))["WORLD_SIZE"], "3");
}

TEST_F(OperatorE2eTest, ActiveDeadlineFiresOnTimeWithoutAnyOtherEvent) {
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("j", 1, {{"runPolicy", {{"activeDeadlineSeconds", 3}}}}));
  ASSERT_TRUE(w_.RunRound("j", 0, 1, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").contains("startTime"); }, kWait));
  auto start = std::chrono::steady_clock::now();
  // Nothing else happens from here: only the operator's own timer can fail the job.
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").value("phase", "") == "Failed"; }, kWait))
      << w_.JobStatus("j").dump() << op->Log();
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LE(took, seconds(5)) << "the deadline must fire by requeue, not by the 10 min resync";
  bool deadline_reason = false;
  const json st = w_.JobStatus("j");
  for (const auto& c : st["conditions"]) {
    if (c["type"] == "Failed") deadline_reason = c["reason"] == "DeadlineExceeded";
  }
  EXPECT_TRUE(deadline_reason) << st.dump();
}

TEST_F(OperatorE2eTest, RecoversFromServerErrorsAndDroppedWatchesWithoutDuplicatesOrOrphans) {
  auto op = w_.StartOperator("op", {"--resync-period", "5s"});
  w_.CreateJob(World::Job("a", 2));
  ASSERT_TRUE(w_.RunRound("a", 0, 2, kWait)) << op->Log();
  // A bad minute, compressed: every request fails, watches are cut, the watch cache is lost.
  w_.server().FailFor(milliseconds(2000));
  w_.server().DropWatches(/*cut=*/true);
  std::string err;
  ASSERT_TRUE(w_.server().CreateObject("/apis/ddp.dev/v1alpha1/namespaces/ml/ddpjobs",
                                       World::Job("b", 3), &err)) << err;
  w_.server().TerminatePod(World::kNs, "a-worker-0", 75);
  w_.server().Restart();
  ASSERT_TRUE(w_.RunRound("b", 0, 3, milliseconds(40000))) << op->Log();
  ASSERT_TRUE(w_.RunRound("a", 1, 2, milliseconds(40000))) << w_.JobStatus("a").dump() << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("b").value("phase", "") == "Running"; }, kWait));

  std::map<std::string, int> names;
  for (const auto& p : w_.Pods()) {
    names[p["metadata"]["name"]]++;
    std::string job = p["metadata"]["labels"].value("ddp.dev/job-name", "");
    EXPECT_TRUE(job == "a" || job == "b") << "orphan " << p["metadata"]["name"];
  }
  EXPECT_EQ(names.size(), 5u);
  EXPECT_EQ(w_.PodsOfRound("a", 0).size(), 0u) << "round 0 of a is gone";
  EXPECT_EQ(StatusInt(w_.JobStatus("a"), "restarts"), 1) << "the failure was counted once";
  EXPECT_EQ(op->Signal(SIGTERM, kWait), 0) << op->Log();
}

TEST_F(OperatorE2eTest, StatusWriteConflictIsReReadAndReplannedWithoutDuplicates) {
  // The first status writes lose a race (409 Conflict), as when a user edits the job meanwhile.
  w_.server().FailNext("update", "ddpjobs", 409, 2);
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("j", 2));
  ASSERT_TRUE(w_.RunRound("j", 0, 2, kWait)) << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").value("phase", "") == "Running"; }, kWait))
      << w_.JobStatus("j").dump() << op->Log();
  EXPECT_EQ(w_.Pods().size(), 2u);
  EXPECT_EQ(StatusInt(w_.JobStatus("j"), "round"), 0);
  EXPECT_NE(op->Log().find("conflict"), std::string::npos) << op->Log();
}

TEST_F(OperatorE2eTest, StatusWriteConflictDuringRestartKeepsItAFailureAndRoundsApart) {
  // The status is written before any pod: when the restart's status write loses a race, no pod
  // was touched, so the re-planned pass makes the same decision. (Deleting first would leave the
  // round-0 pods gone under status.round 0, and the next pass would call it a disruption.)
  PodRecorder rec(&w_.client(), World::kNs);
  auto op = w_.StartOperator("op");
  w_.CreateJob(World::Job("j", 3));
  ASSERT_TRUE(w_.RunRound("j", 0, 3, kWait)) << op->Log();
  // Settled: the pass that saw every pod ready has written its status; nothing else writes it.
  ASSERT_TRUE(WaitFor([&] {
    json st = w_.JobStatus("j");
    return st.value("phase", "") == "Running" && StatusInt(st, "readyReplicas") == 3;
  }, kWait)) << w_.JobStatus("j").dump() << op->Log();
  w_.server().FailNext("update", "ddpjobs", 409, 1);
  ASSERT_TRUE(w_.server().TerminatePod(World::kNs, "j-worker-1", 75));
  ASSERT_TRUE(w_.RunRound("j", 1, 3, kWait)) << w_.JobStatus("j").dump() << op->Log();
  ASSERT_TRUE(WaitFor([&] { return w_.JobStatus("j").value("phase", "") == "Running"; }, kWait))
      << w_.JobStatus("j").dump() << op->Log();
  // The 409 was served to the restart's status write (nothing else wrote the status since).
  EXPECT_NE(op->Log().find("status write conflicted"), std::string::npos) << op->Log();

  json st = w_.JobStatus("j");
  EXPECT_EQ(StatusInt(st, "round"), 1) << st.dump();
  EXPECT_EQ(StatusInt(st, "restarts"), 1) << st.dump();
  EXPECT_EQ(StatusInt(st, "disruptions"), 0) << st.dump();
  EXPECT_EQ(st["lastFailure"]["exitCode"], 75) << st.dump();
  int failed_events = 0;
  for (const auto& e : w_.server().Objects("/api/v1/namespaces/ml/events")) {
    EXPECT_NE(e.value("reason", ""), "PodDisrupted") << e.dump();
    if (e.value("reason", "") == "PodFailed") ++failed_events;
  }
  EXPECT_EQ(failed_events, 1) << "one decision, one event";

  bool saw_round1 = false;
  const auto overlapping = PodsAddedWhileOlderRoundLive(rec.Events(), 0, 1, &saw_round1);
  EXPECT_TRUE(overlapping.empty()) << ::testing::PrintToString(overlapping)
                                   << " added while round 0 pods remain";
  EXPECT_TRUE(saw_round1);
}

}  // namespace
}  // namespace ddp::e2e
