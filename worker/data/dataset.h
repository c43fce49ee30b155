// Token datasets: a char-level text file and a generated "language" that needs no download.
// Owns token streams and turning sampled indices into batches; not the sampling order.
#ifndef DDP_WORKER_DATA_DATASET_H_
#define DDP_WORKER_DATA_DATASET_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/status.h"
#include "worker/data/shards.h"

namespace ddp::worker {

// An immutable stream of token ids in [0, vocab_size). Thread-compatible.
struct TokenStream {
  std::vector<int64_t> tokens;
  int64_t vocab_size = 0;
  std::string source;  // "file F" or "synthetic(...)", for messages
};

// Reads `path` as bytes; the vocabulary is the sorted set of distinct bytes (as minGPT's
// CharDataset). Errors (all name the file): NotFound (cannot open), DataLoss (empty, or too
// short to hold one example of block_size + 1 tokens).
StatusOr<TokenStream> LoadCharFile(const std::string& path, int64_t block_size);

// Deterministic from `seed`: arithmetic progressions mod (vocab_size - 1) separated by token 0.
// A progression starts at a random value with a random stride and length, so after its first two
// tokens every next token is predictable: a small model's loss falls clearly within ~100 steps.
// REQUIRES: vocab_size >= 8, num_tokens > 0.
TokenStream MakeSyntheticStream(int64_t num_tokens, int64_t vocab_size, uint64_t seed);

// Over a stream, example i is (tokens[i, i+T), tokens[i+1, i+T+1)); over shards, example i is
// ShardSet::Example(i). Shares its source; thread-compatible.
class TokenDataset {
 public:
  // REQUIRES: stream->tokens.size() > block_size.
  TokenDataset(std::shared_ptr<const TokenStream> stream, int64_t block_size);
  // REQUIRES: shards->num_examples() > 0; block_size is the shards' block_size().
  explicit TokenDataset(std::shared_ptr<const ShardSet> shards);
  int64_t size() const { return size_; }
  int64_t block_size() const { return block_size_; }
  int64_t vocab_size() const;
  std::string source() const;  // for messages
  // x, y: int64 CPU tensors [indices.size(), block_size]. DataLoss (file and offset) for an
  // invalid token in a shard; a stream cannot fail.
  Status Batch(const std::vector<int64_t>& indices, at::Tensor* x, at::Tensor* y) const;

 private:
  std::shared_ptr<const TokenStream> stream_;  // exactly one of stream_, shards_ is set
  std::shared_ptr<const ShardSet> shards_;
  int64_t block_size_;
  int64_t size_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_DATA_DATASET_H_
