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

}  // namespace
}  // namespace ddp::worker
