#include "worker/train/schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ddp::worker {
namespace {

TEST(ScheduleTest, WarmupThenCosine) {
  const LrSchedule s{/*lr=*/1.0, /*min_lr=*/0.1, /*warmup_steps=*/4, /*total_steps=*/14};
  struct Row { int64_t step; double want; };
  // Warmup is linear to the peak; the cosine's midpoint (step 4 + 10/2) is halfway between.
  for (Row r : {Row{0, 0.25}, Row{1, 0.5}, Row{3, 1.0}, Row{4, 1.0}, Row{9, 0.55}, Row{14, 0.1},
                Row{100, 0.1}}) {
    EXPECT_NEAR(LearningRateAt(s, r.step), r.want, 1e-12) << "step " << r.step;
  }
  // Closed form at a quarter of the decay: min + (max-min) * (1 + cos(pi/4)) / 2.
  const LrSchedule q{1.0, 0.0, 0, 8};
  EXPECT_NEAR(LearningRateAt(q, 2), (1 + std::cos(M_PI / 4)) / 2, 1e-12);
}

TEST(ScheduleTest, NoWarmupStartsAtPeakAndIsMonotone) {
  const LrSchedule s{3e-3, 3e-4, 0, 50};
  EXPECT_DOUBLE_EQ(LearningRateAt(s, 0), 3e-3);
  for (int64_t i = 1; i <= 50; ++i) EXPECT_LE(LearningRateAt(s, i), LearningRateAt(s, i - 1));
}

TEST(ScheduleTest, AgreementIntervalKeepsAgreementsAboutTheTargetApart) {
  EXPECT_EQ(AgreementInterval(0.1, 1.0), 10);   // a 100 ms GPU step: every 10th step
  EXPECT_EQ(AgreementInterval(0.3, 1.0), 3);    // floor(3.33)
  EXPECT_EQ(AgreementInterval(5.0, 1.0), 1);    // steps longer than the target: every step
  EXPECT_EQ(AgreementInterval(0.0, 1.0), 1);    // no measurement yet
  EXPECT_EQ(AgreementInterval(-1.0, 1.0), 1);
  EXPECT_EQ(AgreementInterval(std::nan(""), 1.0), 1);
  EXPECT_EQ(AgreementInterval(1e-12, 1.0), 1000000000);  // bounded, no overflow
}

TEST(ScheduleTest, NextAgreementIsTheNearestOfLogIntervalTimeAndTheEnd) {
  struct Row { int64_t step, log_every, interval, total, want; };
  for (Row r : {Row{0, 10, 100, 1000, 10},   // the log line at 10 comes first
                Row{10, 10, 3, 1000, 13},    // time: 3 steps
                Row{13, 10, 3, 1000, 16},
                Row{19, 10, 3, 1000, 20},    // back on the log grid
                Row{95, 10, 100, 98, 98},    // the last step
                Row{7, 1, 50, 100, 8},       // --log-every 1: every step
                Row{97, 10, 1, 98, 98},
                Row{98, 10, 5, 98, 99}}) {   // past the end: still moves on
    EXPECT_EQ(NextAgreementStep(r.step, r.log_every, r.interval, r.total), r.want)
        << "step " << r.step << " log_every " << r.log_every << " interval " << r.interval;
  }
}

}  // namespace
}  // namespace ddp::worker
