// Worker metric registration and the /metrics endpoint.
#include "worker/train/worker_metrics.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "worker/train/filesystem.h"

namespace ddp::worker {
namespace {

std::vector<double> StepBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
}

std::vector<double> RecoveryBuckets() { return {0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 120, 300}; }

}  // namespace

WorkerMetrics::WorkerMetrics(const WorkerIdentity& id)
    : steps(registry_.AddCounter("ddp_worker_steps_total", "Optimizer steps of the job (a resumed process starts at its checkpoint's step).").Get()),
      samples(registry_.AddCounter("ddp_worker_samples_total", "Training samples processed by this rank.").Get()),
      tokens(registry_.AddCounter("ddp_worker_tokens_total", "Training tokens processed by this rank.").Get()),
      loss(registry_.AddGauge("ddp_worker_loss", "Training loss of the last step, averaged over ranks.").Get()),
      learning_rate(registry_.AddGauge("ddp_worker_learning_rate", "Learning rate of the last step.").Get()),
      total_steps(registry_.AddGauge("ddp_worker_total_steps", "Configured total optimizer steps.").Get()),
      tokens_per_second(registry_.AddGauge("ddp_worker_tokens_per_second", "Tokens per second of this rank between the last two step agreements.").Get()),
      steps_per_second(registry_.AddGauge("ddp_worker_steps_per_second", "Optimizer steps per second between the last two step agreements (0 before the first).").Get()),
      step_seconds(registry_.AddHistogram("ddp_worker_step_seconds", "Wall time of one optimizer step.", StepBuckets()).Get()),
      allreduce_bytes(registry_.AddCounter("ddp_worker_allreduce_bytes_total", "Gradient bytes all-reduced by this rank.").Get()),
      allreduce_seconds(registry_.AddCounter("ddp_worker_allreduce_seconds_total", "Seconds some gradient bucket's all-reduce was in flight (the union of launch-to-completion intervals).").Get()),
      exposed_allreduce_seconds(registry_.AddCounter("ddp_worker_exposed_allreduce_seconds_total", "The part of ddp_worker_allreduce_seconds_total after backward ended: not hidden behind it, never more than it.").Get()),
      checkpoint_seconds(registry_.AddHistogram("ddp_worker_checkpoint_seconds", "Wall time of writing one checkpoint.", StepBuckets()).Get()),
      checkpoint_last_step(registry_.AddGauge("ddp_worker_checkpoint_last_step", "Step of the last complete checkpoint.").Get()),
      checkpoint_timestamp_seconds(registry_.AddGauge("ddp_worker_checkpoint_timestamp_seconds", "Unix time of the last complete checkpoint.").Get()),
      checkpoint_failures(registry_.AddCounter("ddp_worker_checkpoint_failures_total", "Checkpoint saves that failed (counted on every rank of a group save, on the writer of a just-in-time save).").Get()),
      generation(registry_.AddGauge("ddp_worker_generation", "In-place recovery generation of the group in this round (+1 per re-formation; 0 without failures).").Get()),
      round(registry_.AddGauge("ddp_worker_round", "Rendezvous round of this process (DDP_ROUND): +1 on every restart or resize of the group.").Get()),
      recoveries(registry_.AddCounter("ddp_worker_recoveries_total", "In-place recoveries this trainer process survived (the group re-formed without it restarting).").Get()),
      recovery_seconds(registry_.AddHistogram("ddp_worker_recovery_seconds", "Seconds from a failure seen by this rank to the group's next committed step (in-place recovery).", RecoveryBuckets()).Get()),
      resizes(registry_.AddCounter("ddp_worker_resizes_total", "Resizes of the group this trainer process went through in place (spec.elastic under recovery InPlace).").Get()),
      resize_seconds(registry_.AddHistogram("ddp_worker_resize_seconds", "Seconds from the generation before a resize ending to the first step committed at the new size.", RecoveryBuckets()).Get()),
      last_stall(registry_.AddGauge("ddp_worker_last_stall_timestamp_seconds", "The last time training stood still for this process: the unix time of the last step committed before it (edge=start), of the interruption being seen (edge=detected) and of the next commit (edge=end). A process's first commit sets end alone.", {"edge"})),
      last_stall_step(registry_.AddGauge("ddp_worker_last_stall_step", "The committed step training resumed from at the end of the last stall (ddp_worker_last_stall_timestamp_seconds).").Get()),
      gpu_memory_bytes(registry_.AddGauge("ddp_worker_gpu_memory_bytes", "GPU memory in use on this rank's device (total - free, from the CUDA runtime).")),
      val_loss(registry_.AddGauge("ddp_worker_val_loss", "Loss on the held-out shards at the last eval, averaged over ranks.")),
      rank_busy_seconds(registry_.AddCounter("ddp_worker_rank_busy_seconds_total", "Rank 0 only: each rank's busy seconds (data, forward, backward; not the all-reduce wait) over the steps counted by ddp_worker_rank_busy_steps_total.", {"peer_rank"})),
      rank_busy_steps(registry_.AddCounter("ddp_worker_rank_busy_steps_total", "Rank 0 only: steps of this process covered by ddp_worker_rank_busy_seconds_total.")) {
  round.Set(id.round);
  if (id.launched) {
    registry_.AddGauge("ddp_worker_info", "Identity of this worker process.", {"job", "world_size", "round"})
        .Labels({id.job, std::to_string(id.world_size), std::to_string(id.round)})
        .Set(1);
  } else {
    registry_
        .AddGauge("ddp_worker_info", "Identity of this worker process.",
                  {"job", "rank", "local_rank", "world_size", "round"})
        .Labels({id.job, std::to_string(id.rank), std::to_string(id.local_rank),
                 std::to_string(id.world_size), std::to_string(id.round)})
        .Set(1);
  }
}

void WorkerMetrics::AddRankBusy(const float* busy, int world, int64_t steps) {
  for (int r = 0; r < world; ++r) {
    rank_busy_seconds.Labels({std::to_string(r)}).Inc(std::max(0.0f, busy[r]));
  }
  rank_busy_steps.Get().Inc(static_cast<double>(steps));
}

StatusOr<std::unique_ptr<HttpServer>> ServeMetrics(WorkerMetrics* m, const std::string& addr,
                                                   int port, const std::string& port_file) {
  auto server = std::make_unique<HttpServer>();
  server->Handle("/metrics", [m] { return HttpResponse{200, kPrometheusContentType, m->Render()}; });
  server->Handle("/healthz", [] { return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}; });
  DDP_RETURN_IF_ERROR(server->Start(addr + ":" + std::to_string(port)));
  if (!port_file.empty()) {
    // Written then renamed, so the launcher never reads half a number.
    const std::string tmp = port_file + ".tmp." + std::to_string(::getpid());
    FileSystem* fs = PosixFileSystem();
    DDP_RETURN_IF_ERROR(fs->WriteFile(tmp, std::to_string(server->port()) + "\n"));
    DDP_RETURN_IF_ERROR(fs->Rename(tmp, port_file));
  }
  return server;
}

}  // namespace ddp::worker
