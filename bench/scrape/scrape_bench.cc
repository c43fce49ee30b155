// Scrape bench: (1) parsing a /metrics page, time per MB and per series, against the parser as
// it was before (bench/scrape/old_parser.h, quadratic in the number of names), in the same run;
// (2) rendering the pages ddp-worker and ddp-operator serve, and updating their metrics, with
// prometheus-cpp (common/prometheus.h) against the hand-written families it replaced
// (bench/scrape/old_registry.h), in the same run; (3) the endpoint server's /healthz latency with
// 0 and with 50 idle connections held open, and with clients that never read a large page.
//   scrape_bench [--names 80000] [--old-max-names 20000] [--requests 200]
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench/scrape/old_parser.h"
#include "bench/scrape/old_registry.h"
#include "common/exposition.h"
#include "common/http_server.h"
#include "common/prometheus.h"
#include "common/worker_progress.h"

namespace {

using Clock = std::chrono::steady_clock;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// This thread's CPU seconds: what a parse costs, whatever else the machine runs.
double ThreadCpu() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

// CPU seconds per call of `fn`, repeated until 0.3 s of CPU were spent (at least 3 times).
double TimePerCall(const std::function<void()>& fn) {
  int n = 0;
  const double start = ThreadCpu();
  do {
    fn();
    ++n;
  } while (n < 3 || ThreadCpu() - start < 0.3);
  return (ThreadCpu() - start) / n;
}

// A ddp-worker launch page of a large job: `local` ranks' series (a histogram of 12 buckets,
// counters, gauges) and rank 0's busy series for every rank of a world of `world`.
std::string WorkerPage(int local, int world) {
  std::string p;
  p += "# HELP ddp_worker_step_seconds Step time.\n# TYPE ddp_worker_step_seconds histogram\n";
  for (int r = 0; r < local; ++r) {
    const std::string l = "rank=\"" + std::to_string(r) + "\",local_rank=\"" + std::to_string(r) + "\"";
    for (double le : {0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0}) {
      p += "ddp_worker_step_seconds_bucket{" + l + ",le=\"" + std::to_string(le) + "\"} 12\n";
    }
    p += "ddp_worker_step_seconds_bucket{" + l + ",le=\"+Inf\"} 12\n";
    p += "ddp_worker_step_seconds_sum{" + l + "} 3.25\nddp_worker_step_seconds_count{" + l + "} 12\n";
  }
  for (const char* g : {"ddp_worker_steps_total", "ddp_worker_loss", "ddp_worker_tokens_per_second"}) {
    p += std::string("# TYPE ") + g + " gauge\n";
    for (int r = 0; r < local; ++r) p += std::string(g) + "{rank=\"" + std::to_string(r) + "\"} 12\n";
  }
  p += "# TYPE ddp_worker_rank_busy_steps_total counter\nddp_worker_rank_busy_steps_total{rank=\"0\"} 12\n";
  p += "# TYPE ddp_worker_rank_busy_seconds_total counter\n";
  for (int r = 0; r < world; ++r) {
    p += "ddp_worker_rank_busy_seconds_total{rank=\"0\",peer_rank=\"" + std::to_string(r) + "\"} 2.5\n";
  }
  return p;
}

// The hostile page of the issue: `n` distinct metric names.
std::string ManyNames(int n) {
  std::string p;
  for (int i = 0; i < n; ++i) p += "hostile_metric_" + std::to_string(i) + " 1\n";
  return p;
}

size_t Series(const std::string& page) {
  auto f = ddp::metrics::ParseExposition(page);
  size_t n = 0;
  for (const auto& fam : *f) n += fam.samples.size();
  return n;
}

void ParseRow(const char* what, const std::string& page, bool with_old) {
  const double mb = page.size() / 1048576.0;
  const size_t series = Series(page);
  const double now = TimePerCall([&] { (void)ddp::metrics::ParseExposition(page); });
  const double checked = TimePerCall([&] { (void)ddp::metrics::ReadWorkerPage(page, {4 << 20, 50000}); });
  std::printf("%-34s %8.2f MB %7zu series | new %8.2f ms (%6.1f ms/MB, %5.0f ns/series) | "
              "read+checks %8.2f ms",
              what, mb, series, now * 1e3, now * 1e3 / mb, now * 1e9 / series, checked * 1e3);
  if (with_old) {
    const double old = TimePerCall([&] { (void)ddp::bench_old::ParseExposition(page); });
    std::printf(" | old %9.2f ms (%8.1f ms/MB) | old/new %6.1fx", old * 1e3, old * 1e3 / mb,
                old / now);
  }
  std::printf("\n");
}

// A rank-0 ddp-worker page of a world of `world`: the worker's single-series families (counters,
// gauges, four histograms of 12-14 buckets) and the busy seconds of every rank. Same calls for
// the new registry and the old one.
template <typename R>
void FillWorker(R* reg, int world) {
  const std::vector<double> step = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  const std::vector<double> recovery = {0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 120, 300};
  for (int i = 0; i < 10; ++i) reg->AddCounter("ddp_worker_c" + std::to_string(i) + "_total", "A counter.").Get().Inc(1234 + i);
  for (int i = 0; i < 12; ++i) reg->AddGauge("ddp_worker_g" + std::to_string(i), "A gauge.").Get().Set(0.1 * i + 2.5);
  for (int i = 0; i < 4; ++i) {
    auto& h = reg->AddHistogram("ddp_worker_h" + std::to_string(i) + "_seconds", "A histogram.", i < 2 ? step : recovery).Get();
    for (int k = 0; k < 100; ++k) h.Observe(0.003 * k);
  }
  reg->AddGauge("ddp_worker_info", "Identity.", {"job", "rank", "local_rank", "world_size", "round"})
      .Labels({"ml/gpt", "0", "0", std::to_string(world), "0"}).Set(1);
  auto& busy = reg->AddCounter("ddp_worker_rank_busy_seconds_total", "Busy seconds by rank.", {"peer_rank"});
  for (int r = 0; r < world; ++r) busy.Labels({std::to_string(r)}).Inc(2.5 + r * 0.001);
}

// A ddp-operator page with `jobs` jobs' series: an incident histogram (13 buckets, two kinds),
// incident counters and a goodput gauge per job.
template <typename R>
void FillOperator(R* reg, int jobs) {
  auto& rec = reg->AddHistogram("ddp_job_recovery_seconds", "Stall per incident.",
                                {0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600},
                                {"ddp_namespace", "ddp_job", "kind", "outcome"});
  auto& inc = reg->AddCounter("ddp_job_incidents_total", "Incidents.", {"ddp_namespace", "ddp_job", "kind"});
  auto& good = reg->AddGauge("ddp_job_goodput_ratio", "Goodput.", {"ddp_namespace", "ddp_job"});
  for (int j = 0; j < jobs; ++j) {
    const std::string job = "job-" + std::to_string(j);
    for (const char* kind : {"PodLost", "TrainerFailed"}) {
      rec.Labels({"ml", job, kind, "InPlace"}).Observe(1.5 + j % 7);
      inc.Labels({"ml", job, kind}).Inc(1 + j % 3);
    }
    good.Labels({"ml", job}).Set(0.97);
  }
}

void RenderRow(const char* what, const std::function<void(ddp::metrics::Registry*)>& fill_new,
               const std::function<void(ddp::bench_old::Registry*)>& fill_old) {
  ddp::metrics::Registry now_reg;
  ddp::bench_old::Registry old_reg;
  fill_new(&now_reg);
  fill_old(&old_reg);
  const std::string page = now_reg.Render();
  const size_t series = Series(page);
  if (series != Series(old_reg.Render())) std::printf("(the two pages differ in series!) ");
  const double now = TimePerCall([&] { (void)now_reg.Render(); });
  const double old = TimePerCall([&] { (void)old_reg.Render(); });
  std::printf("%-34s %8.2f MB %7zu series | prometheus-cpp %7.3f ms (%5.0f ns/series) | "
              "hand-written (peer) %7.3f ms | new/old %5.2f\n",
              what, page.size() / 1048576.0, series, now * 1e3, now * 1e9 / series, old * 1e3,
              now / old);
}

// CPU per update of a child held by reference (what the training loop does each step) and of a
// child looked up by its labels (what the operator does per job).
template <typename R>
void Updates(double* inc, double* observe, double* lookup) {
  R reg;
  auto& c = reg.AddCounter("c_total", "c").Get();
  auto& h = reg.AddHistogram("h_seconds", "h", {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}).Get();
  auto& f = reg.AddCounter("f_total", "f", {"ddp_namespace", "ddp_job"});
  constexpr int kN = 100000;
  *inc = TimePerCall([&] { for (int i = 0; i < kN; ++i) c.Inc(); }) / kN;
  *observe = TimePerCall([&] { for (int i = 0; i < kN; ++i) h.Observe(0.002 * (i % 1000)); }) / kN;
  *lookup = TimePerCall([&] { for (int i = 0; i < kN / 10; ++i) f.Labels({"ml", "job-" + std::to_string(i % 100)}).Inc(); }) / (kN / 10);
}

void UpdateRow() {
  double inc[2], observe[2], lookup[2];
  Updates<ddp::metrics::Registry>(&inc[0], &observe[0], &lookup[0]);
  Updates<ddp::bench_old::Registry>(&inc[1], &observe[1], &lookup[1]);
  std::printf("updates, ns per call (prometheus-cpp / hand-written peer): counter Inc %.1f / %.1f (%.2f), "
              "histogram Observe %.1f / %.1f (%.2f), Labels(2 values)+Inc %.1f / %.1f (%.2f)\n",
              inc[0] * 1e9, inc[1] * 1e9, inc[0] / inc[1], observe[0] * 1e9, observe[1] * 1e9,
              observe[0] / observe[1], lookup[0] * 1e9, lookup[1] * 1e9, lookup[0] / lookup[1]);
}

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// /healthz latency over `requests` sequential GETs: p50, p99, max in ms, and failures.
void HealthzRow(const char* what, int port, int requests) {
  std::vector<double> ms;
  int failed = 0;
  for (int i = 0; i < requests; ++i) {
    const auto start = Clock::now();
    auto r = ddp::HttpGet("127.0.0.1", port, "/healthz", 2000);
    ms.push_back(Secs(Clock::now() - start) * 1e3);
    failed += r.ok() ? 0 : 1;
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%-44s p50 %6.3f ms  p99 %6.3f ms  max %7.3f ms  failed %d/%d\n", what,
              ms[ms.size() / 2], ms[ms.size() * 99 / 100], ms.back(), failed, requests);
}

}  // namespace

int main(int argc, char** argv) {
  int names = 80000, old_max = 20000, requests = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--names") names = std::atoi(argv[i + 1]);
    else if (a == "--old-max-names") old_max = std::atoi(argv[i + 1]);
    else if (a == "--requests") requests = std::atoi(argv[i + 1]);
  }
  std::printf("== parsing, CPU time per page (new: indexed, linear; old: the previous parser, a "
              "scan of the families per line)\n");
  ParseRow("worker page, 8 local ranks, world 1024", WorkerPage(8, 1024), true);
  ParseRow("worker page, 8 local ranks, world 8192", WorkerPage(8, 8192), true);
  for (int n : {5000, 10000, 20000, names}) {
    const std::string what = std::to_string(n) + " distinct names";
    ParseRow(what.c_str(), ManyNames(n), n <= old_max);
  }

  std::printf("== rendering, CPU time per page and per update (prometheus-cpp against the "
              "hand-written families it replaced, in this run)\n");
  for (int world : {8, 1024, 8192}) {
    const std::string what = "worker page, rank 0 of world " + std::to_string(world);
    RenderRow(what.c_str(), [&](ddp::metrics::Registry* r) { FillWorker(r, world); },
              [&](ddp::bench_old::Registry* r) { FillWorker(r, world); });
  }
  for (int jobs : {100, 1000}) {
    const std::string what = "operator page, " + std::to_string(jobs) + " jobs";
    RenderRow(what.c_str(), [&](ddp::metrics::Registry* r) { FillOperator(r, jobs); },
              [&](ddp::bench_old::Registry* r) { FillOperator(r, jobs); });
  }
  UpdateRow();

  std::printf("== endpoint: /healthz while other clients hold connections\n");
  ddp::HttpServer srv;
  const std::string big(8 << 20, 'x');
  srv.Handle("/healthz", [] { return ddp::HttpResponse{200, "text/plain", "ok\n"}; });
  srv.Handle("/metrics", [&] { return ddp::HttpResponse{200, ddp::kPrometheusContentType, big}; });
  if (!srv.Start("127.0.0.1:0").ok()) return 1;
  HealthzRow("0 idle connections", srv.port(), requests);
  std::vector<int> idle;
  for (int i = 0; i < 50; ++i) idle.push_back(Connect(srv.port()));
  for (int i = 0; i < 25; ++i) ::send(idle[i], "GET /heal", 9, MSG_NOSIGNAL);  // half a head
  HealthzRow("50 idle connections (25 with half a head)", srv.port(), requests);
  std::vector<int> stuck;
  for (int i = 0; i < 4; ++i) {
    stuck.push_back(Connect(srv.port()));
    const std::string req = "GET /metrics HTTP/1.1\r\n\r\n";
    ::send(stuck.back(), req.data(), req.size(), MSG_NOSIGNAL);
  }
  HealthzRow("+ 4 clients never reading an 8 MiB page", srv.port(), requests);
  for (int fd : idle) ::close(fd);
  for (int fd : stuck) ::close(fd);
  return 0;
}
