// A pod's view of the group, watched (see pod_watch.h).
#include "worker/group/pod_watch.h"

#include <cstdlib>
#include <thread>

#include "common/logging.h"
#include "worker/comm/watch.h"
#include "worker/comm/work_util.h"
#include "worker/group/keys.h"
#include "worker/group/rejoin.h"

namespace ddp::worker::group {
namespace {

// The keys of a poll, in the order ReadPod lists them.
std::vector<std::string> KeysOf(const PodKeys& k) {
  std::vector<std::string> keys = {VerdictKey(k.identity), FencedKey(k.identity),
                                   AssignedKey(k.identity), kStopKey, kAbandonKey, kFinishedKey,
                                   kEpochKey, kMembersKey, kBudgetKey, kRecoveriesKey,
                                   k.holding >= 0 ? NodeKey(k.holding) : std::string()};
  for (int r : k.ranks) keys.push_back(StallKey(r));
  return keys;
}

std::string Or(const std::optional<std::string>& v) { return v ? *v : ""; }

}  // namespace

PodPoll ReadPod(c10d::Store& store, const PodKeys& k, std::chrono::milliseconds wait,
                const PodPoll* last) {
  const std::vector<std::string> keys = KeysOf(k);
  // What `last` read of each key (a condition holds once a key differs from it).
  std::vector<std::string> known(keys.size());
  if (last != nullptr) {
    known[0] = last->verdict;
    known[2] = last->node >= 0 ? std::to_string(last->node) : "";
    known[3] = last->stop ? "1" : "";
    known[4] = last->abandon;
    known[5] = last->finished ? "1" : "";
    known[6] = last->epoch;
    known[7] = last->members;
    known[8] = last->budget_text;
    known[9] = last->recoveries_text;
    known[10] = last->holder;
    for (size_t i = 0; i < k.ranks.size(); ++i) {
      auto it = last->stalls.find(k.ranks[i]);
      known[11 + i] = it == last->stalls.end() ? "" : it->second;
    }
  }
  std::vector<Condition> conds;
  for (size_t i = 0; i < keys.size(); ++i) {
    // The node rank's key is left out while none is held: an empty key matches nothing.
    if (keys[i].empty()) continue;
    // Once fenced, a pod stays fenced: its fence is read, never waited on (its reason is not
    // kept; a condition that never holds).
    conds.push_back(i == 1 && last != nullptr && last->fenced ? AtLeast(keys[i], INT64_MAX)
                                                              : Changed(keys[i], known[i]));
  }
  const WatchResult r = WatchKeys(store, conds, last == nullptr ? std::chrono::milliseconds(0) : wait);
  // Back to the full list's positions (the node rank's key may have been left out).
  std::vector<std::optional<std::string>> v;
  for (size_t i = 0, j = 0; i < keys.size(); ++i) {
    v.push_back(keys[i].empty() ? std::nullopt : r.values[j++]);
  }
  PodPoll p;
  p.verdict = Or(v[0]);
  p.fenced = v[1].has_value();
  const std::string assigned = Or(v[2]);
  p.node = assigned.empty() ? -1 : std::atoi(assigned.c_str());
  p.stop = v[3].has_value();
  p.abandon = Or(v[4]);
  p.finished = v[5].has_value();
  p.epoch = Or(v[6]);
  p.members = Or(v[7]);
  p.budget_text = Or(v[8]);
  p.recoveries_text = Or(v[9]);
  if (v[8] && v[9]) {
    Charge c;
    c.left = std::max<int64_t>(0, std::atoll(v[8]->c_str()));
    c.recoveries = std::atoll(v[9]->c_str());
    p.budget = c;
  }
  p.holder = Or(v[10]);
  if (k.holding >= 0 && p.holder == k.identity) p.node = k.holding;
  for (size_t i = 0; i < k.ranks.size(); ++i) {
    if (const std::string id = Or(v[11 + i]); !id.empty()) p.stalls[k.ranks[i]] = id;
  }
  return p;
}

struct PodWatch::Shared {
  std::mutex mu;
  PodPoll latest;
  PodKeys latest_keys;  // what `latest` read
  PodKeys keys;         // what to read next
  bool started = false;
  std::atomic<bool> stop{false};
};

PodWatch::~PodWatch() {
  if (shared_) shared_->stop = true;
}

void PodWatch::Start(c10::intrusive_ptr<c10d::Store> store, const PodKeys& keys, PodPoll first) {
  if (shared_) shared_->stop = true;  // the old thread ends after its current wait
  auto shared = std::make_shared<Shared>();
  shared->latest = std::move(first);
  shared->latest_keys = keys;
  shared->keys = keys;
  shared->started = true;
  shared_ = shared;
  std::thread([shared, store] {
    while (!shared->stop.load()) {
      PodPoll last;
      PodKeys keys;
      {
        std::lock_guard<std::mutex> lock(shared->mu);
        last = shared->latest;
        keys = shared->keys;
        if (!(keys == shared->latest_keys)) last = PodPoll();  // other keys: read them at once
      }
      try {
        PodPoll now = ReadPod(*store, keys, kPodRefresh, &last);
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->latest = std::move(now);
        shared->latest_keys = keys;
      } catch (const std::exception& e) {
        DDP_LOG(WARNING) << "supervisor: store: " << BackendErrorText(e);
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->latest.store_ok = false;
        return;  // the owner registers again and starts another
      }
    }
  }).detach();
}

void PodWatch::Follow(const PodKeys& keys) {
  if (!shared_) return;
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->keys = keys;
}

bool PodWatch::Snapshot(const PodKeys& keys, PodPoll* out) const {
  if (!shared_) {
    *out = PodPoll();
    out->store_ok = false;
    return true;
  }
  std::lock_guard<std::mutex> lock(shared_->mu);
  if (!shared_->latest.store_ok) {
    *out = shared_->latest;
    return true;
  }
  if (!(shared_->latest_keys == keys)) return false;
  *out = shared_->latest;
  return true;
}

}  // namespace ddp::worker::group
