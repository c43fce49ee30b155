// The pod's merged /metrics (see pod_metrics.h).
#include "worker/launch/pod_metrics.h"

#include <cstdlib>

#include "common/exposition.h"
#include "worker/train/filesystem.h"

namespace ddp::worker {

Status PodMetrics::Start(const std::string& addr, int port) {
  server_ = std::make_unique<HttpServer>();
  // Render() reads every local rank's page: off the polling thread, so /healthz never waits.
  server_->Handle("/metrics", [this] { return HttpResponse{200, kPrometheusContentType, Render()}; },
                  HttpServer::Dispatch::kMayBlock);
  server_->Handle("/healthz", [] { return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}; });
  return server_->Start(addr + ":" + std::to_string(port));
}

void PodMetrics::Stop() {
  if (server_) server_->Stop();
}

void PodMetrics::SetRanks(std::vector<std::pair<int, int>> ranks) {
  std::lock_guard<std::mutex> lock(mu_);
  ranks_ = std::move(ranks);
}

std::string PodMetrics::Render() const {
  std::vector<std::pair<int, int>> ranks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ranks = ranks_;
  }
  std::vector<std::pair<metrics::LabelPairs, std::string>> sources;
  for (const auto& [rank, local] : ranks) {
    auto port = PosixFileSystem()->ReadFile(port_dir_ + "/rank-" + std::to_string(local) + ".port");
    if (!port.ok()) continue;  // not serving yet
    auto body = HttpGet("127.0.0.1", std::atoi(port->c_str()), "/metrics", 1000);
    if (!body.ok()) continue;  // exited or busy: its series are absent from this scrape
    sources.push_back(
        {{{"rank", std::to_string(rank)}, {"local_rank", std::to_string(local)}}, *body});
  }
  return metrics::MergeExpositions(sources);
}

}  // namespace ddp::worker
