#include "worker/train/config.h"

#include <gtest/gtest.h>

#include <map>

#include "worker/train/exit_codes.h"
#include "worker/train/fault.h"

namespace ddp::worker {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  std::function<const char*(const char*)> Fn() const {
    return [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

StatusOr<TrainConfig> Load(const std::string& yaml, const Env& env, std::vector<std::string> args) {
  args.insert(args.begin(), {"--config", "cfg.yaml"});
  return LoadConfig(args, env.Fn(), [&](const std::string& p) -> StatusOr<std::string> {
    if (p == "cfg.yaml") return yaml;
    return Status::NotFound(p);
  });
}

TEST(ConfigTest, FlagsWinOverEnvOverYaml) {
  const std::string yaml = "train:\n  steps: 10\n  batch_size: 4\n  lr: 0.01\nmodel:\n  n_layer: 3\n";
  Env env{{{"DDP_STEPS", "20"}, {"DDP_BATCH_SIZE", "8"}, {"DDP_CHECKPOINT_DIR", "/ck"}}};
  auto c = Load(yaml, env, {"--steps", "30", "--model=mlp"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps, 30);        // flag
  EXPECT_EQ(c->batch_size, 8);    // env over yaml
  EXPECT_DOUBLE_EQ(c->lr, 0.01);  // yaml over default
  EXPECT_EQ(c->model.n_layer, 3);
  EXPECT_EQ(c->model.kind, "mlp");
  EXPECT_EQ(c->checkpoint_dir, "/ck");
}

// Every bad input is rejected with a message naming the key, flag or variable, and maps to exit 2.
TEST(ConfigTest, ErrorsNameTheKey) {
  struct Row { std::string yaml; std::map<std::string, std::string> env; std::vector<std::string> args; std::string names; };
  const std::vector<Row> rows = {
      {"train:\n  stepz: 3\n", {}, {}, "train.stepz"},
      {"trian:\n  steps: 3\n", {}, {}, "trian"},
      {"train:\n  steps: ten\n", {}, {}, "train.steps"},
      {"train:\n  steps: 0\n", {}, {}, "train.steps"},
      {"model:\n  n_embd: 30\n  n_head: 4\n", {}, {}, "model.n_embd"},
      {"train:\n  device: tpu\n", {}, {}, "train.device"},
      {"data:\n  dataset: chars\n", {}, {}, "data.file"},
      {"train: [1, 2\n", {}, {}, "YAML"},
      {"", {{"DDP_LR", "fast"}}, {}, "DDP_LR"},
      {"", {}, {"--bogus", "1"}, "--bogus"},
      {"", {}, {"--steps"}, "--steps"},
      {"", {}, {"--batch-size", "-1"}, "train.batch_size"},
      {"checkpoint:\n  keep: 0\n", {}, {}, "checkpoint.keep"},
      {"data:\n  dataset: shards\n", {}, {}, "data.files"},
      {"", {}, {"--data-files", "/d/*.bin"}, "data.files"},  // without --dataset shards
      {"", {}, {"--dataset", "shards", "--data-files", "a", "--token-bytes", "3"}, "data.token_bytes"},
      {"", {}, {"--dataset", "shards", "--data-files", "a", "--data-format", "npy"}, "data.format"},
      {"", {}, {"--dataset", "shards", "--data-files", "a", "--eval-every", "5"}, "train.eval_every"},
      {"", {}, {"--val-files", "v"}, "data.val_files"},
      {"model:\n  kind: gpt3\n", {}, {}, "model.kind"},
      {"model:\n  kind: torchscript\n", {}, {}, "model.file"},
      {"", {}, {"--model-file", "m.pt"}, "model.file"},  // without --model torchscript
      {"", {{"DDP_BATCH_POLICY", "constantglobal"}}, {}, "want ConstantGlobal or ConstantPerRank"},
      {"", {}, {"--batch-policy", "ConstantGlobal"}, "ConstantGlobal needs a global batch"},
      {"", {}, {"--batch-policy", "ConstantGlobal", "--global-batch-size", "30", "--batch-size", "4"},
       "train.global_batch_size: 30 is not a whole number of train.batch_size 4 micro-batches"},
      {"", {{"DDP_GLOBAL_BATCH_RANKS", "-1"}}, {}, "train.global_batch_ranks"},
      {"", {}, {"--global-batch-size", "1099511627777"}, "train.global_batch_size"},
  };
  for (const auto& r : rows) {
    auto c = Load(r.yaml, Env{r.env}, r.args);
    ASSERT_FALSE(c.ok()) << r.names;
    EXPECT_NE(c.status().message().find(r.names), std::string::npos) << c.status().ToString();
    EXPECT_EQ(ExitCodeFor(c.status()), kExitInvalidConfig) << r.names;
  }
}

// The operator's env for spec.elastic (DDP_BATCH_POLICY with DDP_GLOBAL_BATCH_SIZE or
// DDP_GLOBAL_BATCH_RANKS); the default without it is ConstantPerRank (each rank's batch fixed).
TEST(ConfigTest, BatchPolicyFromTheOperatorsEnv) {
  auto plain = Load("", Env{}, {});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->batch_policy, "ConstantPerRank");
  auto c = Load("", Env{{{"DDP_BATCH_POLICY", "ConstantGlobal"}, {"DDP_GLOBAL_BATCH_RANKS", "8"}}},
                {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->batch_policy, "ConstantGlobal");
  EXPECT_EQ(c->global_batch_ranks, 8);
  auto g = Load("train:\n  batch_policy: ConstantGlobal\n  batch_size: 4\n",
                Env{{{"DDP_GLOBAL_BATCH_SIZE", "96"}}}, {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->global_batch_size, 96);
}

TEST(ConfigTest, ShardsAndGpt2FromYaml) {
  const std::string yaml =
      "model:\n  kind: gpt2\n  block_size: 1024\ndata:\n  dataset: shards\n"
      "  files: /data/train_*.bin\n  val_files: /data/val_*.bin\n  format: llmc\n"
      "train:\n  eval_every: 250\n";
  auto c = Load(yaml, Env{{{"DDP_EVAL_BATCHES", "7"}}}, {"--vocab-size", "50257"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model.kind, "gpt2");
  EXPECT_EQ(c->data_files, "/data/train_*.bin");
  EXPECT_EQ(c->val_files, "/data/val_*.bin");
  EXPECT_EQ(c->data_format, "llmc");
  EXPECT_EQ(c->eval_every, 250);
  EXPECT_EQ(c->eval_batches, 7);
  EXPECT_EQ(c->vocab_size, 50257);
}

TEST(ConfigTest, MissingConfigFileIsAConfigError) {
  auto c = LoadConfig({"--config", "nope.yaml"}, Env{}.Fn(),
                      [](const std::string& p) -> StatusOr<std::string> { return Status::NotFound(p); });
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("nope.yaml"), std::string::npos);
  EXPECT_EQ(ExitCodeFor(c.status()), kExitInvalidConfig);
}

TEST(ExitCodeTest, ContractTable) {
  struct Row { Status s; int code; };
  for (const Row& r : {Row{Status::OK(), 0}, Row{Status::InvalidArgument("x"), 2},
                       Row{Status::FailedPrecondition("x"), 2}, Row{Status::NotFound("f"), 3},
                       Row{Status::DataLoss("f"), 3}, Row{Status::Unavailable("peer"), 75},
                       Row{Status::DeadlineExceeded("t"), 75}, Row{Status::Internal("?"), 75}}) {
    EXPECT_EQ(ExitCodeFor(r.s), r.code) << r.s.ToString();
  }
}

TEST(FaultTest, Parse) {
  auto k = ParseFault("1:5:kill");
  ASSERT_TRUE(k.ok() && k->has_value());
  EXPECT_EQ((*k)->rank, 1);
  EXPECT_EQ((*k)->step, 5);
  EXPECT_EQ((*k)->kind, Fault::Kind::kKill);
  auto e = ParseFault("0:3:exit:7");
  ASSERT_TRUE(e.ok() && e->has_value());
  EXPECT_EQ((*e)->kind, Fault::Kind::kExit);
  EXPECT_EQ((*e)->exit_code, 7);
  EXPECT_FALSE(ParseFault("").value().has_value());
  struct Kind {
    const char* text;
    Fault::Kind kind;
    int incarnation;
  };
  for (const Kind& r : {Kind{"2:120@0:term", Fault::Kind::kTerm, 0},
                        Kind{"0:300@1:kill-pod", Fault::Kind::kKillPod, 1},
                        Kind{"0:0@0:kill-in-heal", Fault::Kind::kKillInHeal, 0},
                        Kind{"1:10:kill-in-checkpoint", Fault::Kind::kKillInCheckpoint, -1}}) {
    auto f = ParseFault(r.text);
    ASSERT_TRUE(f.ok() && f->has_value()) << r.text;
    EXPECT_EQ((*f)->kind, r.kind) << r.text;
    EXPECT_EQ((*f)->incarnation, r.incarnation) << r.text;
  }
  for (const char* bad : {"1:5", "x:5:kill", "1:5:exit", "1:5:exit:300", "1:5:boom", "1:-1:kill",
                          "1:5:kill-pod:3", "1:5@x:kill"}) {
    auto f = ParseFault(bad);
    ASSERT_FALSE(f.ok()) << bad;
    EXPECT_NE(f.status().message().find("DDP_FAULT"), std::string::npos);
  }
}

}  // namespace
}  // namespace ddp::worker
