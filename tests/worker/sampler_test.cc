#include "worker/data/sampler.h"

#include "worker/data/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace ddp::worker {
namespace {

// For (N, W): shards have equal length ceil(N/W), their union covers every example, and without
// padding (N % W == 0) they are disjoint.
TEST(SamplerTest, ShardsEqualLengthCoverAndDisjoint) {
  struct Row { int64_t n; int w; };
  for (Row r : {Row{12, 3}, Row{10, 3}, Row{7, 2}, Row{5, 5}, Row{3, 4}, Row{1000, 1}}) {
    std::multiset<int64_t> all;
    const int64_t expect_len = (r.n + r.w - 1) / r.w;
    for (int rank = 0; rank < r.w; ++rank) {
      DistributedSampler s(r.n, rank, r.w, /*seed=*/7);
      auto idx = s.EpochIndices(0);
      EXPECT_EQ(static_cast<int64_t>(idx.size()), expect_len) << r.n << "/" << r.w;
      all.insert(idx.begin(), idx.end());
    }
    for (int64_t i = 0; i < r.n; ++i) EXPECT_GE(all.count(i), 1u) << "example " << i << " unseen";
    // Padding repeats exactly expect_len * W - N examples.
    EXPECT_EQ(static_cast<int64_t>(all.size()), expect_len * r.w);
    if (r.n % r.w == 0) {
      for (int64_t i = 0; i < r.n; ++i) EXPECT_EQ(all.count(i), 1u);
    }
  }
}

TEST(SamplerTest, EpochsReshuffleDeterministically) {
  DistributedSampler a(100, 1, 2, 42), b(100, 1, 2, 42), c(100, 1, 2, 43);
  EXPECT_EQ(a.EpochIndices(3), b.EpochIndices(3));
  EXPECT_NE(a.EpochIndices(0), a.EpochIndices(1));
  EXPECT_NE(a.EpochIndices(0), c.EpochIndices(0));
  auto e0 = a.EpochIndices(0), e1 = a.EpochIndices(1);
  // Same rank, different epoch: a different order of (mostly) different examples.
  EXPECT_NE(e0, e1);
}

// Reference Fisher-Yates shuffle of [0, n), written independently of the sampler.
std::vector<int64_t> ReferenceShuffle(int64_t n, uint64_t generator_seed) {
  std::vector<int64_t> p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  SplitMix64 g(generator_seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[g.Next() % static_cast<uint64_t>(i + 1)]);
  return p;
}

// Each epoch's permutation comes from a generator seeded by EpochSeed(seed, epoch).
TEST(SamplerTest, EpochPermutationUsesEpochSeed) {
  DistributedSampler one(50, 0, 1, 9);
  for (int64_t e : {0, 1, 7}) EXPECT_EQ(one.EpochIndices(e), ReferenceShuffle(50, EpochSeed(9, e)));
}

// Epoch e+1's generator is not epoch e's shifted by a few draws (with seed + e * gamma it was
// shifted by exactly one, so the two epochs' shuffles were near-copies).
TEST(SamplerTest, NextEpochStreamIsNotAShiftOfThisOne) {
  for (uint64_t seed : {0ull, 42ull, 0x9e3779b97f4a7c15ull}) {
    for (int64_t e = 0; e < 20; ++e) {
      SplitMix64 cur(EpochSeed(seed, e));
      std::set<uint64_t> draws;
      for (int k = 0; k < 64; ++k) draws.insert(cur.Next());
      SplitMix64 next(EpochSeed(seed, e + 1));
      EXPECT_EQ(draws.count(next.Next()), 0u) << "seed " << seed << " epoch " << e;
    }
  }
  // Behaviour: the permutations of consecutive epochs disagree in most places.
  DistributedSampler one(1000, 0, 1, 42);
  auto a = one.EpochIndices(4), b = one.EpochIndices(5);
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, 20);  // independent permutations agree in ~1 place on average
}

// One rank with batch W*b sees the same examples per step as W ranks with batch b together:
// the property the "N ranks == 1 rank with N times the batch" e2e test relies on.
TEST(SamplerTest, WRanksOfBatchBEqualOneRankOfBatchWB) {
  const int w = 3;
  const int64_t b = 4, n = 120;
  DistributedSampler one(n, 0, 1, 5);
  SamplerPosition p1;
  std::vector<SamplerPosition> pw(w);
  for (int step = 0; step < 25; ++step) {  // crosses epoch boundaries
    auto big = one.NextBatch(w * b, &p1);
    std::multiset<int64_t> together;
    for (int r = 0; r < w; ++r) {
      DistributedSampler s(n, r, w, 5);
      auto part = s.NextBatch(b, &pw[r]);
      together.insert(part.begin(), part.end());
    }
    EXPECT_EQ(std::multiset<int64_t>(big.begin(), big.end()), together) << "step " << step;
  }
}

TEST(SamplerTest, PositionResumes) {
  DistributedSampler s(50, 0, 2, 9);
  SamplerPosition p;
  std::vector<std::vector<int64_t>> straight;
  for (int i = 0; i < 12; ++i) straight.push_back(s.NextBatch(4, &p));
  SamplerPosition q;
  for (int i = 0; i < 5; ++i) s.NextBatch(4, &q);
  SamplerPosition saved = q;
  DistributedSampler fresh(50, 0, 2, 9);  // a new process after a restart
  for (int i = 5; i < 12; ++i) EXPECT_EQ(fresh.NextBatch(4, &saved), straight[i]) << i;
}

TEST(SamplerTest, BatchesNeverStraddleEpochs) {
  DistributedSampler s(10, 0, 1, 1);
  SamplerPosition p;
  s.NextBatch(4, &p);
  s.NextBatch(4, &p);
  EXPECT_EQ(p, (SamplerPosition{0, 8}));
  auto third = s.NextBatch(4, &p);  // only 2 left: next epoch
  EXPECT_EQ(p, (SamplerPosition{1, 4}));
  auto e1 = s.EpochIndices(1);
  EXPECT_EQ(third, std::vector<int64_t>(e1.begin(), e1.begin() + 4));
}

TEST(SamplerTest, RescaleKeepsFractionOfEpoch) {
  DistributedSampler four(100, 0, 4, 1);  // 25 per rank
  EXPECT_EQ(four.Rescale({2, 20}, 2), (SamplerPosition{2, 10}));  // 40 of 100 seen
  EXPECT_EQ(four.Rescale({2, 20}, 4), (SamplerPosition{2, 20}));
  DistributedSampler one(100, 0, 1, 1);
  EXPECT_EQ(one.Rescale({0, 10}, 4), (SamplerPosition{0, 40}));
}

}  // namespace
}  // namespace ddp::worker
