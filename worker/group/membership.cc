// Generations on the store (see membership.h for the protocol).
#include "worker/group/membership.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <algorithm>
#include <cstdlib>

#include "common/logging.h"
#include "worker/comm/deadline.h"
#include "worker/comm/watch.h"
#include "worker/comm/work_util.h"
#include "worker/group/authority_loop.h"
#include "worker/group/fenced_store.h"
#include "worker/group/forming.h"
#include "worker/group/keys.h"
#include "worker/group/store_read.h"
#include "worker/group/pod_client.h"
#include "worker/group/steps.h"

namespace ddp::worker::group {
namespace {

using Clock = std::chrono::steady_clock;
// The longest single wait of a join or an advance (it looks at its deadline and the group's end
// between two), and of the watcher while it watches no communicator.
constexpr auto kWaitSlice = std::chrono::milliseconds(1000);
constexpr auto kIdleWatch = std::chrono::milliseconds(100);
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

// Ended's reading, of no member's state: a creation left to end on its own asks it too
// (FencedStore), after the member may be gone.
std::string EndOf(c10d::Store& s, const MemberIdentity& id, int rank, GroupEnd* end) {
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
  if (s.check({FencedKey(id.pod)})) {
    *end = GroupEnd::kFenced;
    return "pod " + id.pod + " was declared lost or departed";
  }
  // Absent keys (a new store, before the supervisors registered again) fence nobody: only a
  // rank or node rank given to another.
  if (const std::string t = ValueOr(s, TrainerKey(rank, "id")); !t.empty() && t != id.trainer) {
    *end = GroupEnd::kFenced;
    return "rank " + std::to_string(rank) + " now belongs to another trainer";
  }
  if (const std::string n = ValueOr(s, NodeKey(id.node)); !n.empty() && n != id.pod) {
    *end = GroupEnd::kFenced;
    return "node rank " + std::to_string(id.node) + " no longer belongs to pod " + id.pod;
  }
  *end = GroupEnd::kNone;
  return "";
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
                                 std::chrono::milliseconds timeout, CommunicatorMaker make,
                                 std::chrono::milliseconds heartbeat)
    : open_(std::move(open)),
      rank_(rank),
      size_(size),
      id_(std::move(id)),
      timeout_(timeout),
      make_(std::move(make)),
      beat_(std::max(heartbeat, std::chrono::milliseconds(10))) {}

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
  return EndOf(s, id_, rank_.load(), end);
}

bool GroupMembership::FollowMove(c10d::Store& s) {
  const std::string to = ValueOr(s, MovedKey(id_.pod));
  if (to.empty()) return false;
  const int node = std::atoi(to.c_str());
  // Only once the authority gave it the rank (it writes moved/ first): a member that reads the
  // key before arrives in the old generation, which the resize ends, and comes here again.
  if (node == id_.node || ValueOr(s, NodeKey(node)) != id_.pod) return false;
  const int from = rank_.load();
  id_.node = node;
  rank_ = node * id_.per_node + id_.local;
  // The rank is this trainer's now (its supervisor writes the same once it notices): the lost
  // member's identity under it would read as "rank now belongs to another trainer".
  s.set(TrainerKey(rank_.load(), "id"), Bytes(id_.trainer));
  s.add(kRegistrationsKey, 1);
  DDP_LOG(INFO) << "membership: rank " << from << ": its pod moved to node rank " << node
                << " (the group shrank without a lost member): rank " << rank_.load()
                << " from now on, its training state with it";
  return true;
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
    const auto deadline = Clock::now() + timeout_;
    while (!WatchKeys(*store_, {AtLeast(kGenKey, g + 1)}, kWaitSlice).held) {
      if (Clock::now() >= deadline) {
        return Status::DeadlineExceeded("membership: generation " + std::to_string(g) +
                                        " was not left within " +
                                        std::to_string(timeout_.count()) + "ms");
      }
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
  // 1-2. A move, fencing, stop, abandon; then leave the old generation.
  FollowMove(s);
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
    // 3. Arrive in the current generation, at its size: the one its mover wrote before `gen`
    // showed it (authority.h I2), so every member of a generation forms at the same size. A
    // store without the keys (an older rendezvous pod) keeps ours.
    const int64_t g = s.add(kGenKey, 0);
    {
      const int world = GenerationSize(s, g);
      if (world > 0 && world != size_) {
        DDP_LOG(INFO) << "membership: rank " << rank_ << ": the group resized: " << size_ << " -> "
                      << world << " rank(s)";
        size_ = world;
      }
    }
    // A shrink on a loss moves this pod into the lost member's node rank before it moves `gen`.
    FollowMove(s);
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
      // Until the group grows or its pod departs: the generation, the size, its node rank or
      // its fence changes (a growth writes `world`, then begins a generation at that size).
      WatchKeys(s, {AtLeast(kGenKey, g + 1), Changed(kWorldKey, ValueOr(s, kWorldKey)),
                    Changed(FencedKey(id_.pod), ""),
                    Changed(NodeKey(id_.node), ValueOr(s, NodeKey(id_.node)))},
                kWaitSlice);
      continue;
    }
    s.set(ArrivedKey(g, rank_), Bytes(std::to_string(committed_step) + " " + id_.trainer));
    // The last to arrive sums the committed steps up for everyone (one read of every rank's
    // arrival), so the others read one key, not the whole group's. A join retried (a reply lost
    // after the store counted it) counts twice: whoever counts to the size or past it reads every
    // arrival and sums up once all are there, so the real last arrival always does.
    if (s.add(ArrivalsKey(g), 1) >= size_) Summarize(s, g);
    // 4. Wait for everyone (the summary), or for the generation to move on, or for the group to
    // end: one parked watch at a time, never a poll of every rank's key.
    GroupEnd end = GroupEnd::kNone;
    std::string why, summary;
    bool moved = false;
    while (true) {
      const WatchResult w =
          WatchKeys(s, {Changed(StepsKey(g), ""), AtLeast(kGenKey, g + 1), Changed(kStopKey, ""),
                        Changed(kAbandonKey, ""), Changed(FencedKey(id_.pod), "")},
                    std::min<std::chrono::milliseconds>(
                        kWaitSlice, std::chrono::duration_cast<std::chrono::milliseconds>(
                                        deadline - Clock::now())));
      if (w.values[0]) {
        summary = *w.values[0];
        break;
      }
      if (w.held || Clock::now() >= deadline) {
        if (!(why = Ended(s, &end)).empty()) break;
        if (s.add(kGenKey, 0) != g) {
          moved = true;
          break;
        }
      }
      if (Clock::now() >= deadline) break;
    }
    if (end != GroupEnd::kNone) {
      f.end = end;
      f.why = why;
      return f;
    }
    if (moved) {
      // A new generation: the authority's rendezvous clock starts again, so does ours.
      deadline = JoinDeadline();
      continue;
    }
    if (summary.empty()) {
      std::string missing;
      for (int r = 0; r < size_ && missing.size() < 200; ++r) {
        if (!s.check({ArrivedKey(g, r)})) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      return Status::DeadlineExceeded("membership: generation " + std::to_string(g) +
                                      " did not form within " +
                                      std::to_string(timeout_.count() / 1000) + "s: rank(s) " +
                                      missing + " of " + std::to_string(size_) + " never arrived");
    }
    // 5. The summary, then the communicator.
    f.generation = g;
    f.world = size_;
    if (!ParseSteps(summary, &f.steps)) {
      return Status::Unavailable("membership: generation " + std::to_string(g) +
                                 ": an unreadable summary of the steps: " + summary.substr(0, 80));
    }
    break;
  }
  generation_ = f.generation;
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(GenPrefix(f.generation) + "comm", store_);
  const int64_t g = f.generation;
  // Of values, not of this member: the creation may outlive the join (forming.h).
  auto cancelled = [st = store_, id = id_, rank = rank_.load(), g]() -> std::string {
    if (st->add(kGenKey, 0) != g) return "generation " + std::to_string(g) + " moved on";
    GroupEnd end;
    return EndOf(*st, id, rank, &end);
  };
  auto fenced = c10::make_intrusive<FencedStore>(prefixed, cancelled);
  // Reads the store on the watcher's word (the generation moved, the group ended) or once every
  // ten polls: a new store, a fence.
  auto gone = [this, cancelled, g, polls = 0]() mutable -> std::string {
    if (seen_generation_.load() <= g && !seen_end_.load() && ++polls % 10 != 0) return "";
    return cancelled();
  };
  auto comm = MakeUnlessCancelled(
      [make = make_, fenced, rank = rank_.load(), size = size_] { return make(fenced, rank, size); },
      gone);
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

void GroupMembership::Watch(Communicator* comm) {
  std::lock_guard<std::mutex> lock(watch_mu_);
  watched_ = comm;
}

void GroupMembership::WatchLoop() {
  c10::intrusive_ptr<c10d::Store> ws;
  auto next_open = Clock::now();
  auto next_beat = Clock::now();
  // What this watcher last read of each key it waits on: a watch wakes when one differs.
  std::string seen_stop, seen_abandon, seen_stall, seen_epoch, seen_world, seen_graceful;
  while (!quit_.load()) {
    if (!ws) {
      if (Clock::now() < next_open) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      auto s = open_();
      next_open = Clock::now() + kReconnectInterval;
      if (!s.ok()) continue;
      ws = *s;
    }
    try {
      if (Clock::now() >= next_beat) {
        ws->add(TrainerKey(rank_, "hb"), 1);
        next_beat = Clock::now() + beat_;
      }
      bool watching, graceful_state;
      int64_t w;
      int watched_size;
      {
        std::lock_guard<std::mutex> lock(watch_mu_);
        watching = watched_ != nullptr;
        w = watched_generation_;
        watched_size = watched_size_;
        graceful_state = graceful_seen_ == w + 1;
      }
      // One parked watch until the next beat: the watched generation's end (past the graceful
      // growth's generation once that one is known), a new store, a stop, an abandon, a stall
      // verdict, and a growth's newcomers arriving. Nothing watched (between generations): a
      // short wait, so that the next generation is watched soon after it forms.
      const int world_now = std::atoi(seen_world.c_str());
      const std::vector<Condition> conds = {
          Changed(kStopKey, seen_stop), Changed(kAbandonKey, seen_abandon),
          Changed(StallKey(rank_), seen_stall), Changed(kEpochKey, seen_epoch),
          AtLeast(kGenKey, watching ? w + (graceful_state ? 2 : 1) : INT64_MAX),
          Changed(kWorldKey, seen_world), Changed(GracefulKey(w + 1), seen_graceful),
          AtLeast(ArrivalsKey(w + 1), graceful_state && !leave_requested_.load()
                                          ? std::max(1, world_now - watched_size)
                                          : INT64_MAX)};
      const auto until_beat = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - Clock::now());
      const auto wait = std::clamp(until_beat, std::chrono::milliseconds(1),
                                   watching ? beat_ : kIdleWatch);
      const WatchResult r = WatchKeys(*ws, conds, wait);
      auto val = [&](size_t i) { return r.values[i] ? *r.values[i] : std::string(); };
      seen_stop = val(0);
      seen_abandon = val(1);
      seen_stall = val(2);
      seen_epoch = val(3);
      seen_world = val(5);
      seen_graceful = val(6);
      if (!seen_stop.empty()) stop_requested_ = true;
      const int64_t g = std::atoll(val(4).c_str());
      if (r.values[4]) seen_generation_ = g;
      seen_end_ = !seen_stop.empty() || !seen_abandon.empty();
      std::string why;
      std::lock_guard<std::mutex> lock(watch_mu_);
      // Read with the keys of what was watched when the watch began: a communicator handed over
      // meanwhile (Watch) is judged on the next watch, with its own generation's keys (its
      // growth mark, above all).
      if (watched_ == nullptr || !watching || w != watched_generation_) continue;
      if (seen_epoch != watched_epoch_) {
        // The store was replaced under a running generation: the new one counts afresh from 0,
        // and any generation past it means the membership changed (its authority declared an
        // old member lost: rejoin.h), however late this watcher first saw the new store.
        if (g > 0) why = "the group moved on (new store)";
        if (!seen_epoch.empty()) store_replaced_ = true;
      } else if (g == watched_generation_ + 1 && !seen_graceful.empty() &&
                 std::atoi(seen_world.c_str()) > watched_size_) {
        // A growth (rule 9c): train on until the newcomers are there, then leave at an
        // agreement. The authority writes `world` and the mark before it moves `gen`.
        graceful_seen_ = g;
        const int newcomers = std::atoi(seen_world.c_str()) - watched_size_;
        const bool arrived = r.values[7] && std::atoll(r.values[7]->c_str()) >= newcomers;
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
      if (why.empty() && !seen_abandon.empty()) why = "the group was abandoned";
      if (why.empty() && seen_stall == id_.trainer) why = "this trainer was declared stalled";
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

void GroupMembership::Summarize(c10d::Store& s, int64_t g) {
  // One read of every rank's arrival ("<committed step> <trainer identity>").
  std::vector<Condition> conds;
  for (int r = 0; r < size_; ++r) conds.push_back(Changed(ArrivedKey(g, r), ""));
  const WatchResult all = WatchKeys(s, conds, std::chrono::milliseconds(0));
  std::vector<int64_t> steps;
  for (const auto& v : all.values) {
    if (!v) return;  // counted early by a retried join: the last arrival sums up
    steps.push_back(std::atoll(v->substr(0, v->find(' ')).c_str()));
  }
  s.set(StepsKey(g), Bytes(FormatSteps(SummarizeSteps(steps))));
}

}  // namespace ddp::worker::group
