// The distributed sampler: the group's one global order of examples, and where the group is in
// it. Pure arithmetic on indices; knows nothing about tensors, ranks' batches or communication
// (how a step's samples are dealt to ranks is global_batch.h's).
#ifndef DDP_WORKER_DATA_SAMPLER_H_
#define DDP_WORKER_DATA_SAMPLER_H_

#include <cstdint>
#include <vector>

namespace ddp::worker {

// Where the whole group is in the stream of samples: how many samples of epoch `epoch`'s global
// order the group has consumed, all ranks together. Independent of the world size, so it means
// the same after a resize, a heal or a resume at another size. Normalized: 0 <= offset < N.
struct SamplerPosition {
  int64_t epoch = 0;
  int64_t offset = 0;
  bool operator==(const SamplerPosition& o) const { return epoch == o.epoch && offset == o.offset; }
};

// The global order: every epoch a permutation of [0, dataset_size) drawn from a generator seeded
// by a hash of (seed, epoch) (EpochSeed in rng.h), and the stream is epoch 0's permutation, then
// epoch 1's, ... A step consumes the next global batch of the stream, whatever the world size,
// so each example is consumed exactly once per epoch across any sequence of resizes: nothing is
// padded, dropped or repeated (a batch that reaches an epoch's end continues into the next's
// order). All ranks agree on the order without talking. Not thread-safe (Take caches epochs).
class DistributedSampler {
 public:
  // REQUIRES: dataset_size > 0.
  DistributedSampler(int64_t dataset_size, uint64_t seed);

  int64_t dataset_size() const { return dataset_size_; }
  // Epoch `epoch`'s global order: a permutation of [0, dataset_size).
  std::vector<int64_t> EpochOrder(int64_t epoch) const;

  // The `count` indices of the stream starting at `pos` (crossing into later epochs as needed).
  // REQUIRES: pos normalized, count >= 0.
  std::vector<int64_t> Take(const SamplerPosition& pos, int64_t count) const;
  // `pos` moved `count` samples along the stream, normalized. REQUIRES: count >= 0.
  SamplerPosition Advance(SamplerPosition pos, int64_t count) const;

  // A saved position made valid for this dataset: a negative epoch or offset reads as 0, and an
  // offset past the end (the dataset shrank since the save) as the next epoch's start.
  SamplerPosition Restore(const SamplerPosition& saved) const;
  // A position saved by the earlier per-rank layout (each of `world` ranks had taken `offset`
  // samples of the epoch, rank r the order's positions r, r + W, ...): the group had consumed the
  // first offset * W of the order; a padded epoch's end (past N) is the next epoch's start.
  SamplerPosition FromPerRankOffset(int64_t epoch, int64_t offset, int64_t world) const;

 private:
  const std::vector<int64_t>& Cached(int64_t epoch) const;

  int64_t dataset_size_;
  uint64_t seed_;
  // Take's cache of the last two epochs' orders: a permutation costs O(N) per epoch, not per step,
  // and a batch crossing an epoch's end needs both.
  mutable int64_t cached_epoch_[2] = {-1, -1};
  mutable std::vector<int64_t> cached_[2];
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_DATA_SAMPLER_H_
