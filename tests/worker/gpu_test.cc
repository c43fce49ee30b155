// GPU e2e: short CUDA runs of ddp-worker (bf16 autocast, NCCL when built with it), and the CUDA
// generators in a checkpoint. Skips without a device.
#include <gtest/gtest.h>

#include <ATen/ops/rand.h>
#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include "tests/worker/e2e_util.h"
#include "worker/train/filesystem.h"
#include "worker/train/train_state.h"

namespace ddp::testing {
namespace {

// Not std::filesystem::remove_all: a PyTorch wheel's libtorch.so defines and exports its own copy,
// this binary binds to it, and that copy crashed (a call through a null pointer) on the GPU run.
void RemoveTree(const std::string& dir) { (void)worker::PosixFileSystem()->RemoveAll(dir); }

// TinyArgs on cuda:0 with bf16 autocast.
std::vector<std::string> TinyCudaArgs(int steps, int batch) {
  auto args = TinyArgs(steps, batch);
  for (auto& a : args) {
    if (a == "cpu") a = "cuda";
  }
  args.insert(args.end(), {"--bf16", "true"});
  return args;
}

TEST(WorkerGpu, OneRankTrainsOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch)";
  const std::string dir = MakeTempDir("ddp-gpu");
  auto args = TinyCudaArgs(20, 16);
  GroupResult g = RunGroup(1, args, {}, dir);
  EXPECT_EQ(g.codes[0], 0) << g.err[0];
  EXPECT_EQ(Field(g.out[0], "param_checksum").size(), 16u) << g.out[0];
  RemoveTree(dir);
}

TEST(WorkerGpu, TwoRanksAgreeOverNccl) {
  if (torch::cuda::device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices (NCCL: one rank per GPU)";
  const std::string dir = MakeTempDir("ddp-gpu2");
  auto args = TinyCudaArgs(10, 16);
  GroupResult g = RunGroup(2, args, {}, dir);
  ASSERT_EQ(g.codes[0], 0) << g.err[0];
  ASSERT_EQ(g.codes[1], 0) << g.err[1];
  EXPECT_EQ(Field(g.out[0], "param_checksum"), Field(g.out[1], "param_checksum"));
  RemoveTree(dir);
}

// A checkpoint written from the GPU (bf16 autocast, ForeachAdamW, NCCL at world size 1) after a
// real SIGTERM, then resumed: the run ends where an uninterrupted one does, bit for bit (the same
// kernels on the same device and shapes; the checkpoint holds parameters, AdamW state, the
// sampler position and every generator).
TEST(WorkerGpu, CheckpointOnGpuThenResumeEqualsUninterruptedRun) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch)";
  const std::string dir = MakeTempDir("ddp-gpu-resume");
  auto args = TinyCudaArgs(16, 8);
  GroupResult straight = RunGroup(1, args, {}, dir);
  ASSERT_EQ(straight.codes[0], 0) << straight.err[0];
  const std::string want = Field(straight.out[0], "param_checksum");
  ASSERT_EQ(want.size(), 16u) << straight.out[0];

  args.insert(args.end(), {"--checkpoint-dir", dir + "/ck"});
  GroupResult stopped = RunGroup(1, args, {{"DDP_FAULT", "0:7:term"}}, dir);
  ASSERT_EQ(stopped.codes[0], 75) << stopped.err[0];
  EXPECT_EQ(Field(stopped.out[0], "step"), "8");
  EXPECT_TRUE(worker::PosixFileSystem()->Exists(dir + "/ck/step-00000008/DONE"));

  GroupResult resumed = RunGroup(1, args, {}, dir);
  ASSERT_EQ(resumed.codes[0], 0) << resumed.err[0];
  EXPECT_EQ(Field(resumed.out[0], "resumed_from"), "8");
  EXPECT_EQ(Field(resumed.out[0], "param_checksum"), want);
  RemoveTree(dir);
}

// What dropout draws on each GPU after a checkpoint is what it draws again after restoring it.
TEST(WorkerGpu, CheckpointRestoresEveryCudaGenerator) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch)";
  const int n = worker::VisibleCudaDevices();
  ASSERT_EQ(n, static_cast<int>(torch::cuda::device_count()));
  torch::nn::Linear lin(4, 4);
  torch::optim::AdamW opt(lin->parameters(), torch::optim::AdamWOptions(1e-3));
  auto bytes = worker::SerializeTrainState(*lin, opt, worker::TrainProgress{});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto draw = [](int i) {
    return at::rand({128}, at::TensorOptions().device(at::Device(at::kCUDA, i))).cpu();
  };
  std::vector<at::Tensor> after_save;
  for (int i = 0; i < n; ++i) after_save.push_back(draw(i));
  worker::TrainProgress p;
  ASSERT_TRUE(worker::RestoreTrainState(*bytes, at::kCPU, *lin, opt, &p).ok());
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(at::equal(draw(i), after_save[static_cast<size_t>(i)])) << "cuda:" << i;
  }
}

}  // namespace
}  // namespace ddp::testing
