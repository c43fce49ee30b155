// Warmup + cosine learning-rate schedule; the steps of the step agreement.
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

int64_t AgreementInterval(double mean_step_seconds, double target_seconds) {
  if (!(mean_step_seconds > 0)) return 1;
  const double n = std::floor(target_seconds / mean_step_seconds);
  return n >= 1e9 ? int64_t{1000000000} : std::max<int64_t>(1, static_cast<int64_t>(n));
}

int64_t NextAgreementStep(int64_t step, int64_t log_every, int64_t interval, int64_t total_steps) {
  const int64_t next_log = (step / log_every + 1) * log_every;
  const int64_t next = std::min({next_log, step + std::max<int64_t>(1, interval), total_steps});
  return std::max(next, step + 1);
}

}  // namespace ddp::worker
