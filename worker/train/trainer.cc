// The training loop. Reads like the algorithm: setup, then per step: micro-batches (forward,
// backward with overlapped bucket all-reduce), finalize, clip, AdamW, agree on loss and stop,
// log, checkpoint.
#include "worker/train/trainer.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>

#include <ATen/ops/stack.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include "common/logging.h"
#include "worker/comm/factory.h"
#include "worker/data/sampler.h"
#include "worker/ddp/reducer.h"
#include "worker/train/autocast.h"
#include "worker/train/checkpoint_store.h"
#include "worker/train/schedule.h"
#include "worker/train/train_state.h"
#include "worker/train/trainer_setup.h"

namespace ddp::worker {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void SetLearningRate(torch::optim::Optimizer& opt, double lr) {
  for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
}

// In place: .grad tensors are views into the reducer's buckets, and LibTorch 1.13's
// Optimizer::zero_grad() calls detach_(), which views do not allow.
void ZeroGrads(torch::nn::Module& model) {
  for (auto& p : model.parameters()) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
}

// Sums of per-step phase times over the measured (post-warm-up) steps.
struct PhaseTotals {
  StepBreakdown sum;
  void Add(const StepBreakdown& s) {
    sum.steps += 1;
    sum.step += s.step, sum.data += s.data, sum.forward += s.forward, sum.backward += s.backward;
    sum.exposed_allreduce += s.exposed_allreduce, sum.allreduce += s.allreduce;
    sum.optimizer += s.optimizer, sum.sync += s.sync;
  }
  StepBreakdown Average(double samples_per_step, double tokens_per_step) const {
    StepBreakdown a = sum;
    if (sum.steps == 0) return a;
    const double n = static_cast<double>(sum.steps);
    a.step /= n, a.data /= n, a.forward /= n, a.backward /= n, a.exposed_allreduce /= n;
    a.allreduce /= n, a.optimizer /= n, a.sync /= n;
    a.samples_per_second = samples_per_step / a.step;
    a.tokens_per_second = tokens_per_step / a.step;
    return a;
  }
};

}  // namespace

std::string SummaryLine(const TrainResult& r, int rank, int world_size) {
  std::ostringstream s;
  s << "summary rank=" << rank << " world_size=" << world_size << " step=" << r.step
    << " resumed_from=" << r.resumed_from << " loss=" << r.last_loss
    << " preempted=" << (r.preempted ? 1 : 0) << " samples_per_s=" << r.breakdown.samples_per_second
    << " tokens_per_s=" << r.breakdown.tokens_per_second << " step_ms=" << r.breakdown.step * 1e3
    << " data_ms=" << r.breakdown.data * 1e3 << " forward_ms=" << r.breakdown.forward * 1e3
    << " backward_ms=" << r.breakdown.backward * 1e3
    << " allreduce_ms=" << r.breakdown.allreduce * 1e3
    << " exposed_allreduce_ms=" << r.breakdown.exposed_allreduce * 1e3
    << " optimizer_ms=" << r.breakdown.optimizer * 1e3 << " sync_ms=" << r.breakdown.sync * 1e3
    << " param_checksum=" << r.param_checksum;
  return s.str();
}

StatusOr<TrainResult> Train(const TrainContext& ctx) {
  const TrainConfig& cfg = *ctx.config;
  Communicator* comm = ctx.comm;
  const int rank = comm->rank(), world = comm->size();
  WorkerMetrics* m = ctx.metrics;

  // 1. Data and model, identical on every rank by construction (seeded).
  auto tokens = LoadTokens(cfg);
  if (!tokens.ok()) return tokens.status();
  TokenDataset dataset(*tokens, cfg.model.block_size);
  DistributedSampler sampler(dataset.size(), rank, world, cfg.seed);
  if (sampler.num_samples() < cfg.batch_size) {
    return Status::DataLoss((*tokens)->source + " gives each of " + std::to_string(world) +
                            " ranks " + std::to_string(sampler.num_samples()) +
                            " examples, fewer than one batch of " + std::to_string(cfg.batch_size));
  }
  auto built = BuildModel(cfg, (*tokens)->vocab_size, ctx.device);
  if (!built.ok()) return built.status();
  ModelAndOptimizer mo = std::move(*built);

  // 2. Resume (group-wide), then make replicas identical and attach the reducer.
  TrainResult result;
  auto progress = ResumeFromCheckpoint(cfg, ctx.fs, comm, ctx.device, (*tokens)->vocab_size, &mo,
                                       &result.resumed_from);
  if (!progress.ok()) return progress.status();
  SamplerPosition pos = sampler.Rescale(progress->sampler, static_cast<int>(progress->world_size));
  DDP_RETURN_IF_ERROR(BroadcastModule(*mo.model, comm).WithContext("broadcast parameters"));
  ReducerOptions ropts;
  ropts.bucket_cap_bytes = static_cast<size_t>(cfg.bucket_cap_mb * (1 << 20));
  ropts.first_bucket_cap_bytes = static_cast<size_t>(cfg.first_bucket_cap_mb * (1 << 20));
  for (const auto& np : mo.model->named_parameters()) ropts.param_names.push_back(np.key());
  Reducer reducer(mo.model->parameters(), comm, ropts);
  if (rank == 0) {
    DDP_LOG(INFO) << "model " << cfg.model.kind << " params=" << CountParameters(*mo.model)
                  << " buckets=" << reducer.buckets().size() << " data=" << (*tokens)->source
                  << " vocab=" << (*tokens)->vocab_size << " world_size=" << world
                  << " device=" << ctx.device.str() << " comm=" << comm->name();
  }

  CheckpointStore store(ctx.fs, cfg.checkpoint_dir, static_cast<int>(cfg.keep_checkpoints));
  int64_t last_saved = progress->step;
  auto checkpoint = [&](int64_t step_done) -> Status {
    if (cfg.checkpoint_dir.empty() || step_done == last_saved) return Status::OK();
    const auto t0 = Clock::now();
    if (rank == 0) {
      TrainProgress p{step_done, pos, world};
      auto payload = SerializeTrainState(*mo.model, *mo.optimizer, p);
      Status s = payload.ok() ? store.Save(step_done, *payload) : payload.status();
      // A failed checkpoint costs progress on a restart, not correctness: keep training.
      if (!s.ok()) {
        DDP_LOG(ERROR) << "checkpoint step " << step_done << " failed: " << s.ToString();
      } else if (m != nullptr) {
        m->checkpoint_last_step.Set(static_cast<double>(step_done));
        m->checkpoint_timestamp_seconds.Set(static_cast<double>(std::time(nullptr)));
      }
    }
    // Nobody runs ahead (or exits) while rank 0 still writes.
    DDP_RETURN_IF_ERROR(comm->Barrier().WithContext("checkpoint barrier"));
    if (m) m->checkpoint_seconds.Observe(Since(t0));
    last_saved = step_done;
    return Status::OK();
  };

  LrSchedule sched{cfg.lr, cfg.min_lr, cfg.warmup_steps, cfg.steps};
  const double samples_per_step = static_cast<double>(cfg.batch_size * cfg.grad_accum);
  const double tokens_per_step = samples_per_step * static_cast<double>(cfg.model.block_size);
  const bool bf16 = cfg.bf16 && ctx.device.is_cuda();
  const int64_t warmup = std::min<int64_t>(5, (cfg.steps - progress->step) / 5);
  if (m) {
    m->total_steps.Set(static_cast<double>(cfg.steps));
    // The step counter reads as training progress, so a resumed run starts it where the
    // checkpoint left off; Prometheus sees a new process's counter start, not a reset.
    m->steps.Inc(static_cast<double>(progress->step));
  }
  PhaseTotals totals, window;
  result.step = progress->step;

  // 3. The loop.
  for (int64_t step = progress->step; step < cfg.steps; ++step) {
    MaybeInjectFault(ctx.fault, rank, step);
    const auto t_step = Clock::now();
    StepBreakdown t;
    const double lr = LearningRateAt(sched, step);
    SetLearningRate(*mo.optimizer, lr);
    at::Tensor loss_sum = at::zeros({}, at::TensorOptions().device(ctx.device));
    for (int64_t micro = 0; micro < cfg.grad_accum; ++micro) {
      reducer.set_sync(micro + 1 == cfg.grad_accum);  // no_sync on all but the last micro-step
      auto t0 = Clock::now();
      at::Tensor x, y;
      dataset.Batch(sampler.NextBatch(cfg.batch_size, &pos), &x, &y);
      x = x.to(ctx.device), y = y.to(ctx.device);
      t.data += Since(t0);
      t0 = Clock::now();
      reducer.PrepareForBackward();
      at::Tensor loss;
      {
        BF16Autocast autocast(bf16);
        loss = mo.model->Loss(x, y) / static_cast<double>(cfg.grad_accum);
      }
      t.forward += Since(t0);
      t0 = Clock::now();
      loss.backward();
      t.backward += Since(t0);
      loss_sum += loss.detach();
    }
    auto t0 = Clock::now();
    DDP_RETURN_IF_ERROR(reducer.FinalizeBackward().WithContext("step " + std::to_string(step)));
    t.exposed_allreduce = Since(t0);
    const Reducer::Stats stats = reducer.last_stats();
    t.allreduce = stats.allreduce_seconds;
    // Agree on the mean loss and on stopping: SIGTERM may reach ranks at different steps, but
    // all of them must checkpoint and leave at the same one. Launched before the optimizer step
    // and awaited after it, so its latency hides behind clipping and AdamW.
    t0 = Clock::now();
    const bool stop_here = ctx.stop != nullptr && ctx.stop->load();
    at::Tensor agree = at::stack({loss_sum.to(at::kFloat),
                                  at::scalar_tensor(stop_here ? 1.0 : 0.0, loss_sum.options().dtype(at::kFloat))});
    std::shared_ptr<Work> agreement = comm->AllReduceSumAsync(agree);
    t.sync = Since(t0);
    t0 = Clock::now();
    if (cfg.grad_clip > 0) torch::nn::utils::clip_grad_norm_(mo.model->parameters(), cfg.grad_clip);
    mo.optimizer->step();
    ZeroGrads(*mo.model);
    t.optimizer = Since(t0);
    t0 = Clock::now();
    DDP_RETURN_IF_ERROR(agreement->Wait().WithContext("step agreement"));
    at::Tensor agreed = agree.cpu();
    result.last_loss = agreed[0].item<double>() / world;
    const bool stop = agreed[1].item<double>() > 0;
    t.sync += Since(t0);
    t.step = Since(t_step);
    result.step = step + 1;

    if (step - progress->step >= warmup) totals.Add(t);
    window.Add(t);
    if (m) {
      m->steps.Inc();
      m->samples.Inc(samples_per_step);
      m->tokens.Inc(tokens_per_step);
      m->loss.Set(result.last_loss);
      m->learning_rate.Set(lr);
      m->tokens_per_second.Set(tokens_per_step / t.step);
      if (auto used = DeviceMemoryInUse(ctx.device)) {
        m->gpu_memory_bytes.Get().Set(static_cast<double>(*used));
      }
      m->step_seconds.Observe(t.step);
      m->allreduce_bytes.Inc(static_cast<double>(stats.allreduce_bytes));
      m->allreduce_seconds.Inc(stats.allreduce_seconds);
      m->exposed_allreduce_seconds.Inc(t.exposed_allreduce);
    }
    if (rank == 0 && (result.step % cfg.log_every == 0 || result.step == cfg.steps || stop)) {
      StepBreakdown a = window.Average(samples_per_step * world, tokens_per_step * world);
      char line[256];
      std::snprintf(line, sizeof(line),
                    "step %lld/%lld loss %.4f lr %.2e tokens/s %.0f step_ms %.1f allreduce_ms %.2f "
                    "exposed_allreduce_ms %.2f",
                    static_cast<long long>(result.step), static_cast<long long>(cfg.steps),
                    result.last_loss, lr, a.tokens_per_second, a.step * 1e3, a.allreduce * 1e3,
                    a.exposed_allreduce * 1e3);
      DDP_LOG(INFO) << line;
      window = PhaseTotals();
    }
    const bool periodic = cfg.checkpoint_every > 0 && result.step % cfg.checkpoint_every == 0;
    if (periodic || stop) DDP_RETURN_IF_ERROR(checkpoint(result.step));
    if (stop) {
      result.preempted = true;
      break;
    }
  }
  if (!result.preempted) DDP_RETURN_IF_ERROR(checkpoint(result.step));
  result.breakdown = totals.Average(samples_per_step * world, tokens_per_step * world);
  result.param_checksum = ParamChecksum(*mo.model);
  return result;
}

}  // namespace ddp::worker
