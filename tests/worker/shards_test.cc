// Token shards: formats, the concatenation's windows, every failure naming file and offset, and
// a resident set that does not grow with the corpus. Shards are written by shard_writer.h.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "tests/worker/process_util.h"
#include "tests/worker/shard_writer.h"
#include "worker/data/dataset.h"
#include "worker/data/global_batch.h"
#include "worker/data/sampler.h"
#include "worker/data/shards.h"
#include "worker/train/exit_codes.h"

namespace ddp::worker {
namespace {

using ddp::testing::LlmcShard;
using ddp::testing::Ramp;
using ddp::testing::RawShard;
using ddp::testing::WriteBytes;

class ShardsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ddp::testing::MakeTempDir("ddp-shards"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

ShardOptions Opts(const std::string& format = "auto", int64_t vocab = 50257, int64_t width = 2) {
  ShardOptions o;
  o.format = format;
  o.vocab_size = vocab;
  o.token_bytes = width;
  return o;
}

// Reads example i; fails the test on error.
std::pair<std::vector<int64_t>, std::vector<int64_t>> Get(const ShardSet& s, int64_t i) {
  std::vector<int64_t> x(s.block_size()), y(s.block_size());
  Status st = s.Example(i, x.data(), y.data());
  EXPECT_TRUE(st.ok()) << st.ToString();
  return {x, y};
}

TEST_F(ShardsTest, ConcatenatesRawAndLlmcShardsInNameOrder) {
  // 21 tokens -> (21-1)/4 = 5 windows; 10 tokens -> 2; 3 tokens -> 0 (too short for one).
  WriteBytes(Path("train_00.bin"), RawShard(Ramp(21, 100, 50257)));
  WriteBytes(Path("train_01.bin"), LlmcShard(Ramp(10, 7000, 50257)));
  WriteBytes(Path("train_02.bin"), RawShard(Ramp(3, 1, 50257)));
  auto s = ShardSet::Open(Path("train_*.bin"), Opts(), 4);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->shards().size(), 3u);
  EXPECT_EQ((*s)->num_tokens(), 34);
  EXPECT_EQ((*s)->num_examples(), 7);
  EXPECT_EQ((*s)->shards()[1].data_offset, 1024);
  for (int64_t i = 0; i < 7; ++i) {
    // Window k of a shard starts at token 4k; shard 1 begins at global example 5.
    const int64_t first = i < 5 ? 100 + 4 * i : 7000 + 4 * (i - 5);
    auto [x, y] = Get(**s, i);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(x[j], first + j) << "example " << i;
      EXPECT_EQ(y[j], first + j + 1) << "example " << i;
    }
  }
}

TEST_F(ShardsTest, Uint32FromTheLlama3HeaderOrTheFlag) {
  WriteBytes(Path("a.bin"), LlmcShard({70000, 70001, 70002, 5, 6}, 20240801, 7, 4));
  auto h = ShardSet::Open(Path("a.bin"), Opts("auto", 128256), 2);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ((*h)->shards()[0].token_bytes, 4);
  EXPECT_EQ(Get(**h, 0).first, (std::vector<int64_t>{70000, 70001}));
  EXPECT_EQ(Get(**h, 1).second, (std::vector<int64_t>{5, 6}));

  WriteBytes(Path("b.bin"), RawShard({65536, 65537, 65538}, 4));
  auto r = ShardSet::Open(Path("b.bin"), Opts("raw", 100000, 4), 2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Get(**r, 0).second, (std::vector<int64_t>{65537, 65538}));
}

void ExpectDataError(const StatusOr<std::shared_ptr<const ShardSet>>& s, const std::string& file,
                     const std::string& offset) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kDataLoss) << s.status().ToString();
  EXPECT_EQ(ExitCodeFor(s.status()), 3);
  EXPECT_NE(s.status().message().find(file), std::string::npos) << s.status().ToString();
  EXPECT_NE(s.status().message().find("at byte " + offset + ":"), std::string::npos) << s.status().ToString();
}

TEST_F(ShardsTest, BadFilesNameTheFileAndTheOffset) {
  // With --data-format llmc a headerless file is a bad magic at byte 0.
  WriteBytes(Path("raw.bin"), RawShard(Ramp(600, 0, 100)));
  ExpectDataError(ShardSet::Open(Path("raw.bin"), Opts("llmc"), 4), Path("raw.bin"), "0");
  // The header counts 100 tokens; 40 are there: the file ends at byte 1024 + 80.
  WriteBytes(Path("short.bin"), LlmcShard(Ramp(40, 0, 100), 20240520, 1, 2, 100));
  ExpectDataError(ShardSet::Open(Path("short.bin"), Opts(), 4), Path("short.bin"), "1104");
  // Cut inside the header.
  WriteBytes(Path("cut.bin"), LlmcShard(Ramp(40, 0, 100)).substr(0, 500));
  ExpectDataError(ShardSet::Open(Path("cut.bin"), Opts(), 4), Path("cut.bin"), "500");
  // Wrong version for the magic.
  WriteBytes(Path("v9.bin"), LlmcShard(Ramp(40, 0, 100), 20240520, 9));
  ExpectDataError(ShardSet::Open(Path("v9.bin"), Opts(), 4), Path("v9.bin"), "4");
  // 2 tokens and a half: the last whole token ends at byte 4.
  WriteBytes(Path("odd.bin"), RawShard({1, 2}) + "x");
  ExpectDataError(ShardSet::Open(Path("odd.bin"), Opts("raw"), 1), Path("odd.bin"), "4");
  WriteBytes(Path("empty.bin"), "");
  ExpectDataError(ShardSet::Open(Path("empty.bin"), Opts(), 1), Path("empty.bin"), "0");

  auto none = ShardSet::Open(Path("nothing_*.bin"), Opts(), 4);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(ExitCodeFor(none.status()), 3);
  EXPECT_NE(none.status().message().find("nothing_*.bin"), std::string::npos);
  auto bad_width = ShardSet::Open(Path("raw.bin"), Opts("raw", 100, 3), 4);
  EXPECT_EQ(bad_width.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(ShardsTest, ATokenOutsideTheVocabularyFailsTheBatchNamingItsOffset) {
  std::vector<uint32_t> t = Ramp(40, 0, 50);
  t[13] = 50;  // vocab 50: 50 is invalid; token 13 lies in window 3 (tokens 12..16)
  WriteBytes(Path("train_0.bin"), LlmcShard(t));
  auto s = ShardSet::Open(Path("train_*.bin"), Opts("auto", 50), 4);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  TokenDataset ds(*s);
  at::Tensor x, y;
  EXPECT_TRUE(ds.Batch({0, 1, 2, 4}, &x, &y).ok());
  Status bad = ds.Batch({0, 3}, &x, &y);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(ExitCodeFor(bad), 3);
  // Header 1024 bytes + token 13 * 2 bytes.
  EXPECT_NE(bad.message().find(Path("train_0.bin") + " at byte 1050: token 50"), std::string::npos)
      << bad.ToString();
}

// The sampler over the concatenation, across resizes: with a fixed global batch of 6 windows dealt
// to 2, then 3, then 2 ranks, every two steps are one epoch, and each epoch's windows together are
// every window of every shard exactly once, whichever file it lives in.
TEST_F(ShardsTest, ResizedRanksSeeEveryWindowOfEveryShardOncePerEpoch) {
  WriteBytes(Path("s0.bin"), RawShard(Ramp(33, 0, 1000)));   // 8 windows
  WriteBytes(Path("s1.bin"), RawShard(Ramp(17, 500, 1000)));  // 4 windows
  auto s = ShardSet::Open(Path("s*.bin"), Opts("raw", 1000), 4);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  TokenDataset ds(*s);
  ASSERT_EQ(ds.size(), 12);
  std::multiset<int64_t> want;
  for (int k = 0; k < 8; ++k) want.insert(4 * k);
  for (int k = 0; k < 4; ++k) want.insert(500 + 4 * k);
  DistributedSampler sampler(ds.size(), 7);
  BatchSettings b;
  b.policy = BatchPolicy::kConstantGlobal;
  b.global_batch_size = 6;
  SamplerPosition pos;
  std::multiset<int64_t> epoch_firsts;
  int step = 0;
  for (int world : {2, 3, 3, 2, 2, 3}) {
    auto g = ResolveGlobalBatch(b, world);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    for (int r = 0; r < world; ++r) {
      for (const auto& micro : RankMicroBatches(sampler, pos, *g, r, world)) {
        at::Tensor x, y;
        ASSERT_TRUE(ds.Batch(micro, &x, &y).ok());
        for (int64_t i = 0; i < x.size(0); ++i) epoch_firsts.insert(x[i][0].item<int64_t>());
      }
    }
    pos = sampler.Advance(pos, g->samples);
    if (++step % 2 == 0) {
      EXPECT_EQ(epoch_firsts, want) << "epoch " << step / 2 - 1;
      epoch_firsts.clear();
    }
  }
  EXPECT_EQ(pos, (SamplerPosition{3, 0}));
}

int64_t ResidentBytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// A 4 GiB sparse file (no disk blocks): opening it and sampling windows all over it must cost
// the pages touched, not the corpus. Loading it whole would add 4 GiB (as int64: 16 GiB).
TEST_F(ShardsTest, ResidentSetDoesNotGrowWithTheCorpus) {
  const int64_t size = int64_t{4} << 30;
  const std::string path = Path("huge.bin");
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, size), 0);
  close(fd);
  const int64_t before = ResidentBytes();
  ASSERT_GT(before, 0);
  auto s = ShardSet::Open(path, Opts("raw"), 1024);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)->num_examples(), (size / 2 - 1) / 1024);
  TokenDataset ds(*s);
  std::mt19937_64 rng(1);
  at::Tensor x, y;
  for (int b = 0; b < 100; ++b) {
    std::vector<int64_t> idx;
    for (int j = 0; j < 8; ++j) idx.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(ds.size())));
    ASSERT_TRUE(ds.Batch(idx, &x, &y).ok());
  }
  // 800 windows of 2 KiB touch at most 2 pages each (6.4 MiB) plus the batch tensors.
  const int64_t grown = ResidentBytes() - before;
  EXPECT_LT(grown, int64_t{48} << 20) << "resident set grew by " << grown << " bytes";
}

}  // namespace
}  // namespace ddp::worker
