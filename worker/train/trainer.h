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
#include "worker/train/config.h"
#include "worker/train/fault.h"
#include "worker/train/filesystem.h"
#include "worker/train/worker_metrics.h"

namespace ddp::worker {

// Everything the loop needs, none of it owned. Every rank of the group runs Train() with the same
// config; the communicator is this rank's view of the group.
struct TrainContext {
  const TrainConfig* config = nullptr;
  Communicator* comm = nullptr;
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
  bool preempted = false;    // stopped by SIGTERM after checkpointing: exit 75
  std::string param_checksum;
  StepBreakdown breakdown;
};

// Errors: NotFound/DataLoss for data (exit 3), InvalidArgument/FailedPrecondition for config
// (exit 2), Unavailable/DeadlineExceeded from collectives (exit 75; the communicator is then
// aborted). REQUIRES: all pointers in ctx except metrics non-null.
StatusOr<TrainResult> Train(const TrainContext& ctx);

// "rank=0 world_size=2 step=200 loss=1.2345 param_checksum=0123456789abcdef": the summary line.
std::string SummaryLine(const TrainResult& r, int rank, int world_size);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_TRAINER_H_
