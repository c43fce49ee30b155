// FNV-1a (64-bit): a tiny, dependency-free hash for checkpoint integrity and for the
// param_checksum line that lets anyone compare replicas. Not cryptographic.
#ifndef DDP_WORKER_TRAIN_CHECKSUM_H_
#define DDP_WORKER_TRAIN_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace ddp::worker {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;

// Continues hash `h` over `n` bytes (pass the previous result to hash a sequence of buffers).
inline uint64_t Fnv1a64(const void* data, size_t n, uint64_t h = kFnvOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

// 16 lower-case hex digits.
std::string HexU64(uint64_t v);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_CHECKSUM_H_
