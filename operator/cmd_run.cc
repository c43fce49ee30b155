// `ddp-operator run`: the in-cluster controller. Flags and wiring only: client, metrics and
// health endpoints, optional leader election, the controller, and a clean SIGTERM.
// Shutdown protocol: 1. SIGTERM/SIGINT stops the queue; 2. in-flight reconciles finish;
// 3. informers stop; 4. the lease is released; 5. exit 0. Losing the lease exits 1 at once.
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "common/http_server.h"
#include "common/logging.h"
#include "operator/command.h"
#include "operator/controller/controller.h"
#include "operator/kube/client.h"
#include "operator/kube/leader_election.h"
#include "operator/kube/operator_metrics.h"
#include "operator/controller/controller_flags.h"

namespace ddp::controller {
namespace {

std::string Identity() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "unknown");
  return std::string(host) + "_" + std::to_string(getpid());
}

// Serves /metrics (when addr is not "0") and /healthz + /readyz.
struct Endpoints {
  HttpServer metrics, health;
};

int RunMain(int argc, char** argv) {
  RunFlags f;
  if (Status s = ParseRunFlags(argc, argv, &f); !s.ok()) {
    std::fprintf(stderr, "ddp-operator run: %s\n\n%s", s.message().c_str(), RunUsage());
    return 2;
  }
  if (f.help) {
    std::fputs(RunUsage(), stdout);
    return 0;
  }
  SetLogLevel(f.log_level);
  // For a build with the C library's malloc (DDP_OPERATOR_MALLOC=system; with jemalloc this
  // does nothing, see jemalloc_conf.cc): glibc gives each thread that allocates its own arena,
  // and freed memory then sits in many arenas. Two arenas keep the resident set close to the
  // live data (the 30 MiB budget at 1,000 jobs) at no measurable CPU cost.
  mallopt(M_ARENA_MAX, 2);

  // Signals are taken by one thread with sigwait, so no handler races the rest of the program.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  auto config = LoadClientConfig(f.kubeconfig);
  if (!config.ok()) {
    DDP_LOG(ERROR) << "kubeconfig: " << config.status().message()
                   << " (HINT: pass --kubeconfig or run in a pod with a service account)";
    return 1;
  }
  config->qps = f.qps;
  config->burst = f.burst;
  // With a cluster CA the client trusts only that CA (client_tls.h) and discards OpenSSL's
  // default bundle, yet cpprestsdk loads that bundle into every new connection first: over TLS
  // that was a quarter of the operator's CPU (bench/RESULTS.md). Point the defaults at nothing;
  // even a user's SSL_CERT_FILE would be discarded. Here, before any thread starts: setenv must
  // not race getenv.
  if (!config->ca_data.empty() || !config->ca_file.empty()) {
    setenv("SSL_CERT_FILE", "/dev/null", /*overwrite=*/1);
    setenv("SSL_CERT_DIR", "", /*overwrite=*/1);
  }
  auto client = NewRestClient(*config);
  if (!client.ok()) {
    DDP_LOG(ERROR) << "client: " << client.status().message();
    return 1;
  }

  OperatorMetrics metrics;
  (*client)->SetRequestObserver([&metrics](const std::string& verb, int code, double) {
    metrics.api_requests_total.Labels({verb, code ? std::to_string(code) : "error"}).Inc();
  });
  std::atomic<Controller*> controller{nullptr};
  std::atomic<bool> waiting_for_lease{f.leader_elect};
  Endpoints ep;
  ep.metrics.Handle("/metrics", [&] {
    if (Controller* c = controller.load()) c->UpdateGauges();
    metrics.process.Update();
    return HttpResponse{200, kPrometheusContentType, metrics.registry.Render()};
  });
  ep.health.Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  ep.health.Handle("/readyz", [&] {
    Controller* c = controller.load();
    // A standby replica is ready: it is healthy and waiting for the lease by design.
    bool ready = waiting_for_lease.load() || (c && c->Synced());
    return ready ? HttpResponse{200, "text/plain", "ok\n"}
                 : HttpResponse{503, "text/plain", "caches not synced\n"};
  });
  for (auto [srv, addr, what] : {std::tuple{&ep.metrics, f.metrics_addr, "metrics"},
                                 std::tuple{&ep.health, f.health_addr, "health probe"}}) {
    if (addr == "0") continue;
    if (Status s = srv->Start(addr); !s.ok()) {
      DDP_LOG(ERROR) << what << " endpoint " << addr << ": " << s.message();
      return 1;
    }
    DDP_LOG(INFO) << what << " endpoint on port " << srv->port();
  }

  std::mutex mu;
  std::condition_variable cv;
  std::atomic<bool> stop{false};
  std::unique_ptr<LeaderElector> elector;
  if (f.leader_elect) {
    LeaderConfig lc{f.identity.empty() ? Identity() : f.identity, f.lease_duration,
                    f.renew_deadline, f.retry_period};
    std::string lease_ns = !f.leader_election_namespace.empty() ? f.leader_election_namespace
                           : !f.ns.empty()                      ? f.ns
                                                                : config->default_namespace;
    if (lease_ns.empty()) lease_ns = "default";
    elector = std::make_unique<LeaderElector>(client->get(), lease_ns, f.leader_election_id, lc);
  }
  std::thread signals([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    DDP_LOG(INFO) << "received signal " << sig << "; shutting down";
    stop = true;
    if (elector) elector->Stop();
    cv.notify_all();
  });

  metrics.leader.Get().Set(f.leader_elect ? 0 : 1);
  std::thread renewer;
  if (elector) {
    if (!elector->Acquire().ok()) {  // stopped while waiting: nothing to release
      signals.join();
      return 0;
    }
    waiting_for_lease = false;
    metrics.leader.Get().Set(1);
    renewer = std::thread([&] {
      Status s = elector->KeepRenewing();
      if (!s.ok()) {
        // Another replica may already be acting: stop every write now, let Kubernetes restart us.
        DDP_LOG(ERROR) << s.message() << "; exiting";
        std::_Exit(1);
      }
    });
  }

  ControllerOptions co;
  co.ns = f.ns;
  co.workers = f.workers;
  co.resync_period = f.resync_period;
  if (f.progress_interval.count() > 0) {
    co.progress = ProgressScraperOptions{};
    co.progress->interval = f.progress_interval;
    co.progress->max_in_flight = f.progress_scrapers;
    co.progress->max_page_bytes = f.scrape_max_bytes;
    co.progress->max_page_series = f.scrape_max_series;
    co.progress->busy_reads_wake = f.straggler_reads;
  }
  co.stragglers = {f.straggler_factor, f.straggler_reads};
  co.plan.lost_pod_margin = std::chrono::ceil<std::chrono::seconds>(f.lost_pod_margin);
  co.plan.unfenced_lost_pod_margin =
      std::chrono::ceil<std::chrono::seconds>(f.unfenced_lost_pod_margin);
  co.plan.gang = f.gang;
  co.plan.network_policy.enabled = f.network_policy;
  co.plan.network_policy.operator_namespace =
      !f.operator_namespace.empty() ? f.operator_namespace : config->default_namespace;
  co.plan.network_policy.metrics_namespace = f.metrics_namespace;
  if (f.network_policy && co.plan.network_policy.operator_namespace.empty()) {
    DDP_LOG(WARNING) << "network policies: the operator's namespace is unknown (set "
                        "--operator-namespace): jobs' metrics ports admit no operator scrape";
  }
  co.instance = f.identity.empty() ? Identity() : f.identity;
  Controller ctl(client->get(), &metrics, co);
  Status started = ctl.Start(f.sync_timeout, &stop);
  int rc = 0;
  if (started.ok()) {
    controller = &ctl;
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return stop.load(); });
  } else if (!stop) {
    DDP_LOG(ERROR) << "controller: " << started.message();
    rc = 1;
  }
  controller = nullptr;
  ctl.Stop();  // in-flight reconciles finish here
  if (elector) {
    elector->Stop();
    if (renewer.joinable()) renewer.join();
    if (Status s = elector->Release(); !s.ok()) DDP_LOG(WARNING) << s.message();
  }
  ep.metrics.Stop();
  ep.health.Stop();
  if (!stop) kill(getpid(), SIGTERM);  // wake the signal thread so it can be joined
  signals.join();
  DDP_LOG(INFO) << "stopped";
  return rc;
}

const bool kRegistered = RegisterCommand(
    {"run", "run the controller against a Kubernetes API server", &RunMain});

}  // namespace
}  // namespace ddp::controller
