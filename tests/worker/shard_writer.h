// Writes token shards for tests, byte by byte (little-endian), independent of the reader:
// nanoGPT's raw arrays and llm.c's 1024-byte-header format.
#ifndef DDP_TESTS_WORKER_SHARD_WRITER_H_
#define DDP_TESTS_WORKER_SHARD_WRITER_H_

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace ddp::testing {

inline void PutLE(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// Raw tokens of `width` bytes each (2: nanoGPT's uint16 .bin).
inline std::string RawShard(const std::vector<uint32_t>& tokens, int width = 2) {
  std::string b;
  for (uint32_t t : tokens) PutLE(&b, t, width);
  return b;
}

// llm.c: int32 magic, version, count, then 253 zero int32, then the tokens.
inline std::string LlmcShard(const std::vector<uint32_t>& tokens, int32_t magic = 20240520,
                             int32_t version = 1, int width = 2, int64_t count = -1) {
  std::string b;
  PutLE(&b, static_cast<uint32_t>(magic), 4);
  PutLE(&b, static_cast<uint32_t>(version), 4);
  PutLE(&b, static_cast<uint32_t>(count < 0 ? static_cast<int64_t>(tokens.size()) : count), 4);
  b.append(253 * 4, '\0');
  return b + RawShard(tokens, width);
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// 0, 1, ..., n-1 modulo `mod`, shifted by `start`: every window is predictable in closed form.
inline std::vector<uint32_t> Ramp(int64_t n, uint32_t start, uint32_t mod) {
  std::vector<uint32_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<uint32_t>((start + i) % mod));
  return v;
}

}  // namespace ddp::testing

#endif  // DDP_TESTS_WORKER_SHARD_WRITER_H_
