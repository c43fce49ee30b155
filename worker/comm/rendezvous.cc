// Rendezvous on the group's store (see rendezvous.h for the protocol).
#include "worker/comm/rendezvous.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <cerrno>
#include <cstdlib>

#include "common/logging.h"
#include "worker/comm/deadline.h"
#include "worker/comm/local_store.h"
#include "worker/comm/store_client.h"
#include "worker/comm/work_util.h"

namespace ddp::worker {
namespace {

constexpr char kArrivedCountKey[] = "arrived_count";
constexpr auto kPollInterval = std::chrono::milliseconds(20);

// Parses a decimal integer in [lo, hi]; InvalidArgument naming `name` otherwise.
Status ParseInt(const char* name, const char* text, long lo, long hi, int* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    return Status::InvalidArgument(std::string(name) + "=\"" + text + "\" is not an integer");
  }
  if (v < lo || v > hi) {
    return Status::InvalidArgument(std::string(name) + "=" + text + " is out of range [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = static_cast<int>(v);
  return Status::OK();
}

std::string Key(const char* base, int rank) { return std::string(base) + std::to_string(rank); }

// Step 1 of JoinRendezvous. Workers are not counted by the store itself (waitWorkers=false):
// the caller counts, so that a timeout can name the ranks that are missing.
StatusOr<c10::intrusive_ptr<c10d::Store>> OpenStore(const RendezvousConfig& config,
                                                    const std::string& what) {
  if (config.world_size == 1 && !config.agent_store) {
    // Alone: an in-process store, so single-process runs never compete for MASTER_PORT.
    return c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<c10d::HashStore>());
  }
  const bool host = config.rank == 0 && !config.agent_store;
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(config.timeout);
  if (host) {
    // The store lives as long as the store object (the communicator holds it).
    auto hosted = HostStore(config.master_port, timeout);
    if (!hosted.ok()) return Status::Unavailable(what + ": cannot host the store: " +
                                                 hosted.status().message());
    return hosted->local;
  }
  try {
    return ConnectStore(config.master_addr, config.master_port, timeout);
  } catch (const std::exception& e) {
    return Status::DeadlineExceeded(what + ": could not reach the store at " +
                                    config.master_addr + ":" + std::to_string(config.master_port) +
                                    " within " + std::to_string(config.timeout.count()) +
                                    "s (rank " + std::to_string(config.rank) + "): " + BackendErrorText(e));
  }
}

}  // namespace

std::string RoundPrefix(int round) { return "ddp/round" + std::to_string(round); }

Status ValidateRendezvousConfig(const RendezvousConfig& c) {
  if (c.master_addr.empty()) return Status::InvalidArgument(std::string(kEnvMasterAddr) + " is empty");
  if (c.master_port < 1 || c.master_port > 65535) {
    return Status::InvalidArgument(std::string(kEnvMasterPort) + "=" + std::to_string(c.master_port) +
                                   " is not a port (1..65535)");
  }
  if (c.world_size < 1) return Status::InvalidArgument(std::string(kEnvWorldSize) + " must be >= 1");
  if (c.rank < 0 || c.rank >= c.world_size) {
    return Status::InvalidArgument(std::string(kEnvRank) + "=" + std::to_string(c.rank) +
                                   " is outside [0, " + kEnvWorldSize + "=" +
                                   std::to_string(c.world_size) + ")");
  }
  if (c.local_world_size < 1 || c.local_world_size > c.world_size) {
    return Status::InvalidArgument(std::string(kEnvLocalWorldSize) + "=" +
                                   std::to_string(c.local_world_size) + " is outside [1, " +
                                   kEnvWorldSize + "]");
  }
  if (c.local_rank < 0 || c.local_rank >= c.local_world_size) {
    return Status::InvalidArgument(std::string(kEnvLocalRank) + "=" + std::to_string(c.local_rank) +
                                   " is outside [0, " + kEnvLocalWorldSize + "=" +
                                   std::to_string(c.local_world_size) + ")");
  }
  if (c.round < 0) return Status::InvalidArgument(std::string(kEnvRound) + " must be >= 0");
  if (c.timeout.count() <= 0) {
    return Status::InvalidArgument(std::string(kEnvRendezvousTimeout) + " must be > 0 seconds");
  }
  return Status::OK();
}

StatusOr<RendezvousConfig> RendezvousConfigFromLookup(
    const std::function<const char*(const char*)>& getenv) {
  RendezvousConfig c;
  auto get = [&](const char* name) -> const char* {
    const char* v = getenv(name);
    return (v != nullptr && *v != '\0') ? v : nullptr;
  };
  constexpr long kMaxInt = 1 << 30;
  if (const char* v = get(kEnvMasterAddr)) c.master_addr = v;
  if (const char* v = get(kEnvMasterPort)) DDP_RETURN_IF_ERROR(ParseInt(kEnvMasterPort, v, 1, 65535, &c.master_port));
  if (const char* v = get(kEnvWorldSize)) DDP_RETURN_IF_ERROR(ParseInt(kEnvWorldSize, v, 1, kMaxInt, &c.world_size));
  if (const char* v = get(kEnvRank)) DDP_RETURN_IF_ERROR(ParseInt(kEnvRank, v, 0, kMaxInt, &c.rank));
  c.local_rank = c.rank;
  c.local_world_size = c.world_size;
  if (const char* v = get(kEnvLocalRank)) DDP_RETURN_IF_ERROR(ParseInt(kEnvLocalRank, v, 0, kMaxInt, &c.local_rank));
  if (const char* v = get(kEnvLocalWorldSize)) {
    DDP_RETURN_IF_ERROR(ParseInt(kEnvLocalWorldSize, v, 1, kMaxInt, &c.local_world_size));
  }
  if (const char* v = get(kEnvRound)) DDP_RETURN_IF_ERROR(ParseInt(kEnvRound, v, 0, kMaxInt, &c.round));
  int timeout_s = kDefaultRendezvousTimeoutSeconds;
  if (const char* v = get(kEnvRendezvousTimeout)) {
    DDP_RETURN_IF_ERROR(ParseInt(kEnvRendezvousTimeout, v, 1, kMaxInt, &timeout_s));
  }
  c.timeout = std::chrono::seconds(timeout_s);
  if (const char* v = get(kEnvUseAgentStore)) {
    std::string s = v;
    if (s == "True" || s == "true" || s == "1") {
      c.agent_store = true;
    } else if (s != "False" && s != "false" && s != "0") {
      return Status::InvalidArgument(std::string(kEnvUseAgentStore) + "=\"" + s +
                                     "\" is not True or False");
    }
  }
  DDP_RETURN_IF_ERROR(ValidateRendezvousConfig(c));
  return c;
}

StatusOr<RendezvousConfig> RendezvousConfigFromEnv() {
  return RendezvousConfigFromLookup([](const char* name) -> const char* { return std::getenv(name); });
}

StatusOr<Rendezvous> JoinRendezvous(const RendezvousConfig& config) {
  DDP_RETURN_IF_ERROR(ValidateRendezvousConfig(config));
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + config.timeout;
  const std::string where = config.master_addr + ":" + std::to_string(config.master_port);
  const std::string what = "rendezvous round " + std::to_string(config.round);
  const bool host = config.rank == 0 && !config.agent_store;

  // 1. Host or connect.
  auto base = OpenStore(config, what);
  if (!base.ok()) return base.status();
  auto store = c10::make_intrusive<c10d::PrefixStore>(RoundPrefix(config.round), *base);
  // 2. Announce this rank, then 3. wait for the count to reach world_size.
  try {
    store->set(Key("arrived/", config.rank), std::vector<uint8_t>{'1'});
    int64_t arrived = store->add(kArrivedCountKey, 1);
    auto all_arrived = [&] {
      return arrived >= config.world_size ||
             (arrived = store->add(kArrivedCountKey, 0)) >= config.world_size;
    };
    if (PollUntil(deadline, kPollInterval, all_arrived) != PollOutcome::kDone) {
      std::string missing;
      int n_missing = 0;
      for (int r = 0; r < config.world_size; ++r) {
        if (store->check({Key("arrived/", r)})) continue;
        missing += (n_missing++ == 0 ? "" : ", ") + std::to_string(r);
      }
      return Status::DeadlineExceeded(what + ": " + (n_missing == 1 ? "rank " : "ranks ") +
                                      missing + " of " + std::to_string(config.world_size) +
                                      " never arrived within " +
                                      std::to_string(config.timeout.count()) + "s (store " +
                                      where + ")");
    }
  } catch (const std::exception& e) {
    return Status::Unavailable(what + ": store " + where + " failed: " + BackendErrorText(e));
  }
  DDP_LOG(INFO) << what << ": rank " << config.rank << " of " << config.world_size
                << " joined (store " << where << (host ? ", hosted here" : "") << ")";
  return Rendezvous{store, config};
}

}  // namespace ddp::worker
