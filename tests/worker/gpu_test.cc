// GPU e2e: a short CUDA run (bf16 autocast, NCCL when built with it). Skips without a device.
#include <gtest/gtest.h>

#include <filesystem>

#include <ATen/ops/rand.h>
#include <torch/cuda.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>

#include "tests/worker/e2e_util.h"
#include "worker/train/train_state.h"

namespace ddp::testing {
namespace {

TEST(WorkerGpu, OneRankTrainsOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch)";
  const std::string dir = MakeTempDir("ddp-gpu");
  auto args = TinyArgs(20, 16);
  for (auto& a : args) {
    if (a == "cpu") a = "cuda";
  }
  GroupResult g = RunGroup(1, args, {}, dir);
  EXPECT_EQ(g.codes[0], 0) << g.err[0];
  EXPECT_EQ(Field(g.out[0], "param_checksum").size(), 16u) << g.out[0];
  std::filesystem::remove_all(dir);
}

TEST(WorkerGpu, TwoRanksAgreeOverNccl) {
  if (torch::cuda::device_count() < 2) GTEST_SKIP() << "needs 2 CUDA devices (NCCL: one rank per GPU)";
  const std::string dir = MakeTempDir("ddp-gpu2");
  auto args = TinyArgs(10, 16);
  for (auto& a : args) {
    if (a == "cpu") a = "cuda";
  }
  GroupResult g = RunGroup(2, args, {}, dir);
  ASSERT_EQ(g.codes[0], 0) << g.err[0];
  ASSERT_EQ(g.codes[1], 0) << g.err[1];
  EXPECT_EQ(Field(g.out[0], "param_checksum"), Field(g.out[1], "param_checksum"));
  std::filesystem::remove_all(dir);
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
