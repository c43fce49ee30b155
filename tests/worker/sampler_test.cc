#include "worker/data/sampler.h"

#include "worker/data/global_batch.h"
#include "worker/data/rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace ddp::worker {
namespace {

// Reference Fisher-Yates shuffle of [0, n), written independently of the sampler.
std::vector<int64_t> ReferenceShuffle(int64_t n, uint64_t generator_seed) {
  std::vector<int64_t> p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  SplitMix64 g(generator_seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[g.Next() % static_cast<uint64_t>(i + 1)]);
  return p;
}

// The reference stream: epoch 0's shuffle, then epoch 1's, ... as (epoch, example) pairs.
std::vector<std::pair<int64_t, int64_t>> ReferenceStream(int64_t n, uint64_t seed, int epochs) {
  std::vector<std::pair<int64_t, int64_t>> s;
  for (int e = 0; e < epochs; ++e) {
    for (int64_t i : ReferenceShuffle(n, EpochSeed(seed, e))) s.push_back({e, i});
  }
  return s;
}

// Each epoch's order comes from a generator seeded by EpochSeed(seed, epoch).
TEST(SamplerTest, EpochOrderUsesEpochSeed) {
  DistributedSampler s(50, 9);
  for (int64_t e : {0, 1, 7}) EXPECT_EQ(s.EpochOrder(e), ReferenceShuffle(50, EpochSeed(9, e)));
  DistributedSampler other(50, 10);
  EXPECT_NE(s.EpochOrder(0), other.EpochOrder(0));
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
  DistributedSampler one(1000, 42);
  auto a = one.EpochOrder(4), b = one.EpochOrder(5);
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  EXPECT_LT(same, 20);  // independent permutations agree in ~1 place on average
}

// Take reads the stream across epoch ends; Advance moves by any count and stays normalized.
TEST(SamplerTest, TakeAndAdvanceFollowTheStream) {
  const int64_t n = 10;
  DistributedSampler s(n, 3);
  const auto ref = ReferenceStream(n, 3, 4);
  struct Row { SamplerPosition pos; int64_t count; };
  for (Row r : {Row{{0, 0}, 4}, Row{{0, 8}, 5}, Row{{1, 9}, 1}, Row{{0, 3}, 25}, Row{{2, 0}, 0}}) {
    const int64_t at = r.pos.epoch * n + r.pos.offset;
    std::vector<int64_t> want;
    for (int64_t k = 0; k < r.count; ++k) want.push_back(ref[at + k].second);
    EXPECT_EQ(s.Take(r.pos, r.count), want) << r.pos.epoch << ":" << r.pos.offset << "+" << r.count;
    const int64_t end = at + r.count;
    EXPECT_EQ(s.Advance(r.pos, r.count), (SamplerPosition{end / n, end % n}));
  }
}

// Runs `steps` steps at each world size in `worlds`, dealing every step's global batch to the
// ranks, and checks that the ranks' samples of each step together are exactly the next
// global-batch-many samples of the reference stream: over the whole run, every example of every
// epoch exactly once, across the resizes. Returns the samples consumed.
int64_t CheckExactlyOnce(int64_t n, const BatchSettings& b, const std::vector<int>& worlds,
                         int steps) {
  const uint64_t seed = 17;
  DistributedSampler s(n, seed);
  const auto ref = ReferenceStream(n, seed, 40);
  SamplerPosition pos;
  int64_t consumed = 0;
  std::map<std::pair<int64_t, int64_t>, int> seen;  // (epoch, example) -> times
  for (int world : worlds) {
    auto g = ResolveGlobalBatch(b, world);
    EXPECT_TRUE(g.ok()) << g.status().ToString();
    if (!g.ok()) return consumed;
    for (int step = 0; step < steps; ++step) {
      std::multiset<int64_t> step_samples;
      for (int rank = 0; rank < world; ++rank) {
        for (const auto& micro : RankMicroBatches(s, pos, *g, rank, world)) {
          EXPECT_EQ(static_cast<int64_t>(micro.size()), b.batch_size);
          step_samples.insert(micro.begin(), micro.end());
        }
      }
      std::multiset<int64_t> want;
      for (int64_t k = consumed; k < consumed + g->samples; ++k) {
        want.insert(ref[k].second);
        ++seen[ref[k]];
      }
      EXPECT_EQ(step_samples, want) << "world " << world << " step " << step;
      consumed += g->samples;
      pos = s.Advance(pos, g->samples);
    }
  }
  EXPECT_EQ(pos, (SamplerPosition{consumed / n, consumed % n}));
  // Derived from n alone: every complete epoch saw all n examples once, the last one its first
  // consumed % n once each, and nothing twice.
  for (int64_t e = 0; e <= consumed / n; ++e) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) {
      auto it = seen.find({e, i});
      if (it == seen.end()) continue;
      EXPECT_EQ(it->second, 1) << "epoch " << e << " example " << i;
      ++count;
    }
    EXPECT_EQ(count, e < consumed / n ? n : consumed % n) << "epoch " << e;
  }
  return consumed;
}

// The run: 4 -> 3 -> 2 -> 4 ranks, several epochs (n = 100 is no multiple of any global
// batch, so batches straddle epoch ends), under both policies.
TEST(SamplerTest, ShrinksAndGrowthsSeeEverySampleOfEveryEpochExactlyOnce) {
  BatchSettings global;
  global.policy = BatchPolicy::kConstantGlobal;
  global.batch_size = 2;
  global.global_batch_size = 24;  // 3, 4, 6 micro-batches per rank at 4, 3, 2 ranks
  EXPECT_EQ(CheckExactlyOnce(100, global, {4, 3, 2, 4}, 7), 4 * 7 * 24);
  BatchSettings per_rank;
  per_rank.batch_size = 3;
  per_rank.grad_accum = 2;  // the global batch follows the size: 24, 18, 12, 24
  EXPECT_EQ(CheckExactlyOnce(100, per_rank, {4, 3, 2, 4}, 9), 9 * (24 + 18 + 12 + 24));
  // A derived global batch (4 ranks' worth) at sizes that do not divide it: uneven, still once.
  BatchSettings derived = global;
  derived.global_batch_size = 0;
  derived.global_batch_ranks = 4;
  EXPECT_EQ(CheckExactlyOnce(37, derived, {4, 3, 1, 2}, 11), 4 * 11 * 8);
}

// Resuming from a saved position (a new process, any world size) continues the same stream.
TEST(SamplerTest, PositionResumesInAFreshSampler) {
  DistributedSampler a(50, 9);
  SamplerPosition p = a.Advance({}, 37);
  const auto next = a.Take(p, 20);
  DistributedSampler fresh(50, 9);
  EXPECT_EQ(fresh.Take(fresh.Restore(p), 20), next);
}

// Hostile or stale saved positions become valid ones.
TEST(SamplerTest, RestoreClampsAPositionToTheDataset) {
  DistributedSampler s(10, 1);
  EXPECT_EQ(s.Restore({2, 4}), (SamplerPosition{2, 4}));
  EXPECT_EQ(s.Restore({-3, -1}), (SamplerPosition{0, 0}));
  EXPECT_EQ(s.Restore({2, 10}), (SamplerPosition{3, 0}));  // the dataset shrank since
}

// The per-rank layout of older checkpoints: W ranks at offset o had consumed the order's first
// o * W positions; an epoch whose positions (with padding) were all taken is over.
TEST(SamplerTest, PerRankOffsetsOfOlderCheckpointsBecomeGlobalPositions) {
  DistributedSampler s(100, 1);
  EXPECT_EQ(s.FromPerRankOffset(2, 20, 2), (SamplerPosition{2, 40}));
  EXPECT_EQ(s.FromPerRankOffset(2, 10, 4), (SamplerPosition{2, 40}));
  EXPECT_EQ(s.FromPerRankOffset(0, 33, 3), (SamplerPosition{0, 99}));
  EXPECT_EQ(s.FromPerRankOffset(0, 34, 3), (SamplerPosition{1, 0}));  // ceil(100/3) = 34: done
  EXPECT_EQ(s.FromPerRankOffset(1, int64_t{1} << 62, 8), (SamplerPosition{2, 0}));
  EXPECT_EQ(s.FromPerRankOffset(1, -5, 2), (SamplerPosition{1, 0}));
}

}  // namespace
}  // namespace ddp::worker
