// Trainer setup: device, data, model/optimizer and the resume protocol.
#include "worker/train/trainer_setup.h"

#include <ATen/ops/scalar_tensor.h>
#include <torch/cuda.h>

#include "common/logging.h"
#include "worker/train/checkpoint_owner.h"
#include "worker/train/checkpoint_store.h"
#include "worker/train/foreach_adamw.h"

namespace ddp::worker {

StatusOr<c10::Device> ChooseDevice(const std::string& device, int local_rank) {
  const bool have_cuda = torch::cuda::is_available();
  if (device == "cpu" || (device == "auto" && !have_cuda)) return c10::Device(c10::kCPU);
  if (!have_cuda) {
    return Status::FailedPrecondition(
        "train.device: cuda requested but no CUDA device is visible. HINT: use --device cpu or "
        "auto, or run on a GPU node with a CUDA build of LibTorch");
  }
  const int n = static_cast<int>(torch::cuda::device_count());
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank % n));
}

StatusOr<std::shared_ptr<const TokenStream>> LoadTokens(const TrainConfig& cfg) {
  if (cfg.dataset == "chars") {
    StatusOr<TokenStream> s = LoadCharFile(cfg.data_file, cfg.model.block_size);
    if (!s.ok()) return s.status();
    return std::make_shared<const TokenStream>(std::move(*s));
  }
  return std::make_shared<const TokenStream>(
      MakeSyntheticStream(cfg.synthetic_tokens, cfg.synthetic_vocab, cfg.data_seed));
}

StatusOr<TrainData> LoadData(const TrainConfig& cfg) {
  TrainData d;
  if (cfg.dataset != "shards") {
    auto tokens = LoadTokens(cfg);
    if (!tokens.ok()) return tokens.status();
    d.train = std::make_shared<const TokenDataset>(*tokens, cfg.model.block_size);
    return d;
  }
  ShardOptions o;
  o.format = cfg.data_format;
  o.token_bytes = cfg.token_bytes;
  o.vocab_size = cfg.vocab_size;
  auto train = ShardSet::Open(cfg.data_files, o, cfg.model.block_size);
  if (!train.ok()) return train.status().WithContext("data.files");
  d.train = std::make_shared<const TokenDataset>(*train);
  if (!cfg.val_files.empty()) {
    auto val = ShardSet::Open(cfg.val_files, o, cfg.model.block_size);
    if (!val.ok()) return val.status().WithContext("data.val_files");
    d.val = std::make_shared<const TokenDataset>(*val);
  }
  return d;
}

StatusOr<ModelAndOptimizer> BuildModel(const TrainConfig& cfg, int64_t vocab_size,
                                       const c10::Device& device) {
  ModelConfig mc = cfg.model;
  mc.vocab_size = vocab_size;
  auto model = MakeModel(mc, cfg.seed);
  if (!model.ok()) return model.status();
  (*model)->to(device);
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& p : (*model)->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto opts = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, opts(cfg.weight_decay));
  groups.emplace_back(no_decay, opts(0.0));
  // LibTorch's C++ AdamW (1.13 and 2.x) has no foreach/fused variant: it updates tensor by
  // tensor. ForeachAdamW is the same optimizer (state, checkpoints, arithmetic) with
  // multi-tensor calls: on a GPU one kernel per call instead of one per tensor; on a CPU ATen
  // runs them tensor by tensor, once per call, which measured slower than the per-tensor loop
  // (bench/RESULTS.md, "optimizer step"), so the CPU keeps LibTorch's.
  ModelAndOptimizer mo;
  mo.model = std::move(*model);
  if (device.is_cuda()) {
    mo.optimizer =
        std::make_unique<ForeachAdamW>(std::move(groups), torch::optim::AdamWOptions(cfg.lr));
  } else {
    mo.optimizer = std::make_unique<torch::optim::AdamW>(std::move(groups),
                                                         torch::optim::AdamWOptions(cfg.lr));
  }
  return mo;
}

Status ResetToSeed(const TrainConfig& cfg, int64_t vocab_size, const c10::Device& device,
                   ModelAndOptimizer* mo) {
  auto fresh = BuildModel(cfg, vocab_size, device);
  if (!fresh.ok()) return fresh.status();
  torch::NoGradGuard no_grad;
  const auto to = mo->model->parameters();
  const auto from = fresh->model->parameters();
  const auto to_b = mo->model->buffers();
  const auto from_b = fresh->model->buffers();
  if (to.size() != from.size() || to_b.size() != from_b.size()) {
    return Status::Internal("reset to the seed: the model's layout changed");
  }
  for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
  for (size_t i = 0; i < to_b.size(); ++i) {
    if (to_b[i].defined() && from_b[i].defined()) to_b[i].copy_(from_b[i]);
  }
  mo->optimizer->state().clear();
  return Status::OK();
}

StatusOr<TrainProgress> ResumeFromCheckpoint(const TrainConfig& cfg, FileSystem* fs,
                                             Communicator* comm, const c10::Device& device,
                                             int64_t vocab_size, ModelAndOptimizer* mo,
                                             int64_t* resumed_from) {
  TrainProgress progress;
  *resumed_from = -1;
  if (cfg.checkpoint_dir.empty()) return progress;
  CheckpointStore store(fs, cfg.checkpoint_dir, static_cast<int>(cfg.keep_checkpoints));
  // What rank 0 broadcasts: the step to resume from, kNoCheckpoint, or kUnusable.
  constexpr int64_t kNoCheckpoint = -1, kUnusable = -2;
  int64_t chosen = kNoCheckpoint;
  Status refused;  // rank 0: why no checkpoint here may be used (a permanent error)
  if (comm->rank() == 0) {
    // Only this job's checkpoints, of this model (checkpoint_owner.h); the directory is claimed
    // before anything is read or written, so the first save of a new job is recorded too.
    const CheckpointOwner ours{cfg.checkpoint_job, ModelFingerprint(cfg.model, vocab_size)};
    // Another job's or model's directory: every rank stops with it (below), not only this one.
    refused = ClaimCheckpointDir(fs, cfg.checkpoint_dir, ours).WithContext("checkpoint directory");
    if (!refused.ok()) chosen = kUnusable;
  }
  if (comm->rank() == 0 && refused.ok()) {
    bool touched = false;
    Status unusable_here;  // a checkpoint this process cannot restore, though it is intact
    auto loaded = store.LoadLatest([&](const CheckpointStore::Loaded& l) {
      touched = true;
      Status s = RestoreTrainState(l.payload, device, *mo->model, *mo->optimizer, &progress);
      if (s.code() == StatusCode::kFailedPrecondition && unusable_here.ok()) unusable_here = s;
      return s;
    });
    // Starting fresh would silently discard the run's progress: fail instead (exit 2).
    if (!loaded && !unusable_here.ok()) {
      // Every rank must stop with it, not wait for a broadcast that never comes (exit 75).
      refused = unusable_here.WithContext("checkpoint in " + cfg.checkpoint_dir);
      chosen = kUnusable;
    } else if (loaded) {
      chosen = loaded->step;
    } else if (touched) {
      // Every candidate failed halfway through a restore: start clean, from the seed.
      auto fresh = BuildModel(cfg, vocab_size, device);
      if (!fresh.ok()) return fresh.status();
      *mo = std::move(*fresh);
      progress = TrainProgress();
    }
  }
  std::vector<at::Tensor> t{at::scalar_tensor(chosen, at::TensorOptions().dtype(at::kLong).device(device))};
  DDP_RETURN_IF_ERROR(comm->Broadcast(t, /*root=*/0).WithContext("broadcast resume step"));
  chosen = t[0].item<int64_t>();
  if (!refused.ok()) return refused;
  if (chosen == kUnusable) {
    return Status::FailedPrecondition("rank 0 cannot use the checkpoint in " + cfg.checkpoint_dir +
                                      " (its log says why)");
  }
  if (chosen < 0) {
    if (comm->rank() == 0) DDP_LOG(INFO) << "no usable checkpoint in " << cfg.checkpoint_dir << ": starting fresh";
    return TrainProgress();
  }
  if (comm->rank() != 0) {
    auto loaded = store.Load(chosen);
    Status s = loaded.status();
    if (s.ok()) s = RestoreTrainState(loaded->payload, device, *mo->model, *mo->optimizer, &progress);
    if (!s.ok()) {
      return Status::FailedPrecondition(
          "rank " + std::to_string(comm->rank()) + " cannot restore checkpoint step " +
          std::to_string(chosen) + " that rank 0 chose: " + s.message() +
          ". HINT: " + "DDP_CHECKPOINT_DIR must be a volume shared by all ranks");
    }
  }
  if (comm->rank() == 0) {
    DDP_LOG(INFO) << "resumed from checkpoint step " << chosen << " in " << cfg.checkpoint_dir;
  }
  *resumed_from = chosen;
  return progress;
}

}  // namespace ddp::worker
