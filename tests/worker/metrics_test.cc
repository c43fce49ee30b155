#include "worker/train/worker_metrics.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "common/exposition.h"
#include "common/worker_progress.h"
#include "worker/comm/factory.h"

namespace ddp::worker {
namespace {

WorkerMetrics& Filled(WorkerMetrics& m) {
  m.steps.Inc(3);
  m.tokens.Inc(3 * 512);
  m.loss.Set(2.5);
  m.step_seconds.Observe(0.02);
  m.checkpoint_seconds.Observe(0.3);
  m.allreduce_bytes.Inc(1 << 20);
  return m;
}

TEST(WorkerMetricsTest, BriefNamesPresent) {
  WorkerMetrics m({"ml/gpt", 1, 0, 2, 4});
  auto fams = metrics::ParseExposition(Filled(m).Render());
  ASSERT_TRUE(fams.ok()) << fams.status().ToString();
  for (const char* name : {"ddp_worker_steps_total", "ddp_worker_samples_total", "ddp_worker_tokens_total",
                           "ddp_worker_loss", "ddp_worker_learning_rate", "ddp_worker_total_steps",
                           "ddp_worker_tokens_per_second", "ddp_worker_step_seconds_count",
                           "ddp_worker_allreduce_bytes_total", "ddp_worker_allreduce_seconds_total",
                           "ddp_worker_exposed_allreduce_seconds_total", "ddp_worker_checkpoint_seconds_count",
                           "ddp_worker_checkpoint_last_step", "ddp_worker_checkpoint_timestamp_seconds",
                           "ddp_worker_checkpoint_failures_total"}) {
    EXPECT_TRUE(metrics::FindSample(*fams, name).has_value()) << name;
  }
  EXPECT_EQ(metrics::FindSample(*fams, "ddp_worker_steps_total"), 3.0);
  EXPECT_EQ(metrics::FindSample(*fams, "ddp_worker_info",
                                {{"job", "ml/gpt"}, {"rank", "1"}, {"world_size", "2"}, {"round", "4"}}),
            1.0);
}

// Rank 0 exports every rank's busy time (summed over steps) and the steps covered, in a form
// the operator's parser reads back; other ranks export no series of either.
TEST(WorkerMetricsTest, RankBusySeriesReadBackPerRank) {
  WorkerMetrics other({"j", 1, 1, 3, 0});
  EXPECT_TRUE(metrics::ParseWorkerScrape(other.Render()).busy_by_rank.empty());
  WorkerMetrics m({"j", 0, 0, 3, 0});
  // One agreement after one step, one after three (the agreement's window).
  const float step1[] = {0.5f, 0.25f, 1.0f}, steps2to4[] = {0.5f, 0.25f, 2.0f};
  m.AddRankBusy(step1, 3, 1);
  m.AddRankBusy(steps2to4, 3, 3);
  metrics::WorkerScrape s = metrics::ParseWorkerScrape(m.Render());
  ASSERT_EQ(s.busy_by_rank.size(), 3u);
  EXPECT_DOUBLE_EQ(s.busy_by_rank[0].sum_seconds, 1.0);
  EXPECT_DOUBLE_EQ(s.busy_by_rank[1].sum_seconds, 0.5);
  EXPECT_DOUBLE_EQ(s.busy_by_rank[2].sum_seconds, 3.0);
  EXPECT_EQ(s.busy_by_rank[2].count, 4);
}

// A CPU worker has no GPU reading: the family is declared but carries no sample (not a 0).
TEST(WorkerMetricsTest, GpuMemoryHasNoSampleOnCpu) {
  EXPECT_EQ(DeviceMemoryInUse(c10::Device(c10::kCPU)), std::nullopt);
  WorkerMetrics m({"j", 0, 0, 1, 0});
  auto fams = metrics::ParseExposition(Filled(m).Render());
  ASSERT_TRUE(fams.ok()) << fams.status().ToString();
  EXPECT_EQ(metrics::FindSample(*fams, "ddp_worker_gpu_memory_bytes"), std::nullopt);
  m.gpu_memory_bytes.Get().Set(3e9);  // what the trainer does once a GPU reading exists
  fams = metrics::ParseExposition(m.Render());
  ASSERT_TRUE(fams.ok());
  EXPECT_EQ(metrics::FindSample(*fams, "ddp_worker_gpu_memory_bytes"), 3e9);
}

// Under launch, the launcher adds rank and local_rank; the child must not carry them twice.
TEST(WorkerMetricsTest, LaunchedChildLeavesRankLabelsToTheLauncher) {
  WorkerMetrics m({"j", 3, 1, 4, 0, /*launched=*/true});
  const std::string text = m.Render();
  EXPECT_NE(text.find("ddp_worker_info{job=\"j\",world_size=\"4\",round=\"0\"} 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("rank="), std::string::npos) << text;
}

// promtool is the reference parser; it reads the exposition on stdin.
TEST(WorkerMetricsTest, PromtoolAcceptsTheExposition) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) GTEST_SKIP() << "promtool not installed";
  WorkerMetrics m({"job", 0, 0, 1, 0});
  const std::string text = Filled(m).Render();
  FILE* p = popen("promtool check metrics 2>&1", "w");
  ASSERT_NE(p, nullptr);
  fwrite(text.data(), 1, text.size(), p);
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << text;
}

}  // namespace
}  // namespace ddp::worker
