// Token shards: glob, mmap, header checks, and example windows with the vocabulary check.
#include "worker/data/shards.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ddp::worker {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "token shards are read as little-endian");

std::string At(const std::string& path, int64_t offset) {
  return "shard " + path + " at byte " + std::to_string(offset);
}

void Unmap(Shard* s) {
  if (s->map != nullptr) munmap(const_cast<unsigned char*>(s->map), static_cast<size_t>(s->file_bytes));
  s->map = nullptr;
}

int32_t ReadInt32(const unsigned char* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Fills data_offset, token_bytes and num_tokens from the header (or its absence).
Status ParseLayout(const ShardOptions& o, Shard* s) {
  const int32_t magic = s->file_bytes >= 4 ? ReadInt32(s->map) : 0;
  const bool has_header = magic == kLlmcMagic || magic == kLlmcMagicLlama3;
  if (o.format == "llmc" || (o.format == "auto" && has_header)) {
    if (s->file_bytes < kLlmcHeaderBytes) {
      return Status::DataLoss(At(s->path, s->file_bytes) + ": truncated inside the 1024-byte llm.c header");
    }
    if (!has_header) {
      return Status::DataLoss(At(s->path, 0) + ": bad magic " + std::to_string(magic) + " (want " +
                              std::to_string(kLlmcMagic) + " or " + std::to_string(kLlmcMagicLlama3) +
                              "). HINT: use --data-format raw for headerless nanoGPT .bin files");
    }
    const int32_t version = ReadInt32(s->map + 4);
    const int32_t want_version = magic == kLlmcMagic ? 1 : 7;
    if (version != want_version) {
      return Status::DataLoss(At(s->path, 4) + ": unsupported version " + std::to_string(version) +
                              " for magic " + std::to_string(magic) + " (want " +
                              std::to_string(want_version) + ")");
    }
    const int32_t count = ReadInt32(s->map + 8);
    if (count < 0) return Status::DataLoss(At(s->path, 8) + ": negative token count " + std::to_string(count));
    s->data_offset = kLlmcHeaderBytes;
    s->token_bytes = magic == kLlmcMagic ? 2 : 4;
    s->num_tokens = count;
    const int64_t want = s->data_offset + s->num_tokens * s->token_bytes;
    if (s->file_bytes < want) {
      return Status::DataLoss(At(s->path, s->file_bytes) + ": truncated: the header counts " +
                              std::to_string(count) + " tokens, which end at byte " +
                              std::to_string(want));
    }
    return Status::OK();
  }
  s->data_offset = 0;
  s->token_bytes = o.token_bytes;
  if (s->file_bytes % s->token_bytes != 0) {
    return Status::DataLoss(At(s->path, s->file_bytes - s->file_bytes % s->token_bytes) +
                            ": truncated: " + std::to_string(s->file_bytes) +
                            " bytes is not a whole number of " + std::to_string(s->token_bytes) +
                            "-byte tokens");
  }
  s->num_tokens = s->file_bytes / s->token_bytes;
  return Status::OK();
}

StatusOr<Shard> MapShard(const std::string& path, const ShardOptions& o) {
  Shard s;
  s.path = path;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("shard " + path + " cannot be opened: " + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return Status::NotFound("shard " + path + " is not a regular file");
  }
  s.file_bytes = st.st_size;
  if (s.file_bytes == 0) {
    close(fd);
    return Status::DataLoss(At(path, 0) + ": empty file");
  }
  void* p = mmap(nullptr, static_cast<size_t>(s.file_bytes), PROT_READ, MAP_SHARED, fd, 0);
  const int map_errno = errno;
  close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) return Status::NotFound("shard " + path + ": mmap: " + std::strerror(map_errno));
  // Windows are read at random offsets: read-ahead would only inflate the resident set.
  madvise(p, static_cast<size_t>(s.file_bytes), MADV_RANDOM);
  s.map = static_cast<const unsigned char*>(p);
  if (Status st2 = ParseLayout(o, &s); !st2.ok()) {
    Unmap(&s);
    return st2;
  }
  return s;
}

}  // namespace

StatusOr<std::shared_ptr<const ShardSet>> ShardSet::Open(const std::string& pattern,
                                                         const ShardOptions& options,
                                                         int64_t block_size) {
  if (options.format != "auto" && options.format != "llmc" && options.format != "raw") {
    return Status::InvalidArgument("data.format: want auto, llmc or raw, got '" + options.format + "'");
  }
  if (options.token_bytes != 2 && options.token_bytes != 4) {
    return Status::InvalidArgument("data.token_bytes: want 2 or 4, got " + std::to_string(options.token_bytes));
  }
  if (options.vocab_size <= 0) return Status::InvalidArgument("data.vocab_size: must be > 0");
  glob_t g = {};
  const int rc = glob(pattern.c_str(), GLOB_ERR, nullptr, &g);
  std::vector<std::string> paths(g.gl_pathv, g.gl_pathv + (rc == 0 ? g.gl_pathc : 0));
  globfree(&g);
  if (paths.empty()) {
    return Status::NotFound("no file matches the shard pattern '" + pattern +
                            "'. HINT: --data-files takes a glob such as /data/train_*.bin; quote it "
                            "so the shell does not expand it");
  }
  std::shared_ptr<ShardSet> set(new ShardSet());
  set->pattern_ = pattern;
  set->options_ = options;
  set->block_size_ = block_size;
  int64_t examples = 0;
  for (const auto& path : paths) {
    auto shard = MapShard(path, options);
    if (!shard.ok()) return shard.status();  // ~ShardSet unmaps the ones already open
    set->shards_.push_back(*shard);
    set->num_tokens_ += shard->num_tokens;
    examples += shard->num_tokens > 0 ? (shard->num_tokens - 1) / block_size : 0;
    set->ends_.push_back(examples);
  }
  if (examples == 0) {
    return Status::DataLoss("shards " + pattern + " hold " + std::to_string(set->num_tokens_) +
                            " tokens: no file has the block_size + 1 = " +
                            std::to_string(block_size + 1) + " tokens of one example");
  }
  return std::shared_ptr<const ShardSet>(std::move(set));
}

ShardSet::~ShardSet() {
  for (auto& s : shards_) Unmap(&s);
}

std::string ShardSet::Describe() const {
  return "shards " + pattern_ + " (" + std::to_string(shards_.size()) + " files, " +
         std::to_string(num_tokens_) + " tokens)";
}

Status ShardSet::Example(int64_t i, int64_t* x, int64_t* y) const {
  const auto k = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), i) - ends_.begin());
  const Shard& s = shards_[k];
  const int64_t first = (i - (k == 0 ? 0 : ends_[k - 1])) * block_size_;
  const unsigned char* base = s.map + s.data_offset;
  for (int64_t j = 0; j <= block_size_; ++j) {
    const int64_t at = (first + j) * s.token_bytes;
    int64_t token;
    if (s.token_bytes == 2) {
      uint16_t v;
      std::memcpy(&v, base + at, 2);
      token = v;
    } else {
      uint32_t v;
      std::memcpy(&v, base + at, 4);
      token = v;
    }
    if (token >= options_.vocab_size) {
      return Status::DataLoss(At(s.path, s.data_offset + at) + ": token " + std::to_string(token) +
                              " is >= the vocabulary size " + std::to_string(options_.vocab_size) +
                              ". HINT: set --vocab-size to the tokenizer's vocabulary, or "
                              "--token-bytes to the width the file was written with");
    }
    if (j < block_size_) x[j] = token;
    if (j > 0) y[j - 1] = token;
  }
  return Status::OK();
}

}  // namespace ddp::worker
