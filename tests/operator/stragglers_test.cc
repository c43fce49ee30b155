// Straggler detection over successive reads of every rank's cumulative step time.
#include "operator/plan/stragglers.h"

#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <chrono>

namespace ddp::plan {
namespace {

using Reads = std::map<int, metrics::RankStepTime>;

// Every rank ran `steps` more steps of 1 s wall time each; rank r spent busy[r] s of each busy
// and the rest waiting for the all-reduce.
class Ranks {
 public:
  explicit Ranks(std::vector<double> busy) : busy_(std::move(busy)), total_(busy_.size()) {}
  Reads Next(int steps = 10) {
    for (size_t r = 0; r < busy_.size(); ++r) {
      total_[r].count += steps;
      total_[r].sum_seconds += steps * 1.0;
      total_[r].exposed_allreduce_seconds += steps * (1.0 - busy_[r]);
    }
    Reads out;
    for (size_t r = 0; r < busy_.size(); ++r) out[static_cast<int>(r)] = total_[r];
    return out;
  }
  std::vector<double> busy_;

 private:
  std::vector<metrics::RankStepTime> total_;
};

TEST(StragglerDetector, ASlowRankIsReportedOnceAfterTheSetNumberOfReads) {
  StragglerDetector d({1.5, 3});
  Ranks ranks({0.1, 0.1, 0.1, 0.5});
  EXPECT_TRUE(d.Add(ranks.Next()).empty());  // the first read is the baseline
  EXPECT_TRUE(d.Add(ranks.Next()).empty());  // slow once
  EXPECT_TRUE(d.Add(ranks.Next()).empty());  // twice
  std::vector<Straggler> got = d.Add(ranks.Next());  // three times: reported
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rank, 3);
  EXPECT_NEAR(got[0].busy_seconds, 0.5, 1e-9);
  EXPECT_NEAR(got[0].others_median_seconds, 0.1, 1e-9);
  EXPECT_EQ(got[0].Describe(),
            "rank 3 is a straggler: 0.500 s busy per step, 5.0x the median of the other ranks "
            "(0.100 s)");
  EXPECT_TRUE(d.Add(ranks.Next()).empty());  // still slow: no second report
  EXPECT_EQ(d.flagged(), 1u);
}

TEST(StragglerDetector, RecoveringResetsSoASecondEpisodeIsReportedAgain) {
  StragglerDetector d({1.5, 2});
  Ranks ranks({0.2, 0.2, 0.6});
  d.Add(ranks.Next());
  d.Add(ranks.Next());
  ASSERT_EQ(d.Add(ranks.Next()).size(), 1u);
  ranks.busy_[2] = 0.25;  // within 1.5x of 0.2
  EXPECT_TRUE(d.Add(ranks.Next()).empty());
  EXPECT_EQ(d.flagged(), 0u);
  ranks.busy_[2] = 0.6;
  EXPECT_TRUE(d.Add(ranks.Next()).empty());
  ASSERT_EQ(d.Add(ranks.Next()).size(), 1u);
}

TEST(StragglerDetector, JustBelowTheFactorIsNotAStraggler) {
  StragglerDetector d({1.5, 1});
  Ranks ranks({0.2, 0.2, 0.29});  // 1.45x
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(d.Add(ranks.Next()).empty());
}

TEST(StragglerDetector, TwoRanksCompareWithEachOther) {
  StragglerDetector d({1.5, 1});
  Ranks ranks({0.1, 0.3});
  d.Add(ranks.Next());
  std::vector<Straggler> got = d.Add(ranks.Next());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rank, 1);
}

TEST(StragglerDetector, NoStepsOrOneRankDecidesNothing) {
  StragglerDetector d({1.5, 1});
  Ranks one({0.9});
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(d.Add(one.Next()).empty());
  StragglerDetector idle({1.5, 1});
  Ranks ranks({0.1, 0.9});
  Reads r = ranks.Next();
  idle.Add(r);
  EXPECT_TRUE(idle.Add(r).empty());  // no step since the last read: no busy time to compare
}

// A restarted process starts its counters from zero and may pass the old step count by the next
// read: rank 2's sums went back, so that read gives it no interval (not a busy time of 0, which
// would end its streak); detection goes on from the new baseline.
TEST(StragglerDetector, CountersGoingBackAreARestartNotANegativeInterval) {
  StragglerDetector d({1.5, 2});
  Ranks ranks({0.1, 0.1, 0.5});
  d.Add(ranks.Next(10));
  d.Add(ranks.Next(10));  // rank 2 slow once
  Ranks restarted({0.1, 0.1, 0.5});
  Reads after = restarted.Next(30);  // more steps than before, but smaller sums: a reset
  after[2].sum_seconds = 1;          // rank 2's counters below its last read's
  after[2].exposed_allreduce_seconds = 0.5;
  EXPECT_TRUE(d.Add(after).empty());
  EXPECT_EQ(d.flagged(), 0u);
  // From the new baseline, rank 2 is slow twice more (its streak survived the gap): reported.
  Reads next = restarted.Next(10);
  next[2] = {after[2].sum_seconds + 10, after[2].count + 10,
             after[2].exposed_allreduce_seconds + 10 * 0.5};
  std::vector<Straggler> got = d.Add(next);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rank, 2);
  EXPECT_NEAR(got[0].busy_seconds, 0.5, 1e-9);
}

// Rank 0's per-rank busy series (common/worker_progress.h's busy_by_rank) carry no all-reduce
// wait: busy time per step is sum / count.
TEST(StragglerDetector, WorksOnBusyTimeAlreadyNetOfTheWait) {
  StragglerDetector d({1.5, 1});
  d.Add({{0, {1.0, 10, 0}}, {1, {1.0, 10, 0}}, {2, {4.0, 10, 0}}});
  std::vector<Straggler> got = d.Add({{0, {2.0, 20, 0}}, {1, {2.0, 20, 0}}, {2, {8.0, 20, 0}}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rank, 2);
  EXPECT_NEAR(got[0].busy_seconds, 0.4, 1e-9);
  EXPECT_NEAR(got[0].others_median_seconds, 0.1, 1e-9);
}

// The Event names the pod of the rank: rank / nproc_per_node.
TEST(StragglerEvent, NamesThePodOfTheRankAndSaysNotRestarted) {
  api::DDPJob job;
  job.namespace_name = "ml";
  job.name = "gpt";
  job.spec.nproc_per_node = 4;
  const Straggler s{6, 0.3, 0.1};
  const Event e = StragglerEvent(job, s);
  EXPECT_EQ(e.type, "Warning");
  EXPECT_EQ(e.reason, "Straggler");
  EXPECT_EQ(e.message, s.Describe() + "; pod gpt-worker-1 (reported, not restarted)");
  job.spec.nproc_per_node = 1;
  EXPECT_NE(StragglerEvent(job, s).message.find("pod gpt-worker-6 "), std::string::npos);
}

// The detector's median of the others, against the definition computed the slow way: for every
// rank, copy the other ranks' values, sort, take the middle.
TEST(StragglerDetector, OneSortGivesEveryRanksMedianOfTheOthers) {
  for (int n : {2, 3, 4, 5, 8, 9}) {
    std::vector<double> busy;
    for (int r = 0; r < n; ++r) busy.push_back(0.1 + 0.37 * ((r * 7) % n) / n);
    busy[n - 1] = 0.9;  // one slow rank, and ties elsewhere when n is small
    if (n > 3) busy[1] = busy[2];
    Ranks ranks(busy);
    StragglerDetector d({1.01, 1});
    d.Add(ranks.Next());
    for (const Straggler& s : d.Add(ranks.Next())) {
      std::vector<double> others;
      for (int r = 0; r < n; ++r) {
        if (r != s.rank) others.push_back(busy[r]);
      }
      std::sort(others.begin(), others.end());
      const size_t m = others.size();
      const double want = m % 2 ? others[m / 2] : (others[m / 2 - 1] + others[m / 2]) / 2;
      EXPECT_NEAR(s.others_median_seconds, want, 1e-9) << "n " << n << " rank " << s.rank;
      EXPECT_NEAR(s.busy_seconds, busy[s.rank], 1e-9);
    }
  }
}

// A page may claim more ranks than the job has: those are not read.
TEST(StragglerDetector, RanksPastTheWorldSizeAreIgnored) {
  StragglerDetector d({1.5, 1});
  Ranks ranks({0.1, 0.1, 0.1, 0.9});
  d.Add(ranks.Next(), 3);
  EXPECT_TRUE(d.Add(ranks.Next(), 3).empty()) << "rank 3 is outside a world of 3";
  StragglerDetector all({1.5, 1});
  all.Add(ranks.Next());
  EXPECT_EQ(all.Add(ranks.Next()).size(), 1u);
}

// 8k ranks took 4.8 s with a sort per rank; one sort per read takes milliseconds.
TEST(StragglerDetector, EightThousandRanksAreOneSort) {
  std::vector<double> busy(8192, 0.1);
  busy[4000] = 0.5;
  Ranks ranks(busy);
  StragglerDetector d({1.5, 1});
  d.Add(ranks.Next());
  // This thread's CPU time: a cost bound that other processes' load does not move.
  auto cpu = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
  };
  const double start = cpu();
  std::vector<Straggler> got = d.Add(ranks.Next());
  const double secs = cpu() - start;
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].rank, 4000);
  EXPECT_LT(secs, 0.5);
}

}  // namespace
}  // namespace ddp::plan
