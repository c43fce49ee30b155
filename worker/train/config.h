// The trainer's configuration: one struct, filled from YAML, then env, then flags (flags win).
// Pure parsing and validation; reads no files or env itself except through the given inputs.
#ifndef DDP_WORKER_TRAIN_CONFIG_H_
#define DDP_WORKER_TRAIN_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/model/model.h"

namespace ddp::worker {

struct TrainConfig {
  ModelConfig model;
  // data
  std::string dataset = "synthetic";  // synthetic | chars | shards
  std::string data_file;              // chars only
  std::string data_files;             // shards: a glob of token shards (worker/data/shards.h)
  std::string val_files;              // shards: a glob of held-out shards for eval loss
  std::string data_format = "auto";   // shards: auto | llmc | raw
  int64_t token_bytes = 2;            // raw shards: 2 (uint16) or 4 (uint32)
  int64_t vocab_size = 50257;         // shards: tokens must be below it (GPT-2's tokenizer)
  int64_t synthetic_tokens = 200000;
  int64_t synthetic_vocab = 32;
  uint64_t data_seed = 1234;          // the synthetic stream; the same on every rank and run
  // optimisation
  int64_t steps = 200;
  int64_t batch_size = 16;            // per rank per micro-step
  int64_t grad_accum = 1;             // micro-steps per optimizer step (no_sync on all but last)
  // ConstantPerRank: each rank takes grad_accum batches per step (the global batch follows the
  // world size). ConstantGlobal: the global batch is fixed (global_batch_size, or
  // global_batch_ranks x batch_size x grad_accum) and a smaller world accumulates more
  // micro-batches (worker/data/global_batch.h). The operator sets DDP_BATCH_POLICY and one of
  // DDP_GLOBAL_BATCH_SIZE, DDP_GLOBAL_BATCH_RANKS from spec.elastic.
  std::string batch_policy = "ConstantPerRank";
  int64_t global_batch_size = 0;      // 0 = unset
  int64_t global_batch_ranks = 0;     // 0 = unset
  double lr = 3e-3;
  double min_lr = 3e-4;
  int64_t warmup_steps = 10;
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double grad_clip = 1.0;             // max global grad norm; <= 0 disables
  uint64_t seed = 42;
  // runtime
  std::string device = "auto";        // cpu | cuda | auto (cuda when available)
  bool bf16 = true;                   // bf16 autocast, GPU only
  int64_t threads = 0;                // torch intra-op threads; 0 = LibTorch's default
  int64_t log_every = 10;             // log line and step agreement at least every N steps
  int64_t eval_every = 0;             // steps between eval losses on val_files; 0 = never
  int64_t eval_batches = 20;          // batches per rank per eval
  double bucket_cap_mb = 25;
  double first_bucket_cap_mb = 1;
  bool rebuild_buckets = true;  // after step 1, buckets in gradient arrival order (as torch DDP)
  int64_t collective_timeout_seconds = 300;
  // Benchmarks of many ranks on one host: each micro-batch's forward and backward take at least
  // this many milliseconds, as on an accelerator of the rank's own (the host's cores, shared by
  // every rank, would otherwise make a smaller group no slower per sample). 0: off.
  double emulate_device_ms = 0;
  // checkpoints
  std::string checkpoint_dir;         // empty = no checkpoints (env DDP_CHECKPOINT_DIR)
  int64_t checkpoint_every = 0;       // 0 = only on SIGTERM
  int64_t keep_checkpoints = 3;
  // The job the checkpoints belong to ("namespace/name"; env DDP_CHECKPOINT_JOB, which the
  // operator sets): recorded beside them and checked before a resume (checkpoint_owner.h).
  // Empty = a run by hand: its directory is claimed by no job and checked for the model only.
  std::string checkpoint_job;
  // metrics (env DDP_METRICS_PORT; -1 = no endpoint)
  int64_t metrics_port = -1;
  std::string metrics_addr = "0.0.0.0";
  std::string metrics_port_file;      // when set, the bound port is written here (launch)
  std::string log_level = "info";
  // Debugging and tests: when set, every committed step appends one line to this file, the
  // samples this rank trained on ("step S E:I E:I ...", epoch and example index).
  std::string sample_log;
};

// Applies a YAML document. Sections model/data/train/checkpoint/metrics hold the keys listed by
// ConfigKeys(). InvalidArgument naming the key ("train.stepz: unknown key", "train.steps: want
// an integer, got 'ten'") or the YAML error with its line.
Status ApplyYaml(const std::string& yaml_text, TrainConfig* cfg);

// Applies env vars: every key has one, DDP_ + its flag name upper-cased with '-' -> '_'
// (DDP_STEPS, DDP_BATCH_SIZE, DDP_CHECKPOINT_DIR, DDP_METRICS_PORT, ...). `getenv` returns
// nullptr for unset. InvalidArgument naming the variable.
Status ApplyEnv(const std::function<const char*(const char*)>& getenv, TrainConfig* cfg);

// Flags `--name value` or `--name=value`; `--config F` is consumed by LoadConfig, not here.
// InvalidArgument for an unknown flag, a missing value or a bad value, naming the flag.
Status ApplyFlags(const std::vector<std::string>& args, TrainConfig* cfg);

// Cross-field checks after all sources (steps > 0, dataset chars needs a file, ...).
Status ValidateConfig(const TrainConfig& cfg);

// The whole pipeline: YAML file from --config (or DDP_CONFIG), env, flags, validation.
// `read_file` reads the YAML file (NotFound becomes InvalidArgument naming --config).
StatusOr<TrainConfig> LoadConfig(const std::vector<std::string>& args,
                                 const std::function<const char*(const char*)>& getenv,
                                 const std::function<StatusOr<std::string>(const std::string&)>&
                                     read_file);

// "section.key  --flag  ENV" for every option, for --help.
std::vector<std::string> ConfigKeys();

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_CONFIG_H_
