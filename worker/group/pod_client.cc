// The supervisor's view of the group (see pod_client.h).
#include "worker/group/pod_client.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "common/logging.h"
#include "worker/comm/store_client.h"
#include "worker/comm/work_util.h"
#include "worker/group/keys.h"
#include "worker/group/rejoin.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;

std::string GetOr(c10d::Store& s, const std::string& key) {
  return s.check({key}) ? Text(s.get(key)) : "";
}

}  // namespace

void BoundFirstRead(c10d::Store& store, std::chrono::milliseconds timeout) {
  // A new client's reads wait without a limit until a wait() sets one: against a frozen store
  // (it accepts connections and answers nothing) the first check would block for good.
  store.wait({kEpochKey}, timeout);
}

StatusOr<c10::intrusive_ptr<c10d::Store>> OpenGroupStore(const GroupSettings& settings,
                                                         std::chrono::milliseconds timeout) {
  return OpenBoundedStore(settings.store_addr, settings.rendezvous.master_port,
                          settings.rendezvous.round, timeout);
}

StatusOr<c10::intrusive_ptr<c10d::Store>> OpenBoundedStore(const std::string& host, int port,
                                                           int round,
                                                           std::chrono::milliseconds timeout) {
  const std::string where = host + ":" + std::to_string(port);
  try {
    // The connection and its first read within kFirstReadBound, the later calls within
    // `timeout`: a route to a lost rendezvous pod on a dead node drops the SYN (a connect that
    // waits out its whole timeout); the next try reaches the replaced one.
    const auto first = std::min(timeout, kFirstReadBound);
    auto tcp = ConnectStore(host, port, first);
    tcp->setTimeout(timeout);
    c10::intrusive_ptr<c10d::Store> store =
        c10::make_intrusive<c10d::PrefixStore>(RoundPrefix(round), tcp);
    BoundFirstRead(*store, first);
    return store;
  } catch (const std::exception& e) {
    return Status::Unavailable("the group's store " + where + " is unreachable: " +
                               BackendErrorText(e));
  }
}

PodClient::PodClient(GroupSettings settings, std::string metrics_addr)
    : settings_(std::move(settings)),
      metrics_addr_(std::move(metrics_addr)),
      identity_(PodIdentity(settings_.pod_name, settings_.pod_uid)) {}

StatusOr<std::unique_ptr<PodClient>> PodClient::Connect(const GroupSettings& settings,
                                                        const std::string& metrics_addr,
                                                        Clock::time_point deadline) {
  std::unique_ptr<PodClient> c(new PodClient(settings, metrics_addr));
  DDP_RETURN_IF_ERROR(c->Open(settings.home_node, deadline));
  return c;
}

Status PodClient::Reconnect(int holding, Clock::time_point deadline) {
  // The presence connection still open: the same rendezvous pod is up and a store call failed
  // (a timeout on a busy store). A new store connection is enough: closing the presence one
  // would make the authority declare this healthy pod lost.
  if (presence_ && !presence_->lost()) {
    auto s = OpenGroupStore(settings_, settings_.liveness);
    try {
      if (s.ok() && !epoch_.empty() && GetOr(**s, kEpochKey) == epoch_) {
        store_ = *s;
        failed_ = false;
        return Status::OK();
      }
    } catch (const std::exception&) {
      // Not the same store, or not reachable: register again below.
    }
  }
  return Open(holding, deadline);
}

Status PodClient::Open(int holding, Clock::time_point deadline) {
  presence_.reset();
  store_.reset();
  Status last;
  do {
    auto s = OpenGroupStore(settings_, settings_.liveness);
    if (!s.ok()) {
      last = s.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    try {
      c10d::Store& st = **s;
      // A store that replaced the one this pod was in: its authority learns the old membership
      // from the survivors (rejoin.h), before they are listed.
      if (!epoch_.empty() && !members_.empty() && GetOr(st, kEpochKey) != epoch_) {
        st.set(PodKey(settings_.pod_name, "members"), Bytes(members_));
      }
      // Registration: identity and node rank first, then the list entry the authority reads.
      st.set(PodKey(settings_.pod_name, "id"), Bytes(identity_));
      st.set(PodKey(settings_.pod_name, "home"), Bytes(std::to_string(holding)));
      // Never an empty value: c10d's client takes 200 ms to read one.
      if (!metrics_addr_.empty()) st.set(PodKey(settings_.pod_name, "metrics"), Bytes(metrics_addr_));
      if (st.add(PodKey(settings_.pod_name, "listed"), 1) == 1) {
        const int64_t i = st.add(kPodsKey, 1) - 1;
        st.set(PodAtKey(i), Bytes(settings_.pod_name));
      }
      st.add(kRegistrationsKey, 1);
      // The budget this pod was created with: smaller once the operator charged pod failures.
      st.wait({kPresenceKey}, std::chrono::seconds(30));  // the rendezvous set up the budget first
      if (Status b = LowerBudget(st, settings_.max_recoveries); !b.ok()) {
        last = b;
        continue;
      }
      // Presence: the authority's listener, on the store's host.
      const int port = std::atoi(Text(st.get(kPresenceKey)).c_str());
      epoch_ = GetOr(st, kEpochKey);
      auto p = PresenceClient::Connect(settings_.store_addr, port, identity_, settings_.beat);
      if (!p.ok()) {
        last = p.status();
        continue;
      }
      store_ = *s;
      presence_ = std::move(*p);
      failed_ = false;
      return Status::OK();
    } catch (const std::exception& e) {
      last = Status::Unavailable("registering pod " + settings_.pod_name + ": " + BackendErrorText(e));
    }
  } while (Clock::now() < deadline);
  return Status::DeadlineExceeded("the group's store stayed unreachable: " + last.ToString());
}

bool PodClient::lost() const { return failed_ || !presence_ || presence_->lost(); }

PodPoll PodClient::Poll(int holding, const std::vector<int>& ranks) {
  PodPoll p;
  if (!store_) {
    p.store_ok = false;
    return p;
  }
  try {
    c10d::Store& s = *store_;
    p.verdict = GetOr(s, VerdictKey(identity_));
    if (holding >= 0) p.holder = GetOr(s, NodeKey(holding));
    if (holding >= 0 && p.holder == identity_) {
      p.node = holding;
    } else {
      for (int n = 0; n < settings_.nodes && p.node < 0; ++n) {
        if (GetOr(s, NodeKey(n)) == identity_) p.node = n;
      }
    }
    p.stop = s.check({kStopKey});
    p.abandon = GetOr(s, kAbandonKey);
    p.finished = s.check({kFinishedKey});
    for (int r : ranks) {
      if (std::string id = GetOr(s, StallKey(r)); !id.empty()) p.stalls[r] = id;
    }
    if (polls_++ % 10 == 0) {
      if (std::string m = GetOr(s, kMembersKey); !m.empty()) members_ = std::move(m);
    }
  } catch (const std::exception& e) {
    DDP_LOG(WARNING) << "supervisor: store: " << BackendErrorText(e);
    failed_ = true;
    p.store_ok = false;
  }
  return p;
}

Status PodClient::SetLeaving() {
  if (!store_) return Status::Unavailable("supervisor: no store");  // between stores
  try {
    store_->set(LeavingKey(identity_), Bytes("1"));
  } catch (const std::exception& e) {
    failed_ = true;
    return Status::Unavailable("supervisor: store: " + BackendErrorText(e));
  }
  return Status::OK();
}

Status PodClient::SetTrainer(int rank, const std::string& trainer_identity) {
  if (!store_) return Status::Unavailable("supervisor: no store");  // between stores
  try {
    store_->set(TrainerKey(rank, "id"), Bytes(trainer_identity));
    store_->add(kRegistrationsKey, 1);
  } catch (const std::exception& e) {
    failed_ = true;
    return Status::Unavailable("supervisor: store: " + BackendErrorText(e));
  }
  return Status::OK();
}

Status PodClient::MarkDone(int rank) {
  if (!store_) return Status::Unavailable("supervisor: no store");  // between stores
  try {
    store_->set(DoneKey(rank), Bytes("1"));
    store_->add(kRegistrationsKey, 1);
  } catch (const std::exception& e) {
    failed_ = true;
    return Status::Unavailable("supervisor: store: " + BackendErrorText(e));
  }
  return Status::OK();
}

Status PodClient::SetPreparing(bool preparing) {
  if (!store_) return Status::Unavailable("supervisor: no store");
  try {
    store_->set(PrepareKey(identity_), Bytes(preparing ? "1" : "0"));
    store_->add(kRegistrationsKey, 1);
  } catch (const std::exception& e) {
    failed_ = true;
    return Status::Unavailable("supervisor: store: " + BackendErrorText(e));
  }
  return Status::OK();
}

StatusOr<int> PodClient::WorldIfFree(int node, bool* free) {
  if (!store_) return Status::Unavailable("supervisor: no store");
  try {
    const int world = std::atoi(GetOr(*store_, kWorldKey).c_str());
    if (world <= 0) return Status::Unavailable("supervisor: the group has no size yet");
    *free = !store_->check({NodeKey(node)});
    return world;
  } catch (const std::exception& e) {
    failed_ = true;
    return Status::Unavailable("supervisor: store: " + BackendErrorText(e));
  }
}

StatusOr<Charge> PodClient::ChargeOnce(const std::string& once_key) {
  if (!store_) return Status::Unavailable("supervisor: no store");
  auto c = ChargeFailure(*store_, once_key);
  if (!c.ok()) failed_ = true;
  return c;
}

StatusOr<Charge> PodClient::Budget() {
  if (!store_) return Status::Unavailable("supervisor: no store");
  auto c = ReadBudget(*store_);
  if (!c.ok()) failed_ = true;
  return c;
}

}  // namespace ddp::worker::group
