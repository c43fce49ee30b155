// The training loop: data -> model -> resume -> steps (forward, backward with the reducer's
// overlapped all-reduce, clip, AdamW) -> checkpoints -> summary. Returns a Status; never exits.
#ifndef DDP_WORKER_TRAIN_TRAINER_H_
#define DDP_WORKER_TRAIN_TRAINER_H_

#include <atomic>
#include <optional>
#include <string>

#include <c10/core/Device.h>

#include "common/status.h"
#include "worker/comm/communicator.h"
#include "worker/group/membership.h"
#include "worker/train/config.h"
#include "worker/train/fault.h"
#include "worker/train/filesystem.h"
#include "worker/train/worker_metrics.h"

namespace ddp::worker {

// Everything the loop needs, none of it owned. Every rank of the group runs Train() with the same
// config; the communicator is this rank's view of the group.
struct TrainContext {
  const TrainConfig* config = nullptr;
  Communicator* comm = nullptr;               // a fixed group (recovery: Restart)
  group::GroupMembership* group = nullptr;    // or a group that heals in place (comm unused)
  c10::Device device = c10::Device(c10::kCPU);
  WorkerMetrics* metrics = nullptr;           // may be null
  FileSystem* fs = nullptr;                   // checkpoints
  std::optional<Fault> fault;                 // DDP_FAULT
  const std::atomic<bool>* stop = nullptr;    // set by the SIGTERM handler
};

// Averages of the measured steps (the first few are excluded as warm-up), in seconds.
struct StepBreakdown {
  int64_t steps = 0;
  double step = 0, data = 0, forward = 0, backward = 0, exposed_allreduce = 0, allreduce = 0,
         optimizer = 0, sync = 0;
  double samples_per_second = 0;  // global (all ranks)
  double tokens_per_second = 0;   // global
};

struct TrainResult {
  int64_t step = 0;          // optimizer steps completed (including resumed ones)
  int64_t resumed_from = -1; // checkpoint step resumed from, -1 for a fresh start
  double last_loss = 0;      // averaged over ranks
  bool preempted = false;    // stopped by SIGTERM (the group tried to checkpoint): exit 75
  int64_t agreements = 0;    // step agreements this process ran (host reads of loss and stop)
  int world_size = 0;        // the group's size at the end (an elastic group resizes in place)
  int rank = -1;             // the rank at the end (a pod moved in place takes its trainers along)
  // After the last group checkpoint (periodic, final or on SIGTERM): the step the next round
  // resumes from (the newest complete checkpoint; 0: from scratch), and why the checkpoint of
  // `step` was not saved ("" when it was, or when no checkpoint directory is set). Every rank
  // learns rank 0's outcome; only rank 0 knows the I/O error itself.
  int64_t resume_step = 0;
  std::string checkpoint_error;
  std::string param_checksum;
  StepBreakdown breakdown;
};

// Errors: NotFound/DataLoss for data (exit 3), InvalidArgument/FailedPrecondition for config
// (exit 2), Unavailable/DeadlineExceeded from collectives (exit 75; the communicator is then
// aborted). REQUIRES: config, fs and exactly one of comm and group non-null.
//
// Failure handling (DESIGN.md, "In-place recovery"):
//   1. a step commits when the optimizer step ran; a collective failure before that discards
//      the step in flight (sampler position rewound, gradients zeroed: nothing applied);
//   2. with `group`, the survivor re-forms the group at the next generation, and members behind
//      the latest committed step receive the whole training state from one at it (heal.h); a
//      new process (the supervisor restarted it) joins and heals the same way;
//   3. when the group cannot re-form (the store is gone, a heal failed past its deadline) or
//      without `group`, the survivor writes a just-in-time checkpoint of its committed step
//      before returning the error, so the next round repeats no completed step.
StatusOr<TrainResult> Train(const TrainContext& ctx);

// "rank=0 world_size=2 step=200 loss=1.2345 param_checksum=0123456789abcdef": the summary line.
std::string SummaryLine(const TrainResult& r, int rank, int world_size);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_TRAINER_H_
