// Warmup + cosine learning-rate schedule.
#include "worker/train/schedule.h"

#include <algorithm>
#include <cmath>

namespace ddp::worker {

double LearningRateAt(const LrSchedule& s, int64_t step) {
  if (step < s.warmup_steps) {
    return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  }
  const int64_t decay_steps = std::max<int64_t>(1, s.total_steps - s.warmup_steps);
  const double p =
      std::clamp(static_cast<double>(step - s.warmup_steps) / static_cast<double>(decay_steps), 0.0, 1.0);
  return s.min_lr + (s.lr - s.min_lr) * 0.5 * (1.0 + std::cos(M_PI * p));
}

}  // namespace ddp::worker
