// The worker's Prometheus metrics (names listed in docs/metrics.md), in one registry. Values are
// per rank: a rank's tokens/samples are the ones it processed, so sums over ranks are global.
// Thread-safe (the registry is); the HTTP server renders it from its own thread.
#ifndef DDP_WORKER_TRAIN_WORKER_METRICS_H_
#define DDP_WORKER_TRAIN_WORKER_METRICS_H_

#include <memory>
#include <string>

#include "common/http_server.h"
#include "common/prometheus.h"
#include "common/status.h"

namespace ddp::worker {

struct WorkerIdentity {
  std::string job;  // DDP_JOB_NAME, "" when unset
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int round = 0;
  // Under `ddp-worker launch` the launcher adds rank and local_rank to every series it merges;
  // ddp_worker_info then leaves them out (a label twice is invalid exposition).
  bool launched = false;
};

class WorkerMetrics {
  // First member on purpose: the references below are initialised from it.
  metrics::Registry registry_;

 public:
  explicit WorkerMetrics(const WorkerIdentity& id);

  metrics::Registry& registry() { return registry_; }
  std::string Render() const { return registry_.Render(); }

  metrics::Counter& steps;
  metrics::Counter& samples;
  metrics::Counter& tokens;
  metrics::Gauge& loss;
  metrics::Gauge& learning_rate;
  metrics::Gauge& total_steps;
  metrics::Gauge& tokens_per_second;
  // Steps per second over the same window as tokens_per_second: the step rate of the job's
  // last second or so, right from its first agreement (for the ETA, docs/metrics.md).
  metrics::Gauge& steps_per_second;
  metrics::Histogram& step_seconds;
  metrics::Counter& allreduce_bytes;
  metrics::Counter& allreduce_seconds;
  metrics::Counter& exposed_allreduce_seconds;
  metrics::Histogram& checkpoint_seconds;
  metrics::Gauge& checkpoint_last_step;
  metrics::Gauge& checkpoint_timestamp_seconds;
  metrics::Counter& checkpoint_failures;
  metrics::Gauge& generation;
  // The rendezvous round (DDP_ROUND) as a value, for graphs; ddp_worker_info has it as a label.
  metrics::Gauge& round;
  metrics::Counter& recoveries;
  metrics::Histogram& recovery_seconds;
  // Elastic in place: resizes of the group this process went through (it kept running), and the
  // seconds from its old generation ending to the first step committed at the new size.
  metrics::Counter& resizes;
  metrics::Histogram& resize_seconds;
  // The last time training stood still for this process (stall_clock.h):
  // ddp_worker_last_stall_timestamp_seconds{edge="start|detected|end"} (unix seconds; no series
  // before the first commit, start and detected only after an interruption it survived) and
  // ddp_worker_last_stall_step, the committed step training resumed from.
  metrics::GaugeFamily& last_stall;
  metrics::Gauge& last_stall_step;
  // ddp_worker_gpu_memory_bytes: a family with no series until a GPU reading exists, so a
  // CPU worker exports no misleading 0.
  metrics::GaugeFamily& gpu_memory_bytes;
  // ddp_worker_val_loss: no series until the first eval (--eval-every), for the same reason.
  metrics::GaugeFamily& val_loss;
  // Rank 0 only (no series elsewhere): every rank's busy time, handed over in the step
  // agreement, for straggler detection from one page. ddp_worker_rank_busy_seconds_total
  // {peer_rank} and the steps they cover, ddp_worker_rank_busy_steps_total.
  metrics::CounterFamily& rank_busy_seconds;
  metrics::CounterFamily& rank_busy_steps;
  // Adds `steps` steps: busy[r] is rank r's busy seconds over them, r < world.
  // REQUIRES: busy has world values; steps >= 0.
  void AddRankBusy(const float* busy, int world, int64_t steps = 1);
};

// Serves /metrics and /healthz for `m` on addr:port (port 0 = any free port). When `port_file`
// is not empty, the bound port is written there (atomically) for `ddp-worker launch` to read.
// Unavailable when the bind fails. The server stops when the returned object is destroyed.
StatusOr<std::unique_ptr<HttpServer>> ServeMetrics(WorkerMetrics* m, const std::string& addr,
                                                   int port, const std::string& port_file);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_WORKER_METRICS_H_
