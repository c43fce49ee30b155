// Generations on the store (see membership.h for the protocol).
#include "worker/comm/membership.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include <string>

#include "common/logging.h"
#include "worker/comm/deadline.h"
#include "worker/comm/work_util.h"

namespace ddp::worker {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kGenKey[] = "gen";
constexpr auto kPollInterval = std::chrono::milliseconds(10);

std::string GenPrefix(int64_t g) { return "gen" + std::to_string(g) + "/"; }
std::string ArrivedKey(int64_t g, int rank) {
  return GenPrefix(g) + "arrived/" + std::to_string(rank);
}

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

GroupMembership::GroupMembership(c10::intrusive_ptr<c10d::Store> store,
                                 c10::intrusive_ptr<c10d::Store> watch_store, int rank, int size,
                                 std::chrono::milliseconds timeout, CommunicatorMaker make)
    : store_(std::move(store)),
      watch_store_(std::move(watch_store)),
      rank_(rank),
      size_(size),
      timeout_(timeout),
      make_(std::move(make)) {}

GroupMembership::~GroupMembership() { StopWatch(); }

Status GroupMembership::Advance(int64_t g) {
  try {
    // Exactly one member wins the advance counter of g, so `gen` moves g -> g+1 once.
    if (store_->add(GenPrefix(g) + "advance", 1) == 1) {
      const int64_t now = store_->add(kGenKey, 1);
      DDP_LOG(INFO) << "membership: rank " << rank_ << " moved the group to generation " << now;
    }
    // The winner may not have moved `gen` yet: wait, so that Join reads the new generation.
    if (PollUntil(Clock::now() + timeout_, kPollInterval,
                  [&] { return store_->add(kGenKey, 0) > g; }) != PollOutcome::kDone) {
      return Status::DeadlineExceeded("membership: generation " + std::to_string(g) +
                                      " was not left within " + std::to_string(timeout_.count()) +
                                      "ms");
    }
  } catch (const std::exception& e) {
    return Status::Gone("membership: store lost while leaving generation " +
                               std::to_string(g) + ": " + BackendErrorText(e));
  }
  return Status::OK();
}

StatusOr<Formation> GroupMembership::Join(int64_t committed_step) {
  StopWatch();
  const auto deadline = Clock::now() + timeout_;
  Formation f;
  try {
    // 1. A new process whose earlier incarnation is still listed in the current generation.
    if (!joined_before_) {
      const int64_t g = store_->add(kGenKey, 0);
      if (store_->check({ArrivedKey(g, rank_)})) DDP_RETURN_IF_ERROR(Advance(g));
    } else if (generation_ >= 0) {
      DDP_RETURN_IF_ERROR(Advance(generation_));
    }
    joined_before_ = true;
    while (true) {
      // 2. Arrive in the current generation.
      const int64_t g = store_->add(kGenKey, 0);
      store_->set(ArrivedKey(g, rank_), Bytes(std::to_string(committed_step)));
      // 3. Wait for everyone, or for the generation to move on.
      std::vector<std::string> keys;
      for (int r = 0; r < size_; ++r) keys.push_back(ArrivedKey(g, r));
      const PollOutcome arrived =
          PollUntil(deadline, kPollInterval, [&] { return store_->check(keys); },
                    [&] { return store_->add(kGenKey, 0) != g; });
      if (arrived == PollOutcome::kAborted) continue;  // the generation moved on: arrive anew
      if (arrived == PollOutcome::kDeadline) {
        std::string missing;
        for (int r = 0; r < size_; ++r) {
          if (!store_->check({keys[static_cast<size_t>(r)]})) {
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
          }
        }
        return Status::DeadlineExceeded(
            "membership: generation " + std::to_string(g) + " did not re-form within " +
            std::to_string(timeout_.count() / 1000) + "s: rank(s) " + missing + " of " +
            std::to_string(size_) + " never arrived");
      }
      // 4. Steps, then the communicator.
      f.generation = g;
      f.committed_steps.assign(static_cast<size_t>(size_), -1);
      for (int r = 0; r < size_; ++r) {
        const std::vector<uint8_t> v = store_->get(keys[static_cast<size_t>(r)]);
        f.committed_steps[static_cast<size_t>(r)] = std::stoll(std::string(v.begin(), v.end()));
      }
      break;
    }
  } catch (const std::exception& e) {
    return Status::Gone("membership: store lost while joining: " + BackendErrorText(e));
  }
  generation_ = f.generation;
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(GenPrefix(f.generation) + "comm", store_);
  auto comm = make_(prefixed, rank_, size_);
  if (!comm.ok()) {
    return comm.status().WithContext("generation " + std::to_string(f.generation));
  }
  f.comm = std::move(*comm);
  return f;
}

void GroupMembership::Watch(Communicator* comm, std::chrono::milliseconds interval) {
  StopWatch();
  watch_stop_ = false;
  const int64_t mine = generation_;
  watcher_ = std::thread([this, comm, interval, mine] {
    while (!watch_stop_.load()) {
      try {
        if (watch_store_->add(kGenKey, 0) > mine) {
          comm->Abort();
          return;
        }
      } catch (const std::exception&) {
        // The store is gone: pod 0's supervisor exited (the job ended there) or was lost. Its
        // trainer went with it, so a collective still waiting fails on its own sockets; an
        // abort here could only turn a finished job's last barrier into a failure.
        return;
      }
      PollUntil(Clock::now() + interval, kPollInterval, [this] { return watch_stop_.load(); });
    }
  });
}

void GroupMembership::StopWatch() {
  watch_stop_ = true;
  if (watcher_.joinable()) watcher_.join();
}

}  // namespace ddp::worker
