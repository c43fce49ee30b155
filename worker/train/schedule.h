// Learning-rate schedule (linear warmup then cosine decay to min_lr) and the steps at which the
// ranks agree on loss and stop. Pure.
#ifndef DDP_WORKER_TRAIN_SCHEDULE_H_
#define DDP_WORKER_TRAIN_SCHEDULE_H_

#include <cstdint>

namespace ddp::worker {

struct LrSchedule {
  double lr = 3e-3;        // peak, reached at the end of warmup
  double min_lr = 3e-4;    // floor, reached at total_steps
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;
};

// The learning rate for optimizer step `step` (0-based):
//   step < warmup:  lr * (step + 1) / warmup
//   otherwise:      min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2, p = (step - warmup) /
//                   (total - warmup), clamped to [0, 1]
double LearningRateAt(const LrSchedule& s, int64_t step);

// The step agreement (an all-reduce of the loss, the stop flag and every rank's busy time, read
// on the host) drains a GPU's queue of work, so it runs only at some steps, the same on every
// rank: each multiple of log_every (whose log line prints the agreed loss), the last step, and
// often enough that a SIGTERM is acted on within about `target_seconds` of training.
inline constexpr double kAgreementTargetSeconds = 1.0;

// Steps between agreements that keep them about `target_seconds` apart at `mean_step_seconds`
// per step: floor(target / mean), at least 1 (every step when the mean is unknown, <= 0).
int64_t AgreementInterval(double mean_step_seconds, double target_seconds = kAgreementTargetSeconds);

// The committed step at which the next agreement runs, after one at committed step `step`:
// min(the next multiple of log_every, step + interval, total_steps); at least step + 1.
// REQUIRES: log_every >= 1, interval >= 1.
int64_t NextAgreementStep(int64_t step, int64_t log_every, int64_t interval, int64_t total_steps);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_SCHEDULE_H_
