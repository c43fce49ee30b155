// A tenant's page before it reaches a status: the parser's caps and its cost on a page with
// many names, and the value checks (NaN, infinities, negatives, overflow).
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <cmath>
#include <string>

#include "common/exposition.h"
#include "common/worker_progress.h"

namespace ddp::metrics {
namespace {

// This thread's CPU seconds: a cost bound that other processes' load does not move.
double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

// `n` distinct metric names, one sample each: the page that was quadratic to parse.
std::string ManyNames(int n) {
  std::string page;
  for (int i = 0; i < n; ++i) page += "m" + std::to_string(i) + " 1\n";
  return page;
}

TEST(PageLimits, EightyThousandNamesParseInLinearTime) {
  const std::string page = ManyNames(80000);  // ~700 KB, as in the issue (39 s before)
  const double start = ThreadCpuSeconds();
  auto fams = ParseExposition(page);
  const double secs = ThreadCpuSeconds() - start;
  ASSERT_TRUE(fams.ok());
  ASSERT_EQ(fams->size(), 80000u);
  EXPECT_EQ((*fams)[79999].name, "m79999");
  // Linear: tens of milliseconds of CPU (a scan per line is 3.2e9 string compares: 39 s).
  EXPECT_LT(secs, 2.0);
}

TEST(PageLimits, FamiliesAreFoundAgainWhenTheirSamplesAreInterleaved) {
  auto fams = ParseExposition("a 1\nb 2\na{x=\"1\"} 3\n# TYPE b counter\nb 4\n");
  ASSERT_TRUE(fams.ok());
  ASSERT_EQ(fams->size(), 2u);
  EXPECT_EQ((*fams)[0].samples.size(), 2u);
  EXPECT_EQ((*fams)[1].samples.size(), 2u);
  EXPECT_EQ((*fams)[1].type, "counter");
}

TEST(PageLimits, APagePastACapIsRefusedNamingIt) {
  const std::string page = ManyNames(100);
  EXPECT_TRUE(ParseExposition(page, {page.size(), 100}).ok());
  auto bytes = ParseExposition(page, {page.size() - 1, 0});
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(bytes.status().message().find("bytes"), std::string::npos);
  auto series = ParseExposition(page, {0, 99});
  ASSERT_FALSE(series.ok());
  EXPECT_NE(series.status().message().find("more than 99 series"), std::string::npos);
  // Families without samples count too: 80k TYPE lines are as costly as 80k samples.
  std::string types;
  for (int i = 0; i < 200; ++i) types += "# TYPE t" + std::to_string(i) + " gauge\n";
  EXPECT_FALSE(ParseExposition(types, {0, 100}).ok());
  // Samples of one family count one by one.
  std::string one;
  for (int i = 0; i < 200; ++i) one += "x{i=\"" + std::to_string(i) + "\"} 1\n";
  EXPECT_FALSE(ParseExposition(one, {0, 100}).ok());
}

// The overflow: ddp_group_recoveries 4294967291 made status.recoveries -5.
TEST(PageChecks, AnOverflowingGroupCountRefusesThePage) {
  const std::string page =
      "ddp_group_generation 1\nddp_group_recoveries 4294967291\nddp_group_budget_left 3\n";
  auto s = ReadWorkerPage(page);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("ddp_group_recoveries"), std::string::npos)
      << s.status().message();
  EXPECT_FALSE(ParseWorkerScrape(page).group.present);  // nothing of it is kept
}

TEST(PageChecks, EveryBadCountIsRefused) {
  for (const std::string page : {
           "ddp_worker_steps_total NaN\n", "ddp_worker_steps_total +Inf\n",
           "ddp_worker_steps_total -1\n", "ddp_worker_steps_total 1.5\n",
           "ddp_worker_steps_total 1e300\n", "ddp_worker_total_steps -Inf\n",
           "ddp_worker_tokens_per_second -3\n", "ddp_worker_tokens_per_second +Inf\n",
           "ddp_worker_generation 2e9\n",
           "ddp_group_generation -1\n", "ddp_group_generation 1\nddp_group_recoveries NaN\n",
           "ddp_group_generation 1\nddp_group_budget_left -1e12\n",
           "ddp_group_generation 1\nddp_group_silent_pods_held -1\n",
           "# TYPE ddp_worker_step_seconds histogram\nddp_worker_step_seconds_sum -4\n",
           "ddp_worker_exposed_allreduce_seconds_total NaN\n",
           "ddp_worker_rank_busy_steps_total 5\n"
           "ddp_worker_rank_busy_seconds_total{peer_rank=\"1\"} -Inf\n"}) {
    auto s = ReadWorkerPage(page);
    EXPECT_FALSE(s.ok()) << page;
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), StatusCode::kFailedPrecondition) << page;
    }
  }
}

TEST(PageChecks, GoodValuesPassAndADivergedLossIsDroppedNotRefused) {
  auto s = ReadWorkerPage(
      "ddp_worker_steps_total 9007199254740992\nddp_worker_total_steps 0\n"
      "ddp_worker_loss NaN\nddp_worker_tokens_per_second NaN\n"
      "ddp_group_generation 0\nddp_group_recoveries 1000000000\nddp_group_budget_left -2\n");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->steps, 9007199254740992.0);
  EXPECT_FALSE(s->loss);
  EXPECT_FALSE(s->tokens_per_second);
  EXPECT_EQ(s->group.recoveries, 1e9);
  auto loss = ReadWorkerPage("ddp_worker_steps_total 3\nddp_worker_loss -Inf\n");
  ASSERT_TRUE(loss.ok());
  EXPECT_FALSE(loss->loss);
}

TEST(PageChecks, RankLabelsPastTheBoundAreNotRanks) {
  auto s = ReadWorkerPage(
      "ddp_worker_rank_busy_steps_total 5\n"
      "ddp_worker_rank_busy_seconds_total{peer_rank=\"99999999999\"} 1\n"
      "ddp_worker_rank_busy_seconds_total{peer_rank=\"2\"} 1\n");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->busy_by_rank.size(), 1u);
  EXPECT_EQ(s->busy_by_rank.begin()->first, 2);
}

}  // namespace
}  // namespace ddp::metrics
