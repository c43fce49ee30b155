// Eval loss on held-out data: a fixed, deterministic slice of the validation set, the same at
// every eval, so successive values are comparable. Owns nothing; not the training loop.
#ifndef DDP_WORKER_TRAIN_EVALUATE_H_
#define DDP_WORKER_TRAIN_EVALUATE_H_

#include <cstdint>

#include <c10/core/Device.h>

#include "common/status.h"
#include "worker/comm/communicator.h"
#include "worker/data/dataset.h"
#include "worker/model/model.h"
#include "worker/train/config.h"
#include "worker/train/worker_metrics.h"

namespace ddp::worker {

// Every rank calls it at the same step (it all-reduces). Rank r evaluates `batches` batches of
// `batch_size` examples: example (b * batch_size + j) * W + r modulo val.size(), under no_grad,
// and the result is the mean over all ranks' batches. DataLoss for a bad token in the
// validation shards; collective errors as Communicator.
// REQUIRES: batches > 0, batch_size > 0, val.size() > 0.
StatusOr<double> EvalLoss(LanguageModel& model, const TokenDataset& val, Communicator* comm,
                          const c10::Device& device, int64_t batches, int64_t batch_size,
                          bool bf16);

// The trainer's eval: EvalLoss with cfg.eval_batches x cfg.batch_size, logged by rank 0
// ("eval step 100 val_loss 2.3456") and exported as ddp_worker_val_loss (`m` may be null).
Status RunEval(LanguageModel& model, const TokenDataset& val, Communicator* comm,
               const c10::Device& device, const TrainConfig& cfg, bool bf16, int64_t step,
               WorkerMetrics* m);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_EVALUATE_H_
