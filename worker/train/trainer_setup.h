// Trainer setup steps, split from the loop: device choice, data, model + optimizer, resume.
// Internal to worker/train (trainer.cc and tests); not a stable interface.
#ifndef DDP_WORKER_TRAIN_TRAINER_SETUP_H_
#define DDP_WORKER_TRAIN_TRAINER_SETUP_H_

#include <memory>
#include <string>

#include <c10/core/Device.h>
#include <torch/optim/adamw.h>

#include "common/status.h"
#include "worker/comm/communicator.h"
#include "worker/data/dataset.h"
#include "worker/model/model.h"
#include "worker/train/config.h"
#include "worker/train/filesystem.h"
#include "worker/train/train_state.h"

namespace ddp::worker {

// cpu -> CPU; cuda -> cuda:(local_rank % devices), FailedPrecondition without a CUDA device;
// auto -> cuda when available, else CPU.
StatusOr<c10::Device> ChooseDevice(const std::string& device, int local_rank);

// The token stream the config names. NotFound/DataLoss (exit 3) for a bad file.
// REQUIRES: cfg.dataset is synthetic or chars.
StatusOr<std::shared_ptr<const TokenStream>> LoadTokens(const TrainConfig& cfg);

// The training set the config names (stream or shards) and, with data.val_files, the held-out
// set. Errors as LoadTokens and ShardSet::Open (exit 3 for data, 2 for options).
struct TrainData {
  std::shared_ptr<const TokenDataset> train;
  std::shared_ptr<const TokenDataset> val;  // null without data.val_files
};
StatusOr<TrainData> LoadData(const TrainConfig& cfg);

struct ModelAndOptimizer {
  std::shared_ptr<LanguageModel> model;
  std::unique_ptr<torch::optim::AdamW> optimizer;
};

// Model from cfg.model (vocab from the data) and seed, moved to `device`; AdamW with weight
// decay on matrices only (biases and LayerNorm gains are not decayed, as in nanoGPT):
// ForeachAdamW on CUDA, LibTorch's AdamW on CPU (the same arithmetic and state).
StatusOr<ModelAndOptimizer> BuildModel(const TrainConfig& cfg, int64_t vocab_size,
                                       const c10::Device& device);

// Puts `mo` back to what BuildModel makes, in place (the same tensors, so whatever holds them
// stays valid): the seed's parameters and buffers, no optimizer state.
Status ResetToSeed(const TrainConfig& cfg, int64_t vocab_size, const c10::Device& device,
                   ModelAndOptimizer* mo);

// Group-wide resume. Rank 0 picks the newest checkpoint it can fully restore (skipping torn or
// corrupt ones with a warning) and broadcasts its step; the other ranks load that same step from
// the shared directory. Returns the restored progress, or step 0 for a fresh start. `mo` may be
// rebuilt when a candidate failed halfway. FailedPrecondition when a rank cannot read the step
// rank 0 chose (the directory is not shared); collective errors as Communicator.
StatusOr<TrainProgress> ResumeFromCheckpoint(const TrainConfig& cfg, FileSystem* fs,
                                             Communicator* comm, const c10::Device& device,
                                             int64_t vocab_size, ModelAndOptimizer* mo,
                                             int64_t* resumed_from);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_TRAINER_SETUP_H_
