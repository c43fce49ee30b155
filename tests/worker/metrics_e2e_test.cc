// The worker's /metrics as the dashboard reads it, from a real 2-rank group on 127.0.0.1: the
// exposed all-reduce time is a part of the total on every rank (the invariant the "exposed vs
// total" panel shows), the round is a value, and the step rate is there for the ETA.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "common/exposition.h"
#include "common/http_server.h"
#include "tests/worker/e2e_util.h"

namespace ddp::testing {
namespace {

double Sample(const std::vector<metrics::ParsedFamily>& page, const std::string& name) {
  return metrics::FindSample(page, name).value_or(-1);
}

// Runs a 2-rank group with `extra` flags until both ranks' pages show kSteps steps, checks them,
// then stops the group (SIGTERM: exit 75).
void CheckPagesOfAGroup(const std::vector<std::string>& extra) {
  const std::string dir = MakeTempDir("ddp-e2e-worker-metrics");
  constexpr int kRanks = 2;
  constexpr double kSteps = 60;
  std::map<std::string, std::string> env = {
      {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(FreePort())},
      {"WORLD_SIZE", std::to_string(kRanks)}, {"DDP_RENDEZVOUS_TIMEOUT", "60"},
      {"DDP_ROUND", "3"}};
  std::vector<Proc> procs;
  std::vector<int> ports;
  std::vector<std::string> args = TinyArgs(100000);
  args.insert(args.end(), extra.begin(), extra.end());
  for (int r = 0; r < kRanks; ++r) {
    auto e = env;
    e["RANK"] = std::to_string(r);
    ports.push_back(FreePort());
    e["DDP_METRICS_PORT"] = std::to_string(ports.back());
    procs.push_back(StartProc(kWorkerBin, args, e, dir, "rank" + std::to_string(r)));
  }
  std::vector<std::vector<metrics::ParsedFamily>> pages(kRanks);
  const bool ran = PollUntil([&] {
    for (int r = 0; r < kRanks; ++r) {
      auto body = HttpGet("127.0.0.1", ports[r], "/metrics", 1000);
      if (!body.ok()) return false;
      auto parsed = metrics::ParseExposition(*body);
      if (!parsed.ok() || Sample(*parsed, "ddp_worker_steps_total") < kSteps) return false;
      pages[r] = *parsed;
    }
    return true;
  }, std::chrono::seconds(120));
  EXPECT_TRUE(ran) << ReadAll(procs[0].err_path) << ReadAll(procs[1].err_path);
  for (int r = 0; r < kRanks && ran; ++r) {
    const auto& page = pages[r];
    const double total = Sample(page, "ddp_worker_allreduce_seconds_total");
    const double exposed = Sample(page, "ddp_worker_exposed_allreduce_seconds_total");
    EXPECT_GT(total, 0) << "rank " << r;
    EXPECT_GE(exposed, 0) << "rank " << r;
    EXPECT_LE(exposed, total) << "rank " << r;
    EXPECT_EQ(Sample(page, "ddp_worker_round"), 3) << "rank " << r;
    // The step rate of the last agreement window, against the mean step time over the whole
    // run (its histogram): the same order of magnitude (the steps are alike).
    const double rate = Sample(page, "ddp_worker_steps_per_second");
    const double mean_step = Sample(page, "ddp_worker_step_seconds_sum") /
                             Sample(page, "ddp_worker_step_seconds_count");
    EXPECT_GT(rate, 0.1 / mean_step) << "rank " << r;
    EXPECT_LT(rate, 10 / mean_step) << "rank " << r;
  }
  for (const Proc& p : procs) kill(p.pid, SIGTERM);
  for (const Proc& p : procs) EXPECT_EQ(WaitProc(p, std::chrono::seconds(60)), 75) << ReadAll(p.err_path);
  std::filesystem::remove_all(dir);
}

// The default buckets: this model fits one, launched when backward ends, so nearly all of its
// time is exposed. Measured as the wait in FinalizeBackward (with the wake-up after the
// collective and the first step's bucket rebuild) it exceeded the bucket's own flight time.
TEST(WorkerMetricsE2E, ExposedAllReduceIsAPartOfTheTotalWithOneBucket) {
  CheckPagesOfAGroup({});
}

// Small buckets: several all-reduces per step, the first ones overlapping backward.
TEST(WorkerMetricsE2E, ExposedAllReduceIsAPartOfTheTotalWithOverlappingBuckets) {
  CheckPagesOfAGroup({"--bucket-cap-mb", "0.01", "--first-bucket-cap-mb", "0.01"});
}

}  // namespace
}  // namespace ddp::testing
