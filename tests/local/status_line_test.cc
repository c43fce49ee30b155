// The live status line, ETA and summary text.
#include "operator/local/status_line.h"

#include <gtest/gtest.h>

namespace ddp::controller::local {
namespace {

TEST(ProgressBar, FillsProportionally) {
  EXPECT_EQ(ProgressBar(0, 4), "[----]");
  EXPECT_EQ(ProgressBar(0.5, 4), "[##--]");
  EXPECT_EQ(ProgressBar(1, 4), "[####]");
  EXPECT_EQ(ProgressBar(7, 4), "[####]");   // clamped
  EXPECT_EQ(ProgressBar(-1, 4), "[----]");
}

TEST(FormatDuration, MinutesAndHours) {
  EXPECT_EQ(FormatDuration(5), "0:05");
  EXPECT_EQ(FormatDuration(65), "1:05");
  EXPECT_EQ(FormatDuration(3600 + 2 * 60 + 5), "1:02:05");
  EXPECT_EQ(FormatDuration(-3), "0:00");
}

TEST(FormatRate, Units) {
  EXPECT_EQ(FormatRate(950), "950");
  EXPECT_EQ(FormatRate(1234), "1.2k");
  EXPECT_EQ(FormatRate(2.5e6), "2.5M");
}

TEST(FormatStatusLine, BeforeAnyMetrics) {
  StatusLineInput in;
  in.phase = "Pending";
  in.total = 2;
  EXPECT_EQ(FormatStatusLine(in), "Pending  round 0  pods 0/2  restarts 0");
}

TEST(FormatStatusLine, WithProgress) {
  StatusLineInput in;
  in.phase = "Running";
  in.round = 1;
  in.running = 2;
  in.total = 2;
  in.restarts = 1;
  in.progress.steps = 50;
  in.progress.total_steps = 200;
  in.progress.loss = 2.3456;
  in.progress.tokens_per_second = 1500;
  in.eta_seconds = 75;
  const std::string expected = "Running  round 1  pods 2/2  restarts 1  step 50/200 " +
                               ProgressBar(0.25, 20) + "  25%  loss 2.3456  1.5k tok/s  ETA 1:15";
  EXPECT_EQ(FormatStatusLine(in), expected);
  EXPECT_EQ(FormatStatusLine(in, 20), expected.substr(0, 20));
}

TEST(FormatStatusLine, ShowsDisruptionsOnlyWhenAny) {
  StatusLineInput in;
  in.phase = "Restarting";
  in.disruptions = 1;
  EXPECT_NE(FormatStatusLine(in).find("disruptions 1"), std::string::npos);
  in.disruptions = 0;
  EXPECT_EQ(FormatStatusLine(in).find("disruptions"), std::string::npos);
}

TEST(FormatStatusLine, ShowsRecoveriesOnlyWhenAny) {
  StatusLineInput in;
  in.phase = "Running";
  in.total = 3;
  in.running = 3;
  in.recoveries = 2;
  EXPECT_EQ(FormatStatusLine(in), "Running  round 0  pods 3/3  restarts 0  recoveries 2");
  in.recoveries = 0;
  EXPECT_EQ(FormatStatusLine(in).find("recoveries"), std::string::npos);
}

TEST(EtaEstimator, LinearRate) {
  EtaEstimator eta(30);
  EXPECT_FALSE(eta.EtaSeconds(100));
  eta.Add(0, 10);
  EXPECT_FALSE(eta.EtaSeconds(100));
  eta.Add(10, 30);  // 2 steps/s
  ASSERT_TRUE(eta.EtaSeconds(100));
  EXPECT_DOUBLE_EQ(*eta.EtaSeconds(100), (100 - 30) / 2.0);
  EXPECT_DOUBLE_EQ(*eta.EtaSeconds(20), 0);
}

TEST(EtaEstimator, CounterGoingBackRestartsTheWindow) {
  EtaEstimator eta(30);
  eta.Add(0, 0);
  eta.Add(10, 100);
  eta.Add(20, 40);  // a new round resumed from step 40's checkpoint
  EXPECT_FALSE(eta.EtaSeconds(200));
  eta.Add(30, 60);
  ASSERT_TRUE(eta.EtaSeconds(200));
  EXPECT_DOUBLE_EQ(*eta.EtaSeconds(200), (200 - 60) / 2.0);
}

TEST(EtaEstimator, OldPointsLeaveTheWindow) {
  EtaEstimator eta(10);
  eta.Add(0, 0);
  eta.Add(100, 10);   // slow start: 0.1 steps/s
  eta.Add(105, 60);   // then 10 steps/s
  eta.Add(110, 110);
  ASSERT_TRUE(eta.EtaSeconds(210));
  EXPECT_DOUBLE_EQ(*eta.EtaSeconds(210), 100 / 10.0);
}

TEST(FormatSummary, FailedJobShowsTheLogTail) {
  SummaryInput s;
  s.job = "default/demo";
  s.phase = "Failed";
  s.reason = "PodFailed";
  s.rounds = 1;
  s.run_dir = "runs/demo-1";
  s.failed_pod = "demo-worker-1";
  s.log_tail = {"bad config: lr", "exit 2"};
  std::string text = FormatSummary(s);
  EXPECT_NE(text.find("default/demo: Failed (PodFailed)"), std::string::npos);
  EXPECT_NE(text.find("rounds 1, restarts 0, disruptions 0"), std::string::npos);
  EXPECT_NE(text.find("    | bad config: lr\n    | exit 2\n"), std::string::npos);
  EXPECT_NE(text.find("run dir: runs/demo-1"), std::string::npos);
}

}  // namespace
}  // namespace ddp::controller::local
