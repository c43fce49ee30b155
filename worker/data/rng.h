// SplitMix64: a tiny portable PRNG. Used wherever every rank (and a later resumed run) must draw
// the same numbers, which std::shuffle and distributions do not promise across standard libraries.
#ifndef DDP_WORKER_DATA_RNG_H_
#define DDP_WORKER_DATA_RNG_H_

#include <cstdint>

namespace ddp::worker {

// SplitMix64's output function: a bijection of 64-bit words that spreads every input bit.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Thread-compatible value type.
class SplitMix64 {
 public:
  static constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;  // the state's increment per draw
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return Mix64(state_ += kGamma); }
  // Uniform in [0, n). The modulo bias (< n / 2^64) is irrelevant for shuffling datasets.
  // REQUIRES: n > 0.
  uint64_t Uniform(uint64_t n) { return Next() % n; }

 private:
  uint64_t state_;
};

// The generator seed of one epoch's shuffle. A hash of (seed, epoch), not seed + epoch * kGamma:
// that would start epoch e+1's stream exactly one draw into epoch e's, so consecutive epochs'
// permutations would be near-shifts of each other.
inline uint64_t EpochSeed(uint64_t seed, int64_t epoch) {
  return Mix64(seed ^ Mix64(static_cast<uint64_t>(epoch) + SplitMix64::kGamma));
}

}  // namespace ddp::worker

#endif  // DDP_WORKER_DATA_RNG_H_
