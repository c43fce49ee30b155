// Operator benchmark: starts the fake API server in this process, runs the real
// `ddp-operator run` as a child, creates N DDPJobs of P pods each, and reports how long until
// every pod exists, reconcile latency, API requests per job, the operator's peak RSS, and CPU
// time on each side of the API (operator vs this process, which is the API server).
//   operator_bench [--jobs 1000] [--pods 8] [--workers 4] [--qps 0] [--latency-ms 0] [--pin 0]
//                  [--operator PATH]   (another build of ddp-operator, to compare two builds)
//                  [--tls 1]           (HTTPS with a throwaway CA, as every real API server)
//                  [--burst 1000]      the operator's --burst
//                  [--restart-pods 0]  then one job of N pods: its round 0 created, then rank 0
//                                      exits 75 and the whole round is deleted and recreated;
//                                      reports the restart's time against round 0's creation
//                                      (the peer: the same pods, half the writes)
//                  [--progress-minutes M]  (then: every pod Running, rank 0 serving a fake
//                                           /metrics whose step advances, measured for M minutes)
//                  [--progress 0]      (the same phase with the operator's progress reads off)
// --latency-ms adds that much server-side latency to every request, as a loaded real API server has.
// --pin 1 runs the API server on CPU 0 and the operator on CPU 1, so that each has one core of
// its own: the side whose core is busier is the one the other waits for.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/http_server.h"
#include "tests/kube/fake_apiserver.h"
#include "tests/kube/test_certs.h"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

long StatusKb(pid_t pid, const std::string& field) {
  std::string s = ReadFile("/proc/" + std::to_string(pid) + "/status");
  std::smatch m;
  std::regex re(field + ":\\s+([0-9]+) kB");
  return std::regex_search(s, m, re) ? std::stol(m[1]) : -1;
}

double ProcessCpuSeconds(pid_t pid) {
  std::string s = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto close = s.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(s.substr(close + 2));
  std::string f;
  std::vector<std::string> fields;
  while (in >> f) fields.push_back(f);
  // After "pid (comm) ": state is field 3, utime 14, stime 15 -> indexes 11 and 12 here.
  double ticks = std::stod(fields[11]) + std::stod(fields[12]);
  return ticks / sysconf(_SC_CLK_TCK);
}

double SelfCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

// histogram_quantile over the cumulative buckets of one histogram in the exposition text.
double Quantile(const std::string& text, const std::string& name, double q) {
  std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
  std::regex re(name + "_bucket\\{le=\"([^\"]+)\"\\} ([0-9.e+]+)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    std::string le = (*it)[1];
    buckets.push_back({le == "+Inf" ? INFINITY : std::stod(le), std::stod((*it)[2])});
  }
  if (buckets.empty() || buckets.back().second == 0) return NAN;
  double rank = q * buckets.back().second;
  double prev_le = 0, prev_count = 0;
  for (const auto& [le, count] : buckets) {
    if (count >= rank) {
      if (std::isinf(le)) return prev_le;
      return prev_le + (le - prev_le) * (rank - prev_count) / std::max(count - prev_count, 1.0);
    }
    prev_le = le;
    prev_count = count;
  }
  return prev_le;
}

json Job(const std::string& name, int pods, int metrics_port) {
  return {{"apiVersion", "ddp.dev/v1alpha1"},
          {"kind", "DDPJob"},
          {"metadata", {{"name", name}, {"namespace", "bench"}}},
          {"spec",
           {{"replicas", pods},
            {"metrics", {{"port", metrics_port}}},
            {"failurePolicy", {{"hangTimeoutSeconds", 600}}},
            {"template",
             {{"spec",
               {{"containers",
                 json::array({{{"name", "worker"}, {"image", "ddp-worker:bench"},
                               {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}})}}}}}}}};
}

// Rank 0 of every job: one endpoint for all (every rank-0 pod gets the IP 127.0.0.1), a worker's
// page whose step advances by one per second, with loss and tokens/s changing every step: the
// worst case for status writes, since every read shows new values.
class FakeWorkers {
 public:
  FakeWorkers() : start_(Clock::now()) {
    server_.Handle("/metrics", [this] {
      reads_++;
      const long step = static_cast<long>(Secs(Clock::now() - start_));
      return ddp::HttpResponse{
          200, ddp::kPrometheusContentType,
          "# TYPE ddp_worker_steps_total counter\nddp_worker_steps_total " + std::to_string(step) +
              "\n# TYPE ddp_worker_total_steps gauge\nddp_worker_total_steps 1000000\n"
              "# TYPE ddp_worker_loss gauge\nddp_worker_loss " + std::to_string(1.0 / (step + 1)) +
              "\n# TYPE ddp_worker_tokens_per_second gauge\nddp_worker_tokens_per_second " +
              std::to_string(1000 + step % 7) + "\n"};
    });
  }
  bool Start() { return server_.Start("127.0.0.1:0").ok(); }
  int port() const { return server_.port(); }
  long reads() const { return reads_.load(); }

 private:
  Clock::time_point start_;
  std::atomic<long> reads_{0};
  ddp::HttpServer server_;
};

// The value of an unlabelled or exactly-labelled sample line, or NAN.
double SampleValue(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return NAN;
  return std::atof(text.c_str() + at + series.size() + 2);
}

// The progress phase: every pod Running (rank 0 at 127.0.0.1), every job Running, then M minutes
// of steady state with the step advancing; prints the operator's CPU and API writes per job per
// minute. Returns false when the jobs did not all reach Running.
bool RunProgressPhase(ddp::fake::FakeApiServer& server, pid_t pid, int metrics_port, int jobs,
                      int pods, int minutes, bool progress_on, const FakeWorkers& workers) {
  auto t0 = Clock::now();
  for (int j = 0; j < jobs; ++j) {
    for (int i = 0; i < pods; ++i) {
      const std::string pod = "job-" + std::to_string(j) + "-worker-" + std::to_string(i);
      server.SetPodPhase("bench", pod, "Running");
      if (i == 0) {
        server.Mutate("/api/v1/namespaces/bench/pods/" + pod,
                      [](json& p) { p["status"]["podIP"] = "127.0.0.1"; });
      }
    }
  }
  const std::string running = "ddp_operator_jobs{phase=\"Running\"}";
  bool all_running = false;
  for (int i = 0; i < 6000 && !all_running; ++i) {
    auto m = ddp::HttpGet("127.0.0.1", metrics_port, "/metrics");
    all_running = m.ok() && SampleValue(*m, running) == jobs &&
                  SampleValue(*m, "ddp_operator_queue_depth") == 0;
    if (!all_running) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::printf("progress phase (--progress-interval %s): all %d jobs Running after %.1f s\n",
              progress_on ? "10s" : "0, reads off", jobs, Secs(Clock::now() - t0));
  if (!all_running) return false;
  server.ResetCounters();
  const long reads0 = workers.reads();
  const double op_cpu0 = ProcessCpuSeconds(pid), self_cpu0 = SelfCpuSeconds();
  const auto w0 = Clock::now();
  // A fixed window on purpose: this measures a steady state over wall-clock time.
  std::this_thread::sleep_for(std::chrono::minutes(minutes));
  const double wall = Secs(Clock::now() - w0);
  const double op_cpu = ProcessCpuSeconds(pid) - op_cpu0, self_cpu = SelfCpuSeconds() - self_cpu0;
  const double per_job_min = 60.0 / wall / jobs;
  std::string text;
  if (auto m = ddp::HttpGet("127.0.0.1", metrics_port, "/metrics"); m.ok()) text = *m;
  std::printf("  steady window               %.0f s, %d running jobs, rank 0 step +1/s\n", wall, jobs);
  std::printf("  /metrics reads              %.2f per job per minute (%.0f in all)\n",
              (workers.reads() - reads0) * per_job_min, double(workers.reads() - reads0));
  std::printf("  API writes per job per min  %.2f (status updates %.2f; all requests %.2f)\n",
              (server.RequestCount("update") + server.RequestCount("create") +
               server.RequestCount("patch") + server.RequestCount("delete")) * per_job_min,
              server.RequestCount("update") * per_job_min, server.RequestCount("") * per_job_min);
  std::printf("  reconcile p50/p99           %.2f ms / %.2f ms\n",
              1000 * Quantile(text, "ddp_operator_reconcile_duration_seconds", 0.5),
              1000 * Quantile(text, "ddp_operator_reconcile_duration_seconds", 0.99));
  std::printf("  CPU in the window           operator %.2f s (%.1f%% of one core), API server + "
              "fake workers %.2f s (%.1f%%)\n",
              op_cpu, 100 * op_cpu / wall, self_cpu, 100 * self_cpu / wall);
  std::printf("  operator RSS now            %.1f MiB (peak %.1f MiB)\n",
              StatusKb(pid, "VmRSS") / 1024.0, StatusKb(pid, "VmHWM") / 1024.0);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 1000, pods = 8, workers = 4, latency_ms = 0, pin = 0, tls = 0;
  int restart_pods = 0;
  int progress_minutes = 0, progress = 1;
  std::string qps = "0", burst = "1000", operator_bin = DDP_OPERATOR_BIN;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--jobs") jobs = std::atoi(argv[i + 1]);
    else if (a == "--pods") pods = std::atoi(argv[i + 1]);
    else if (a == "--workers") workers = std::atoi(argv[i + 1]);
    else if (a == "--qps") qps = argv[i + 1];
    else if (a == "--latency-ms") latency_ms = std::atoi(argv[i + 1]);
    else if (a == "--pin") pin = std::atoi(argv[i + 1]);
    else if (a == "--operator") operator_bin = argv[i + 1];
    else if (a == "--tls") tls = std::atoi(argv[i + 1]);
    else if (a == "--burst") burst = argv[i + 1];
    else if (a == "--restart-pods") restart_pods = std::atoi(argv[i + 1]);
    else if (a == "--progress-minutes") progress_minutes = std::atoi(argv[i + 1]);
    else if (a == "--progress") progress = std::atoi(argv[i + 1]);
    else { std::fprintf(stderr, "unknown flag %s\n", a.c_str()); return 2; }
  }
  const int want_pods = jobs * pods;
  auto pin_to = [](int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set) == 0;
  };
  // Before the server starts: its threads inherit this thread's CPU set.
  if (pin && (sysconf(_SC_NPROCESSORS_ONLN) < 2 || !pin_to(0))) {
    std::fprintf(stderr, "--pin needs two CPUs\n");
    return 2;
  }

  ddp::fake::FakeApiServerOptions opts;
  opts.history_limit = 200000;  // keep watches from old RVs valid for the whole run
  ddp::fake::TestPki pki;
  if (tls) {
    pki = ddp::fake::MakeTestPki();
    opts.tls_cert_pem = pki.server_cert;
    opts.tls_key_pem = pki.server_key;
  }
  ddp::fake::FakeApiServer server(opts);
  std::atomic<int> pod_creates{0}, pod_deletes{0};
  std::mutex mu;
  Clock::time_point all_pods_at{};
  server.SetRequestHook([&](const std::string& verb, const std::string& path) {
    if (verb == "delete" && path.find("/pods/") != std::string::npos) ++pod_deletes;
    if (verb == "create" && path.size() > 5 && path.compare(path.size() - 5, 5, "/pods") == 0) {
      if (++pod_creates == want_pods) {
        std::lock_guard<std::mutex> l(mu);
        all_pods_at = Clock::now();
      }
    }
  });
  FakeWorkers fake_workers;
  if (!fake_workers.Start()) { std::fprintf(stderr, "fake worker endpoint did not start\n"); return 1; }
  std::string err;
  if (!server.Start(0, &err)) { std::fprintf(stderr, "fake apiserver: %s\n", err.c_str()); return 1; }

  char dir_tmpl[] = "/tmp/ddp-opbench-XXXXXX";
  std::string dir = mkdtemp(dir_tmpl);
  std::string kubeconfig = dir + "/kubeconfig", log = dir + "/operator.log";
  std::ofstream(kubeconfig) << "apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n"
                            << "    server: " << server.url() << "\n"
                            << (tls ? "    certificate-authority-data: " +
                                          ddp::fake::Base64Encode(pki.ca_cert) + "\n"
                                    : std::string())
                            << "users:\n- name: u\n  user: {}\n"
                            << "contexts:\n- name: b\n  context: {cluster: b, user: u}\n"
                            << "current-context: b\n";
  std::vector<std::string> args = {operator_bin, "run", "--kubeconfig", kubeconfig,
                                   "--metrics-bind-address", "127.0.0.1:0",
                                   "--health-probe-bind-address", "0", "--workers",
                                   std::to_string(workers), "--qps", qps, "--burst", burst,
                                   "--log-level", "info", "--progress-interval",
                                   progress ? "10s" : "0"};
  pid_t pid = fork();
  if (pid == 0) {
    if (pin && !pin_to(1)) _exit(126);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    std::vector<char*> av;
    for (auto& a : args) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    execv(av[0], av.data());
    _exit(127);
  }
  int metrics_port = 0;
  for (int i = 0; i < 500 && !metrics_port; ++i) {
    std::smatch m;
    std::string text = ReadFile(log);
    if (std::regex_search(text, m, std::regex("metrics endpoint on port ([0-9]+)"))) metrics_port = std::stoi(m[1]);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int i = 0; i < 500 && ReadFile(log).find("caches synced") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  long idle_rss = StatusKb(pid, "VmRSS");
  server.SetLatency(std::chrono::milliseconds(latency_ms));
  server.ResetCounters();
  double op_cpu0 = ProcessCpuSeconds(pid), self_cpu0 = SelfCpuSeconds();

  auto t0 = Clock::now();
  for (int j = 0; j < jobs; ++j) {
    if (!server.CreateObject("/apis/ddp.dev/v1alpha1/namespaces/bench/ddpjobs",
                             Job("job-" + std::to_string(j), pods, fake_workers.port()), &err)) {
      std::fprintf(stderr, "create job %d: %s\n", j, err.c_str());
      return 1;
    }
  }
  auto created_at = Clock::now();
  auto deadline = t0 + std::chrono::minutes(10);
  while (pod_creates.load() < want_pods && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  bool done = pod_creates.load() >= want_pods;
  Clock::time_point done_at;
  {
    std::lock_guard<std::mutex> l(mu);
    done_at = done ? all_pods_at : Clock::now();
  }
  double op_cpu = ProcessCpuSeconds(pid) - op_cpu0, self_cpu = SelfCpuSeconds() - self_cpu0;
  const int64_t requests_at_done = server.RequestCount("");
  double wall = Secs(done_at - t0);
  // Let the queue drain (status writes, events) so requests per job are complete.
  std::string metrics_text;
  for (int i = 0; i < 300; ++i) {
    auto m = ddp::HttpGet("127.0.0.1", metrics_port, "/metrics");
    if (m.ok()) metrics_text = *m;
    if (m.ok() && m->find("ddp_operator_queue_depth 0") != std::string::npos &&
        Secs(Clock::now() - done_at) > 1.0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  size_t stored_pods = server.Objects("/api/v1/namespaces/bench/pods").size();
  long hwm = StatusKb(pid, "VmHWM"), rss = StatusKb(pid, "VmRSS");
  std::map<std::string, int64_t> counts;
  for (const char* v : {"", "create", "update", "get", "list", "watch", "delete", "patch"}) {
    counts[v] = server.RequestCount(v);
  }

  // A round restart of one big job, next to the jobs above: round 0's creation is the peer.
  double create_s = NAN, restart_s = NAN;
  bool restart_done = restart_pods <= 0;
  if (restart_pods > 0) {
    const std::string ns = "bench", name = "big";
    auto wait_until = [&](const std::function<bool()>& cond) {
      auto until = Clock::now() + std::chrono::minutes(5);
      while (!cond() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      return cond();
    };
    const int base = pod_creates.load();
    auto c0 = Clock::now();
    bool ok = server.CreateObject("/apis/ddp.dev/v1alpha1/namespaces/bench/ddpjobs",
                                  Job(name, restart_pods, fake_workers.port()), &err).has_value() &&
              wait_until([&] { return pod_creates.load() - base >= restart_pods; });
    create_s = Secs(Clock::now() - c0);
    for (int i = 0; ok && i < restart_pods; ++i) {
      ok = server.SetPodPhase(ns, name + "-worker-" + std::to_string(i), "Running");
    }
    ok = ok && wait_until([&] {
      auto job = server.GetObject("/apis/ddp.dev/v1alpha1/namespaces/bench/ddpjobs/big");
      return job && (*job)["status"].value("phase", "") == "Running";
    });
    const int base_c = pod_creates.load(), base_d = pod_deletes.load();
    auto r0 = Clock::now();
    ok = ok && server.TerminatePod(ns, name + "-worker-0", 75) &&
         wait_until([&] { return pod_creates.load() - base_c >= restart_pods; });
    restart_s = Secs(Clock::now() - r0);
    restart_done = ok;
    if (!ok) std::fprintf(stderr, "round restart of %d pods did not finish: %d deletes, %d creates\n",
                          restart_pods, pod_deletes.load() - base_d, pod_creates.load() - base_c);
  }

  std::printf("operator bench: %d DDPJobs x %d pods, --workers %d, --qps %s (0 = unlimited), "
              "API latency %d ms%s%s\n", jobs, pods, workers, qps.c_str(), latency_ms,
              tls ? ", HTTPS" : "", pin ? ", API server on CPU 0 and operator on CPU 1" : "");
  std::printf("  all %d pods exist after     %.2f s (jobs submitted in %.2f s; %zu pods stored)\n",
              want_pods, wall, Secs(created_at - t0), stored_pods);
  std::printf("  pods created per second     %.0f\n", want_pods / wall);
  std::printf("  reconcile latency p50/p99   %.2f ms / %.2f ms (from ddp_operator_reconcile_duration_seconds)\n",
              1000 * Quantile(metrics_text, "ddp_operator_reconcile_duration_seconds", 0.5),
              1000 * Quantile(metrics_text, "ddp_operator_reconcile_duration_seconds", 0.99));
  {
    // How many passes the latencies above are over: a pass that only re-reads the cache is
    // cheap, so their share moves p50.
    std::smatch m;
    double passes = std::regex_search(metrics_text, m, std::regex("\nddp_operator_reconcile_total ([0-9.e+]+)"))
                        ? std::stod(m[1]) : NAN;
    std::printf("  reconcile passes            %.0f (%.1f per job)\n", passes, passes / jobs);
  }
  std::printf("  API requests per job        %.2f (", counts[""] / double(jobs));
  for (const char* v : {"create", "update", "get", "list", "watch", "delete", "patch"}) {
    std::printf("%s %.2f ", v, counts[v] / double(jobs));
  }
  std::printf(")\n");
  std::printf("  operator peak RSS (VmHWM)   %.1f MiB (idle after sync %.1f MiB, at end %.1f MiB)\n",
              hwm / 1024.0, idle_rss / 1024.0, rss / 1024.0);
  std::printf("  CPU during the run          operator %.2f s (%.0f%% of one core), API server %.2f s (%.0f%%), wall %.2f s\n",
              op_cpu, 100 * op_cpu / wall, self_cpu, 100 * self_cpu / wall, wall);
  // Per request the operator sent (counted by the server until the last pod was created, the
  // same window as the CPU times).
  const double requests = static_cast<double>(requests_at_done);
  std::printf("  CPU per API request         operator %.3f ms, API server %.3f ms: ratio %.2f\n",
              1000 * op_cpu / requests, 1000 * self_cpu / requests, op_cpu / self_cpu);
  if (restart_pods > 0) {
    std::printf("  round restart, %d pods      %.2f s (%d deletes + %d creates) vs round 0's creation "
                "%.2f s: ratio %.2f\n", restart_pods, restart_s, restart_pods, restart_pods, create_s,
                restart_s / create_s);
  }
  bool progress_ok = true;
  if (done && progress_minutes > 0) {
    progress_ok = RunProgressPhase(server, pid, metrics_port, jobs, pods, progress_minutes,
                                   progress != 0, fake_workers);
  }
  std::fflush(stdout);
  kill(pid, SIGTERM);
  int st = 0;
  waitpid(pid, &st, 0);
  std::printf("  operator exit on SIGTERM    %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
  std::string rm = "rm -rf '" + dir + "'";
  if (std::system(rm.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir.c_str());
  return done && restart_done && progress_ok ? 0 : 1;
}
