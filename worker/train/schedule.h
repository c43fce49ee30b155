// Learning-rate schedule: linear warmup then cosine decay to min_lr. Pure.
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

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_SCHEDULE_H_
