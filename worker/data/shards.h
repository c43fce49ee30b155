// Pre-tokenized corpora: shards memory-mapped read-only, never loaded whole.
// Owns file formats, validation and mapping a global example index to a window of a shard; not
// the sampling order (the DistributedSampler works over the concatenation of the shards).
#ifndef DDP_WORKER_DATA_SHARDS_H_
#define DDP_WORKER_DATA_SHARDS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::worker {

// llm.c's shard header: 256 little-endian int32 (magic, version, token count, unused...).
inline constexpr int32_t kLlmcMagic = 20240520;      // GPT-2 shards, version 1: uint16 tokens
inline constexpr int32_t kLlmcMagicLlama3 = 20240801;  // Llama 3 shards, version 7: uint32 tokens
inline constexpr int64_t kLlmcHeaderBytes = 256 * 4;

struct ShardOptions {
  // auto: a file whose first int32 is an llm.c magic is read as llm.c, any other as raw.
  // llmc: every file must carry the header (a bad magic is an error). raw: no header.
  std::string format = "auto";
  int64_t token_bytes = 2;   // raw files: 2 (uint16, as nanoGPT's prepare.py) or 4 (uint32)
  int64_t vocab_size = 50257;  // a token >= this is invalid data
};

// One mapped file. Tokens are little-endian; this code assumes a little-endian host (x86, arm64).
// Owned (and unmapped) by the ShardSet that holds it.
struct Shard {
  std::string path;
  const unsigned char* map = nullptr;  // the whole file, PROT_READ
  int64_t file_bytes = 0;
  int64_t data_offset = 0;  // bytes before the first token (the header)
  int64_t token_bytes = 2;
  int64_t num_tokens = 0;
};

// An ordered set of shards (the glob's matches, sorted). Example i is a window of block_size + 1
// tokens at a stride of block_size inside one shard (as llm.c's loader; windows never straddle
// two files): x = tokens[s, s+T), y = tokens[s+1, s+T+1). Immutable after Open; reads from many
// threads are safe. Pages are mapped on demand, so the resident set grows with the windows
// touched, not with the corpus.
class ShardSet {
 public:
  // Opens and checks every file matching `pattern` (a glob(7) pattern; a plain path works).
  // Errors, each naming the file: NotFound (no match, cannot open), DataLoss (empty, bad magic
  // or version, size that does not match the header's token count or is not a whole number of
  // tokens: "truncated at byte N"), InvalidArgument (bad options).
  // REQUIRES: block_size > 0.
  static StatusOr<std::shared_ptr<const ShardSet>> Open(const std::string& pattern,
                                                        const ShardOptions& options,
                                                        int64_t block_size);
  ~ShardSet();
  ShardSet(const ShardSet&) = delete;
  ShardSet& operator=(const ShardSet&) = delete;

  int64_t num_examples() const { return ends_.empty() ? 0 : ends_.back(); }
  int64_t num_tokens() const { return num_tokens_; }
  int64_t block_size() const { return block_size_; }
  int64_t vocab_size() const { return options_.vocab_size; }
  const std::vector<Shard>& shards() const { return shards_; }
  // "shards data/train_*.bin (3 files, 1234567 tokens)".
  std::string Describe() const;

  // Writes example `i` into x[0, T) and y[0, T). DataLoss naming the file and byte offset when a
  // token is >= vocab_size. REQUIRES: 0 <= i < num_examples().
  Status Example(int64_t i, int64_t* x, int64_t* y) const;

 private:
  ShardSet() = default;
  std::string pattern_;
  ShardOptions options_;
  int64_t block_size_ = 0;
  int64_t num_tokens_ = 0;
  std::vector<Shard> shards_;
  std::vector<int64_t> ends_;  // ends_[k]: examples in shards 0..k (prefix sums)
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_DATA_SHARDS_H_
