// Every numeric option of the trainer has bounds: a value outside them, a non-finite number or
// one that overflows its type is refused with the option's name and exit 2, never carried into
// training (where `--lr inf` ran to a NaN loss and a huge timeout overflowed a deadline).
#include <gtest/gtest.h>

#include <set>

#include "worker/train/config.h"
#include "worker/train/exit_codes.h"

namespace ddp::worker {
namespace {

StatusOr<TrainConfig> FromFlags(std::vector<std::string> args) {
  return LoadConfig(args, [](const char*) -> const char* { return nullptr; },
                    [](const std::string& p) -> StatusOr<std::string> { return Status::NotFound(p); });
}

struct Row {
  std::string flag;                 // without "--"
  std::string key;                  // the name a range error carries
  std::vector<std::string> good;    // accepted (the bounds themselves included)
  std::vector<std::string> bad;     // refused
  std::vector<std::string> extra;   // other flags a value needs (n_embd a multiple of n_head)
};

// The bounds as docs/troubleshooting.md states them, written out here, not read from the code.
const std::vector<Row>& Rows() {
  static const auto* rows = new std::vector<Row>{
      {"n-layer", "model.n_layer", {"1", "1024"}, {"0", "-3", "1025", "99999999999999999999"}, {}},
      {"n-head", "model.n_head", {"1", "1024"}, {"0", "-1", "1025"}, {"--n-embd", "1024"}},
      {"n-embd", "model.n_embd", {"2", "131072"}, {"0", "-2", "131074", "3"}, {}},
      {"block-size", "model.block_size", {"1", "1048576"}, {"0", "1048577"},
       {"--synthetic-tokens", "2000000"}},
      {"mlp-hidden", "model.mlp_hidden", {"1", "131072"}, {"0", "131073"}, {}},
      {"token-bytes", "data.token_bytes", {"2", "4"}, {"0", "3", "8", "-2"}, {}},
      {"vocab-size", "data.vocab_size", {"1", "16777216"}, {"0", "-1", "16777217"}, {}},
      {"synthetic-tokens", "data.synthetic_tokens", {"65", "1073741824"},
       {"64", "-1", "1073741825"}, {}},
      {"synthetic-vocab", "data.synthetic_vocab", {"8", "16777216"}, {"7", "-8", "16777217"}, {}},
      {"data-seed", "data.seed", {"0", "9223372036854775807"}, {"-1", "1e3", "x"}, {}},
      {"steps", "train.steps", {"1", "1099511627776"}, {"0", "-5", "1099511627777"}, {}},
      {"batch-size", "train.batch_size", {"1", "1048576"}, {"0", "-1", "1048577"}, {}},
      {"grad-accum", "train.grad_accum", {"1", "1048576"}, {"0", "1048577"}, {}},
      {"global-batch-size", "train.global_batch_size", {"0", "16", "1099511627776"},
       {"-1", "1099511627777"}, {}},
      {"global-batch-ranks", "train.global_batch_ranks", {"0", "1", "1048576"}, {"-1", "1048577"},
       {}},
      {"lr", "train.lr", {"1e-9", "10"},
       {"0", "-0.1", "10.5", "inf", "-inf", "nan", "NaN", "1e999", "infinity"}, {"--min-lr", "0"}},
      {"min-lr", "train.min_lr", {"0", "0.003"}, {"-1e-9", "0.0031", "nan", "inf"}, {}},
      {"warmup-steps", "train.warmup_steps", {"0", "1099511627776"}, {"-1", "1099511627777"}, {}},
      {"weight-decay", "train.weight_decay", {"0", "10"}, {"-0.1", "10.01", "nan", "inf"}, {}},
      {"beta1", "train.beta1", {"0", "0.999"}, {"-0.1", "1", "nan", "inf"}, {}},
      {"beta2", "train.beta2", {"0", "0.999"}, {"-0.1", "1", "nan", "-inf"}, {}},
      {"grad-clip", "train.grad_clip", {"-1", "0", "1e6"}, {"nan", "inf", "-inf", "1e400"}, {}},
      {"seed", "train.seed", {"0", "9223372036854775807"}, {"-1", "nan"}, {}},
      {"threads", "train.threads", {"0", "4096"}, {"-1", "4097"}, {}},
      {"log-every", "train.log_every", {"1", "1099511627776"}, {"0", "-1", "1099511627777"}, {}},
      {"eval-every", "train.eval_every", {"0"}, {"-1", "1099511627777"}, {}},
      {"eval-batches", "train.eval_batches", {"1", "1048576"}, {"0", "1048577"}, {}},
      {"bucket-cap-mb", "train.bucket_cap_mb", {"0.001", "65536"}, {"0", "-1", "65537", "nan", "inf"},
       {}},
      {"first-bucket-cap-mb", "train.first_bucket_cap_mb", {"0.001", "65536"},
       {"0", "65536.5", "nan", "inf"}, {}},
      {"collective-timeout", "train.collective_timeout_seconds", {"1", "604800"},
       {"0", "-1", "604801", "9223372036854775807", "99999999999999999999"}, {}},
      {"emulate-device-ms", "train.emulate_device_ms", {"0", "0.5", "60000"},
       {"-1", "60000.5", "nan", "inf"}, {}},
      {"checkpoint-every", "checkpoint.every", {"0", "1099511627776"}, {"-1", "1099511627777"}, {}},
      {"keep-checkpoints", "checkpoint.keep", {"1", "10000"}, {"0", "-1", "10001"}, {}},
      {"metrics-port", "metrics.port", {"-1", "0", "65535"}, {"-2", "65536"}, {}},
  };
  return *rows;
}

TEST(ConfigBoundsTest, EveryNumericFlagRefusesOutOfRangeAndNonFiniteValues) {
  for (const Row& r : Rows()) {
    for (const std::string& v : r.good) {
      std::vector<std::string> args = r.extra;
      args.insert(args.end(), {"--" + r.flag, v});
      auto c = FromFlags(args);
      EXPECT_TRUE(c.ok()) << "--" << r.flag << " " << v << ": " << c.status().ToString();
    }
    for (const std::string& v : r.bad) {
      std::vector<std::string> args = r.extra;
      args.insert(args.end(), {"--" + r.flag, v});
      auto c = FromFlags(args);
      ASSERT_FALSE(c.ok()) << "--" << r.flag << " " << v << " was accepted";
      const std::string& m = c.status().message();
      // A value that is no number of the option's type is named by its flag, one out of range
      // by its key.
      EXPECT_TRUE(m.find(r.key) != std::string::npos || m.find("--" + r.flag) != std::string::npos)
          << "--" << r.flag << " " << v << ": " << c.status().ToString();
      EXPECT_EQ(ExitCodeFor(c.status()), kExitInvalidConfig) << "--" << r.flag << " " << v;
    }
  }
}

// The same values through the environment and YAML: every source goes through one check.
TEST(ConfigBoundsTest, EnvAndYamlAreCheckedLikeFlags) {
  auto env = LoadConfig({}, [](const char* n) -> const char* {
    return std::string(n) == "DDP_LR" ? "inf" : nullptr;
  }, [](const std::string& p) -> StatusOr<std::string> { return Status::NotFound(p); });
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("DDP_LR"), std::string::npos) << env.status().ToString();
  EXPECT_NE(env.status().message().find("finite"), std::string::npos) << env.status().ToString();
  auto yaml = LoadConfig({"--config", "c.yaml"}, [](const char*) -> const char* { return nullptr; },
                         [](const std::string&) -> StatusOr<std::string> {
                           return std::string("train:\n  collective_timeout_seconds: 1000000000000\n");
                         });
  ASSERT_FALSE(yaml.ok());
  EXPECT_NE(yaml.status().message().find("train.collective_timeout_seconds"), std::string::npos)
      << yaml.status().ToString();
  EXPECT_EQ(ExitCodeFor(yaml.status()), kExitInvalidConfig);
}

// A numeric option added later without a row here fails this test: every flag is either in the
// table above or a string option listed here.
TEST(ConfigBoundsTest, TheTableCoversEveryNumericFlag) {
  const std::set<std::string> strings = {"model", "model-file", "dataset", "data-file", "data-files",
                                         "val-files", "data-format", "device", "bf16", "log-level",
                                         "rebuild-buckets", "checkpoint-dir", "checkpoint-job",
                                         "metrics-addr", "batch-policy", "sample-log",
                                         "metrics-port-file"};
  std::set<std::string> numeric;
  for (const Row& r : Rows()) numeric.insert(r.flag);
  for (const std::string& line : ConfigKeys()) {
    const size_t at = line.find("--");
    ASSERT_NE(at, std::string::npos) << line;
    const std::string flag = line.substr(at + 2, line.find(' ', at) - at - 2);
    EXPECT_TRUE(strings.count(flag) + numeric.count(flag) == 1) << "--" << flag << " has no row";
  }
}

}  // namespace
}  // namespace ddp::worker
