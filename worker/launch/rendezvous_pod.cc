// The rendezvous pod's process (see rendezvous_pod.h).
#include "worker/launch/rendezvous_pod.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "common/group_contract.h"
#include "common/http_server.h"
#include "common/logging.h"
#include "worker/comm/local_store.h"
#include "worker/comm/rendezvous.h"
#include "worker/comm/work_util.h"
#include "worker/contract/exit_codes.h"
#include "worker/group/budget.h"
#include "worker/group/desired_size.h"
#include "worker/group/keys.h"
#include "worker/group/presence.h"
#include "worker/group/report_page.h"
#include "worker/group/settings.h"
#include "worker/launch/rank0_page.h"
#include "worker/launch/rendezvous_limits.h"
#include "worker/launch/store_page.h"

namespace ddp::worker {

using namespace group;  // the rendezvous pod runs the group protocol

namespace {

using Clock = std::chrono::steady_clock;
std::atomic<int> g_signal{0};
extern "C" void OnRendezvousSignal(int sig) { g_signal.store(sig); }

// The stall records (ddp_worker_last_stall_*) on the page of the pod holding node rank 1,
// renamed ddp_group_peer_last_stall_*: a survivor's own figure when the pod of rank 0 is the
// one that was lost or restarted (docs/metrics.md "Incidents and goodput"). "" when none.
std::string PeerStalls(const std::string& page) {
  static const std::string kFrom = "ddp_worker_last_stall", kTo = "ddp_group_peer_last_stall";
  std::string out;
  for (size_t at = 0; at < page.size();) {
    size_t nl = page.find('\n', at);
    if (nl == std::string::npos) nl = page.size();
    if (page.compare(at, kFrom.size(), kFrom) == 0) {
      out += kTo + page.substr(at + kFrom.size(), nl - at - kFrom.size()) + "\n";
    }
    at = nl + 1;
  }
  return out;
}

// Where the pod holding node rank `node` serves its /metrics ("" when none holds it).
std::string MetricsOf(const AuthorityLoop& authority, int node) {
  const GroupReport r = authority.Report();
  auto member = r.members.find(node);
  if (member == r.members.end()) return "";
  auto where = r.metrics_of.find(member->second);
  return where == r.metrics_of.end() ? "" : where->second;
}

}  // namespace

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

  // 1. The store, hosted here for the whole round; the authority uses it in process. Its
  // connection bound and this process's open files follow the group's size (main() raised the
  // soft limit to the hard one; a hard limit below the need is the pod's to fix).
  store::ServerLimits limits;
  limits.max_connections = StoreConnectionBound(gs.max_nodes, gs.nproc_per_node);
  const uint64_t need = RendezvousDescriptors(gs.max_nodes, gs.nproc_per_node);
  if (rlimit lim{}; ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
                    lim.rlim_cur < need) {
    DDP_LOG(WARNING) << "rendezvous: " << gs.max_nodes << " node(s) x " << gs.nproc_per_node
                     << " need about " << need << " open files, the limit is " << lim.rlim_cur
                     << ": pods past it cannot connect. HINT: raise the container's nofile "
                        "limit (its runtime's default, or the node's)";
  }
  auto hosted = HostStore(gs.rendezvous.master_port, std::chrono::seconds(30), limits);
  if (!hosted.ok()) {
    std::cerr << "ddp-worker rendezvous: " << hosted.status().message() << std::endl;
    return kExitRetryable;
  }
  c10::intrusive_ptr<c10d::Store> store = LocalStore(
      hosted->state, std::chrono::seconds(30), hosted->server, RoundPrefix(gs.rendezvous.round));
  auto presence = PresenceServer::Start(0, PresenceCapacity(gs.max_nodes));
  if (!presence.ok()) {
    std::cerr << "ddp-worker rendezvous: " << presence.status().ToString() << std::endl;
    return kExitRetryable;
  }
  // The budget before the presence key: pods register (and may lower it) only after that key.
  if (Status s = InitBudget(*store, gs.max_recoveries); !s.ok()) {
    std::cerr << "ddp-worker rendezvous: " << s.ToString() << std::endl;
    return kExitRetryable;
  }
  // The size the group starts at: the one asked for (a rendezvous pod that replaced a lost one
  // starts where the group runs), else NNODES. Written before the presence key: pods register
  // only after that, and their trainers read it before they arrive anywhere.
  auto desired = std::make_shared<DesiredSizeFile>(gs.group_size_file, gs.max_nodes);
  int initial_nodes = gs.nodes;
  if (!gs.group_size_file.empty()) {
    if (const int n = desired->Read(); n > 0) initial_nodes = n;
  }
  try {
    store->set(kWorldKey, Bytes(std::to_string(initial_nodes * gs.nproc_per_node)));
    store->set(kEpochKey, Bytes(hosted->server->id()));
    store->set(kPresenceKey, Bytes(std::to_string((*presence)->port())));
  } catch (const std::exception& e) {
    std::cerr << "ddp-worker rendezvous: store: " << BackendErrorText(e) << std::endl;
    return kExitRetryable;
  }
  // 2. The authority, on its own connection.
  AuthoritySettings as;
  as.nodes = gs.max_nodes;
  as.min_nodes = gs.min_nodes;
  as.liveness_seconds = gs.liveness.count() / 1000.0;
  as.rendezvous_seconds = static_cast<double>(gs.rendezvous.timeout.count());
  AuthorityLoop::DesiredNodes desired_nodes;
  if (!gs.group_size_file.empty()) desired_nodes = [desired] { return desired->Read(); };
  AuthorityLoop authority(store, presence->get(), as, initial_nodes * gs.nproc_per_node, gs.tick,
                          initial_nodes, desired_nodes);
  DDP_LOG(INFO) << "rendezvous: round " << gs.rendezvous.round << ", " << gs.nodes << " node(s) x "
                << gs.nproc_per_node << ", store on port " << gs.rendezvous.master_port
                << ", presence on port " << (*presence)->port() << ", liveness "
                << as.liveness_seconds << "s, budget " << gs.max_recoveries << ", at most "
                << limits.max_connections << " store connections";
  // 3. /metrics: the group's series, the store's, rank 0's page and node rank 1's stall records
  // (both pages fetched in the background: this page never waits on another pod).
  MemberPageCache rank0([&authority] { return MetricsOf(authority, 0); });
  MemberPageCache rank1([&authority] { return MetricsOf(authority, 1); });
  std::unique_ptr<HttpServer> server;
  if (gs.metrics_port >= 0) {
    server = std::make_unique<HttpServer>();
    const std::string job = gs.job;
    const int round = gs.rendezvous.round;
    store::StoreServer* hosted_server = hosted->server.get();
    server->Handle("/metrics", [&authority, &rank0, &rank1, hosted_server, job, round] {
      return HttpResponse{200, kPrometheusContentType,
                          RenderGroupReport(authority.Report(), job, round) +
                              RenderStorePage(*hosted_server, job, round) + rank0.page() +
                              PeerStalls(rank1.page())};
    });
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
    const AuthorityLoop::Flags r = authority.Status();
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

}  // namespace ddp::worker
