// Reading rank 0's progress from a /metrics page.
#include "operator/local/metrics_text.h"

#include <gtest/gtest.h>

namespace ddp::controller::local {
namespace {

TEST(WorkerProgress, ReadsUnlabelledSeries) {
  const std::string page =
      "# HELP ddp_worker_steps_total Steps done.\n"
      "# TYPE ddp_worker_steps_total counter\n"
      "ddp_worker_steps_total 120\n"
      "# TYPE ddp_worker_loss gauge\n"
      "ddp_worker_loss 2.5\n"
      "# TYPE ddp_worker_tokens_per_second gauge\n"
      "ddp_worker_tokens_per_second 1234.5\n"
      "# TYPE ddp_worker_total_steps gauge\n"
      "ddp_worker_total_steps 200\n";
  WorkerProgress p = ParseWorkerProgress(page);
  ASSERT_TRUE(p.steps && p.loss && p.tokens_per_second && p.total_steps);
  EXPECT_EQ(*p.steps, 120);
  EXPECT_EQ(*p.loss, 2.5);
  EXPECT_EQ(*p.tokens_per_second, 1234.5);
  EXPECT_EQ(*p.total_steps, 200);
}

TEST(WorkerProgress, PrefersRankZeroOfALaunchPage) {
  const std::string page =
      "# TYPE ddp_worker_loss gauge\n"
      "ddp_worker_loss{rank=\"1\",local_rank=\"1\"} 9\n"
      "ddp_worker_loss{rank=\"0\",local_rank=\"0\"} 3\n";
  WorkerProgress p = ParseWorkerProgress(page);
  ASSERT_TRUE(p.loss);
  EXPECT_EQ(*p.loss, 3);
  EXPECT_FALSE(p.steps);
}

TEST(WorkerProgress, MissingOrBrokenPageIsEmpty) {
  EXPECT_FALSE(ParseWorkerProgress("").steps);
  EXPECT_FALSE(ParseWorkerProgress("ddp_worker_steps_total{oops 3\n").steps);
}

}  // namespace
}  // namespace ddp::controller::local
