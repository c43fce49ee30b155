// Token datasets: file loading, the synthetic generator and batch assembly.
#include "worker/data/dataset.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <iterator>

#include <ATen/ops/empty.h>

#include "worker/data/rng.h"

namespace ddp::worker {

StatusOr<TokenStream> LoadCharFile(const std::string& path, int64_t block_size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound("data file " + path +
                            " cannot be opened. HINT: set --data-file or data.file to a readable "
                            "text file, or use --dataset synthetic");
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) return Status::DataLoss("data file " + path + " is empty");
  if (static_cast<int64_t>(bytes.size()) <= block_size) {
    return Status::DataLoss("data file " + path + " has " + std::to_string(bytes.size()) +
                            " bytes; it needs more than block_size=" + std::to_string(block_size));
  }
  std::array<int64_t, 256> id;
  id.fill(-1);
  for (unsigned char c : bytes) id[c] = 0;
  int64_t vocab = 0;
  for (auto& v : id) {
    if (v == 0) v = vocab++;
  }
  TokenStream s;
  s.vocab_size = vocab;
  s.source = "file " + path;
  s.tokens.reserve(bytes.size());
  for (unsigned char c : bytes) s.tokens.push_back(id[c]);
  return s;
}

TokenStream MakeSyntheticStream(int64_t num_tokens, int64_t vocab_size, uint64_t seed) {
  TokenStream s;
  s.vocab_size = vocab_size;
  s.source = "synthetic(tokens=" + std::to_string(num_tokens) + ", vocab=" +
             std::to_string(vocab_size) + ", seed=" + std::to_string(seed) + ")";
  s.tokens.reserve(num_tokens);
  SplitMix64 rng(seed);
  const int64_t modulus = vocab_size - 1;  // values are 1..vocab-1; 0 separates progressions
  while (static_cast<int64_t>(s.tokens.size()) < num_tokens) {
    const int64_t start = static_cast<int64_t>(rng.Uniform(modulus));
    const int64_t stride = 1 + static_cast<int64_t>(rng.Uniform(7));
    const int64_t length = 8 + static_cast<int64_t>(rng.Uniform(9));
    for (int64_t i = 0; i < length; ++i) s.tokens.push_back(1 + (start + i * stride) % modulus);
    s.tokens.push_back(0);
  }
  s.tokens.resize(num_tokens);
  return s;
}

TokenDataset::TokenDataset(std::shared_ptr<const TokenStream> stream, int64_t block_size)
    : stream_(std::move(stream)),
      block_size_(block_size),
      size_(static_cast<int64_t>(stream_->tokens.size()) - block_size) {}

TokenDataset::TokenDataset(std::shared_ptr<const ShardSet> shards)
    : shards_(std::move(shards)),
      block_size_(shards_->block_size()),
      size_(shards_->num_examples()) {}

int64_t TokenDataset::vocab_size() const {
  return shards_ ? shards_->vocab_size() : stream_->vocab_size;
}

std::string TokenDataset::source() const { return shards_ ? shards_->Describe() : stream_->source; }

Status TokenDataset::Batch(const std::vector<int64_t>& indices, at::Tensor* x, at::Tensor* y) const {
  const int64_t b = static_cast<int64_t>(indices.size());
  *x = at::empty({b, block_size_}, at::kLong);
  *y = at::empty({b, block_size_}, at::kLong);
  int64_t* xp = x->data_ptr<int64_t>();
  int64_t* yp = y->data_ptr<int64_t>();
  if (shards_) {
    for (int64_t r = 0; r < b; ++r) {
      DDP_RETURN_IF_ERROR(shards_->Example(indices[r], xp + r * block_size_, yp + r * block_size_));
    }
    return Status::OK();
  }
  const int64_t* t = stream_->tokens.data();
  for (int64_t r = 0; r < b; ++r) {
    const int64_t i = indices[r];
    std::copy(t + i, t + i + block_size_, xp + r * block_size_);
    std::copy(t + i + 1, t + i + 1 + block_size_, yp + r * block_size_);
  }
  return Status::OK();
}

}  // namespace ddp::worker
