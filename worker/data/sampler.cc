// Distributed sampler arithmetic.
#include "worker/data/sampler.h"

#include <numeric>

#include "worker/data/rng.h"

namespace ddp::worker {

DistributedSampler::DistributedSampler(int64_t dataset_size, int rank, int world_size,
                                       uint64_t seed)
    : dataset_size_(dataset_size),
      rank_(rank),
      world_size_(world_size),
      seed_(seed),
      num_samples_((dataset_size + world_size - 1) / world_size) {}

std::vector<int64_t> DistributedSampler::EpochIndices(int64_t epoch) const {
  std::vector<int64_t> perm(dataset_size_);
  std::iota(perm.begin(), perm.end(), 0);
  // Fisher-Yates with our own generator: identical on every rank and every platform.
  SplitMix64 rng(EpochSeed(seed_, epoch));
  for (int64_t i = dataset_size_ - 1; i > 0; --i) {
    std::swap(perm[i], perm[rng.Uniform(static_cast<uint64_t>(i) + 1)]);
  }
  std::vector<int64_t> mine;
  mine.reserve(num_samples_);
  for (int64_t k = 0; k < num_samples_; ++k) {
    const int64_t global = k * world_size_ + rank_;  // < num_samples * W; wraps into the padding
    mine.push_back(perm[global % dataset_size_]);
  }
  return mine;
}

std::vector<int64_t> DistributedSampler::NextBatch(int64_t batch, SamplerPosition* pos) const {
  if (pos->offset + batch > num_samples_) {
    ++pos->epoch;
    pos->offset = 0;
  }
  if (cached_epoch_ != pos->epoch) {
    cached_ = EpochIndices(pos->epoch);
    cached_epoch_ = pos->epoch;
  }
  std::vector<int64_t> out(cached_.begin() + pos->offset, cached_.begin() + pos->offset + batch);
  pos->offset += batch;
  return out;
}

SamplerPosition DistributedSampler::Rescale(const SamplerPosition& saved, int old_world) const {
  if (old_world == world_size_ || old_world <= 0) return saved;
  SamplerPosition p = saved;
  p.offset = saved.offset * old_world / world_size_;
  if (p.offset > num_samples_) p.offset = num_samples_;
  return p;
}

}  // namespace ddp::worker
