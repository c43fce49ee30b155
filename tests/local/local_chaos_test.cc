// `ddp-operator chaos` on a `ddp-operator local` run of the real ddp-worker (docs/metrics.md
// "Incidents and goodput"): kill-trainer and freeze-pod injected into a running InPlace job; each
// incident appears in status.json with the pod and rank that were hit, and a stall that agrees
// with the one the surviving trainer logged itself (`rank 0: training stood still Xs`), within
// 10%; the command prints the same report and draws the timeline.
// Needs ddp-worker: built in the same tree, or named by $DDP_WORKER_BIN; skipped otherwise.
#include <gtest/gtest.h>

#include <regex>

#include "worker_job.h"

namespace ddp::testing_local {
namespace {

using std::chrono::seconds;

// The figures rank 0 logged, in order: "rank 0: training stood still Xs".
std::vector<double> Stalls(const std::string& log) {
  static const std::regex kRe(R"(rank 0: training stood still ([0-9.eE+-]+)s)");
  std::vector<double> out;
  for (std::sregex_iterator it(log.begin(), log.end(), kRe), end; it != end; ++it) {
    out.push_back(std::stod((*it)[1]));
  }
  return out;
}

// The incident of `kind` among those opened after the first `before` (the newest rows); null when
// none. Another incident may come between (a busy machine can make the store's page look silent,
// and its replacement is an incident too): the test looks for the one it caused.
nlohmann::json Opened(const nlohmann::json& st, int before, const std::string& kind) {
  const auto& rows = st["incidents"];
  const int total = st.value("incidentsTotal", 0);
  for (size_t k = 0; k < rows.size(); ++k) {
    const int number = total - static_cast<int>(rows.size()) + static_cast<int>(k) + 1;
    if (number > before && rows[k].value("kind", "") == kind) return rows[k];
  }
  return nullptr;
}

class LocalChaosTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (WorkerBin().empty()) GTEST_SKIP() << "ddp-worker not built; set DDP_WORKER_BIN";
  }
  // Runs `ddp-operator chaos --run-dir <run> args...`; its exit code and output.
  std::pair<int, std::string> Chaos(const std::string& run_dir, std::vector<std::string> args,
                                    const std::string& out) {
    std::vector<std::string> argv{DDP_OPERATOR_BIN, "chaos", "--run-dir", run_dir, "--timeout", "90"};
    argv.insert(argv.end(), args.begin(), args.end());
    OperatorProcess p(argv, dir_.path() + "/" + out);
    const int code = p.Wait(seconds(150));
    return {code, p.Output()};
  }
  TempDir dir_;
};

TEST_F(LocalChaosTest, KillTrainerAndFreezePodShowInTheStatusAsTheWorkersMeasuredThem) {
  JobOptions o;
  o.name = "chaos";
  o.steps = 12000;
  LocalJob job(dir_, o);
  const std::string run = dir_.path() + "/chaos";
  // Generous: on a 2-core machine busy with other builds the start alone can take a minute.
  ASSERT_TRUE(WaitFor([&] { return LocalJob::LastStep(job.PodLog("worker-0")) >= 200; },
                      seconds(240)))
      << job.op().Output();

  // 1. A trainer killed: its supervisor restarts it, the group heals it in place.
  auto [code, out] = Chaos(run, {"kill-trainer", "1"}, "kill.out");
  ASSERT_EQ(code, 0) << out << job.op().Output();
  nlohmann::json st = job.Status();
  const nlohmann::json first = Opened(st, 0, "TrainerExit");
  ASSERT_FALSE(first.is_null()) << st.dump(2);
  EXPECT_EQ(first["kind"], "TrainerExit") << first;
  EXPECT_EQ(first["pod"], "chaos-worker-1") << first;
  EXPECT_EQ(first["rank"], 1) << first;
  EXPECT_EQ(first["incarnation"], 1) << first;
  EXPECT_EQ(first["outcome"], "HealedInPlace") << first;
  EXPECT_EQ(first["source"], "workers") << first;
  std::vector<double> logged = Stalls(job.PodLog("worker-0"));
  ASSERT_GE(logged.size(), 1u) << job.PodLog("worker-0");  // the last is the kill's
  const double stall1 = first["stallSeconds"].get<double>();
  EXPECT_NEAR(stall1, logged.back(), 0.1 * logged.back() + 0.002) << first;
  EXPECT_NE(out.find("TrainerExit of pod chaos-worker-1 (rank 1)"), std::string::npos) << out;
  EXPECT_NE(out.find("outcome: HealedInPlace"), std::string::npos) << out;

  // 2. A pod frozen for 8 s: silent past the liveness timeout (5 s), declared lost, replaced,
  // and the newcomer healed from pod 0.
  const int before = job.Status().value("incidentsTotal", 0);
  const std::string svg = dir_.path() + "/freeze.svg";
  auto [code2, out2] = Chaos(run, {"freeze-pod", "1", "8", "--svg", svg}, "freeze.out");
  ASSERT_EQ(code2, 0) << out2 << job.op().Output();
  st = job.Status();
  const nlohmann::json second = Opened(st, before, "Hang");
  ASSERT_FALSE(second.is_null()) << st.dump(2);
  EXPECT_EQ(second["kind"], "Hang") << second;
  EXPECT_EQ(second["pod"], "chaos-worker-1") << second;
  EXPECT_EQ(second["rank"], 1) << second;
  EXPECT_EQ(second["outcome"], "HealedInPlace") << second;
  logged = Stalls(job.PodLog("worker-0"));
  ASSERT_GE(logged.size(), 2u) << job.PodLog("worker-0");  // the last is the freeze's
  const double stall2 = second["stallSeconds"].get<double>();
  EXPECT_NEAR(stall2, logged.back(), 0.1 * logged.back()) << second;
  // Silent for the liveness timeout before anyone could notice.
  EXPECT_GE(second["detectionSeconds"].get<double>(), 4.0) << second;
  EXPECT_GT(stall2, second["detectionSeconds"].get<double>()) << second;
  EXPECT_NE(out2.find("Hang of pod chaos-worker-1 (rank 1)"), std::string::npos) << out2;
  const std::string picture = ReadFile(svg);
  EXPECT_NE(picture.find("class=\"incident\""), std::string::npos) << picture;
  EXPECT_NE(picture.find("class=\"rate\""), std::string::npos) << picture;

  // The goodput's stalled time holds both stalls and the start.
  EXPECT_GE(st["incidentsTotal"].get<int>(), 2);
  EXPECT_GT(st["goodput"]["stalledSeconds"].get<double>(), stall1 + stall2);

  // A failure local mode cannot inject is refused, naming why.
  auto [code3, out3] = Chaos(run, {"drain-node", "kit-1"}, "drain.out");
  EXPECT_EQ(code3, 2);
  EXPECT_NE(out3.find("one machine"), std::string::npos) << out3;

  EXPECT_EQ(job.op().Wait(seconds(240)), 0) << job.op().Output();
  EXPECT_EQ(job.Status()["phase"], "Succeeded");
}

}  // namespace
}  // namespace ddp::testing_local
