#include "worker/data/global_batch.h"

#include <gtest/gtest.h>

#include <set>

namespace ddp::worker {
namespace {

BatchSettings Global(int64_t batch, int64_t global, int64_t ranks = 0, int64_t accum = 1) {
  BatchSettings b;
  b.policy = BatchPolicy::kConstantGlobal;
  b.batch_size = batch;
  b.global_batch_size = global;
  b.global_batch_ranks = ranks;
  b.grad_accum = accum;
  return b;
}

TEST(GlobalBatchTest, PolicyNamesRoundTrip) {
  for (BatchPolicy p : {BatchPolicy::kConstantGlobal, BatchPolicy::kConstantPerRank}) {
    BatchPolicy back = BatchPolicy::kConstantPerRank;
    ASSERT_TRUE(ParseBatchPolicy(BatchPolicyName(p), &back));
    EXPECT_EQ(back, p);
  }
  BatchPolicy p;
  EXPECT_FALSE(ParseBatchPolicy("constantglobal", &p));  // case-sensitive, as Kubernetes enums
  EXPECT_FALSE(ParseBatchPolicy("", &p));
}

// The global batch per policy and world size; micro-batches per rank = global / (world x batch).
TEST(GlobalBatchTest, ResolvesPerPolicy) {
  struct Row { BatchSettings b; int world; int64_t samples; };
  BatchSettings per_rank;
  per_rank.batch_size = 4;
  per_rank.grad_accum = 3;
  const Row rows[] = {
      {per_rank, 1, 12}, {per_rank, 4, 48},             // follows the size
      {Global(4, 48), 1, 48}, {Global(4, 48), 3, 48},   // fixed: 12 and 4 micro-batches per rank
      {Global(4, 48), 4, 48}, {Global(4, 48), 12, 48},  // ... 3 and 1
      {Global(4, 0, 8), 3, 32}, {Global(4, 0, 8, 2), 5, 64},  // 8 ranks' worth (x grad_accum)
  };
  for (const Row& r : rows) {
    auto g = ResolveGlobalBatch(r.b, r.world);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(*g, (GlobalBatch{r.samples, r.b.batch_size})) << "world " << r.world;
  }
}

TEST(GlobalBatchTest, RefusesWhatDoesNotSplit) {
  struct Row { BatchSettings b; int world; std::string says; };
  const Row rows[] = {
      {Global(4, 48), 5, "does not split into whole per-rank batches at world size 5"},
      {Global(4, 48), 8, "8 x batch 4 = 32 does not divide it"},
      {Global(4, 48), 24, "world size 24"},  // 2 samples per rank: less than one batch
      {Global(4, 0, 2), 3, "fewer than the 3 ranks"},
      {Global(4, 0, 0), 1, "needs a global batch"},
  };
  for (const Row& r : rows) {
    auto g = ResolveGlobalBatch(r.b, r.world);
    ASSERT_FALSE(g.ok()) << "world " << r.world;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find(r.says), std::string::npos) << g.status().ToString();
  }
}

TEST(GlobalBatchTest, UnevenWorldSizesNamesEveryFailingSize) {
  // 48 = 2^4 x 3 with batch 4: W x 4 | 48 iff W | 12.
  EXPECT_EQ(UnevenWorldSizes(48, 4, 1, 12, 1), (std::vector<int>{5, 7, 8, 9, 10, 11}));
  EXPECT_EQ(UnevenWorldSizes(48, 1, 2, 8, 2), (std::vector<int>{}));  // 2, 4, 6, 8 divide 48
  EXPECT_EQ(UnevenWorldSizes(48, 1, 3, 15, 3), (std::vector<int>{9, 15}));
}

// Micro-batch j of the global batch goes to rank j mod W: the ranks' micro-batches partition the
// global batch, and when W divides the micro-batch count each rank gets the same number.
TEST(GlobalBatchTest, RanksPartitionTheGlobalBatch) {
  DistributedSampler s(30, 5);
  const SamplerPosition pos{1, 25};  // straddles epochs 1 and 2
  const GlobalBatch g{12, 2};
  const auto all = s.Take(pos, 12);
  for (int world : {1, 2, 3, 4, 5, 6}) {
    std::vector<int64_t> together(12, -1);
    for (int r = 0; r < world; ++r) {
      auto mine = RankMicroBatches(s, pos, g, r, world);
      EXPECT_EQ(static_cast<int>(mine.size()), (6 - r + world - 1) / world) << r << "/" << world;
      for (size_t k = 0; k < mine.size(); ++k) {
        const size_t j = k * world + r;  // the global micro-batch
        ASSERT_EQ(mine[k].size(), 2u);
        together[2 * j] = mine[k][0];
        together[2 * j + 1] = mine[k][1];
      }
    }
    EXPECT_EQ(together, all) << "world " << world;
  }
}

// The loss weights: each micro-batch's mean loss is scaled, then the reducer divides by world;
// every sample then weighs 1 / global, at any world size, so the gradient is the global mean's.
TEST(GlobalBatchTest, LossScaleWeighsEverySampleOneOverTheGlobalBatch) {
  for (int world : {1, 2, 3, 4, 6, 12}) {
    const GlobalBatch g{48, 4};
    const double per_sample = MicroBatchLossScale(g, world) / world / g.micro_batch;
    EXPECT_DOUBLE_EQ(per_sample, 1.0 / 48) << "world " << world;
  }
  EXPECT_DOUBLE_EQ(MicroBatchLossScale(GlobalBatch{4 * 2 * 3, 2}, 4), 1.0 / 3);  // 1 / grad_accum
}

}  // namespace
}  // namespace ddp::worker
