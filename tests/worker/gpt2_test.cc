// GPT-2 presets: parameter counts against the closed form, and the closed form against the
// published sizes of the released models.
#include <gtest/gtest.h>

#include "worker/model/gpt2.h"
#include "worker/model/mingpt.h"
#include "worker/model/model.h"

namespace ddp::worker {
namespace {

// wte V*C + wpe T*C + per block (2 LayerNorms 4C, qkv 3C^2+3C, proj C^2+C, MLP 8C^2+5C) + ln_f 2C;
// the head is wte (tied), so it adds nothing.
int64_t ClosedForm(int64_t vocab, int64_t block, int64_t layers, int64_t c) {
  return vocab * c + block * c + layers * (12 * c * c + 13 * c) + 2 * c;
}

TEST(Gpt2Test, PresetsMatchThePublishedModelSizes) {
  // Parameter counts of the released GPT-2 checkpoints (unpadded vocabulary, 1024 positions).
  struct Row {
    const char* kind;
    int64_t published;
  };
  for (const Row& r : {Row{"gpt2", 124439808}, Row{"gpt2-medium", 354823168},
                       Row{"gpt2-large", 774030080}}) {
    ModelConfig in;
    in.kind = r.kind;
    in.vocab_size = kGpt2VocabSize;
    in.block_size = kGpt2MaxBlockSize;
    auto p = ApplyGpt2Preset(in);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_TRUE(p->tie_embeddings);
    EXPECT_EQ(p->vocab_size, 50304) << "50257 padded to a multiple of 64";
    EXPECT_EQ(p->n_embd % p->n_head, 0);
    EXPECT_EQ(ClosedForm(kGpt2VocabSize, 1024, p->n_layer, p->n_embd), r.published) << r.kind;
  }
}

TEST(Gpt2Test, BuiltModelHasTheClosedFormCountAndOneEmbeddingMatrix) {
  ModelConfig cfg;
  cfg.kind = "gpt2";
  cfg.vocab_size = kGpt2VocabSize;
  cfg.block_size = 1024;
  auto m = MakeModel(cfg, 1);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(CountParameters(**m), ClosedForm(50304, 1024, 12, 768));
  for (const auto& item : (*m)->named_parameters()) EXPECT_EQ(item.key().find("head"), std::string::npos);
  auto* gpt = dynamic_cast<MinGpt*>(m->get());
  ASSERT_NE(gpt, nullptr);
  at::Tensor logits = gpt->Logits(at::randint(0, kGpt2VocabSize, {1, 8}, at::kLong));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{1, 8, 50304}));
}

TEST(Gpt2Test, ContextLongerThanGpt2sIsRejected) {
  ModelConfig cfg;
  cfg.kind = "gpt2-medium";
  cfg.vocab_size = 100;
  cfg.block_size = 2048;
  auto m = MakeModel(cfg, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("block_size"), std::string::npos);
  EXPECT_EQ(PadVocab(64), 64);
  EXPECT_EQ(PadVocab(65), 128);
}

}  // namespace
}  // namespace ddp::worker
