// The shared reader of a worker's page and the step tracker behind status.progress.
#include "common/worker_progress.h"

#include <gtest/gtest.h>

namespace ddp::metrics {
namespace {

using std::chrono::seconds;

WallTime At(int s) { return WallTime{} + seconds(1'700'000'000 + s); }

WorkerScrape Page(double step, double total = 100) {
  WorkerScrape s;
  s.steps = step;
  s.total_steps = total;
  return s;
}

TEST(WorkerScrape, ReadsRecoveryGenerationAndStepTimePerRank) {
  const std::string page =
      "# TYPE ddp_worker_generation gauge\n"
      "ddp_worker_generation{rank=\"0\",local_rank=\"0\"} 2\n"
      "ddp_worker_generation{rank=\"1\",local_rank=\"1\"} 2\n"
      "# TYPE ddp_worker_recovery_seconds histogram\n"
      "ddp_worker_recovery_seconds_bucket{rank=\"0\",local_rank=\"0\",le=\"+Inf\"} 2\n"
      "ddp_worker_recovery_seconds_sum{rank=\"0\",local_rank=\"0\"} 7.5\n"
      "ddp_worker_recovery_seconds_count{rank=\"0\",local_rank=\"0\"} 2\n"
      "# TYPE ddp_worker_step_seconds histogram\n"
      "ddp_worker_step_seconds_bucket{rank=\"0\",local_rank=\"0\",le=\"+Inf\"} 10\n"
      "ddp_worker_step_seconds_sum{rank=\"0\",local_rank=\"0\"} 5\n"
      "ddp_worker_step_seconds_count{rank=\"0\",local_rank=\"0\"} 10\n"
      "ddp_worker_step_seconds_sum{rank=\"1\",local_rank=\"1\"} 9\n"
      "ddp_worker_step_seconds_count{rank=\"1\",local_rank=\"1\"} 10\n";
  WorkerScrape s = ParseWorkerScrape(page);
  EXPECT_EQ(s.generation, 2);
  EXPECT_EQ(s.recovery_seconds_sum, 7.5);
  EXPECT_EQ(s.recovery_seconds_count, 2);
  EXPECT_FALSE(s.steps);
  ASSERT_EQ(s.step_time_by_rank.size(), 2u);
  EXPECT_EQ(s.step_time_by_rank[0].sum_seconds, 5);
  EXPECT_EQ(s.step_time_by_rank[1].count, 10);
}

// The rendezvous pod's page as the group contract writes it (names from the contract's text).
TEST(WorkerScrape, ReadsTheGroupsMembersSparesFencedAndEndedPods) {
  const std::string page =
      "ddp_group_generation{job=\"j\",round=\"0\"} 3\n"
      "ddp_group_recoveries{job=\"j\",round=\"0\"} 2\n"
      "ddp_group_silent_pods_held{job=\"j\",round=\"0\"} 3\n"
      "ddp_group_member{job=\"j\",round=\"0\",pod=\"j-spare-0\",node_rank=\"1\"} 1\n"
      "ddp_group_member{job=\"j\",round=\"0\",pod=\"j-worker-0\",node_rank=\"0\"} 1\n"
      "ddp_group_spare{job=\"j\",round=\"0\",pod=\"j-worker-1\"} 1\n"
      "ddp_group_fenced{job=\"j\",round=\"0\",pod=\"j-worker-2\",uid=\"u2\"} 1\n"
      "ddp_group_ended{job=\"j\",round=\"0\",pod=\"j-worker-1\",uid=\"u1\",node_rank=\"1\"} 1\n"
      "ddp_group_ended{job=\"j\",round=\"0\",pod=\"j-spare-1\",uid=\"s1\",node_rank=\"-1\"} 1\n";
  const GroupScrape g = ParseWorkerScrape(page).group;
  ASSERT_TRUE(g.present);
  EXPECT_EQ(g.recoveries, 2);
  EXPECT_EQ(g.silent_held, 3);
  EXPECT_EQ(g.members, (std::map<std::string, int>{{"j-spare-0", 1}, {"j-worker-0", 0}}));
  EXPECT_EQ(g.spares, std::vector<std::string>{"j-worker-1"});
  ASSERT_EQ(g.fenced.size(), 1u);
  EXPECT_EQ(g.fenced[0].second, "u2");
  ASSERT_EQ(g.ended.size(), 2u);
  EXPECT_EQ(g.ended[0], (GroupScrape::Ended{"j-worker-1", "u1", 1}));
  EXPECT_EQ(g.ended[1], (GroupScrape::Ended{"j-spare-1", "s1", -1}));
}

TEST(WorkerScrape, AWorkerWithoutRecoverySeriesHasNone) {
  WorkerScrape s = ParseWorkerScrape("# TYPE ddp_worker_steps_total counter\nddp_worker_steps_total 4\n");
  EXPECT_EQ(s.steps, 4);
  EXPECT_FALSE(s.generation || s.recovery_seconds_sum || s.recovery_seconds_count);
  EXPECT_TRUE(s.step_time_by_rank.empty());
}

// Rank 0's page under `ddp-worker launch`: the launcher's rank/local_rank labels beside
// peer_rank; a second local rank's (empty) family and series of other ranks are not read.
TEST(WorkerScrape, ReadsEveryRanksBusyTimeFromRankZerosPage) {
  const std::string page =
      "# TYPE ddp_worker_rank_busy_seconds_total counter\n"
      "ddp_worker_rank_busy_seconds_total{rank=\"0\",local_rank=\"0\",peer_rank=\"0\"} 1.5\n"
      "ddp_worker_rank_busy_seconds_total{rank=\"0\",local_rank=\"0\",peer_rank=\"1\"} 4.25\n"
      "ddp_worker_rank_busy_seconds_total{rank=\"1\",local_rank=\"1\",peer_rank=\"3\"} 9\n"
      "# TYPE ddp_worker_rank_busy_steps_total counter\n"
      "ddp_worker_rank_busy_steps_total{rank=\"0\",local_rank=\"0\"} 12\n";
  WorkerScrape s = ParseWorkerScrape(page);
  ASSERT_EQ(s.busy_by_rank.size(), 2u);
  EXPECT_EQ(s.busy_by_rank[0].sum_seconds, 1.5);
  EXPECT_EQ(s.busy_by_rank[1].sum_seconds, 4.25);
  EXPECT_EQ(s.busy_by_rank[1].count, 12);
  EXPECT_EQ(s.busy_by_rank[1].exposed_allreduce_seconds, 0);
  EXPECT_TRUE(s.step_time_by_rank.empty());
}

TEST(WorkerScrape, BusySeriesWithoutTheirStepCountOrPeerRankAreNotRead) {
  // A page of a worker run alone (no rank label) but without the steps series: nothing.
  WorkerScrape s = ParseWorkerScrape(
      "# TYPE ddp_worker_rank_busy_seconds_total counter\n"
      "ddp_worker_rank_busy_seconds_total{peer_rank=\"0\"} 1\n");
  EXPECT_TRUE(s.busy_by_rank.empty());
  // With the step count, but one series has no peer_rank and one a malformed one.
  s = ParseWorkerScrape(
      "# TYPE ddp_worker_rank_busy_seconds_total counter\n"
      "ddp_worker_rank_busy_seconds_total{peer_rank=\"1\"} 2\n"
      "ddp_worker_rank_busy_seconds_total{peer_rank=\"x\"} 3\n"
      "ddp_worker_rank_busy_seconds_total 4\n"
      "# TYPE ddp_worker_rank_busy_steps_total counter\n"
      "ddp_worker_rank_busy_steps_total 8\n");
  ASSERT_EQ(s.busy_by_rank.size(), 1u);
  EXPECT_EQ(s.busy_by_rank[1].sum_seconds, 2);
  EXPECT_EQ(s.busy_by_rank[1].count, 8);
  // An older worker (or a torchrun image): no series, no busy times, no error.
  EXPECT_TRUE(ParseWorkerScrape("ddp_worker_steps_total 4\n").busy_by_rank.empty());
  EXPECT_TRUE(ParseWorkerScrape("not { an exposition\n").busy_by_rank.empty());
}

TEST(ProgressTracker, FirstPageHasNoRateSecondGivesOne) {
  ProgressTracker t;
  EXPECT_TRUE(t.Add(Page(10), At(0)));
  ASSERT_TRUE(t.snapshot());
  EXPECT_EQ(t.snapshot()->last_advance, At(0));
  EXPECT_FALSE(t.snapshot()->steps_per_second);
  EXPECT_FALSE(t.snapshot()->EtaSeconds());
  EXPECT_TRUE(t.Add(Page(30), At(10)));
  EXPECT_EQ(t.snapshot()->steps_per_second, 2.0);          // 20 steps in 10 s
  EXPECT_EQ(t.snapshot()->EtaSeconds(), (100 - 30) / 2.0);  // 70 steps left at 2/s
}

TEST(ProgressTracker, LastAdvanceStaysWhileTheStepDoesNot) {
  ProgressTracker t;
  t.Add(Page(10), At(0));
  EXPECT_FALSE(t.Add(Page(10), At(10)));
  EXPECT_FALSE(t.Add(WorkerScrape{}, At(20)));  // a page without a step changes nothing
  EXPECT_EQ(t.snapshot()->last_advance, At(0));
  EXPECT_EQ(t.snapshot()->scraped_at, At(10));
  EXPECT_TRUE(t.Add(Page(11), At(30)));
  EXPECT_EQ(t.snapshot()->last_advance, At(30));
  EXPECT_EQ(t.snapshot()->steps_per_second, 1.0 / 30);
}

TEST(ProgressTracker, RateIsOverTheRecentWindow) {
  ProgressTracker t;
  t.Add(Page(0, 10000), At(0));
  t.Add(Page(10, 10000), At(100));   // slow start: 0.1 step/s
  t.Add(Page(410, 10000), At(200));  // then 4 steps/s
  t.Add(Page(810, 10000), At(300));
  // The rate spans from the last point at least kRateWindow (120 s) old, (100, 10), to the
  // latest: 800 steps in 200 s. Over the whole run it would be 810 / 300 = 2.7.
  EXPECT_EQ(t.snapshot()->steps_per_second, 4.0);
}

TEST(ProgressTracker, AStepGoingBackRestartsTheRate) {
  ProgressTracker t;
  t.Add(Page(50), At(0));
  t.Add(Page(60), At(10));
  t.Add(Page(40), At(20));  // a process resumed from an older checkpoint
  EXPECT_EQ(t.snapshot()->step, 40);
  EXPECT_FALSE(t.snapshot()->steps_per_second);
}

// Issue: after worker-0 was replaced the ETA read 24 s with about 72 s left. The new rank 0's
// page shows step 0 until it resumes; kept as the rate's start, the jump from 0 to the resumed
// step counted as training. Expected rates are the steps trained over the seconds they took.
TEST(ProgressTracker, ANewRankZeroShowingStepZeroIsNotProgress) {
  ProgressTracker t;
  t.Add(Page(300, 1000), At(0));
  t.Add(Page(400, 1000), At(10));                 // 10 steps/s
  EXPECT_FALSE(t.Add(Page(0, 1000), At(20)));     // the replacement, before it resumed
  EXPECT_EQ(t.snapshot()->step, 400);             // the job is still at 400
  EXPECT_EQ(t.snapshot()->last_advance, At(10));  // and has not advanced (hang clock)
  EXPECT_EQ(t.snapshot()->steps_per_second, 10.0);
  // It resumed from the checkpoint of step 200: the step went back, the rate starts over there.
  EXPECT_TRUE(t.Add(Page(200, 1000), At(30)));
  EXPECT_FALSE(t.snapshot()->steps_per_second);
  EXPECT_FALSE(t.snapshot()->EtaSeconds());       // no ETA rather than a false one
  EXPECT_TRUE(t.Add(Page(220, 1000), At(40)));
  EXPECT_EQ(t.snapshot()->steps_per_second, 2.0);                // 20 steps in 10 s
  EXPECT_EQ(t.snapshot()->EtaSeconds(), (1000 - 220) / 2.0);
}

TEST(ProgressTracker, AResumeFromStepZeroIsNotARate) {
  // A new round's rank 0 (a fresh tracker): 0 while it loads, then the checkpoint's 400 a second
  // later. Before: 400 steps/s and an ETA of 1.5 s. The rate starts at 400.
  ProgressTracker t;
  EXPECT_TRUE(t.Add(Page(0, 1000), At(0)));
  EXPECT_EQ(t.snapshot()->step, 0);  // a job at step 0 shows it (and can be hung there)
  EXPECT_TRUE(t.Add(Page(400, 1000), At(1)));
  EXPECT_FALSE(t.snapshot()->steps_per_second);
  EXPECT_TRUE(t.Add(Page(410, 1000), At(6)));
  EXPECT_EQ(t.snapshot()->steps_per_second, 2.0);  // 10 steps in 5 s
  EXPECT_EQ(t.snapshot()->EtaSeconds(), (1000 - 410) / 2.0);
}

}  // namespace
}  // namespace ddp::metrics
