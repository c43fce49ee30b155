// The training loop. Reads like the algorithm: setup, then per step: micro-batches (forward,
// backward with overlapped bucket all-reduce), finalize, clip, AdamW, agree on loss and stop
// (at the agreement steps), log, checkpoint.
#include "worker/train/trainer.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>
#include <thread>

#include <ATen/ops/stack.h>
#include <torch/utils.h>

#include "common/logging.h"
#include "worker/comm/deadline.h"
#include "worker/comm/factory.h"
#include "worker/data/global_batch.h"
#include "worker/data/sampler.h"
#include "worker/ddp/reducer.h"
#include "worker/train/autocast.h"
#include "worker/train/batch_config.h"
#include "worker/train/checkpoint_store.h"
#include "worker/train/clip.h"
#include "worker/train/heal.h"
#include "worker/train/sample_log.h"
#include "worker/train/evaluate.h"
#include "worker/train/schedule.h"
#include "worker/train/stall_clock.h"
#include "worker/train/train_state.h"
#include "worker/train/trainer_setup.h"

namespace ddp::worker {
namespace {

using Clock = std::chrono::steady_clock;

// A collective or the group failed: the kind of error in-place recovery heals (Gone: the store
// itself is lost, which only a new round can fix, but a survivor still saves its step first).
bool IsCommFailure(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded ||
         s.code() == StatusCode::kGone;
}

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
    << " param_checksum=" << r.param_checksum << " agreements=" << r.agreements;
  return s.str();
}

StatusOr<TrainResult> Train(const TrainContext& ctx) {
  const TrainConfig& cfg = *ctx.config;
  group::GroupMembership* group = ctx.group;
  // A pod moved to another node rank in place takes its trainer to another rank (authority.h rule
  // 10): `rank` is the current one; scripted faults keep naming the rank the process started as.
  const int start_rank = group ? group->rank() : ctx.comm->rank();
  int rank = start_rank;
  int world = group ? group->size() : ctx.comm->size();  // an elastic group resizes in place
  WorkerMetrics* m = ctx.metrics;

  // 1. Data and model, identical on every rank by construction (seeded).
  auto data = LoadData(cfg);
  if (!data.ok()) return data.status();
  const TokenDataset& dataset = *data->train;
  DistributedSampler sampler(dataset.size(), cfg.seed);
  // The step's global batch at the current world size (exit 2 for a combination that does not
  // split); again at every resize: under ConstantGlobal its samples stay, the shares change.
  GlobalBatch gbatch;
  auto resolve_batch = [&]() -> Status {
    const StatusOr<GlobalBatch> resolved = ResolveGlobalBatch(BatchSettingsOf(cfg), world);
    if (!resolved.ok()) return resolved.status();
    gbatch = *resolved;
    if (gbatch.samples > dataset.size()) {
      return Status::DataLoss(dataset.source() + " holds " + std::to_string(dataset.size()) +
                              " examples, fewer than one global batch of " +
                              std::to_string(gbatch.samples) + " (" + std::to_string(world) +
                              " ranks, batch policy " + cfg.batch_policy + ")");
    }
    return Status::OK();
  };
  DDP_RETURN_IF_ERROR(resolve_batch());
  auto built = BuildModel(cfg, dataset.vocab_size(), ctx.device);
  if (!built.ok()) return built.status();
  ModelAndOptimizer mo = std::move(*built);

  // A newcomer prepared ahead of a growth (its rank past the group's size: it waits in Join):
  // one forward and backward now, on a micro-batch of the data, so that its first step in the
  // group is not its kernels' and allocator's first use, which the whole group would wait for.
  // Nothing of it stays: the gradients are zeroed and the heal overwrites every parameter.
  if (group != nullptr && group->Outside()) {
    const auto t0 = Clock::now();
    const auto micro = RankMicroBatches(sampler, SamplerPosition{}, gbatch, 0, world);
    at::Tensor x, y;
    DDP_RETURN_IF_ERROR(dataset.Batch(micro.front(), &x, &y));
    {
      BF16Autocast autocast(cfg.bf16 && ctx.device.is_cuda());
      at::Tensor loss = mo.model->Loss(x.to(ctx.device), y.to(ctx.device));
      loss.backward();
    }
    ZeroGrads(*mo.model);
    DDP_LOG(INFO) << "rank " << rank << ": outside the group until it grows; warmed up in "
                  << Since(t0) << "s";
  }

  // 2. Form the group: resume (group-wide) from a checkpoint, or heal from a member that has
  // state; then make replicas identical and attach the reducer.
  TrainResult result;
  TrainProgress committed;  // what this rank has applied: step, sampler position, world
  committed.step = -1;
  std::unique_ptr<Communicator> owned;
  Communicator* comm = ctx.comm;
  auto start_fresh = [&]() -> Status {
    auto progress = ResumeFromCheckpoint(cfg, ctx.fs, comm, ctx.device, dataset.vocab_size(),
                                         &mo, &result.resumed_from);
    if (!progress.ok()) return progress.status();
    committed = *progress;
    // The position is the group's in the global order, whatever size saved it; a checkpoint of
    // the per-rank layout says how many samples each of its ranks had taken.
    committed.sampler = progress->sampler_per_rank
                            ? sampler.FromPerRankOffset(progress->sampler.epoch,
                                                        progress->sampler.offset,
                                                        progress->world_size)
                            : sampler.Restore(progress->sampler);
    committed.sampler_per_rank = false;
    committed.world_size = world;
    return BroadcastModule(*mo.model, comm).WithContext("broadcast parameters");
  };
  // Joins the next generation until one forms and heals; bounded by the rendezvous timeout of
  // each Join and by kMaxFormAttempts failures in a row (a communicator whose creation was
  // cancelled because the generation moved on again counts as one). A group that ends instead
  // (stop, abandon, fenced, store lost) sets group_end and returns Unavailable.
  group::GroupEnd group_end = group::GroupEnd::kNone;
  bool resizing = false;  // the last form() changed the group's size: not a recovery
  bool formed_before = false;
  auto form = [&]() -> Status {
    constexpr int kMaxFormAttempts = 32;
    Status last;
    for (int attempt = 0; attempt < kMaxFormAttempts; ++attempt) {
      if (owned) owned->Abort();  // a communicator of a generation that is gone
      auto f = group->Join(committed.step);
      if (!f.ok()) {
        if (f.status().code() != StatusCode::kUnavailable) return f.status();
        last = f.status();
        continue;
      }
      if (f->end != group::GroupEnd::kNone) {
        group_end = f->end;
        return Status::Unavailable(std::string("group ") + group::GroupEndName(f->end) + ": " + f->why);
      }
      owned = std::move(f->comm);
      comm = owned.get();
      group->Watch(comm);
      if (group->rank() != rank) {
        // Its pod took a lost member's node rank (ranks stay dense): the same state, another
        // share of every global batch from now on.
        DDP_LOG(INFO) << "rank " << rank << ": generation " << f->generation << " gives it rank "
                      << group->rank() << " with its state";
        rank = group->rank();
      }
      if (f->world != world) {
        // Resized in place: same rank, a new share of the data (survivors keep their memory).
        DDP_LOG(INFO) << "rank " << rank << ": generation " << f->generation << " resizes the group "
                      << world << " -> " << f->world;
        world = f->world;
        DDP_RETURN_IF_ERROR(resolve_batch());
        if (formed_before) {  // a newcomer's first group is its start, not a resize
          if (m) m->resizes.Inc();
          resizing = true;
        }
      }
      if (m) m->generation.Set(static_cast<double>(f->generation));
      const HealPlan plan{f->steps.step, f->steps.source, f->steps.behind};
      if (plan.behind > 0) MaybeInjectHealFault(ctx.fault, start_rank);
      HealOptions heal;
      heal.reset = [&] { return ResetToSeed(cfg, dataset.vocab_size(), ctx.device, &mo); };
      Status s = plan.step < 0 ? start_fresh()
                               : TransferState(comm, plan, committed.step, ctx.device, *mo.model,
                                               *mo.optimizer, &committed, heal);
      // The sampler's position is the group's in the global order (the same at any size): a
      // resize changes only who takes which micro-batch of the next global batch.
      if (s.ok()) committed.world_size = world;
      if (s.ok()) {
        formed_before = true;
        if (plan.step >= 0 && rank == 0) {
          DDP_LOG(INFO) << "generation " << f->generation << ": healed " << plan.behind
                        << " member(s) from rank " << plan.source << " at step " << plan.step;
        }
        return Status::OK();
      }
      if (s.code() != StatusCode::kUnavailable) return s;
      last = s;
    }
    return last.WithContext("the group did not re-form in " + std::to_string(kMaxFormAttempts) +
                            " attempts");
  };
  DDP_RETURN_IF_ERROR(group ? form() : start_fresh());
  ReducerOptions ropts;
  ropts.bucket_cap_bytes = static_cast<size_t>(cfg.bucket_cap_mb * (1 << 20));
  ropts.first_bucket_cap_bytes = static_cast<size_t>(cfg.first_bucket_cap_mb * (1 << 20));
  ropts.rebuild_buckets = cfg.rebuild_buckets;
  for (const auto& np : mo.model->named_parameters()) ropts.param_names.push_back(np.key());
  auto reducer = std::make_unique<Reducer>(mo.model->parameters(), comm, ropts);
  if (rank == 0) {
    DDP_LOG(INFO) << "model " << cfg.model.kind << " params=" << CountParameters(*mo.model)
                  << " buckets=" << reducer->buckets().size() << " data=" << dataset.source()
                  << " vocab=" << dataset.vocab_size() << " world_size=" << world
                  << " device=" << ctx.device.str() << " comm=" << comm->name()
                  << (group ? " recovery=InPlace" : "");
  }

  CheckpointStore store(ctx.fs, cfg.checkpoint_dir, static_cast<int>(cfg.keep_checkpoints));
  int64_t last_saved = committed.step;
  // Rank 0 writes; then rank 0's outcome is all-reduced (it doubles as the barrier that keeps
  // anyone from running ahead or exiting while it writes), so every rank learns whether the save
  // happened and, if not, the newest complete checkpoint a restart would resume from.
  auto checkpoint = [&]() -> Status {
    if (cfg.checkpoint_dir.empty() || committed.step == last_saved) return Status::OK();
    const auto t0 = Clock::now();
    Status saved;
    int64_t newest = 0;
    if (rank == 0) {
      auto payload = SerializeTrainState(*mo.model, *mo.optimizer, committed);
      saved = payload.ok() ? store.Save(committed.step, *payload) : payload.status();
      // A failed checkpoint costs progress on a restart, not correctness: keep training.
      if (!saved.ok()) {
        DDP_LOG(ERROR) << "checkpoint step " << committed.step << " failed: " << saved.ToString();
        newest = store.NewestComplete().value_or(0);
      } else if (m != nullptr) {
        m->checkpoint_last_step.Set(static_cast<double>(committed.step));
        m->checkpoint_timestamp_seconds.Set(static_cast<double>(std::time(nullptr)));
      }
    }
    at::Tensor outcome = at::tensor({saved.ok() ? int64_t{0} : int64_t{1}, newest}, at::kLong);
    outcome = outcome.to(ctx.device);
    DDP_RETURN_IF_ERROR(comm->AllReduceSumAsync(outcome)->Wait().WithContext("checkpoint barrier"));
    outcome = outcome.cpu();
    if (outcome[0].item<int64_t>() > 0) {
      if (m) m->checkpoint_failures.Inc();
      result.resume_step = outcome[1].item<int64_t>();
      result.checkpoint_error = rank == 0 ? saved.ToString() : "rank 0 could not write it";
      return Status::OK();
    }
    if (m) m->checkpoint_seconds.Observe(Since(t0));
    last_saved = committed.step;
    result.resume_step = committed.step;
    result.checkpoint_error.clear();
    return Status::OK();
  };
  // Before giving up on the group: every survivor saves its committed step (identical state on
  // all that reached it), unless a checkpoint of it exists; see CheckpointStore::Save's writer.
  auto just_in_time_checkpoint = [&]() -> bool {
    if (cfg.checkpoint_dir.empty() || committed.step <= 0) return false;
    if (committed.step == last_saved) return true;
    auto payload = SerializeTrainState(*mo.model, *mo.optimizer, committed);
    Status s = payload.ok() ? store.Save(committed.step, *payload, "r" + std::to_string(rank))
                            : payload.status();
    if (s.ok()) {
      DDP_LOG(INFO) << "rank " << rank << ": just-in-time checkpoint of step " << committed.step;
      if (m) m->checkpoint_last_step.Set(static_cast<double>(committed.step));
      last_saved = committed.step;
      return true;
    }
    if (m) m->checkpoint_failures.Inc();
    DDP_LOG(ERROR) << "rank " << rank << ": just-in-time checkpoint of step " << committed.step
                   << " failed: " << s.ToString();
    return false;
  };

  LrSchedule sched{cfg.lr, cfg.min_lr, cfg.warmup_steps, cfg.steps};
  // Per rank, on average: ranks may differ by one micro-batch (global_batch.h).
  // All three change with the world size (a resize in place): per_world() sets them again.
  double samples_per_step = 0, loss_scale = 0, tokens_per_step = 0;
  auto per_world = [&]() {
    samples_per_step = static_cast<double>(gbatch.samples) / world;
    loss_scale = MicroBatchLossScale(gbatch, world);
    tokens_per_step = samples_per_step * static_cast<double>(cfg.model.block_size);
  };
  per_world();
  const bool bf16 = cfg.bf16 && ctx.device.is_cuda();
  const int64_t first_step = committed.step;
  const int64_t warmup = std::min<int64_t>(5, (cfg.steps - first_step) / 5);
  if (m) {
    m->total_steps.Set(static_cast<double>(cfg.steps));
    // The step counter reads as training progress, so a resumed run starts it where the
    // checkpoint left off; Prometheus sees a new process's counter start, not a reset.
    m->steps.Inc(static_cast<double>(committed.step));
  }
  PhaseTotals totals, window;
  result.step = committed.step;
  std::optional<Clock::time_point> failed_at;  // a recovery in progress, until the next commit
  StallClock stall(m, rank);  // the trainer's own figure of the last time training stood still
  // The step agreement: the committed step it runs at next (the first step agrees, to measure
  // the step time) and this rank's busy time since the last one.
  int64_t next_agreement = committed.step + 1;
  struct BusyWindow {
    Clock::time_point since = Clock::now();
    double seconds = 0;
    int64_t steps = 0;
  } busy;
  // Reused every step, so the trainer allocates nothing of its own per step (forward and backward
  // allocate through the caching allocator as any model does). A failed step's agreement may
  // still be referenced by the abandoned collective: a new group gets a new buffer.
  const auto on_device = at::TensorOptions().device(ctx.device);
  at::Tensor loss_sum = at::zeros({}, on_device.dtype(at::kFloat));
  constexpr int kAgreeBusy = 4;  // the first busy slot of the agreement (layout below)
  at::Tensor agree = at::zeros({world + kAgreeBusy}, on_device.dtype(at::kFloat));

  // One optimizer step; committed once its optimizer step ran. *leave: the group grew and this
  // generation ends here, as all its members agreed (membership.h leave_requested()).
  auto run_step = [&](int64_t step, bool* stop, bool* leave) -> Status {
    MaybeInjectFault(ctx.fault, start_rank, step);
    const auto t_step = Clock::now();
    StepBreakdown t;
    const double lr = LearningRateAt(sched, step);
    SetLearningRate(*mo.optimizer, lr);
    // This rank's micro-batches of the step's global batch, dealt from the global order.
    const SamplerPosition pos = committed.sampler;
    const auto micro_batches = RankMicroBatches(sampler, pos, gbatch, rank, world);
    loss_sum.zero_();
    for (size_t micro = 0; micro < micro_batches.size(); ++micro) {
      reducer->set_sync(micro + 1 == micro_batches.size());  // no_sync on all but the last
      auto t0 = Clock::now();
      const auto device_until =
          t0 + std::chrono::duration_cast<Clock::duration>(
                   std::chrono::duration<double, std::milli>(cfg.emulate_device_ms));
      at::Tensor x, y;
      DDP_RETURN_IF_ERROR(dataset.Batch(micro_batches[micro], &x, &y));
      x = x.to(ctx.device), y = y.to(ctx.device);
      t.data += Since(t0);
      t0 = Clock::now();
      reducer->PrepareForBackward();
      at::Tensor loss;
      {
        BF16Autocast autocast(bf16);
        // Each micro-batch's share of the global batch's mean loss (after the reducer's / world).
        loss = mo.model->Loss(x, y) * loss_scale;
      }
      t.forward += Since(t0);
      t0 = Clock::now();
      loss.backward();
      if (cfg.emulate_device_ms > 0) std::this_thread::sleep_until(device_until);
      t.backward += Since(t0);
      loss_sum += loss.detach();
    }
    auto t0 = Clock::now();
    DDP_RETURN_IF_ERROR(reducer->FinalizeBackward().WithContext("step " + std::to_string(step)));
    const Reducer::Stats stats = reducer->last_stats();
    // Both from the buckets' in-flight intervals (reducer.h), so exposed <= total always.
    t.exposed_allreduce = stats.exposed_allreduce_seconds;
    t.allreduce = stats.allreduce_seconds;
    // Agree on the mean loss and on stopping: SIGTERM may reach ranks at different steps, but
    // all of them must checkpoint and leave at the same one. Only at the agreement steps (see
    // NextAgreementStep): reading the result on the host drains a GPU's queue. Launched before
    // the optimizer step and awaited after it, so its latency hides behind clipping and AdamW.
    // Each rank also writes its busy time since the last agreement (per step: data, forward,
    // backward, the step so far minus the wait for the gradient all-reduce; not the optimizer
    // step, which follows) in its own slot, so the sum hands rank 0 every rank's for the
    // straggler series; and rank 0 the interval to the next agreement, from its step time. A
    // member that the group asks to leave for a growth says so: all leave after the same step.
    // Layout: [loss_sum, stop, interval, leave, busy_0 .. busy_{world-1}].
    const bool agree_now = step + 1 >= next_agreement;
    busy.seconds += std::max(0.0, Since(t_step) - t.exposed_allreduce);
    busy.steps += 1;
    std::shared_ptr<Work> agreement;
    t0 = Clock::now();
    if (agree_now) {
      // SIGTERM (Restart), or the group's decision that the whole job stops (InPlace).
      const bool stop_here =
          (ctx.stop != nullptr && ctx.stop->load()) || (group != nullptr && group->stop_requested());
      const double mean_step = Since(busy.since) / static_cast<double>(busy.steps);
      // Bounded so that the float carries it exactly; NextAgreementStep caps it at log_every.
      const int64_t interval =
          std::min<int64_t>({AgreementInterval(mean_step), cfg.log_every, int64_t{1} << 24});
      // Filled on the device (no host-to-device copy, which would wait for the GPU).
      agree.zero_();
      agree[0].copy_(loss_sum);
      agree[1].fill_(stop_here ? 1.0 : 0.0);
      if (rank == 0) agree[2].fill_(static_cast<double>(interval));
      if (group != nullptr && group->leave_requested()) agree[3].fill_(1.0);
      agree[kAgreeBusy + rank].fill_(busy.seconds);
      agreement = comm->AllReduceSumAsync(agree);
    }
    t.sync = Since(t0);
    t0 = Clock::now();
    if (cfg.grad_clip > 0) ClipGradNorm(mo.model->parameters(), cfg.grad_clip);
    mo.optimizer->step();
    ZeroGrads(*mo.model);
    // Committed: every gradient of this step was the full all-reduced sum.
    committed.step = step + 1;
    committed.sampler = sampler.Advance(pos, gbatch.samples);
    if (!cfg.sample_log.empty()) {
      DDP_RETURN_IF_ERROR(AppendSampleLog(cfg.sample_log, step, sampler, pos, gbatch, rank, world));
    }
    result.step = committed.step;
    t.optimizer = Since(t0);
    t0 = Clock::now();
    if (agree_now) {
      DDP_RETURN_IF_ERROR(agreement->Wait().WithContext("step agreement"));
      at::Tensor agreed = agree.cpu();
      ++result.agreements;
      result.last_loss = agreed[0].item<double>() / world;
      *stop = agreed[1].item<double>() > 0;
      *leave = agreed[3].item<double>() > 0;
      const auto interval = static_cast<int64_t>(agreed[2].item<double>());
      if (m && rank == 0) m->AddRankBusy(agreed.data_ptr<float>() + kAgreeBusy, world, busy.steps);
      if (m) {
        m->loss.Set(result.last_loss);
        m->tokens_per_second.Set(tokens_per_step * static_cast<double>(busy.steps) /
                                 Since(busy.since));
        m->steps_per_second.Set(static_cast<double>(busy.steps) / Since(busy.since));
      }
      next_agreement = NextAgreementStep(committed.step, cfg.log_every, interval, cfg.steps);
      busy = BusyWindow{};
    }
    t.sync += Since(t0);
    t.step = Since(t_step);

    if (step - first_step >= warmup) totals.Add(t);
    window.Add(t);
    if (m) {
      m->steps.Inc();
      m->samples.Inc(samples_per_step);
      m->tokens.Inc(tokens_per_step);
      m->learning_rate.Set(lr);
      if (auto used = DeviceMemoryInUse(ctx.device)) {
        m->gpu_memory_bytes.Get().Set(static_cast<double>(*used));
      }
      m->step_seconds.Observe(t.step);
      m->allreduce_bytes.Inc(static_cast<double>(stats.allreduce_bytes));
      m->allreduce_seconds.Inc(stats.allreduce_seconds);
      m->exposed_allreduce_seconds.Inc(t.exposed_allreduce);
    }
    stall.Committed(committed.step);
    if (failed_at) {
      const double seconds = Since(*failed_at);
      if (m) (resizing ? m->resize_seconds : m->recovery_seconds).Observe(seconds);
      DDP_LOG(INFO) << "rank " << rank << ": " << (resizing ? "resized" : "recovered") << " in "
                    << seconds << "s (the old generation's end to the next committed step, "
                    << committed.step << ", at world size " << world << ")";
      failed_at.reset();
      resizing = false;
    }
    // Every multiple of log_every, the last step and a stop are agreement steps.
    if (rank == 0 && agree_now &&
        (result.step % cfg.log_every == 0 || result.step == cfg.steps || *stop)) {
      StepBreakdown a = window.Average(samples_per_step * world, tokens_per_step * world);
      char line[256];
      std::snprintf(line, sizeof(line),
                    "step %lld/%lld loss %.6f lr %.2e tokens/s %.0f step_ms %.1f allreduce_ms %.2f "
                    "exposed_allreduce_ms %.2f",
                    static_cast<long long>(result.step), static_cast<long long>(cfg.steps),
                    result.last_loss, lr, a.tokens_per_second, a.step * 1e3, a.allreduce * 1e3,
                    a.exposed_allreduce * 1e3);
      DDP_LOG(INFO) << line;
      window = PhaseTotals();
    }
    if (cfg.eval_every > 0 && (result.step % cfg.eval_every == 0 || result.step == cfg.steps)) {
      DDP_RETURN_IF_ERROR(
          RunEval(*mo.model, *data->val, comm, ctx.device, cfg, bf16, result.step, m));
    }
    const bool periodic = cfg.checkpoint_every > 0 && result.step % cfg.checkpoint_every == 0;
    if (periodic || *stop) DDP_RETURN_IF_ERROR(checkpoint());
    return Status::OK();
  };

  // 3. The loop.
  while (committed.step < cfg.steps) {
    bool stop = false, leave = false;
    Status s = run_step(committed.step, &stop, &leave);
    if (s.ok() && stop) {
      result.preempted = true;
      break;
    }
    if (s.ok() && !leave) continue;
    if (s.ok()) {
      // A growth (rule 9c): every member agreed to leave after this step; nothing is in flight.
      DDP_LOG(INFO) << "rank " << rank << ": leaving the generation at step " << committed.step
                    << " for a growth, as the group agreed";
    } else {
      // A failed step. Nothing of it was applied unless the optimizer step ran (then it counts).
      // Its gradients are dropped with the buckets an abandoned collective may still write into:
      // the reducer sets them aside until those stop (reducer.h), never into memory reused here.
      reducer->Abandon();
      if (group == nullptr || !IsCommFailure(s)) {
        if (IsCommFailure(s)) just_in_time_checkpoint();
        return s;
      }
      DDP_LOG(WARNING) << "rank " << rank << ": " << s.ToString()
                       << "; re-forming the group at step " << committed.step;
    }
    const std::string cause = s.ok() ? "a growth" : s.ToString();
    if (!failed_at) failed_at = Clock::now();
    stall.Interrupted();
    reducer.reset();  // abandoned above (a failure): its buckets live on until their collectives stop
    resizing = false;
    Status f = form();
    if (m && f.ok() && !resizing) m->recoveries.Inc();  // a resize is no recovery
    if (!f.ok()) {
      // Declared lost: the group went on without this trainer; it holds nothing it needs.
      if (group_end == group::GroupEnd::kFenced) return f;
      if (group_end == group::GroupEnd::kStop) {
        // The whole job stops while the group was re-forming: save, and stop as on SIGTERM.
        const bool saved = just_in_time_checkpoint();
        result.preempted = true;
        result.resume_step = saved ? committed.step : 0;
        if (!saved && !cfg.checkpoint_dir.empty()) result.checkpoint_error = "the just-in-time checkpoint failed";
        break;
      }
      if (IsCommFailure(f)) just_in_time_checkpoint();
      return f.WithContext("after " + cause);
    }
    reducer = std::make_unique<Reducer>(mo.model->parameters(), comm, ropts);
    result.step = committed.step;
    next_agreement = committed.step + 1;  // as a member that joins now starts: the same step
    busy = BusyWindow{};
    agree = at::zeros({world + kAgreeBusy}, on_device.dtype(at::kFloat));
    per_world();
  }
  if (!result.preempted) DDP_RETURN_IF_ERROR(checkpoint());
  result.breakdown = totals.Average(samples_per_step * world, tokens_per_step * world);
  result.param_checksum = ParamChecksum(*mo.model);
  result.world_size = world;
  result.rank = rank;
  return result;
}

}  // namespace ddp::worker
