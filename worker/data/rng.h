// SplitMix64: a tiny portable PRNG. Used wherever every rank (and a later resumed run) must draw
// the same numbers, which std::shuffle and distributions do not promise across standard libraries.
#ifndef DDP_WORKER_DATA_RNG_H_
#define DDP_WORKER_DATA_RNG_H_

#include <cstdint>

namespace ddp::worker {

// Thread-compatible value type.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n). The modulo bias (< n / 2^64) is irrelevant for shuffling datasets.
  // REQUIRES: n > 0.
  uint64_t Uniform(uint64_t n) { return Next() % n; }

 private:
  uint64_t state_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_DATA_RNG_H_
