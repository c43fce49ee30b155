#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/cat.h>
#include <torch/nn/module.h>
#include <torch/optim/adamw.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include "worker/data/dataset.h"
#include "worker/model/mingpt.h"
#include "worker/model/model.h"
#include "worker/train/exit_codes.h"
#include "worker/train/train_state.h"

namespace ddp::worker {
namespace {

ModelConfig Tiny(const std::string& kind) {
  ModelConfig c;
  c.kind = kind;
  c.vocab_size = 16;
  c.block_size = 8;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.mlp_hidden = 32;
  return c;
}

TEST(ModelTest, SameSeedSameParametersOtherSeedDiffers) {
  for (const char* kind : {"mingpt", "mlp"}) {
    auto a = MakeModel(Tiny(kind), 1), b = MakeModel(Tiny(kind), 1), c = MakeModel(Tiny(kind), 2);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok());
    EXPECT_EQ(ParamChecksum(**a), ParamChecksum(**b)) << kind;
    EXPECT_NE(ParamChecksum(**a), ParamChecksum(**c)) << kind;
  }
}

TEST(ModelTest, InvalidConfigNamesTheField) {
  auto bad = Tiny("mingpt");
  bad.n_head = 3;
  auto m = MakeModel(bad, 1);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("n_head"), std::string::npos);
  auto k = MakeModel(Tiny("rnn"), 1);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("rnn"), std::string::npos);
}

// Causality: logits at position t must not depend on tokens after t.
TEST(ModelTest, MinGptIsCausal) {
  auto m = MakeModel(Tiny("mingpt"), 3);
  ASSERT_TRUE(m.ok());
  auto* gpt = dynamic_cast<MinGpt*>(m->get());
  ASSERT_NE(gpt, nullptr);
  at::Tensor x = at::randint(0, 16, {1, 8}, at::kLong);
  at::Tensor x2 = x.clone();
  x2.index_put_({0, 7}, (x[0][7].item<int64_t>() + 1) % 16);
  at::Tensor a = gpt->Logits(x), b = gpt->Logits(x2);
  EXPECT_TRUE(at::equal(a.narrow(1, 0, 7), b.narrow(1, 0, 7)));
  EXPECT_FALSE(at::allclose(a.narrow(1, 7, 1), b.narrow(1, 7, 1)));
}

TEST(ModelTest, InitialLossIsNearUniform) {
  for (const char* kind : {"mingpt", "mlp"}) {
    auto m = MakeModel(Tiny(kind), 4);
    ASSERT_TRUE(m.ok());
    at::Tensor x = at::randint(0, 16, {4, 8}, at::kLong), y = at::randint(0, 16, {4, 8}, at::kLong);
    // Small init (std 0.02) -> near-uniform predictions -> loss ~ ln(vocab).
    EXPECT_NEAR((*m)->Loss(x, y).item<double>(), std::log(16.0), 0.1) << kind;
  }
}

TEST(TrainStateTest, RoundTripRestoresEverything) {
  auto a = MakeModel(Tiny("mingpt"), 5), b = MakeModel(Tiny("mingpt"), 6);
  ASSERT_TRUE(a.ok() && b.ok());
  torch::optim::AdamW opt_a((*a)->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::AdamW opt_b((*b)->parameters(), torch::optim::AdamWOptions(1e-2));
  at::Tensor x = at::randint(0, 16, {2, 8}, at::kLong), y = at::randint(0, 16, {2, 8}, at::kLong);
  (*a)->Loss(x, y).backward();
  opt_a.step();
  TrainProgress p{7, {2, 48}, 3};
  auto bytes = SerializeTrainState(**a, opt_a, p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  TrainProgress q;
  ASSERT_TRUE(RestoreTrainState(*bytes, at::kCPU, **b, opt_b, &q).ok());
  EXPECT_EQ(ParamChecksum(**a), ParamChecksum(**b));
  EXPECT_EQ(q.step, 7);
  EXPECT_EQ(q.sampler, (SamplerPosition{2, 48}));
  EXPECT_EQ(q.world_size, 3);
  // Same optimizer state: one more identical step keeps them identical.
  opt_a.zero_grad();
  opt_b.zero_grad();
  (*a)->Loss(x, y).backward();
  (*b)->Loss(x, y).backward();
  opt_a.step();
  opt_b.step();
  EXPECT_EQ(ParamChecksum(**a), ParamChecksum(**b));
  auto c = MakeModel(Tiny("mingpt"), 5);
  torch::optim::AdamW opt_c((*c)->parameters(), torch::optim::AdamWOptions(1e-2));
  Status bad = RestoreTrainState("not an archive", at::kCPU, **c, opt_c, &q);
  EXPECT_EQ(bad.code(), StatusCode::kDataLoss);
}

// A payload as SerializeTrainState documents it, written independently of it: without
// "cuda_rng_count" (the format before CUDA generators were saved) when cuda_count is negative.
std::string WritePayload(torch::nn::Module& model, torch::optim::Optimizer& opt, int64_t step,
                         const at::Tensor& cpu_rng, int cuda_count) {
  torch::serialize::OutputArchive root, model_ar, opt_ar;
  model.save(model_ar);
  opt.save(opt_ar);
  root.write("model", model_ar);
  root.write("optimizer", opt_ar);
  root.write("step", at::scalar_tensor(step, at::kLong));
  root.write("epoch", at::scalar_tensor(int64_t{0}, at::kLong));
  root.write("sampler_offset", at::scalar_tensor(int64_t{0}, at::kLong));
  root.write("world_size", at::scalar_tensor(int64_t{1}, at::kLong));
  root.write("cpu_rng", cpu_rng);
  if (cuda_count >= 0) {
    root.write("cuda_rng_count", at::scalar_tensor(int64_t{cuda_count}, at::kLong));
    for (int i = 0; i < cuda_count; ++i) root.write("cuda_rng_" + std::to_string(i), cpu_rng);
  }
  std::ostringstream out;
  root.save_to(out);
  return out.str();
}

at::Tensor CpuRngState() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

TEST(TrainStateTest, RandomGeneratorsRoundTripAndTheirCountIsSaved) {
  auto a = MakeModel(Tiny("mingpt"), 5);
  ASSERT_TRUE(a.ok());
  torch::optim::AdamW opt((*a)->parameters(), torch::optim::AdamWOptions(1e-2));
  auto bytes = SerializeTrainState(**a, opt, TrainProgress{3, {0, 0}, 1});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  // What the generators give after the save is what they give again after a restore.
  const at::Tensor after_save = at::rand({64});
  (void)at::rand({17});  // move them on
  TrainProgress q;
  ASSERT_TRUE(RestoreTrainState(*bytes, at::kCPU, **a, opt, &q).ok());
  EXPECT_TRUE(at::equal(at::rand({64}), after_save));
  // One state per visible CUDA device: none on a machine (or a LibTorch) without CUDA.
  torch::serialize::InputArchive root;
  std::istringstream in(*bytes);
  root.load_from(in);
  at::Tensor count;
  ASSERT_TRUE(root.try_read("cuda_rng_count", count));
  EXPECT_EQ(count.item<int64_t>(), VisibleCudaDevices());
  for (int i = 0; i < VisibleCudaDevices(); ++i) {
    at::Tensor state;
    EXPECT_TRUE(root.try_read("cuda_rng_" + std::to_string(i), state)) << i;
  }
}

TEST(TrainStateTest, PayloadWithoutCudaGeneratorsStillLoads) {
  auto a = MakeModel(Tiny("mingpt"), 5), b = MakeModel(Tiny("mingpt"), 6);
  ASSERT_TRUE(a.ok() && b.ok());
  torch::optim::AdamW opt_a((*a)->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::AdamW opt_b((*b)->parameters(), torch::optim::AdamWOptions(1e-2));
  const at::Tensor saved_rng = CpuRngState();
  const at::Tensor expected = at::rand({32});
  const std::string old = WritePayload(**a, opt_a, 11, saved_rng, /*cuda_count=*/-1);
  TrainProgress q;
  Status s = RestoreTrainState(old, at::kCPU, **b, opt_b, &q);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(q.step, 11);
  EXPECT_EQ(ParamChecksum(**a), ParamChecksum(**b));
  EXPECT_TRUE(at::equal(at::rand({32}), expected));
}

TEST(TrainStateTest, MoreCudaGeneratorsThanDevicesIsAClearErrorAndRestoresNothing) {
  auto a = MakeModel(Tiny("mingpt"), 5), b = MakeModel(Tiny("mingpt"), 6);
  ASSERT_TRUE(a.ok() && b.ok());
  torch::optim::AdamW opt_a((*a)->parameters(), torch::optim::AdamWOptions(1e-2));
  torch::optim::AdamW opt_b((*b)->parameters(), torch::optim::AdamWOptions(1e-2));
  const int claimed = VisibleCudaDevices() + 1;
  const std::string bytes = WritePayload(**a, opt_a, 4, CpuRngState(), claimed);
  const std::string before = ParamChecksum(**b);
  TrainProgress q;
  Status s = RestoreTrainState(bytes, at::kCPU, **b, opt_b, &q);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find(std::to_string(claimed) + " CUDA device(s) but this process sees " +
                             std::to_string(claimed - 1)),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("HINT"), std::string::npos);
  EXPECT_EQ(ParamChecksum(**b), before);
  EXPECT_EQ(q.step, 0);
}

// A checkpoint of another model config is a configuration error (exit 2) naming the first
// parameter that differs, with both shapes, and leaves the model as it was.
TEST(TrainStateTest, AnotherModelsCheckpointNamesTheFirstMismatchAndRestoresNothing) {
  struct Row {
    ModelConfig saved, resumed;
    std::string names;
  };
  ModelConfig wide = Tiny("mingpt"), deep = Tiny("mingpt"), bigger_vocab = Tiny("mingpt");
  wide.n_embd = 32;
  deep.n_layer = 3;
  bigger_vocab.vocab_size = 20;
  const std::vector<Row> rows = {
      // minGPT registers wte (vocab x n_embd) first.
      {Tiny("mingpt"), wide, "parameter wte.weight has shape [16, 16] in the checkpoint and [16, 32] in this model"},
      {wide, Tiny("mingpt"), "parameter wte.weight has shape [16, 32] in the checkpoint and [16, 16] in this model"},
      {Tiny("mingpt"), bigger_vocab, "parameter wte.weight has shape [16, 16] in the checkpoint and [20, 16]"},
      {Tiny("mingpt"), deep, "module blocks.2 is missing from it"},
      {deep, Tiny("mingpt"), "module blocks.2 is not in this model"},
      {Tiny("mlp"), Tiny("mingpt"), "module wte is missing from it"},
  };
  for (const Row& r : rows) {
    auto a = MakeModel(r.saved, 5), b = MakeModel(r.resumed, 6);
    ASSERT_TRUE(a.ok() && b.ok()) << r.names;
    torch::optim::AdamW opt_a((*a)->parameters(), torch::optim::AdamWOptions(1e-2));
    torch::optim::AdamW opt_b((*b)->parameters(), torch::optim::AdamWOptions(1e-2));
    auto bytes = SerializeTrainState(**a, opt_a, TrainProgress{9, {0, 0}, 1});
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    const std::string before = ParamChecksum(**b);
    TrainProgress q;
    Status s = RestoreTrainState(*bytes, at::kCPU, **b, opt_b, &q);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_EQ(ExitCodeFor(s), kExitInvalidConfig);
    EXPECT_NE(s.message().find(r.names), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("HINT"), std::string::npos) << s.ToString();
    EXPECT_EQ(ParamChecksum(**b), before) << r.names;
    EXPECT_EQ(q.step, 0) << r.names;
  }
}

TEST(DataTest, SyntheticIsDeterministicAndStructured) {
  auto a = MakeSyntheticStream(5000, 32, 9), b = MakeSyntheticStream(5000, 32, 9);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_NE(a.tokens, MakeSyntheticStream(5000, 32, 10).tokens);
  ASSERT_EQ(a.tokens.size(), 5000u);
  // Inside a progression, the next token follows from the previous two (mod 31, values 1..31).
  int checked = 0;
  for (size_t i = 2; i < a.tokens.size(); ++i) {
    int64_t t0 = a.tokens[i - 2], t1 = a.tokens[i - 1], t2 = a.tokens[i];
    if (t0 == 0 || t1 == 0 || t2 == 0) continue;
    EXPECT_EQ((t2 - 1 + 31) % 31, (2 * (t1 - 1) - (t0 - 1) + 62) % 31) << "at " << i;
    ++checked;
  }
  EXPECT_GT(checked, 3000);
  for (int64_t t : a.tokens) ASSERT_TRUE(t >= 0 && t < 32);
}

TEST(DataTest, CharFileErrorsNameTheFileAndMapToExit3) {
  const std::string dir = std::filesystem::temp_directory_path() / "ddp-data-test";
  std::filesystem::create_directories(dir);
  const std::string empty = dir + "/empty.txt", shortf = dir + "/short.txt", good = dir + "/good.txt";
  std::ofstream(empty).close();
  std::ofstream(shortf) << "abc";
  std::ofstream(good) << "hello world, hello ddp";
  for (const std::string& f : {dir + "/missing.txt", empty, shortf}) {
    auto s = LoadCharFile(f, 8);
    ASSERT_FALSE(s.ok()) << f;
    EXPECT_NE(s.status().message().find(f), std::string::npos) << s.status().ToString();
    EXPECT_EQ(ExitCodeFor(s.status()), kExitInvalidData);
  }
  auto s = LoadCharFile(good, 8);
  ASSERT_TRUE(s.ok());
  const std::string text = "hello world, hello ddp";
  const std::set<char> distinct(text.begin(), text.end());
  EXPECT_EQ(s->vocab_size, static_cast<int64_t>(distinct.size()));
  TokenDataset ds(std::make_shared<const TokenStream>(*s), 8);
  at::Tensor x, y;
  ASSERT_TRUE(ds.Batch({0, 3}, &x, &y).ok());
  EXPECT_TRUE(at::equal(x.narrow(1, 1, 7), y.narrow(1, 0, 7)));  // y is x shifted by one
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddp::worker
