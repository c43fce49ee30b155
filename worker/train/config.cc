// Configuration sources and validation. One table lists every option once: its YAML key, its
// flag and (derived) its env var, so the three sources cannot drift apart.
#include "worker/train/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "worker/data/global_batch.h"
#include "worker/model/gpt2.h"

namespace ddp::worker {
namespace {

// Upper bounds: generous for any real run, small enough that no product of them (parameters,
// tokens per step, bucket bytes, deadlines in nanoseconds) overflows 64 bits.
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxWidth = int64_t{1} << 17;          // n_embd, mlp_hidden
constexpr int64_t kMaxBlock = int64_t{1} << 20;          // tokens per sequence
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxSyntheticTokens = int64_t{1} << 30;  // held in memory, 8 bytes each
constexpr int64_t kMaxSteps = int64_t{1} << 40;          // steps and every "every N steps"
constexpr int64_t kMaxBatch = int64_t{1} << 20;          // batch, grad_accum, eval batches
constexpr int64_t kMaxThreads = 4096;
constexpr int64_t kMaxRanks = int64_t{1} << 20;          // world sizes
constexpr int64_t kMaxGlobalBatch = int64_t{1} << 40;    // samples per step, all ranks
constexpr int64_t kMaxKeep = 10000;
constexpr int64_t kMaxTimeoutSeconds = 7 * 24 * 3600;    // a collective waiting a week is hung
constexpr double kMaxLr = 10;                            // AdamW diverges far below it
constexpr double kMaxWeightDecay = 10;
constexpr double kMaxBucketMb = 65536;                   // 64 GiB of gradients in one bucket

using Setter = std::function<Status(const std::string& where, const std::string& v, TrainConfig*)>;

struct Option {
  std::string key;   // YAML "section.key"
  std::string flag;  // "--" + flag; env "DDP_" + upper(flag)
  Setter set;
};

Status Bad(const std::string& where, const char* want, const std::string& v) {
  return Status::InvalidArgument(where + ": want " + want + ", got '" + v + "'");
}

Status Parse(const std::string& where, const std::string& v, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0) return Bad(where, "an integer", v);
  *out = x;
  return Status::OK();
}
Status Parse(const std::string& where, const std::string& v, uint64_t* out) {
  int64_t x = 0;
  DDP_RETURN_IF_ERROR(Parse(where, v, &x));
  if (x < 0) return Bad(where, "a non-negative integer", v);
  *out = static_cast<uint64_t>(x);
  return Status::OK();
}
Status Parse(const std::string& where, const std::string& v, double* out) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0') return Bad(where, "a number", v);
  // strtod reads "inf", "nan" and turns 1e999 into inf: none is a setting.
  if (!std::isfinite(x)) return Bad(where, "a finite number", v);
  *out = x;
  return Status::OK();
}
Status Parse(const std::string& where, const std::string& v, bool* out) {
  std::string l = v;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "true" || l == "1" || l == "yes" || l == "on") *out = true;
  else if (l == "false" || l == "0" || l == "no" || l == "off") *out = false;
  else return Bad(where, "true or false", v);
  return Status::OK();
}
Status Parse(const std::string&, const std::string& v, std::string* out) {
  *out = v;
  return Status::OK();
}

template <typename T>
Option Opt(std::string key, std::string flag, T TrainConfig::*m) {
  return {std::move(key), std::move(flag),
          [m](const std::string& w, const std::string& v, TrainConfig* c) { return Parse(w, v, &(c->*m)); }};
}
template <typename T>
Option ModelOpt(std::string key, std::string flag, T ModelConfig::*m) {
  return {std::move(key), std::move(flag), [m](const std::string& w, const std::string& v,
                                               TrainConfig* c) { return Parse(w, v, &(c->model.*m)); }};
}

const std::vector<Option>& Options() {
  static const auto* options = new std::vector<Option>{
      ModelOpt("model.kind", "model", &ModelConfig::kind),
      ModelOpt("model.n_layer", "n-layer", &ModelConfig::n_layer),
      ModelOpt("model.n_head", "n-head", &ModelConfig::n_head),
      ModelOpt("model.n_embd", "n-embd", &ModelConfig::n_embd),
      ModelOpt("model.block_size", "block-size", &ModelConfig::block_size),
      ModelOpt("model.mlp_hidden", "mlp-hidden", &ModelConfig::mlp_hidden),
      ModelOpt("model.file", "model-file", &ModelConfig::file),
      Opt("data.dataset", "dataset", &TrainConfig::dataset),
      Opt("data.file", "data-file", &TrainConfig::data_file),
      Opt("data.files", "data-files", &TrainConfig::data_files),
      Opt("data.val_files", "val-files", &TrainConfig::val_files),
      Opt("data.format", "data-format", &TrainConfig::data_format),
      Opt("data.token_bytes", "token-bytes", &TrainConfig::token_bytes),
      Opt("data.vocab_size", "vocab-size", &TrainConfig::vocab_size),
      Opt("data.synthetic_tokens", "synthetic-tokens", &TrainConfig::synthetic_tokens),
      Opt("data.synthetic_vocab", "synthetic-vocab", &TrainConfig::synthetic_vocab),
      Opt("data.seed", "data-seed", &TrainConfig::data_seed),
      Opt("train.steps", "steps", &TrainConfig::steps),
      Opt("train.batch_size", "batch-size", &TrainConfig::batch_size),
      Opt("train.grad_accum", "grad-accum", &TrainConfig::grad_accum),
      Opt("train.batch_policy", "batch-policy", &TrainConfig::batch_policy),
      Opt("train.global_batch_size", "global-batch-size", &TrainConfig::global_batch_size),
      Opt("train.global_batch_ranks", "global-batch-ranks", &TrainConfig::global_batch_ranks),
      Opt("train.lr", "lr", &TrainConfig::lr),
      Opt("train.min_lr", "min-lr", &TrainConfig::min_lr),
      Opt("train.warmup_steps", "warmup-steps", &TrainConfig::warmup_steps),
      Opt("train.weight_decay", "weight-decay", &TrainConfig::weight_decay),
      Opt("train.beta1", "beta1", &TrainConfig::beta1),
      Opt("train.beta2", "beta2", &TrainConfig::beta2),
      Opt("train.grad_clip", "grad-clip", &TrainConfig::grad_clip),
      Opt("train.seed", "seed", &TrainConfig::seed),
      Opt("train.device", "device", &TrainConfig::device),
      Opt("train.bf16", "bf16", &TrainConfig::bf16),
      Opt("train.threads", "threads", &TrainConfig::threads),
      Opt("train.log_every", "log-every", &TrainConfig::log_every),
      Opt("train.eval_every", "eval-every", &TrainConfig::eval_every),
      Opt("train.eval_batches", "eval-batches", &TrainConfig::eval_batches),
      Opt("train.log_level", "log-level", &TrainConfig::log_level),
      Opt("train.sample_log", "sample-log", &TrainConfig::sample_log),
      Opt("train.bucket_cap_mb", "bucket-cap-mb", &TrainConfig::bucket_cap_mb),
      Opt("train.first_bucket_cap_mb", "first-bucket-cap-mb", &TrainConfig::first_bucket_cap_mb),
      Opt("train.rebuild_buckets", "rebuild-buckets", &TrainConfig::rebuild_buckets),
      Opt("train.collective_timeout_seconds", "collective-timeout",
          &TrainConfig::collective_timeout_seconds),
      Opt("train.emulate_device_ms", "emulate-device-ms", &TrainConfig::emulate_device_ms),
      Opt("checkpoint.dir", "checkpoint-dir", &TrainConfig::checkpoint_dir),
      Opt("checkpoint.every", "checkpoint-every", &TrainConfig::checkpoint_every),
      Opt("checkpoint.keep", "keep-checkpoints", &TrainConfig::keep_checkpoints),
      Opt("checkpoint.job", "checkpoint-job", &TrainConfig::checkpoint_job),
      Opt("metrics.port", "metrics-port", &TrainConfig::metrics_port),
      Opt("metrics.addr", "metrics-addr", &TrainConfig::metrics_addr),
      Opt("metrics.port_file", "metrics-port-file", &TrainConfig::metrics_port_file),
  };
  return *options;
}

const Option* FindBy(std::string Option::*field, const std::string& value) {
  for (const auto& o : Options()) {
    if (o.*field == value) return &o;
  }
  return nullptr;
}

std::string EnvName(const std::string& flag) {
  std::string e = "DDP_";
  for (char c : flag) e += c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return e;
}

Status Check(bool ok, const std::string& key, const std::string& rule) {
  return ok ? Status::OK() : Status::InvalidArgument(key + ": " + rule);
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Every numeric option has bounds: below them it means nothing, above them it is a typo that
// would overflow a product, a chrono duration or the memory long after start-up.
Status Range(int64_t v, int64_t lo, int64_t hi, const std::string& key) {
  return Check(v >= lo && v <= hi, key,
               "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                   std::to_string(v));
}
Status Range(double v, double lo, double hi, const std::string& key, bool open_lo = false) {
  const bool ok = std::isfinite(v) && (open_lo ? v > lo : v >= lo) && v <= hi;
  return Check(ok, key, std::string("must be in ") + (open_lo ? "(" : "[") + Number(lo) + ", " +
                            Number(hi) + "], got " + Number(v));
}

}  // namespace

Status ApplyYaml(const std::string& yaml_text, TrainConfig* cfg) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string("config YAML: ") + e.what());
  }
  if (root.IsNull()) return Status::OK();
  if (!root.IsMap()) return Status::InvalidArgument("config YAML: the document must be a mapping");
  for (const auto& section : root) {
    const std::string name = section.first.as<std::string>();
    if (!section.second.IsMap()) {
      return Status::InvalidArgument(name + ": unknown key or not a mapping (sections are model, "
                                            "data, train, checkpoint, metrics)");
    }
    for (const auto& item : section.second) {
      const std::string key = name + "." + item.first.as<std::string>();
      const Option* o = FindBy(&Option::key, key);
      if (o == nullptr) return Status::InvalidArgument(key + ": unknown key");
      if (!item.second.IsScalar()) return Status::InvalidArgument(key + ": want a scalar value");
      DDP_RETURN_IF_ERROR(o->set(key, item.second.Scalar(), cfg));
    }
  }
  return Status::OK();
}

Status ApplyEnv(const std::function<const char*(const char*)>& getenv, TrainConfig* cfg) {
  for (const auto& o : Options()) {
    const std::string env = EnvName(o.flag);
    if (const char* v = getenv(env.c_str())) DDP_RETURN_IF_ERROR(o.set(env, v, cfg));
  }
  return Status::OK();
}

Status ApplyFlags(const std::vector<std::string>& args, TrainConfig* cfg) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) return Status::InvalidArgument("unexpected argument '" + a + "'");
    std::string name = a.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const Option* o = FindBy(&Option::flag, name);
    if (o == nullptr && name != "config") return Status::InvalidArgument("--" + name + ": unknown flag");
    if (!inline_value) {
      if (i + 1 >= args.size()) return Status::InvalidArgument("--" + name + ": missing value");
      value = args[++i];
    }
    if (o != nullptr) DDP_RETURN_IF_ERROR(o->set("--" + name, value, cfg));
  }
  return Status::OK();
}

Status ValidateConfig(const TrainConfig& c) {
  DDP_RETURN_IF_ERROR(Check(c.model.kind == "mingpt" || c.model.kind == "mlp" ||
                                c.model.kind == "torchscript" || IsGpt2Preset(c.model.kind),
                            "model.kind", "want mingpt, mlp, gpt2, gpt2-medium, gpt2-large or "
                                          "torchscript, got '" + c.model.kind + "'"));
  DDP_RETURN_IF_ERROR(Check((c.model.kind == "torchscript") == !c.model.file.empty(), "model.file",
                            "set with model.kind torchscript and only then (--model torchscript "
                            "--model-file model.pt)"));
  DDP_RETURN_IF_ERROR(Range(c.model.n_layer, 1, kMaxLayers, "model.n_layer"));
  DDP_RETURN_IF_ERROR(Range(c.model.n_head, 1, kMaxHeads, "model.n_head"));
  DDP_RETURN_IF_ERROR(Range(c.model.n_embd, 1, kMaxWidth, "model.n_embd"));
  DDP_RETURN_IF_ERROR(Check(c.model.n_embd % c.model.n_head == 0, "model.n_embd",
                            "must be a multiple of model.n_head"));
  DDP_RETURN_IF_ERROR(Range(c.model.block_size, 1, kMaxBlock, "model.block_size"));
  DDP_RETURN_IF_ERROR(Range(c.model.mlp_hidden, 1, kMaxWidth, "model.mlp_hidden"));
  DDP_RETURN_IF_ERROR(Check(c.dataset == "synthetic" || c.dataset == "chars" || c.dataset == "shards",
                            "data.dataset", "want synthetic, chars or shards, got '" + c.dataset + "'"));
  DDP_RETURN_IF_ERROR(Check(c.dataset != "chars" || !c.data_file.empty(), "data.file",
                            "required with data.dataset chars (--data-file)"));
  DDP_RETURN_IF_ERROR(Check((c.dataset == "shards") == !c.data_files.empty(), "data.files",
                            "set with data.dataset shards and only then (--dataset shards "
                            "--data-files 'GLOB')"));
  DDP_RETURN_IF_ERROR(Check(c.val_files.empty() || c.dataset == "shards", "data.val_files",
                            "needs data.dataset shards"));
  DDP_RETURN_IF_ERROR(Check(c.data_format == "auto" || c.data_format == "llmc" ||
                                c.data_format == "raw",
                            "data.format", "want auto, llmc or raw, got '" + c.data_format + "'"));
  DDP_RETURN_IF_ERROR(Check(c.token_bytes == 2 || c.token_bytes == 4, "data.token_bytes",
                            "want 2 (uint16) or 4 (uint32)"));
  DDP_RETURN_IF_ERROR(Range(c.vocab_size, 1, kMaxVocab, "data.vocab_size"));
  DDP_RETURN_IF_ERROR(Range(c.eval_every, 0, kMaxSteps, "train.eval_every"));
  DDP_RETURN_IF_ERROR(Check(c.eval_every == 0 || !c.val_files.empty(), "train.eval_every",
                            "needs held-out shards in data.val_files (--val-files)"));
  DDP_RETURN_IF_ERROR(Range(c.eval_batches, 1, kMaxBatch, "train.eval_batches"));
  DDP_RETURN_IF_ERROR(Range(c.synthetic_tokens, c.model.block_size + 1, kMaxSyntheticTokens,
                            "data.synthetic_tokens"));
  DDP_RETURN_IF_ERROR(Range(c.synthetic_vocab, 8, kMaxVocab, "data.synthetic_vocab"));
  DDP_RETURN_IF_ERROR(Range(c.steps, 1, kMaxSteps, "train.steps"));
  DDP_RETURN_IF_ERROR(Range(c.batch_size, 1, kMaxBatch, "train.batch_size"));
  DDP_RETURN_IF_ERROR(Range(c.grad_accum, 1, kMaxBatch, "train.grad_accum"));
  BatchPolicy policy = BatchPolicy::kConstantPerRank;
  DDP_RETURN_IF_ERROR(Check(ParseBatchPolicy(c.batch_policy, &policy), "train.batch_policy",
                            "want ConstantGlobal or ConstantPerRank, got '" + c.batch_policy + "'"));
  DDP_RETURN_IF_ERROR(Range(c.global_batch_size, 0, kMaxGlobalBatch, "train.global_batch_size"));
  DDP_RETURN_IF_ERROR(Range(c.global_batch_ranks, 0, kMaxRanks, "train.global_batch_ranks"));
  DDP_RETURN_IF_ERROR(Check(policy == BatchPolicy::kConstantPerRank ||
                                c.global_batch_size > 0 || c.global_batch_ranks > 0,
                            "train.batch_policy",
                            "ConstantGlobal needs a global batch: train.global_batch_size "
                            "(--global-batch-size) or train.global_batch_ranks (--global-batch-ranks)"));
  DDP_RETURN_IF_ERROR(Check(c.global_batch_size == 0 || c.global_batch_size % c.batch_size == 0,
                            "train.global_batch_size",
                            std::to_string(c.global_batch_size) + " is not a whole number of "
                            "train.batch_size " + std::to_string(c.batch_size) + " micro-batches"));
  DDP_RETURN_IF_ERROR(Range(c.lr, 0, kMaxLr, "train.lr", /*open_lo=*/true));
  DDP_RETURN_IF_ERROR(Range(c.min_lr, 0, c.lr, "train.min_lr"));
  DDP_RETURN_IF_ERROR(Range(c.warmup_steps, 0, kMaxSteps, "train.warmup_steps"));
  DDP_RETURN_IF_ERROR(Range(c.weight_decay, 0, kMaxWeightDecay, "train.weight_decay"));
  DDP_RETURN_IF_ERROR(Check(c.beta1 >= 0 && c.beta1 < 1, "train.beta1", "must be in [0, 1)"));
  DDP_RETURN_IF_ERROR(Check(c.beta2 >= 0 && c.beta2 < 1, "train.beta2", "must be in [0, 1)"));
  DDP_RETURN_IF_ERROR(Check(std::isfinite(c.grad_clip), "train.grad_clip", "must be finite"));
  DDP_RETURN_IF_ERROR(Check(c.device == "cpu" || c.device == "cuda" || c.device == "auto",
                            "train.device", "want cpu, cuda or auto, got '" + c.device + "'"));
  DDP_RETURN_IF_ERROR(Range(c.threads, 0, kMaxThreads, "train.threads"));
  DDP_RETURN_IF_ERROR(Range(c.log_every, 1, kMaxSteps, "train.log_every"));
  DDP_RETURN_IF_ERROR(Range(c.bucket_cap_mb, 0, kMaxBucketMb, "train.bucket_cap_mb", true));
  DDP_RETURN_IF_ERROR(
      Range(c.first_bucket_cap_mb, 0, kMaxBucketMb, "train.first_bucket_cap_mb", true));
  DDP_RETURN_IF_ERROR(Range(c.collective_timeout_seconds, 1, kMaxTimeoutSeconds,
                            "train.collective_timeout_seconds"));
  DDP_RETURN_IF_ERROR(Range(c.emulate_device_ms, 0, 60000, "train.emulate_device_ms"));
  DDP_RETURN_IF_ERROR(Range(c.checkpoint_every, 0, kMaxSteps, "checkpoint.every"));
  DDP_RETURN_IF_ERROR(Range(c.keep_checkpoints, 1, kMaxKeep, "checkpoint.keep"));
  DDP_RETURN_IF_ERROR(Check(c.metrics_port >= -1 && c.metrics_port <= 65535, "metrics.port",
                            "must be a port number (0 picks a free one)"));
  return Status::OK();
}

StatusOr<TrainConfig> LoadConfig(const std::vector<std::string>& args,
                                 const std::function<const char*(const char*)>& getenv,
                                 const std::function<StatusOr<std::string>(const std::string&)>&
                                     read_file) {
  TrainConfig cfg;
  std::string path;
  if (const char* env = getenv("DDP_CONFIG")) path = env;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) path = args[i + 1];
    if (args[i].rfind("--config=", 0) == 0) path = args[i].substr(9);
  }
  if (!path.empty()) {
    StatusOr<std::string> text = read_file(path);
    if (!text.ok()) return Status::InvalidArgument("--config " + path + ": " + text.status().message());
    DDP_RETURN_IF_ERROR(ApplyYaml(*text, &cfg));
  }
  DDP_RETURN_IF_ERROR(ApplyEnv(getenv, &cfg));
  DDP_RETURN_IF_ERROR(ApplyFlags(args, &cfg));
  DDP_RETURN_IF_ERROR(ValidateConfig(cfg));
  return cfg;
}

std::vector<std::string> ConfigKeys() {
  std::vector<std::string> out;
  for (const auto& o : Options()) out.push_back(o.key + "  --" + o.flag + "  " + EnvName(o.flag));
  return out;
}

}  // namespace ddp::worker
