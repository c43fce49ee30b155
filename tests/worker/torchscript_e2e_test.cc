// End-to-end: a TorchScript model exported by python3 torch, trained by 2 ddp-worker ranks, ends
// on the loss curve of PyTorch's own DistributedDataParallel on the same data
// (torchscript_reference.py). Skipped when no python3 imports torch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "tests/worker/e2e_util.h"
#include "tests/worker/shard_writer.h"

namespace ddp::testing {
namespace {

std::string PythonWithTorch() {
  for (const char* py : {"python3", "/usr/bin/python3"}) {
    const std::string cmd = std::string(py) + " -c 'import torch' >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return py;
  }
  return "";
}

// Every `step S... loss L` of a log, in order ("step 3/20 loss 2.1234" or "step 3 loss 2.123456").
std::vector<double> Losses(const std::string& log) {
  static const std::regex kRe(R"(step \d+(?:/\d+)? loss ([0-9.]+))");
  std::vector<double> out;
  for (std::sregex_iterator it(log.begin(), log.end(), kRe), end; it != end; ++it) {
    out.push_back(std::stod((*it)[1]));
  }
  return out;
}

constexpr int kSteps = 20;

// The data: 65 tokens = 8 windows of 8 (+1), exactly batch 4 x 2 ranks, so every step sees the
// whole set whichever rank draws which window (see torchscript_reference.py).
std::vector<std::string> WorkerArgs(const std::string& dir, const std::string& model, int steps) {
  return {"--model", "torchscript", "--model-file", model, "--dataset", "shards",
          "--data-files", dir + "/data.bin", "--data-format", "raw", "--vocab-size", "64",
          "--block-size", "8", "--batch-size", "4", "--steps", std::to_string(steps),
          "--lr", "0.01", "--min-lr", "0.01", "--warmup-steps", "0", "--weight-decay", "0",
          "--grad-clip", "0", "--beta1", "0.9", "--beta2", "0.95", "--log-every", "1",
          "--threads", "1", "--device", "cpu", "--collective-timeout", "30",
          "--checkpoint-dir", dir + "/ckpt-" + std::filesystem::path(model).stem().string(),
          "--checkpoint-every", "10"};
}

class TorchScriptE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = PythonWithTorch();
    if (python_.empty()) GTEST_SKIP() << "no python3 with torch (Debian: apt install python3-torch)";
    dir_ = MakeTempDir("ddp-e2e-torchscript");
    std::vector<uint32_t> t;
    for (int i = 0; i < 65; ++i) t.push_back(static_cast<uint32_t>((i * 7) % 50));
    WriteBytes(dir_ + "/data.bin", RawShard(t));
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  int Python(const std::string& args) {
    return std::system((python_ + " " DDP_TORCHSCRIPT_REF " " + args + " > " + dir_ +
                        "/py.out 2>&1").c_str());
  }
  std::string python_, dir_;
};

// Same weights (one file), same data per step, same AdamW at a constant rate, gradients averaged
// over 2 Gloo ranks in both: only float summation order differs, ~1e-6 per step. The worker
// logs 4 decimals, so each step's loss must agree within 1e-3; the curve itself falls by > 1.
TEST_F(TorchScriptE2E, TwoRanksFollowPythonDdpsLossCurve) {
  ASSERT_EQ(Python("export " + dir_ + "/loss.pt --returns loss"), 0) << ReadAll(dir_ + "/py.out");
  ASSERT_EQ(Python("ddp --model " + dir_ + "/loss.pt --data " + dir_ + "/data.bin --steps " +
                   std::to_string(kSteps)), 0)
      << ReadAll(dir_ + "/py.out");
  const std::vector<double> reference = Losses(ReadAll(dir_ + "/py.out"));
  ASSERT_EQ(reference.size(), static_cast<size_t>(kSteps)) << ReadAll(dir_ + "/py.out");

  GroupResult g = RunGroup(2, WorkerArgs(dir_, dir_ + "/loss.pt", kSteps), {}, dir_);
  ASSERT_EQ(g.codes[0], 0) << g.err[0];
  ASSERT_EQ(g.codes[1], 0) << g.err[1];
  const std::vector<double> ours = Losses(g.err[0]);
  ASSERT_EQ(ours.size(), static_cast<size_t>(kSteps)) << g.err[0];
  for (int i = 0; i < kSteps; ++i) EXPECT_NEAR(ours[i], reference[i], 1e-3) << "step " << i + 1;
  EXPECT_LT(reference.back(), reference.front() - 1.0);
  EXPECT_EQ(Field(g.out[0], "param_checksum"), Field(g.out[1], "param_checksum"));

  // A model returning logits (same seed, so the same weights) trains identically: the worker
  // applies the cross-entropy itself.
  ASSERT_EQ(Python("export " + dir_ + "/logits.pt --returns logits"), 0) << ReadAll(dir_ + "/py.out");
  GroupResult l = RunGroup(2, WorkerArgs(dir_, dir_ + "/logits.pt", kSteps), {}, dir_);
  ASSERT_EQ(l.codes[0], 0) << l.err[0];
  const std::vector<double> logits = Losses(l.err[0]);
  ASSERT_EQ(logits.size(), static_cast<size_t>(kSteps)) << l.err[0];
  for (int i = 0; i < kSteps; ++i) EXPECT_NEAR(logits[i], reference[i], 1e-3) << "step " << i + 1;

  // Checkpoints hold the script module's parameters: 5 more steps resume from step 20.
  GroupResult r = RunGroup(2, WorkerArgs(dir_, dir_ + "/loss.pt", kSteps + 5), {}, dir_);
  ASSERT_EQ(r.codes[0], 0) << r.err[0];
  EXPECT_EQ(Field(r.out[0], "resumed_from"), std::to_string(kSteps)) << r.out[0];
}

TEST(TorchScriptErrors, MissingOrInvalidModelFile) {
  const std::string dir = MakeTempDir("ddp-e2e-torchscript-bad");
  WriteBytes(dir + "/data.bin", RawShard(Ramp(65, 0, 50)));
  GroupResult g = RunGroup(1, WorkerArgs(dir, dir + "/absent.pt", 2), {}, dir, std::chrono::seconds(60));
  EXPECT_EQ(g.codes[0], 3) << g.err[0];
  EXPECT_NE(g.err[0].find("model.file " + dir + "/absent.pt cannot be opened"), std::string::npos) << g.err[0];
  WriteBytes(dir + "/junk.pt", "not a zip archive");
  g = RunGroup(1, WorkerArgs(dir, dir + "/junk.pt", 2), {}, dir, std::chrono::seconds(60));
  EXPECT_EQ(g.codes[0], 2) << g.err[0];
  EXPECT_NE(g.err[0].find("is not a TorchScript module"), std::string::npos) << g.err[0];
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::testing
