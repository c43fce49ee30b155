// End-to-end failure paths and `ddp-worker launch`: exit codes are the contract with the operator.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/http_server.h"
#include "common/worker_progress.h"
#include "tests/worker/e2e_util.h"

namespace ddp::testing {
namespace {

TEST(WorkerFaultE2E, KilledRankMakesTheOthersExit75WithinTheTimeout) {
  const std::string dir = MakeTempDir("ddp-e2e-kill");
  const auto start = std::chrono::steady_clock::now();
  GroupResult g = RunGroup(3, TinyArgs(40), {{"DDP_FAULT", "1:5:kill"}}, dir);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(g.codes[1], 128 + SIGKILL);
  EXPECT_EQ(g.codes[0], 75) << g.err[0];
  EXPECT_EQ(g.codes[2], 75) << g.err[2];
  // --collective-timeout 20 bounds the wait (plus process start-up on a loaded machine).
  EXPECT_LT(took, std::chrono::seconds(90));
  std::filesystem::remove_all(dir);
}

// A peer that resets a connection while this worker writes to it raises SIGPIPE; the worker
// must see the write fail (and handle it as any collective failure), never die of the signal.
TEST(WorkerFaultE2E, SigpipeDoesNotKillTheWorker) {
  const std::string dir = MakeTempDir("ddp-e2e-sigpipe");
  const std::map<std::string, std::string> env = {{"MASTER_ADDR", "127.0.0.1"},
                                                  {"MASTER_PORT", std::to_string(FreePort())},
                                                  {"WORLD_SIZE", "1"}, {"RANK", "0"}};
  Proc p = StartProc(kWorkerBin, TinyArgs(400), env, dir, "sigpipe");
  ASSERT_TRUE(PollUntil([&] { return ReadAll(p.err_path).find("step 5/400") != std::string::npos; },
                        std::chrono::seconds(60)))
      << ReadAll(p.err_path);
  ASSERT_EQ(kill(p.pid, SIGPIPE), 0);
  const std::optional<int> code = WaitProc(p, std::chrono::seconds(120));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << ReadAll(p.err_path);
  std::filesystem::remove_all(dir);
}

TEST(WorkerFaultE2E, BadConfigExits2NamingTheKey) {
  const std::string dir = MakeTempDir("ddp-e2e-config");
  std::ofstream(dir + "/cfg.yaml") << "train:\n  stepz: 3\n";
  struct Row { std::vector<std::string> args; std::string names; };
  for (const Row& r : {Row{{"--config", dir + "/cfg.yaml"}, "train.stepz"},
                       Row{{"--steps", "ten"}, "--steps"},
                       Row{{"--model", "rnn"}, "model.kind"},
                       Row{{"--config", dir + "/absent.yaml"}, "absent.yaml"}}) {
    GroupResult g = RunGroup(1, r.args, {}, dir, std::chrono::seconds(60));
    EXPECT_EQ(g.codes[0], 2) << g.err[0];
    EXPECT_NE(g.err[0].find(r.names), std::string::npos) << g.err[0];
  }
  std::filesystem::remove_all(dir);
}

TEST(WorkerFaultE2E, MissingOrEmptyDataFileExits3NamingTheFile) {
  const std::string dir = MakeTempDir("ddp-e2e-data");
  std::ofstream(dir + "/empty.txt").close();
  for (const std::string& f : {dir + "/missing.txt", dir + "/empty.txt"}) {
    auto args = TinyArgs(3);
    args.insert(args.end(), {"--dataset", "chars", "--data-file", f});
    GroupResult g = RunGroup(1, args, {}, dir, std::chrono::seconds(60));
    EXPECT_EQ(g.codes[0], 3) << g.err[0];
    EXPECT_NE(g.err[0].find(f), std::string::npos) << g.err[0];
  }
  std::filesystem::remove_all(dir);
}

std::map<std::string, std::string> LaunchEnv(int nproc) {
  return {{"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(FreePort())},
          {"NNODES", "1"}, {"NODE_RANK", "0"}, {"NPROC_PER_NODE", std::to_string(nproc)},
          {"WORLD_SIZE", std::to_string(nproc)}, {"DDP_RENDEZVOUS_TIMEOUT", "60"},
          {"DDP_LAUNCH_GRACE_SECONDS", "20"}};
}

TEST(LaunchE2E, TwoLocalRanksTrainAndAgree) {
  const std::string dir = MakeTempDir("ddp-e2e-launch");
  std::vector<std::string> args{"launch"};
  for (const auto& a : TinyArgs(8)) args.push_back(a);
  Proc p = StartProc(kWorkerBin, args, LaunchEnv(2), dir, "launch");
  ASSERT_EQ(WaitProc(p, std::chrono::seconds(150)), 0) << ReadAll(p.err_path);
  const std::string out = ReadAll(p.out_path);
  // Both children's summary lines, same parameters.
  const size_t second = out.find("summary", out.find("summary") + 1);
  ASSERT_NE(second, std::string::npos) << out;
  EXPECT_EQ(Field(out, "param_checksum"), Field(out.substr(second), "param_checksum")) << out;
  EXPECT_NE(out.find("rank=0 "), std::string::npos);
  EXPECT_NE(out.find("rank=1 "), std::string::npos);
  std::filesystem::remove_all(dir);
}

// The pod exits with the failing trainer's own code (not a rewrite to 75), so the operator's
// restartPolicy judges what the trainer did: ExitCode retries 137 but not 1.
TEST(LaunchE2E, FailingChildStopsTheOthersAndThePodExitsWithItsCode) {
  struct Row { std::string fault; int want; };
  for (const Row& r : {Row{"1:3:exit:1", 1}, Row{"1:3:kill", 128 + SIGKILL}, Row{"0:2:exit:3", 3}}) {
    const std::string dir = MakeTempDir("ddp-e2e-launchfail");
    std::vector<std::string> args{"launch"};
    for (const auto& a : TinyArgs(200)) args.push_back(a);
    auto env = LaunchEnv(2);
    env["DDP_FAULT"] = r.fault;
    Proc p = StartProc(kWorkerBin, args, env, dir, "launch");
    EXPECT_EQ(WaitProc(p, std::chrono::seconds(120)), r.want) << r.fault << "\n" << ReadAll(p.err_path);
    std::filesystem::remove_all(dir);
  }
}

TEST(LaunchE2E, ServesMergedMetricsAndForwardsSigterm) {
  const std::string dir = MakeTempDir("ddp-e2e-metrics");
  std::vector<std::string> args{"launch"};
  for (const auto& a : TinyArgs(100000)) args.push_back(a);
  auto env = LaunchEnv(2);
  const int port = FreePort();
  env["DDP_METRICS_PORT"] = std::to_string(port);
  Proc p = StartProc(kWorkerBin, args, env, dir, "launch");
  std::string body;
  // Both local ranks' series, once each has finished a step.
  const bool ok = PollUntil([&] {
    auto b = HttpGet("127.0.0.1", port, "/metrics", 1000);
    if (!b.ok()) return false;
    body = *b;
    return body.find("ddp_worker_steps_total{rank=\"0\",local_rank=\"0\"} ") != std::string::npos &&
           body.find("ddp_worker_steps_total{rank=\"1\",local_rank=\"1\"} ") != std::string::npos &&
           body.find("ddp_worker_steps_total{rank=\"1\",local_rank=\"1\"} 0") == std::string::npos &&
           body.find("ddp_worker_rank_busy_seconds_total{rank=\"0\",local_rank=\"0\",peer_rank=\"1\"} ") !=
               std::string::npos;
  }, std::chrono::seconds(90));
  EXPECT_TRUE(ok) << body << ReadAll(p.err_path);
  // Rank 0's series carry every rank's busy time, from the step agreement: both ranks, over the
  // same steps, each a positive time below the steps' total wall time.
  metrics::WorkerScrape scrape = metrics::ParseWorkerScrape(body);
  ASSERT_EQ(scrape.busy_by_rank.size(), 2u) << body;
  ASSERT_EQ(scrape.step_time_by_rank.count(0), 1u) << body;
  const metrics::RankStepTime rank0_steps = scrape.step_time_by_rank[0];
  for (const auto& [rank, busy] : scrape.busy_by_rank) {
    EXPECT_GT(busy.count, 0) << rank;
    EXPECT_GT(busy.sum_seconds, 0) << rank;
    // The page is rendered at one instant, but rank 0 adds the busy sums and the step histogram
    // in the same step, so at most one step's worth apart; busy is part of the step.
    EXPECT_LE(busy.count, rank0_steps.count + 1) << rank;
    EXPECT_LT(busy.sum_seconds, rank0_steps.sum_seconds + 1.0) << rank;
  }
  EXPECT_EQ(scrape.busy_by_rank[0].count, scrape.busy_by_rank[1].count);
  EXPECT_NE(body.find("ddp_worker_info{rank=\"1\",local_rank=\"1\",job=\"\",world_size=\"2\""), std::string::npos) << body;
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    FILE* pt = popen("promtool check metrics >/dev/null 2>&1", "w");
    fwrite(body.data(), 1, body.size(), pt);
    EXPECT_EQ(pclose(pt), 0) << body;
  }
  // SIGTERM to the launcher reaches both children; they agree, stop, and the pod exits 75.
  kill(p.pid, SIGTERM);
  EXPECT_EQ(WaitProc(p, std::chrono::seconds(90)), 75) << ReadAll(p.err_path);
  const std::string out = ReadAll(p.out_path);
  EXPECT_NE(out.find("preempted=1"), std::string::npos) << out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
