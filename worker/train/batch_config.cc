// The config's batch settings (batch_config.h).
#include "worker/train/batch_config.h"

namespace ddp::worker {

BatchSettings BatchSettingsOf(const TrainConfig& cfg) {
  BatchSettings b;
  ParseBatchPolicy(cfg.batch_policy, &b.policy);  // ValidateConfig checked the name
  b.batch_size = cfg.batch_size;
  b.grad_accum = cfg.grad_accum;
  b.global_batch_size = cfg.global_batch_size;
  b.global_batch_ranks = cfg.global_batch_ranks;
  return b;
}

Status CheckBatchAtWorld(const TrainConfig& cfg, int world) {
  return ResolveGlobalBatch(BatchSettingsOf(cfg), world).status();
}

}  // namespace ddp::worker
