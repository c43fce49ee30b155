// The trainer config's batch settings, and the check every rank makes before its communicator
// that the step's global batch splits at the group's size (exit 2 when it does not).
#ifndef DDP_WORKER_TRAIN_BATCH_CONFIG_H_
#define DDP_WORKER_TRAIN_BATCH_CONFIG_H_

#include "common/status.h"
#include "worker/data/global_batch.h"
#include "worker/train/config.h"

namespace ddp::worker {

// The batch policy and sizes the config names. REQUIRES: ValidateConfig(cfg) is OK.
BatchSettings BatchSettingsOf(const TrainConfig& cfg);

// Whether the step's global batch splits at `world` ranks: ResolveGlobalBatch's InvalidArgument
// (exit 2) when it does not, else OK. A rank checks this before it makes its communicator, so
// that a configuration error is exit 2 on every rank whatever its peers do meanwhile (a peer
// that found the error first and left would otherwise fail the others' rendezvous: exit 75).
Status CheckBatchAtWorld(const TrainConfig& cfg, int world);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_BATCH_CONFIG_H_
