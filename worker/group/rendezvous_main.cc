// The rendezvous pod's process (see rendezvous_main.h).
#include "worker/group/rendezvous_main.h"

#include <signal.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <random>
#include <sstream>

#include "common/group_contract.h"
#include "common/http_server.h"
#include "common/logging.h"
#include "worker/comm/rendezvous.h"
#include "worker/comm/work_util.h"
#include "worker/group/budget.h"
#include "worker/group/keys.h"
#include "worker/group/settings.h"
#include "worker/launch/launch_plan.h"
#include "worker/train/exit_codes.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;
std::atomic<int> g_signal{0};
extern "C" void OnRendezvousSignal(int sig) { g_signal.store(sig); }

std::string Quote(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c == '\n' ? ' ' : c);
  }
  return out;
}

// Rank 0's page, fetched from the pod that holds node rank 0 ("" when it cannot be read).
std::string Rank0Page(const GroupReport& r) {
  auto member = r.members.find(0);
  if (member == r.members.end()) return "";
  auto where = r.metrics_of.find(member->second);
  if (where == r.metrics_of.end() || where->second.empty()) return "";
  const size_t colon = where->second.rfind(':');
  if (colon == std::string::npos) return "";
  // Capped like the operator's own reads (its default --scrape-max-bytes): a larger page would
  // be refused there anyway, and must not grow this pod.
  auto page = HttpGet(where->second.substr(0, colon), std::atoi(where->second.c_str() + colon + 1),
                      "/metrics", 1000, 4 << 20);
  return page.ok() ? *page : "";
}

}  // namespace

std::string RenderGroupReport(const GroupReport& r, const std::string& job, int round) {
  using namespace ddp::group;
  std::ostringstream o;
  const std::string common = "job=\"" + Quote(job) + "\",round=\"" + std::to_string(round) + "\"";
  auto gauge = [&](const char* name, const char* help, double v) {
    o << "# HELP " << name << " " << help << "\n# TYPE " << name << " gauge\n"
      << name << "{" << common << "} " << v << "\n";
  };
  gauge(kGroupGeneration, "The group's generation this round (+1 at every re-formation).",
        static_cast<double>(r.generation));
  gauge(kGroupRecoveries, "Failures healed in place this round, charged to maxRestarts.",
        static_cast<double>(r.recoveries));
  gauge(kGroupBudgetLeft, "Failures the group may still heal in place this round.",
        static_cast<double>(r.budget_left));
  gauge(kGroupAbandoned, "1 once the group gave up re-forming in place this round.",
        r.abandoned ? 1 : 0);
  o << "# HELP " << kGroupMember << " 1 per pod holding a node rank.\n# TYPE " << kGroupMember
    << " gauge\n";
  for (const auto& [node, pod] : r.members) {
    o << kGroupMember << "{" << common << "," << kPodLabel << "=\"" << Quote(pod) << "\","
      << kNodeRankLabel << "=\"" << node << "\"} 1\n";
  }
  o << "# HELP " << kGroupSpare << " 1 per idle spare pod ready to take a rank.\n# TYPE "
    << kGroupSpare << " gauge\n";
  for (const auto& pod : r.spares) {
    o << kGroupSpare << "{" << common << "," << kPodLabel << "=\"" << Quote(pod) << "\"} 1\n";
  }
  o << "# HELP " << kGroupFenced << " 1 per pod the group fenced while it may still run.\n# TYPE "
    << kGroupFenced << " gauge\n";
  for (const auto& [pod, uid] : r.fenced) {
    o << kGroupFenced << "{" << common << "," << kPodLabel << "=\"" << Quote(pod) << "\","
      << kUidLabel << "=\"" << Quote(uid) << "\"} 1\n";
  }
  o << "# HELP " << kGroupEnded
    << " 1 per pod whose process ended, with the node rank it held (-1: an idle spare).\n# TYPE "
    << kGroupEnded << " gauge\n";
  for (const auto& e : r.ended) {
    o << kGroupEnded << "{" << common << "," << kPodLabel << "=\"" << Quote(e.pod) << "\","
      << kUidLabel << "=\"" << Quote(e.uid) << "\"," << kNodeRankLabel << "=\"" << e.node_rank
      << "\"} 1\n";
  }
  return o.str();
}

int RendezvousMain() {
  auto settings = ReadGroupSettings([](const char* n) { return std::getenv(n); });
  if (!settings.ok()) {
    std::cerr << "ddp-worker rendezvous: " << settings.status().ToString() << std::endl;
    return kExitInvalidConfig;
  }
  const GroupSettings& gs = *settings;
  struct sigaction sa = {};
  sa.sa_handler = OnRendezvousSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // 1. The store, hosted here for the whole round.
  c10::intrusive_ptr<c10d::Store> store;
  try {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<std::uint16_t>(gs.rendezvous.master_port);
    opts.isServer = true;
    opts.waitWorkers = false;
    opts.timeout = std::chrono::seconds(30);
    auto tcp = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
    store = c10::make_intrusive<c10d::PrefixStore>(RoundPrefix(gs.rendezvous.round), tcp);
  } catch (const std::exception& e) {
    std::cerr << "ddp-worker rendezvous: cannot host the store on port "
              << gs.rendezvous.master_port << ": " << BackendErrorText(e) << std::endl;
    return kExitRetryable;
  }
  auto presence = PresenceServer::Start(0, PresenceCapacity(gs.nodes));
  if (!presence.ok()) {
    std::cerr << "ddp-worker rendezvous: " << presence.status().ToString() << std::endl;
    return kExitRetryable;
  }
  // The budget before the presence key: pods register (and may lower it) only after that key.
  if (Status s = InitBudget(*store, gs.max_recoveries); !s.ok()) {
    std::cerr << "ddp-worker rendezvous: " << s.ToString() << std::endl;
    return kExitRetryable;
  }
  try {
    std::random_device rd;
    store->set(kEpochKey, Bytes(std::to_string(rd()) + std::to_string(rd())));
    store->set(kPresenceKey, Bytes(std::to_string((*presence)->port())));
  } catch (const std::exception& e) {
    std::cerr << "ddp-worker rendezvous: store: " << BackendErrorText(e) << std::endl;
    return kExitRetryable;
  }
  // 2. The authority, on its own connection.
  AuthoritySettings as;
  as.nodes = gs.nodes;
  as.liveness_seconds = gs.liveness.count() / 1000.0;
  as.rendezvous_seconds = static_cast<double>(gs.rendezvous.timeout.count());
  AuthorityLoop authority(store, presence->get(), as, gs.rendezvous.world_size, gs.tick);
  DDP_LOG(INFO) << "rendezvous: round " << gs.rendezvous.round << ", " << gs.nodes << " node(s) x "
                << gs.nproc_per_node << ", store on port " << gs.rendezvous.master_port
                << ", presence on port " << (*presence)->port() << ", liveness "
                << as.liveness_seconds << "s, budget " << gs.max_recoveries;
  // 3. /metrics: the group's series, then rank 0's page.
  std::unique_ptr<HttpServer> server;
  if (gs.metrics_port >= 0) {
    server = std::make_unique<HttpServer>();
    const std::string job = gs.job;
    const int round = gs.rendezvous.round;
    server->Handle("/metrics", [&authority, job, round] {
      const GroupReport r = authority.Report();
      return HttpResponse{200, kPrometheusContentType,
                          RenderGroupReport(r, job, round) + Rank0Page(r)};
    }, HttpServer::Dispatch::kMayBlock);  // it reads rank 0's page: /healthz must not wait
    server->Handle("/healthz", [] { return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}; });
    if (Status s = server->Start("0.0.0.0:" + std::to_string(gs.metrics_port)); !s.ok()) {
      std::cerr << "ddp-worker rendezvous: metrics endpoint: " << s.ToString() << std::endl;
      return kExitRetryable;
    }
  }
  // 4. Until the job is done or a signal says so.
  Clock::time_point signalled{}, finished{};
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const GroupReport r = authority.Report();
    const auto now = Clock::now();
    if (g_signal.load() != 0 && signalled == Clock::time_point{}) {
      signalled = now;
      DDP_LOG(INFO) << "rendezvous: signal " << g_signal.load() << (r.any_leaving || r.stopping
                                                                         ? ": waiting for the members to stop"
                                                                         : "");
    }
    if ((r.finished || r.abandoned) && finished == Clock::time_point{}) finished = now;
    const bool members_gone = r.open_connections == 0;
    if (finished != Clock::time_point{} &&
        (members_gone || now - finished > std::chrono::seconds(30))) {
      return kExitOk;
    }
    if (signalled != Clock::time_point{}) {
      // A member stopping with the job needs the store for its checkpoint barrier; a rendezvous
      // pod evicted alone leaves at once (the operator recreates it; training goes on).
      const auto waited = now - signalled;
      const bool job_stopping = r.stopping || r.any_leaving;
      if (members_gone || waited > std::chrono::seconds(25) ||
          (!job_stopping && waited > std::chrono::milliseconds(static_cast<int64_t>(
                                         (as.stop_window_seconds + 1) * 1000)))) {
        return kExitOk;
      }
    }
  }
}

}  // namespace ddp::worker::group
