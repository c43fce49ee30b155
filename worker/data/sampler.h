// The distributed sampler: which examples each rank trains on, in which order, and where it is.
// Pure arithmetic on indices; knows nothing about tensors or communication.
#ifndef DDP_WORKER_DATA_SAMPLER_H_
#define DDP_WORKER_DATA_SAMPLER_H_

#include <cstdint>
#include <vector>

namespace ddp::worker {

// Where a rank is in its stream of samples: resumable from a checkpoint.
struct SamplerPosition {
  int64_t epoch = 0;
  int64_t offset = 0;  // samples of this epoch already consumed by this rank
  bool operator==(const SamplerPosition& o) const { return epoch == o.epoch && offset == o.offset; }
};

// Like torch.utils.data.DistributedSampler: every epoch a permutation of [0, dataset_size) drawn
// from a generator seeded by a hash of (seed, epoch) (EpochSeed in rng.h) is padded by wrapping
// to a multiple of world_size, and rank r takes positions
// r, r + W, r + 2W, ... So shards are disjoint (up to the padding), every rank gets exactly
// num_samples() per epoch (no rank waits for another at a collective), and all ranks agree on the
// permutation without talking. Not thread-safe (NextBatch caches the current epoch).
class DistributedSampler {
 public:
  // REQUIRES: dataset_size > 0, world_size > 0, 0 <= rank < world_size.
  DistributedSampler(int64_t dataset_size, int rank, int world_size, uint64_t seed);

  int64_t num_samples() const { return num_samples_; }  // per rank per epoch: ceil(N / W)
  // This rank's indices for `epoch`, in order; size num_samples().
  std::vector<int64_t> EpochIndices(int64_t epoch) const;

  // The next `batch` indices from `*pos`, advancing it. A batch never straddles epochs: when fewer
  // than `batch` remain, the rest of the epoch is dropped (on every rank alike) and the next
  // epoch starts. REQUIRES: 0 < batch <= num_samples().
  std::vector<int64_t> NextBatch(int64_t batch, SamplerPosition* pos) const;

  // Maps a position saved by a group of `old_world` ranks to this group's world size, keeping
  // the fraction of the epoch already seen (so an elastic resize neither repeats nor skips much).
  SamplerPosition Rescale(const SamplerPosition& saved, int old_world) const;

 private:
  int64_t dataset_size_;
  int rank_;
  int world_size_;
  uint64_t seed_;
  int64_t num_samples_;
  // NextBatch's cache of EpochIndices(cached_epoch_): a permutation costs O(N) per epoch, not per step.
  mutable int64_t cached_epoch_ = -1;
  mutable std::vector<int64_t> cached_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_DATA_SAMPLER_H_
