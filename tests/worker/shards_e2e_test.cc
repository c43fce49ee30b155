// End-to-end: ddp-worker training on token shards (train + held-out), resuming its sampler
// position from a checkpoint, and bad shards exiting 3 with the file and offset named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "tests/worker/e2e_util.h"
#include "tests/worker/shard_writer.h"

namespace ddp::testing {
namespace {

std::vector<std::string> ShardArgs(const std::string& dir, int steps) {
  auto args = TinyArgs(steps, 8);
  args.insert(args.end(), {"--dataset", "shards", "--data-files", dir + "/train_*.bin",
                           "--vocab-size", "64", "--lr", "0.01"});
  return args;
}

// "eval step S val_loss L" lines of rank 0's log, in order.
std::vector<std::pair<int, double>> Evals(const std::string& log) {
  std::vector<std::pair<int, double>> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    const size_t p = line.find("eval step ");
    if (p == std::string::npos) continue;
    std::istringstream f(line.substr(p + 10));
    int step;
    std::string word;
    double loss;
    f >> step >> word >> loss;
    out.emplace_back(step, loss);
  }
  return out;
}

TEST(ShardsE2E, TwoRanksTrainOnShardsEvaluateAndResume) {
  const std::string dir = MakeTempDir("ddp-e2e-shards");
  // A ramp mod 50 is predictable from one token: a model that learns it drives the held-out
  // loss far below uniform guessing over the 64-token vocabulary (ln 64 = 4.16).
  WriteBytes(dir + "/train_0.bin", LlmcShard(Ramp(3000, 0, 50)));
  WriteBytes(dir + "/train_1.bin", RawShard(Ramp(2000, 17, 50)));
  WriteBytes(dir + "/val_0.bin", RawShard(Ramp(800, 33, 50)));
  auto args = ShardArgs(dir, 30);
  args.insert(args.end(), {"--val-files", dir + "/val_*.bin", "--eval-every", "10",
                           "--eval-batches", "4", "--checkpoint-dir", dir + "/ckpt",
                           "--checkpoint-every", "10"});
  GroupResult g = RunGroup(2, args, {}, dir);
  ASSERT_EQ(g.codes[0], 0) << g.err[0];
  ASSERT_EQ(g.codes[1], 0) << g.err[1];
  EXPECT_NE(g.err[0].find("data=shards " + dir + "/train_*.bin (2 files, 5000 tokens)"),
            std::string::npos) << g.err[0];
  auto evals = Evals(g.err[0]);
  ASSERT_EQ(evals.size(), 3u) << g.err[0];
  EXPECT_EQ(evals[0].first, 10);
  EXPECT_EQ(evals[2].first, 30);
  EXPECT_LT(evals[2].second, evals[0].second) << g.err[0];
  EXPECT_LT(evals[2].second, std::log(64.0) - 1.0) << g.err[0];
  EXPECT_EQ(Field(g.out[0], "param_checksum"), Field(g.out[1], "param_checksum"));

  // Same job, 10 more steps: it resumes at step 30 and continues the sampler's position.
  auto more = args;
  more[std::find(more.begin(), more.end(), "--steps") - more.begin() + 1] = "40";
  GroupResult r = RunGroup(2, more, {}, dir);
  ASSERT_EQ(r.codes[0], 0) << r.err[0];
  EXPECT_EQ(Field(r.out[0], "resumed_from"), "30") << r.out[0];
  EXPECT_EQ(Field(r.out[0], "step"), "40") << r.out[0];
  std::filesystem::remove_all(dir);
}

TEST(ShardsE2E, BadShardsExit3NamingTheFileAndOffset) {
  const std::string dir = MakeTempDir("ddp-e2e-badshard");
  std::vector<uint32_t> t = Ramp(400, 0, 50);
  for (size_t i = 0; i < t.size(); i += 5) t[i] = 64;  // one bad token in every window
  WriteBytes(dir + "/train_0.bin", RawShard(t));
  GroupResult g = RunGroup(1, ShardArgs(dir, 5), {}, dir, std::chrono::seconds(60));
  EXPECT_EQ(g.codes[0], 3) << g.err[0];
  EXPECT_NE(g.err[0].find(dir + "/train_0.bin at byte "), std::string::npos) << g.err[0];
  EXPECT_NE(g.err[0].find("token 64 is >= the vocabulary size 64"), std::string::npos) << g.err[0];

  WriteBytes(dir + "/train_0.bin", LlmcShard(Ramp(400, 0, 50), 20240520, 1, 2, 1000));
  g = RunGroup(1, ShardArgs(dir, 5), {}, dir, std::chrono::seconds(60));
  EXPECT_EQ(g.codes[0], 3) << g.err[0];
  EXPECT_NE(g.err[0].find("train_0.bin at byte 1824: truncated"), std::string::npos) << g.err[0];

  std::filesystem::remove(dir + "/train_0.bin");
  g = RunGroup(1, ShardArgs(dir, 5), {}, dir, std::chrono::seconds(60));
  EXPECT_EQ(g.codes[0], 3) << g.err[0];
  EXPECT_NE(g.err[0].find("no file matches"), std::string::npos) << g.err[0];
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
