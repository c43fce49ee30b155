// Reading the group's environment (see settings.h).
#include "worker/group/settings.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <random>

#include "common/group_contract.h"
#include "worker/contract/env_names.h"

namespace ddp::worker::group {
namespace {

Status ParseInt(const char* name, const char* v, int64_t lo, int64_t hi, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi) {
    return Status::InvalidArgument(std::string(name) + "=\"" + v + "\": want an integer in [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = x;
  return Status::OK();
}

std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace

std::chrono::milliseconds TrainerHeartbeat(const std::function<const char*(const char*)>& getenv) {
  const char* v = getenv(ddp::group::kEnvLivenessTimeout);
  int64_t seconds = 0;
  if (v == nullptr || !ParseInt(ddp::group::kEnvLivenessTimeout, v, 1, 3600, &seconds).ok()) {
    return std::chrono::milliseconds(100);
  }
  return std::clamp(std::chrono::milliseconds(seconds * 1000) / 10, std::chrono::milliseconds(100),
                    std::chrono::milliseconds(1000));
}

StatusOr<GroupSettings> ReadGroupSettings(const std::function<const char*(const char*)>& getenv) {
  auto get = [&](const char* name) -> const char* {
    const char* v = getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  using namespace ddp::group;
  GroupSettings g;
  // A spare or the rendezvous has no RANK of its own: the rendezvous config is read as rank 0.
  auto rdzv = RendezvousConfigFromLookup([&](const char* n) -> const char* {
    return std::string(n) == kEnvRank || std::string(n) == kEnvLocalRank ? nullptr : get(n);
  });
  if (!rdzv.ok()) return rdzv.status();
  g.rendezvous = *rdzv;
  g.store_addr = get(kEnvStoreAddr) ? get(kEnvStoreAddr) : g.rendezvous.master_addr;
  int64_t v = 0;
  if (const char* s = get(kEnvNnodes)) {
    DDP_RETURN_IF_ERROR(ParseInt(kEnvNnodes, s, 1, 1 << 20, &v));
    g.nodes = static_cast<int>(v);
  }
  if (const char* s = get(kEnvNprocPerNode)) {
    DDP_RETURN_IF_ERROR(ParseInt(kEnvNprocPerNode, s, 1, 1 << 10, &v));
    g.nproc_per_node = static_cast<int>(v);
  }
  if (g.nodes * g.nproc_per_node != g.rendezvous.world_size && get(kEnvWorldSize)) {
    return Status::InvalidArgument(std::string(kEnvWorldSize) + "=" +
                                   std::to_string(g.rendezvous.world_size) + " but " + kEnvNnodes +
                                   " * " + kEnvNprocPerNode + " = " +
                                   std::to_string(g.nodes * g.nproc_per_node));
  }
  g.rendezvous.world_size = g.nodes * g.nproc_per_node;
  g.max_nodes = g.nodes;
  if (const char* s = get(kEnvMaxNodes)) {
    DDP_RETURN_IF_ERROR(ParseInt(kEnvMaxNodes, s, g.nodes, 1 << 20, &v));
    g.max_nodes = static_cast<int>(v);
  }
  if (const char* s = get(kEnvMinNodes)) {
    DDP_RETURN_IF_ERROR(ParseInt(kEnvMinNodes, s, 0, g.max_nodes, &v));
    g.min_nodes = static_cast<int>(v);
  }
  if (const char* s = get(kEnvGroupSizeFile)) g.group_size_file = s;
  if (const char* s = get(kEnvLivenessTimeout)) {
    DDP_RETURN_IF_ERROR(ParseInt(kEnvLivenessTimeout, s, 1, 3600, &v));
    g.liveness = std::chrono::seconds(v);
  } else {
    g.liveness = std::chrono::seconds(kDefaultLivenessSeconds);
  }
  g.tick = std::clamp(g.liveness / 20, std::chrono::milliseconds(50), std::chrono::milliseconds(250));
  g.beat = std::clamp(g.liveness / 10, std::chrono::milliseconds(100), std::chrono::milliseconds(1000));
  if (const char* s = get(kEnvMaxRecoveries)) {
    DDP_RETURN_IF_ERROR(ParseInt(kEnvMaxRecoveries, s, 0, 1 << 30, &g.max_recoveries));
  }
  if (const char* s = get("DDP_METRICS_PORT")) {
    DDP_RETURN_IF_ERROR(ParseInt("DDP_METRICS_PORT", s, 0, 65535, &v));
    g.metrics_port = static_cast<int>(v);
  }
  g.job = get("DDP_JOB_NAME") ? get("DDP_JOB_NAME") : "";
  g.pod_name = get(kEnvPodName) ? get(kEnvPodName) : HostName();
  if (const char* s = get(kEnvPodUid)) {
    g.pod_uid = s;
  } else {
    std::random_device rd;
    g.pod_uid = "local-" + std::to_string(rd()) + std::to_string(rd());
  }
  g.pod_ip = get(kEnvPodIp) ? get(kEnvPodIp) : HostName();
  g.role = get(kEnvPodRole) ? get(kEnvPodRole) : kRoleWorker;
  if (g.role != kRoleWorker && g.role != kRoleSpare && g.role != kRoleRendezvous) {
    return Status::InvalidArgument(std::string(kEnvPodRole) + "=\"" + g.role +
                                   "\": want worker, spare or rendezvous");
  }
  if (g.role == kRoleWorker) {
    v = 0;
    if (const char* s = get(kEnvNodeRank)) DDP_RETURN_IF_ERROR(ParseInt(kEnvNodeRank, s, 0, g.nodes - 1, &v));
    g.home_node = static_cast<int>(v);
  }
  if (const char* s = get(kEnvRestartPolicy); s && !failure::ParsePolicy(s, &g.rules.policy)) {
    return Status::InvalidArgument(std::string(kEnvRestartPolicy) + "=\"" + s +
                                   "\": want OnFailure, ExitCode or Never");
  }
  if (const char* s = get(kEnvRetryableExitCodes)) {
    auto codes = failure::ParseExitCodes(s, kEnvRetryableExitCodes);
    if (!codes.ok()) return codes.status();
    g.rules.retryable_exit_codes = *codes;
  }
  g.termination_log = get(kEnvTerminationLog) ? get(kEnvTerminationLog) : kDefaultTerminationLog;
  return g;
}

}  // namespace ddp::worker::group
