// GPU e2e: a short CUDA run (bf16 autocast, NCCL when built with it). Skips without a device.
#include <gtest/gtest.h>

#include <filesystem>

#include <torch/cuda.h>

#include "tests/worker/e2e_util.h"

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

}  // namespace
}  // namespace ddp::testing
