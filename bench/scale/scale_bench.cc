// The group at scale (bench/scale/README.md): the real rendezvous pod (`ddp-worker rendezvous`:
// the store, the presence listener, the authority) and N simulated pods (sim.h: the real pod
// client and memberships, stand-in training) in a few processes on this machine. Measures the
// first formation, the store's steady load, and what a killed pod, a frozen pod and 1% of the
// pods lost at once cost: when the authority decided (the generation moved) and when every
// survivor knew (its watcher aborted its communicator). Prints a table and appends CSV rows.
//
//   scale_bench --worker build/worker/ddp-worker --pods 256 --per-pod 1 --csv out.csv
//   scale_bench pods ...   (internal: one process of simulated pods)
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/scale/sim.h"

namespace ddp::bench {

int RunBench(int argc, char** argv);  // orchestrate.cc

namespace {

using Flags = std::map<std::string, std::string>;

Flags ParseFlags(int argc, char** argv, int from) {
  Flags f;
  for (int i = from; i + 1 < argc; i += 2) f[argv[i]] = argv[i + 1];
  return f;
}
int Int(const Flags& f, const std::string& k, int def) {
  auto it = f.find(k);
  return it == f.end() ? def : std::atoi(it->second.c_str());
}
std::string Str(const Flags& f, const std::string& k, const std::string& def) {
  auto it = f.find(k);
  return it == f.end() ? def : it->second;
}

// `scale_bench pods`: simulated pods [first, first + count), events on stdout, until killed.
int PodsMain(const Flags& f) {
  SimOptions o;
  o.store_port = Int(f, "--port", 0);
  o.nodes = Int(f, "--nodes", 1);
  o.per_pod = Int(f, "--per-pod", 1);
  o.liveness_seconds = Int(f, "--liveness", 5);
  o.step = std::chrono::milliseconds(Int(f, "--step-ms", 100));
  const int first = Int(f, "--first", 0), count = Int(f, "--count", 1);
  const std::string uid = Str(f, "--uid", "u0");
  EventSink sink([](const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
  });
  std::vector<std::unique_ptr<SimPod>> pods;
  for (int n = first; n < first + count; ++n) {
    pods.push_back(std::make_unique<SimPod>(o, n, uid + "-" + std::to_string(n), &sink));
  }
  while (true) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  if (argc > 1 && std::string(argv[1]) == "pods") return ddp::bench::PodsMain(ddp::bench::ParseFlags(argc, argv, 2));
  return ddp::bench::RunBench(argc, argv);
}
