// Distributed sampler arithmetic.
#include "worker/data/sampler.h"

#include <algorithm>
#include <numeric>

#include "worker/data/rng.h"

namespace ddp::worker {

DistributedSampler::DistributedSampler(int64_t dataset_size, uint64_t seed)
    : dataset_size_(dataset_size), seed_(seed) {}

std::vector<int64_t> DistributedSampler::EpochOrder(int64_t epoch) const {
  std::vector<int64_t> perm(dataset_size_);
  std::iota(perm.begin(), perm.end(), 0);
  // Fisher-Yates with our own generator: identical on every rank and every platform.
  SplitMix64 rng(EpochSeed(seed_, epoch));
  for (int64_t i = dataset_size_ - 1; i > 0; --i) {
    std::swap(perm[i], perm[rng.Uniform(static_cast<uint64_t>(i) + 1)]);
  }
  return perm;
}

const std::vector<int64_t>& DistributedSampler::Cached(int64_t epoch) const {
  for (int k = 0; k < 2; ++k) {
    if (cached_epoch_[k] == epoch) return cached_[k];
  }
  // Replace the older of the two (steps move forward: the older is the one behind).
  const int k = cached_epoch_[0] < cached_epoch_[1] ? 0 : 1;
  cached_[k] = EpochOrder(epoch);
  cached_epoch_[k] = epoch;
  return cached_[k];
}

std::vector<int64_t> DistributedSampler::Take(const SamplerPosition& pos, int64_t count) const {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(count));
  SamplerPosition p = pos;
  while (count > 0) {
    const std::vector<int64_t>& order = Cached(p.epoch);
    const int64_t n = std::min(count, dataset_size_ - p.offset);
    out.insert(out.end(), order.begin() + p.offset, order.begin() + p.offset + n);
    count -= n;
    p = Advance(p, n);
  }
  return out;
}

SamplerPosition DistributedSampler::Advance(SamplerPosition pos, int64_t count) const {
  pos.offset += count % dataset_size_;
  pos.epoch += count / dataset_size_;
  if (pos.offset >= dataset_size_) {
    pos.offset -= dataset_size_;
    ++pos.epoch;
  }
  return pos;
}

SamplerPosition DistributedSampler::Restore(const SamplerPosition& saved) const {
  SamplerPosition p{std::max<int64_t>(0, saved.epoch), std::max<int64_t>(0, saved.offset)};
  if (p.offset >= dataset_size_) return {p.epoch + 1, 0};
  return p;
}

SamplerPosition DistributedSampler::FromPerRankOffset(int64_t epoch, int64_t offset,
                                                      int64_t world) const {
  if (epoch < 0) epoch = 0;
  if (offset <= 0 || world <= 0) return {epoch, 0};
  // offset * world <= ceil(N / W) * W < 2N for any position that layout wrote; the division
  // guards a hostile value from overflowing.
  if (offset >= (dataset_size_ + world - 1) / world) return {epoch + 1, 0};
  const int64_t consumed = offset * world;
  return consumed >= dataset_size_ ? SamplerPosition{epoch + 1, 0} : SamplerPosition{epoch, consumed};
}

}  // namespace ddp::worker
