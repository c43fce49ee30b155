// The supervisor's view of the group (see pod_client.h).
#include "worker/group/pod_client.h"


#include <algorithm>
#include <cstdlib>
#include <thread>

#include "common/logging.h"
#include "worker/comm/store_client.h"
#include "worker/comm/work_util.h"
#include "worker/group/keys.h"
#include "worker/group/pod_watch.h"
#include "worker/group/store_read.h"
#include "worker/group/rejoin.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;


// A registration's calls within what is left of `deadline` (at least 100 ms, at most the
// liveness timeout); the connection kept afterwards gets the liveness timeout back (Keep).
std::chrono::milliseconds Within(const GroupSettings& settings, Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return settings.liveness;
  return std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                    std::chrono::milliseconds(100), std::max(settings.liveness, std::chrono::milliseconds(100)));
}

}  // namespace

StatusOr<c10::intrusive_ptr<c10d::Store>> OpenGroupStore(const GroupSettings& settings,
                                                         std::chrono::milliseconds timeout,
                                                         Clock::time_point deadline) {
  // The connect and greeting within what is left of `deadline` (at least 100 ms), so that a
  // reconnect attempt never holds the supervisor's loop longer than it asked for.
  auto first = kFirstReadBound;
  if (deadline != Clock::time_point::max()) {
    first = std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                       std::chrono::milliseconds(100), kFirstReadBound);
  }
  return OpenBoundedStore(settings.store_addr, settings.rendezvous.master_port,
                          settings.rendezvous.round, timeout, first);
}

StatusOr<c10::intrusive_ptr<c10d::Store>> OpenBoundedStore(const std::string& host, int port,
                                                           int round,
                                                           std::chrono::milliseconds timeout,
                                                           std::chrono::milliseconds first_bound) {
  const std::string where = host + ":" + std::to_string(port);
  try {
    // The connection and its greeting within kFirstReadBound, the later calls within
    // `timeout`: a route to a lost rendezvous pod on a dead node drops the SYN (a connect that
    // waits out its whole timeout); the next try reaches the replaced one.
    const auto first = std::min(timeout, first_bound);
    auto store = ConnectStore(host, port, first, RoundPrefix(round));
    store->setTimeout(timeout);
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
  // (a timeout on a busy store). A new store connection is enough, and the presence connection
  // stays open whatever happens here: closing it would make the authority declare this healthy
  // pod lost. Only a store with another epoch (a replaced rendezvous pod) means registering again.
  if (presence_ && !presence_->lost()) {
    auto s = OpenGroupStore(settings_, Within(settings_, deadline), deadline);
    if (!s.ok()) return s.status();
    try {
      if (!epoch_.empty() && ValueOr(**s, kEpochKey) == epoch_) {
        DDP_RETURN_IF_ERROR(StartWatch(holding, deadline));
        (*s)->setTimeout(settings_.liveness);
        store_ = *s;
        failed_ = false;
        return Status::OK();
      }
    } catch (const std::exception& e) {
      return Status::Unavailable("the group's store: " + BackendErrorText(e));
    }
  }
  return Open(holding, deadline);
}

Status PodClient::Register(c10d::Store& st) {
  const std::string name = settings_.pod_name;
  // A pod the group fenced, or gave a verdict, never registers again: its process was declared
  // lost (a frozen node that thawed, a partition that healed) and another took its place.
  if (const std::string v = ValueOr(st, VerdictKey(identity_)); !v.empty() && v != kVerdictStop) {
    return Status::FailedPrecondition("pod " + identity_ + " was given the verdict " + v +
                                      " by the group");
  }
  if (st.check({FencedKey(identity_)})) {
    return Status::FailedPrecondition("the group declared pod " + identity_ + " lost (" +
                                      ValueOr(st, FencedKey(identity_)) + ")");
  }
  // The name, never over another identity: a name is reused only once its old pod object is
  // gone, so another identity under it is either this pod's replacement (this process is the
  // old one, back: it stops) or an old process that came back first (this pod, new, takes the
  // name once the group fenced that one).
  const std::string key = PodKey(name, "id");
  const std::string held = Text(st.compareSet(key, {}, Bytes(identity_)));
  if (held != identity_) {
    if (registered_before_) {
      return Status::FailedPrecondition("pod name " + name + " was registered by " + held +
                                        " while this pod was away: it was replaced");
    }
    const bool gone = st.check({FencedKey(held)}) || !ValueOr(st, VerdictKey(held)).empty();
    if (!gone || Text(st.compareSet(key, Bytes(held), Bytes(identity_))) != identity_) {
      return Status::Unavailable("pod name " + name + " is held by " + held +
                                 ", an older process the group has not declared lost yet");
    }
  }
  return Status::OK();
}

Status PodClient::Open(int holding, Clock::time_point deadline) {
  presence_.reset();
  store_.reset();
  Status last;
  do {
    auto s = OpenGroupStore(settings_, Within(settings_, deadline), deadline);
    if (!s.ok()) {
      last = s.status();
      if (Clock::now() + std::chrono::milliseconds(200) < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
      continue;
    }
    try {
      c10d::Store& st = **s;
      // The budget first (the rendezvous sets it up before the presence key), within what is
      // left of the deadline: a reconnect must not hold the supervisor's loop for long.
      const auto left = std::max<std::chrono::milliseconds>(
          std::chrono::milliseconds(100),
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
      st.wait({kPresenceKey}, std::min<std::chrono::milliseconds>(left, std::chrono::seconds(30)));
      const bool new_store = !epoch_.empty() && ValueOr(st, kEpochKey) != epoch_;
      if (Status r = Register(st); !r.ok()) {
        if (r.code() == StatusCode::kFailedPrecondition) return r;  // fenced or replaced: for good
        last = r;
        if (Clock::now() + std::chrono::milliseconds(200) < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
        continue;
      }
      // A store that replaced the one this pod was in: its authority learns the old membership
      // from the survivors (rejoin.h) before they are listed; its budget, set from what the
      // operator last read of the lost store, is lowered to what this pod read there last (a
      // charge made after the operator's last read would be forgotten otherwise).
      if (new_store && !members_.empty()) {
        st.set(PodKey(settings_.pod_name, "members"), Bytes(members_));
      }
      if (new_store && budget_known_) {
        if (Status b = LowerBudget(st, budget_seen_.left); !b.ok()) {
          last = b;
          continue;
        }
      }
      st.set(PodKey(settings_.pod_name, "home"), Bytes(std::to_string(holding)));
      // Never an empty value (keys.h).
      if (!metrics_addr_.empty()) st.set(PodKey(settings_.pod_name, "metrics"), Bytes(metrics_addr_));
      // A pod that may prepare says so before it is first listed: the authority never grows
      // with it before it said whether it prepares (a growth would take it in unprepared). Only
      // once the group formed: nothing grows before, and a forming group's pods say nothing more.
      if (settings_.decides_prepare && epoch_.empty() && st.check({kFormedKey})) {
        st.set(PrepareKey(identity_), Bytes(kPrepareUndecided));
        undecided_ = true;
      }
      if (st.add(PodKey(settings_.pod_name, "listed"), 1) == 1) {
        const int64_t i = st.add(kPodsKey, 1) - 1;
        st.set(PodAtKey(i), Bytes(settings_.pod_name));
      }
      st.add(kRegistrationsKey, 1);
      // The budget this pod was created with: smaller once the operator charged pod failures.
      if (Status b = LowerBudget(st, settings_.max_recoveries); !b.ok()) {
        last = b;
        continue;
      }
      // The pod's watch, then presence, last: a presence connection that named itself and then
      // closed (a step after it failed) reads to the authority as a process that ended.
      if (Status w = StartWatch(holding, deadline); !w.ok()) {
        last = w;
        continue;
      }
      // Presence: the authority's listener, on the store's host.
      const int port = std::atoi(ValueOr(st, kPresenceKey).c_str());
      epoch_ = ValueOr(st, kEpochKey);
      auto p = PresenceClient::Connect(settings_.store_addr, port, identity_, settings_.beat,
                                       std::min(Within(settings_, deadline), std::chrono::milliseconds(2000)));
      if (!p.ok()) {
        last = p.status();
        continue;
      }
      (*s)->setTimeout(settings_.liveness);
      store_ = *s;
      presence_ = std::move(*p);
      failed_ = false;
      registered_before_ = true;
      return Status::OK();
    } catch (const std::exception& e) {
      last = Status::Unavailable("registering pod " + settings_.pod_name + ": " + BackendErrorText(e));
    }
  } while (Clock::now() < deadline);
  return Status::DeadlineExceeded("the group's store stayed unreachable: " + last.ToString());
}

bool PodClient::lost() const { return failed_ || !presence_ || presence_->lost(); }

void PodClient::Remember(const PodPoll& p) {
  if (!p.store_ok) return;
  if (!p.members.empty() && p.members != members_) {
    // Said when the group's size in it changes (a resize): what this pod would hand a new store.
    const auto now = ParseMembers(p.members, settings_.nodes);
    const auto before = ParseMembers(members_, settings_.nodes);
    if (now && (!before || before->nodes != now->nodes)) {
      DDP_LOG(INFO) << "supervisor: the group's membership copy: " << now->nodes
                    << " node rank(s), generation " << now->generation
                    << " (handed to a store that replaces this one)";
    }
    members_ = p.members;
  }
  if (p.budget) {
    budget_seen_ = *p.budget;
    budget_known_ = true;
  }
}

PodPoll PodClient::PollNow(int holding, const std::vector<int>& ranks) {
  PodPoll p;
  if (!store_) {
    p.store_ok = false;
    return p;
  }
  try {
    p = ReadPod(*store_, PodKeys{identity_, holding, ranks}, std::chrono::milliseconds(0), nullptr);
  } catch (const std::exception& e) {
    DDP_LOG(WARNING) << "supervisor: store: " << BackendErrorText(e);
    failed_ = true;
    p = PodPoll();
    p.store_ok = false;
    return p;
  }
  // A store under the same address with another epoch is a new, empty store: register again.
  if (!epoch_.empty() && !p.epoch.empty() && p.epoch != epoch_) p.store_ok = false;
  Remember(p);
  return p;
}

PodPoll PodClient::Poll(int holding, const std::vector<int>& ranks) {
  const PodKeys keys{identity_, holding, ranks};
  watch_.Follow(keys);
  PodPoll p;
  if (!watch_.Snapshot(keys, &p)) return PollNow(holding, ranks);  // not read with these keys yet
  if (!p.store_ok) {
    failed_ = true;
    return p;
  }
  if (!epoch_.empty() && !p.epoch.empty() && p.epoch != epoch_) p.store_ok = false;
  Remember(p);
  return p;
}

Status PodClient::StartWatch(int holding, Clock::time_point deadline) {
  auto s = OpenGroupStore(settings_, settings_.liveness, deadline);
  if (!s.ok()) return s.status();
  try {
    const PodKeys keys{identity_, holding, {}};
    PodPoll first = ReadPod(**s, keys, std::chrono::milliseconds(0), nullptr);
    watch_.Start(*s, keys, std::move(first));
  } catch (const std::exception& e) {
    return Status::Unavailable("the group's store: " + BackendErrorText(e));
  }
  return Status::OK();
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

Status PodClient::SetPreparing(bool preparing, int node) {
  if (!store_) return Status::Unavailable("supervisor: no store");
  try {
    const std::string v = !preparing ? "0" : node < 0 ? "1" : "1@" + std::to_string(node);
    store_->set(PrepareKey(identity_), Bytes(v));
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
    const int world = std::atoi(ValueOr(*store_, kWorldKey).c_str());
    if (world <= 0) return Status::Unavailable("supervisor: the group has no size yet");
    *free = !store_->check({NodeKey(node)});
    return world;
  } catch (const std::exception& e) {
    failed_ = true;
    return Status::Unavailable("supervisor: store: " + BackendErrorText(e));
  }
}

StatusOr<int> PodClient::HomeOfHolder(int node) {
  if (!store_) return Status::Unavailable("supervisor: no store");
  try {
    const std::string holder = ValueOr(*store_, NodeKey(node));
    if (holder.empty()) return Status::NotFound("node rank " + std::to_string(node) + " is free");
    const std::string home = ValueOr(*store_, PodKey(PodOfIdentity(holder), "home"));
    if (home.empty() || home.find_first_not_of("0123456789") != std::string::npos ||
        home.size() > 7) {
      return Status::NotFound("the pod holding node rank " + std::to_string(node) +
                              " registered no node rank");
    }
    return std::atoi(home.c_str());
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
