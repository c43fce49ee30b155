// Generations on the store (see membership.h for the protocol).
#include "worker/group/membership.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <cstdlib>

#include "common/logging.h"
#include "worker/comm/deadline.h"
#include "worker/comm/work_util.h"
#include "worker/group/authority_loop.h"
#include "worker/group/fenced_store.h"
#include "worker/group/keys.h"
#include "worker/group/store_read.h"
#include "worker/group/pod_client.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(10);
constexpr auto kWatchInterval = std::chrono::milliseconds(100);
constexpr auto kReconnectInterval = std::chrono::milliseconds(500);


// Opens a connection, retrying until `deadline`.
StatusOr<c10::intrusive_ptr<c10d::Store>> OpenUntil(const StoreOpener& open,
                                                    Clock::time_point deadline) {
  Status last = Status::Unavailable("never tried");
  do {
    auto s = open();
    if (s.ok()) return s;
    last = s.status();
    std::this_thread::sleep_for(kReconnectInterval);
  } while (Clock::now() < deadline);
  return last;
}

}  // namespace

const char* GroupEndName(GroupEnd e) {
  switch (e) {
    case GroupEnd::kNone:
      return "none";
    case GroupEnd::kStop:
      return "stop";
    case GroupEnd::kAbandon:
      return "abandon";
    case GroupEnd::kFenced:
      return "fenced";
    case GroupEnd::kStoreLost:
      return "store lost";
  }
  return "";
}

GroupMembership::GroupMembership(StoreOpener open, int rank, int size, MemberIdentity id,
                                 std::chrono::milliseconds timeout, CommunicatorMaker make)
    : open_(std::move(open)),
      rank_(rank),
      size_(size),
      id_(std::move(id)),
      timeout_(timeout),
      make_(std::move(make)) {}

GroupMembership::~GroupMembership() {
  quit_ = true;
  if (watcher_.joinable()) watcher_.join();
}

Status GroupMembership::Connect() {
  auto s = OpenUntil(open_, Clock::now() + timeout_);
  if (!s.ok()) {
    return Status::DeadlineExceeded("membership: the group's store stayed unreachable for " +
                                    std::to_string(timeout_.count() / 1000) + "s: " +
                                    s.status().ToString());
  }
  store_ = *s;
  watcher_ = std::thread([this] { WatchLoop(); });
  return Status::OK();
}

std::string GroupMembership::Ended(c10d::Store& s, GroupEnd* end) {
  if (s.check({kStopKey})) {
    *end = GroupEnd::kStop;
    return "the job is stopping";
  }
  if (s.check({kAbandonKey})) {
    *end = GroupEnd::kAbandon;
    return "the group was abandoned (" + Text(s.get(kAbandonKey)) + ")";
  }
  // Its pod declared lost or departed: the authority fences the pod before it frees its node
  // rank (whose key is then absent) and moves the generation on, so a trainer that notices
  // the new generation before its supervisor kills it never arrives in it (a communicator
  // formed with it would wait on a dead peer).
  if (s.check({FencedKey(id_.pod)})) {
    *end = GroupEnd::kFenced;
    return "pod " + id_.pod + " was declared lost or departed";
  }
  // Absent keys (a new store, before the supervisors registered again) fence nobody: only a
  // rank or node rank given to another.
  if (const std::string t = ValueOr(s, TrainerKey(rank_, "id")); !t.empty() && t != id_.trainer) {
    *end = GroupEnd::kFenced;
    return "rank " + std::to_string(rank_) + " now belongs to another trainer";
  }
  if (const std::string n = ValueOr(s, NodeKey(id_.node)); !n.empty() && n != id_.pod) {
    *end = GroupEnd::kFenced;
    return "node rank " + std::to_string(id_.node) + " no longer belongs to pod " + id_.pod;
  }
  *end = GroupEnd::kNone;
  return "";
}

bool GroupMembership::Outside() {
  try {
    // Its node rank not held yet: a pod given it (a growth that did not wait for this trainer)
    // gets `world` written a moment later, and its trainer is no newcomer waiting outside.
    const int world = std::atoi(ValueOr(*store_, kWorldKey).c_str());
    return world > 0 && rank_ >= world && !store_->check({NodeKey(id_.node)});
  } catch (const std::exception&) {
    return false;
  }
}

Status GroupMembership::Advance(int64_t g) {
  try {
    TryAdvance(*store_, g);
    if (PollUntil(Clock::now() + timeout_, kPollInterval,
                  [&] { return store_->add(kGenKey, 0) > g; }) != PollOutcome::kDone) {
      return Status::DeadlineExceeded("membership: generation " + std::to_string(g) +
                                      " was not left within " +
                                      std::to_string(timeout_.count()) + "ms");
    }
  } catch (const std::exception& e) {
    return Status::Unavailable("membership: store failed while leaving generation " +
                               std::to_string(g) + ": " + BackendErrorText(e));
  }
  return Status::OK();
}

// Past the authority's own rendezvous timeout, so that it decides (abandon) and every member
// learns the same; this deadline only ends a wait whose authority is gone.
Clock::time_point GroupMembership::JoinDeadline() const {
  return Clock::now() + timeout_ +
         std::max<std::chrono::milliseconds>(std::chrono::seconds(5), timeout_ / 10);
}

StatusOr<Formation> GroupMembership::Join(int64_t committed_step) {
  Watch(nullptr);
  leave_requested_ = false;
  const auto deadline = JoinDeadline();
  if (store_replaced_.exchange(false)) {
    // Not a word more to the old store: a frozen one would hold this thread for its timeout.
    if (auto s = open_(); s.ok()) {
      DDP_LOG(INFO) << "membership: rank " << rank_ << ": joining through the new store";
      store_ = *s;
    }
  }
  while (true) {
    try {
      return JoinOnce(committed_step, deadline);
    } catch (const std::exception& e) {
      // The store is gone (its pod was lost): the operator recreates it; wait for it.
      DDP_LOG(WARNING) << "membership: rank " << rank_ << ": store failed: " << BackendErrorText(e)
                       << "; reconnecting";
      auto s = OpenUntil(open_, deadline);
      if (!s.ok()) {
        Formation f;
        f.end = GroupEnd::kStoreLost;
        f.why = "the group's store stayed unreachable: " + s.status().ToString();
        return f;
      }
      store_ = *s;
    }
  }
}

StatusOr<Formation> GroupMembership::JoinOnce(int64_t committed_step, Clock::time_point deadline) {
  // `deadline` moves with the generation (a copy: the caller's bounds only reconnecting).
  c10d::Store& s = *store_;
  Formation f;
  // A new store (the rendezvous pod was replaced) knows no generation of ours: start afresh.
  if (const std::string epoch = ValueOr(s, kEpochKey); epoch != epoch_) {
    if (!epoch_.empty()) DDP_LOG(INFO) << "membership: rank " << rank_ << ": a new store";
    epoch_ = epoch;
    generation_ = -1;
    joined_before_ = false;
  }
  // 1-2. Fencing, stop, abandon; then leave the old generation.
  if (f.why = Ended(s, &f.end); f.end != GroupEnd::kNone) return f;
  if (!joined_before_) {
    const int64_t g = s.add(kGenKey, 0);
    const std::string mine = ValueOr(s, ArrivedKey(g, rank_));
    if (!mine.empty() && mine.substr(mine.find(' ') + 1) != id_.trainer) {
      DDP_RETURN_IF_ERROR(Advance(g));
    }
  } else if (generation_ >= 0) {
    DDP_RETURN_IF_ERROR(Advance(generation_));
  }
  joined_before_ = true;
  while (true) {
    // 3. Arrive in the current generation, at the size the authority gave the group (it writes
    // `world` before it moves `gen`, so reading them in this order never pairs a generation with
    // an older size). A store without the key (an older rendezvous pod) keeps ours.
    const int64_t g = s.add(kGenKey, 0);
    if (const std::string w = ValueOr(s, kWorldKey); !w.empty()) {
      const int world = std::atoi(w.c_str());
      if (world > 0 && world != size_) {
        DDP_LOG(INFO) << "membership: rank " << rank_ << ": the group resized: " << size_ << " -> "
                      << world << " rank(s)";
        size_ = world;
      }
    }
    if (rank_ >= size_) {
      // Outside the group: either it shrank without this rank (its pod is fenced as it departs:
      // Ended says so) or it is growing to take it in (its pod holds the node rank already and
      // the authority writes the size next, or its pod prepared it ahead of the growth: the
      // authority grows once every prepared trainer says it is ready). Wait for one or the other.
      if (f.why = Ended(s, &f.end); f.end != GroupEnd::kNone) return f;
      if (!ready_said_) {
        s.set(ReadyKey(rank_), Bytes(id_.trainer));
        ready_said_ = true;
      }
      if (Clock::now() >= deadline) {
        return Status::DeadlineExceeded("membership: rank " + std::to_string(rank_) +
                                        " stayed outside a group of " + std::to_string(size_));
      }
      std::this_thread::sleep_for(kPollInterval * 5);
      continue;
    }
    s.set(ArrivedKey(g, rank_), Bytes(std::to_string(committed_step) + " " + id_.trainer));
    s.add(ArrivalsKey(g), 1);
    // 4. Wait for everyone, or for the generation to move on, or for the group to end.
    std::vector<std::string> keys;
    for (int r = 0; r < size_; ++r) keys.push_back(ArrivedKey(g, r));
    GroupEnd end = GroupEnd::kNone;
    std::string why;
    int polls = 0;  // the fuller check every 10th poll: members may wait here for minutes
    const PollOutcome arrived = PollUntil(
        deadline, kPollInterval, [&] { return s.check(keys); },
        [&] {
          return s.add(kGenKey, 0) != g || (++polls % 10 == 0 && !(why = Ended(s, &end)).empty());
        });
    if (end != GroupEnd::kNone) {
      f.end = end;
      f.why = why;
      return f;
    }
    if (arrived == PollOutcome::kAborted) {
      // A new generation: the authority's rendezvous clock starts again, so does ours.
      deadline = JoinDeadline();
      continue;
    }
    if (arrived == PollOutcome::kDeadline) {
      std::string missing;
      for (int r = 0; r < size_; ++r) {
        if (!s.check({keys[static_cast<size_t>(r)]})) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      return Status::DeadlineExceeded("membership: generation " + std::to_string(g) +
                                      " did not form within " +
                                      std::to_string(timeout_.count() / 1000) + "s: rank(s) " +
                                      missing + " of " + std::to_string(size_) + " never arrived");
    }
    // 5. Steps, then the communicator.
    f.generation = g;
    f.world = size_;
    f.committed_steps.assign(static_cast<size_t>(size_), -1);
    for (int r = 0; r < size_; ++r) {
      const std::string v = Text(s.get(keys[static_cast<size_t>(r)]));
      f.committed_steps[static_cast<size_t>(r)] = std::stoll(v.substr(0, v.find(' ')));
    }
    break;
  }
  generation_ = f.generation;
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(GenPrefix(f.generation) + "comm", store_);
  const int64_t g = f.generation;
  auto fenced = c10::make_intrusive<FencedStore>(prefixed, [this, g]() -> std::string {
    if (store_->add(kGenKey, 0) != g) return "generation " + std::to_string(g) + " moved on";
    GroupEnd end;
    return Ended(*store_, &end);
  });
  auto comm = make_(fenced, rank_, size_);
  if (!comm.ok()) return comm.status().WithContext("generation " + std::to_string(g));
  f.comm = std::move(*comm);
  store_->set(kFormedKey, Bytes("1"));  // the authority's "ever formed", whatever its sampling
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watched_generation_ = g;
    watched_size_ = size_;
    watched_epoch_ = epoch_;
  }
  return f;
}

bool GroupMembership::Graceful(c10d::Store& s, int64_t g, bool* arrived) {
  *arrived = false;
  if (!s.check({GracefulKey(g)})) return false;
  // The authority writes `world` before it moves `gen`: a larger size than the watched one's,
  // with the newcomers' ranks after the survivors' (a growth keeps every rank).
  const int world = std::atoi(ValueOr(s, kWorldKey).c_str());
  if (world <= watched_size_) return false;
  std::vector<std::string> keys;
  for (int r = watched_size_; r < world; ++r) keys.push_back(ArrivedKey(g, r));
  *arrived = s.check(keys);
  return true;
}

void GroupMembership::Watch(Communicator* comm) {
  std::lock_guard<std::mutex> lock(watch_mu_);
  watched_ = comm;
}

void GroupMembership::WatchLoop() {
  c10::intrusive_ptr<c10d::Store> ws;
  auto next_open = Clock::now();
  while (!quit_.load()) {
    std::this_thread::sleep_for(kWatchInterval);
    if (!ws) {
      if (Clock::now() < next_open) continue;
      auto s = open_();
      next_open = Clock::now() + kReconnectInterval;
      if (!s.ok()) continue;
      ws = *s;
    }
    try {
      ws->add(TrainerKey(rank_, "hb"), 1);
      if (ws->check({kStopKey})) stop_requested_ = true;
      const std::string now_epoch = ValueOr(*ws, kEpochKey);
      const int64_t g = ws->add(kGenKey, 0);
      std::string why;
      std::lock_guard<std::mutex> lock(watch_mu_);
      if (watched_ == nullptr) continue;
      if (now_epoch != watched_epoch_) {
        // The store was replaced under a running generation: the new one counts afresh from 0,
        // and any generation past it means the membership changed (its authority declared an
        // old member lost: rejoin.h), however late this watcher first saw the new store.
        if (g > 0) why = "the group moved on (new store)";
        if (!now_epoch.empty()) store_replaced_ = true;
      } else if (bool arrived = false;
                 g == watched_generation_ + 1 && Graceful(*ws, g, &arrived)) {
        // A growth: train on until the newcomers are there, then leave at an agreement.
        if (arrived && !leave_requested_.exchange(true)) {
          leave_asked_ = Clock::now();
          DDP_LOG(INFO) << "membership: rank " << rank_ << ": generation " << g
                        << " grows the group: leaving generation " << watched_generation_
                        << " at the next step agreement";
        }
        if (leave_requested_ && Clock::now() - leave_asked_ > kGracefulLeave) {
          why = "generation " + std::to_string(watched_generation_) + " was not left within " +
                std::to_string(kGracefulLeave.count()) + "s of a growth";
        }
      } else if (g > watched_generation_) {
        why = "generation " + std::to_string(watched_generation_) + " ended";
      }
      if (why.empty() && ws->check({kAbandonKey})) why = "the group was abandoned";
      if (why.empty() && ValueOr(*ws, StallKey(rank_)) == id_.trainer) {
        why = "this trainer was declared stalled";
      }
      if (!why.empty()) {
        DDP_LOG(INFO) << "membership: rank " << rank_ << ": " << why << ": aborting the communicator";
        watched_->Abort();
        watched_ = nullptr;
      }
    } catch (const std::exception&) {
      ws.reset();  // the store is gone: reconnect (a new rendezvous pod) and go on
      next_open = Clock::now() + kReconnectInterval;
    }
  }
}

}  // namespace ddp::worker::group
