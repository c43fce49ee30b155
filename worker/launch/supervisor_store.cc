// The supervisor's store (see supervisor_store.h).
#include "worker/launch/supervisor_store.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "worker/comm/work_util.h"

namespace ddp::worker {
namespace {

constexpr char kRecoveriesKey[] = "recoveries";

StatusOr<c10::intrusive_ptr<c10d::Store>> Connect(const RendezvousConfig& config, bool host,
                                                  std::chrono::milliseconds timeout) {
  try {
    c10d::TCPStoreOptions opts;
    opts.port = static_cast<std::uint16_t>(config.master_port);
    opts.isServer = host;
    opts.waitWorkers = false;
    opts.timeout = timeout;
    auto tcp = c10::make_intrusive<c10d::TCPStore>(config.master_addr, opts);
    return c10::intrusive_ptr<c10d::Store>(
        c10::make_intrusive<c10d::PrefixStore>(RoundPrefix(config.round), tcp));
  } catch (const std::exception& e) {
    const std::string where = config.master_addr + ":" + std::to_string(config.master_port);
    if (host) {
      return Status::Unavailable("supervisor: cannot host the store on " + where + ": " +
                                 BackendErrorText(e));
    }
    return Status::Gone("supervisor: store " + where + " unreachable: " + BackendErrorText(e));
  }
}

}  // namespace

StatusOr<std::unique_ptr<SupervisorStore>> SupervisorStore::Open(const RendezvousConfig& config,
                                                                 bool host) {
  std::unique_ptr<SupervisorStore> s(new SupervisorStore(config));
  if (host) {
    auto store = Connect(config, true, std::chrono::duration_cast<std::chrono::milliseconds>(config.timeout));
    if (!store.ok()) return store.status();
    s->store_ = std::move(*store);
  }
  return s;
}

std::optional<int64_t> SupervisorStore::Recoveries() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!store_) return std::nullopt;
  try {
    return store_->add(kRecoveriesKey, 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

StatusOr<int64_t> SupervisorStore::CountRecovery(std::chrono::milliseconds connect_timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!store_) {
    auto store = Connect(config_, false, connect_timeout);
    if (!store.ok()) return store.status();
    store_ = std::move(*store);
  }
  try {
    return store_->add(kRecoveriesKey, 1);
  } catch (const std::exception& e) {
    store_.reset();
    return Status::Gone("supervisor: store lost: " + BackendErrorText(e));
  }
}

}  // namespace ddp::worker
