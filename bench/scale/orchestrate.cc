// The scale bench's run (see scale_bench.cc and bench/scale/README.md).
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/scale/events.h"
#include "bench/scale/sim.h"
#include "common/http_server.h"
#include "common/listen_port.h"
#include "worker/comm/rendezvous.h"
#include "worker/comm/store_client.h"
#include "worker/comm/watch.h"
#include "worker/group/keys.h"

namespace ddp::bench {
namespace {

// A port for a server started later: below the ephemeral range (common/listen_port.h).
int FreePort() {
  auto port = PickListenPort();
  if (!port.ok()) {
    std::fprintf(stderr, "%s\n", port.status().ToString().c_str());
    std::exit(2);
  }
  return *port;
}

// The store's requests served so far, summed over kinds, from the rendezvous pod's page.
double StoreRequests(int metrics_port) {
  auto page = HttpGet("127.0.0.1", metrics_port, "/metrics", 5000, 64 << 20);
  if (!page.ok()) return NAN;
  double total = 0;
  std::istringstream in(*page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("ddp_group_store_requests_total{", 0) != 0) continue;
    if (line.find("from=\"network\"") == std::string::npos) continue;  // the pods' requests
    total += std::atof(line.substr(line.rfind(' ') + 1).c_str());
  }
  return total;
}

std::string Fmt(double v, int digits = 3) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

struct Run {
  int nodes, per_pod, liveness;
  std::string worker, self, dir;
  int port = 0, metrics = 0;
  EventTable events;
  std::vector<std::pair<std::string, std::string>> rows;  // metric, value
  pid_t rendezvous = -1;

  std::set<int> Ranks(int first_node, int count) const {
    std::set<int> r;
    for (int n = first_node; n < first_node + count; ++n) {
      for (int k = 0; k < per_pod; ++k) r.insert(n * per_pod + k);
    }
    return r;
  }
  Child Pods(int first, int count, const std::string& uid) {
    return Spawn({self, "pods", "--port", std::to_string(port), "--nodes", std::to_string(nodes),
                  "--per-pod", std::to_string(per_pod), "--liveness", std::to_string(liveness),
                  "--first", std::to_string(first), "--count", std::to_string(count), "--uid", uid},
                 {}, dir + "/pods.log", [this](const std::string& l) { events.Add(l); });
  }
  void Row(const std::string& metric, const std::string& value) {
    rows.push_back({metric, value});
    std::cout << "  " << metric << ": " << value << std::endl;
  }
};

// Loses `victim` (its pods, nodes [first, first+count)) by `sig`, then brings a replacement up:
// when the authority moved the generation, when each survivor knew, when the group re-formed.
void Lose(Run& r, const std::string& what, Child* victim, int first, int count, int sig,
          int64_t* generation) {
  auto store = worker::ConnectStore("127.0.0.1", r.port, std::chrono::seconds(10),
                                    worker::RoundPrefix(0));
  const int64_t g = *generation;
  const int64_t t0 = NowNs();
  ::kill(-victim->pid, sig);
  int64_t decided = -1;
  while (decided < 0 && NowNs() - t0 < int64_t{120} * 1000000000) {
    auto w = worker::WatchKeys(*store, {worker::AtLeast(group::kGenKey, g + 1)},
                               std::chrono::milliseconds(1000));
    if (w.held) decided = NowNs();
  }
  std::set<int> survivors = r.Ranks(0, r.nodes);
  for (int rank : r.Ranks(first, count)) survivors.erase(rank);
  EventTable::WaitFor(std::chrono::seconds(120),
                      [&] { return r.events.Aborted(survivors, g).size() == survivors.size(); });
  // When each survivor knew, from the loss; and past the decision (the authority's move of the
  // generation, as a client watching it saw it: about when the survivors' watches wake too).
  std::vector<double> known, after;
  for (int64_t t : r.events.Aborted(survivors, g)) {
    known.push_back((t - t0) / 1e9);
    after.push_back(std::max<int64_t>(0, t - decided) / 1e9);
  }
  const Quantiles q = Quantile(known), qa = Quantile(after);
  r.Row(what + " decided_s", Fmt((decided - t0) / 1e9));
  r.Row(what + " known_s p50/p99/max", Fmt(q.p50) + "/" + Fmt(q.p99) + "/" + Fmt(q.max));
  r.Row(what + " known_after_decision_s p99/max", Fmt(qa.p99) + "/" + Fmt(qa.max));
  r.Row(what + " survivors_known", std::to_string(known.size()) + " of " +
                                       std::to_string(survivors.size()));
  // The replacement (a pod starts in milliseconds here), then the group whole again.
  if (sig == SIGSTOP) ::kill(-victim->pid, SIGKILL);
  *victim = r.Pods(first, count, "r" + std::to_string(g));
  int64_t next = -1;
  const std::set<int> all = r.Ranks(0, r.nodes);
  EventTable::WaitFor(std::chrono::seconds(300),
                      [&] { return r.events.AllFormed(all, g + 1, &next) > 0; });
  int64_t at = r.events.AllFormed(all, g + 1, &next);
  r.Row(what + " reformed_s", at > 0 ? Fmt((at - t0) / 1e9) : "never");
  if (at > 0) *generation = next;
}

}  // namespace

int RunBench(int argc, char** argv) {
  static const char kUsage[] =
      "usage: scale_bench [--worker PATH] [--pods N] [--per-pod P] [--liveness SECONDS]\n"
      "                   [--procs K] [--dir DIR] [--csv FILE]\n"
      "Runs the real rendezvous pod and N simulated pods of P trainers each (README.md); prints\n"
      "the formation, the store's load and what a kill, a freeze and 1% lost cost; appends CSV.\n";
  static const std::set<std::string> kFlags = {"--worker", "--pods",  "--per-pod", "--liveness",
                                               "--procs",  "--dir",   "--csv"};
  static const std::set<std::string> kNumbers = {"--pods", "--per-pod", "--liveness", "--procs"};
  std::map<std::string, std::string> f;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::cout << kUsage;
      return 0;
    }
    if (!kFlags.count(flag) || i + 1 >= argc) {
      std::cerr << "scale_bench: " << (kFlags.count(flag) ? "missing value for " : "unknown flag ")
                << flag << "\n" << kUsage;
      return 2;
    }
    const std::string value = argv[i + 1];
    if (kNumbers.count(flag) && (value.empty() || value.find_first_not_of("0123456789") != std::string::npos ||
                                 value.size() > 6 || std::stoi(value) < 1)) {
      std::cerr << "scale_bench: " << flag << " takes a whole number >= 1, not \"" << value << "\"\n";
      return 2;
    }
    f[flag] = value;
  }
  auto get = [&](const std::string& k, const std::string& d) { return f.count(k) ? f[k] : d; };
  Run r;
  r.nodes = std::atoi(get("--pods", "64").c_str());
  r.per_pod = std::atoi(get("--per-pod", "1").c_str());
  r.liveness = std::atoi(get("--liveness", "5").c_str());
  r.worker = get("--worker", "build/worker/ddp-worker");
  r.dir = get("--dir", std::filesystem::temp_directory_path().string());
  if (std::error_code ec; !std::filesystem::create_directories(r.dir, ec) && ec) {
    std::cerr << "scale_bench: --dir " << r.dir << ": " << ec.message() << std::endl;
    return 2;
  }
  r.self = argv[0];
  const int procs = std::max(1, std::atoi(get("--procs", "4").c_str()));
  const int lost = std::max(1, static_cast<int>(std::ceil(r.nodes / 100.0)));
  if (r.nodes < lost + 3) {
    std::cerr << "scale_bench: --pods must be at least " << lost + 3 << std::endl;
    return 2;
  }
  r.port = FreePort();
  r.metrics = FreePort();
  const std::string world = std::to_string(r.nodes * r.per_pod);
  std::cout << "scale_bench: " << r.nodes << " pods x " << r.per_pod << " trainer(s), liveness "
            << r.liveness << " s, " << procs << " pod processes" << std::endl;
  const int64_t t0 = NowNs();
  r.rendezvous = Spawn({r.worker, "rendezvous"},
                       {"NNODES=" + std::to_string(r.nodes), "NPROC_PER_NODE=" + std::to_string(r.per_pod),
                        "WORLD_SIZE=" + world, "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(r.port),
                        "DDP_STORE_ADDR=127.0.0.1", "DDP_POD_ROLE=rendezvous", "DDP_POD_NAME=scale-rendezvous",
                        "DDP_LIVENESS_TIMEOUT=" + std::to_string(r.liveness), "DDP_RENDEZVOUS_TIMEOUT=600",
                        "DDP_MAX_RECOVERIES=1000", "DDP_JOB_NAME=scale", "DDP_ROUND=0",
                        "DDP_METRICS_PORT=" + std::to_string(r.metrics)},
                       r.dir + "/rendezvous.log", [](const std::string&) {})
                     .pid;
  // The pods: nodes [0, n - lost - 2) spread over `procs` processes; the victims alone: one pod
  // to kill, one to freeze, 1% lost at once.
  const int rest = r.nodes - lost - 2;
  std::vector<Child> bulk;
  for (int p = 0; p < procs; ++p) {
    const int a = rest * p / procs, b = rest * (p + 1) / procs;
    if (b > a) bulk.push_back(r.Pods(a, b - a, "u"));
  }
  Child killed = r.Pods(rest, lost, "u"), frozen = r.Pods(rest + lost, 1, "u"),
        one = r.Pods(rest + lost + 1, 1, "u");
  int64_t g = -1;
  const std::set<int> all = r.Ranks(0, r.nodes);
  if (!EventTable::WaitFor(std::chrono::seconds(600), [&] { return r.events.AllFormed(all, 0, &g) > 0; })) {
    std::cerr << "scale_bench: the group did not form within 600 s (see " << r.dir << ")" << std::endl;
    return 1;
  }
  r.Row("formed_s", Fmt((r.events.AllFormed(all, 0, &g) - t0) / 1e9));
  // Steady state: 5 s to settle, then 10 s measured.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const double req0 = StoreRequests(r.metrics), cpu0 = CpuSeconds(r.rendezvous);
  const int64_t s0 = NowNs();
  std::this_thread::sleep_for(std::chrono::seconds(10));
  const double req1 = StoreRequests(r.metrics), cpu1 = CpuSeconds(r.rendezvous);
  const double secs = (NowNs() - s0) / 1e9;
  r.Row("store_requests_per_s", Fmt((req1 - req0) / secs, 0));
  r.Row("store_requests_per_pod_s", Fmt((req1 - req0) / secs / r.nodes, 1));
  r.Row("rendezvous_cpu_cores", Fmt((cpu1 - cpu0) / secs));
  r.Row("rendezvous_rss_mib", Fmt(RssKib(r.rendezvous) / 1024.0, 1));
  Lose(r, "kill_one", &one, rest + lost + 1, 1, SIGKILL, &g);
  Lose(r, "freeze_one", &frozen, rest + lost, 1, SIGSTOP, &g);
  Lose(r, "kill_1pct", &killed, rest, lost, SIGKILL, &g);
  if (const std::string csv = get("--csv", ""); !csv.empty()) {
    std::ofstream out(csv, std::ios::app);
    for (const auto& [metric, value] : r.rows) {
      out << r.nodes << "," << r.per_pod << "," << metric << "," << value << "\n";
    }
  }
  for (const Child& c : bulk) ::kill(-c.pid, SIGKILL);
  for (const Child* c : {&killed, &frozen, &one}) ::kill(-c->pid, SIGKILL);
  ::kill(-r.rendezvous, SIGKILL);
  return 0;
}

}  // namespace ddp::bench
