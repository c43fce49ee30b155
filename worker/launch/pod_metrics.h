// A pod's one /metrics endpoint (DESIGN.md: with several trainers per pod the pod still exposes
// one): every local trainer's page, each series labelled with its rank and local_rank, and
// /healthz. Used by `ddp-worker launch` and by the in-place supervisor.
#ifndef DDP_WORKER_LAUNCH_POD_METRICS_H_
#define DDP_WORKER_LAUNCH_POD_METRICS_H_

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/http_server.h"
#include "common/status.h"

namespace ddp::worker {

// Thread-safe: the HTTP thread renders while the supervisor changes the ranks.
class PodMetrics {
 public:
  // Trainers write their ports to <port_dir>/rank-<local>.port (launch_plan.h).
  explicit PodMetrics(std::string port_dir) : port_dir_(std::move(port_dir)) {}

  // Serves on addr:port. Unavailable when the bind fails.
  Status Start(const std::string& addr, int port);
  int port() const { return server_ ? server_->port() : 0; }
  void Stop();

  // The trainers the page merges: (rank, local rank) pairs.
  void SetRanks(std::vector<std::pair<int, int>> ranks);

  std::string Render() const;

 private:
  std::string port_dir_;
  mutable std::mutex mu_;
  std::vector<std::pair<int, int>> ranks_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_LAUNCH_POD_METRICS_H_
