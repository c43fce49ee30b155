// NcclCommunicator's locking, abort and clean-up logic on CPU, against a fake NcclApi that
// enforces NCCL's threading rules (fake_nccl_api.h). What only a GPU can prove (that
// ncclCommAbort releases a kernel stuck on a dead peer) is in nccl_test.cc (label gpu).
#include "worker/comm/nccl_communicator.h"

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include <atomic>
#include <functional>
#include <thread>

#include "tests/worker_comm/fake_nccl_api.h"

namespace ddp::worker {
namespace {

using ddp::testing::FakeNcclApi;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Polls `done` every millisecond until it holds or `limit` passes.
bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);  // the poll's interval
  }
  return true;
}

StatusOr<std::unique_ptr<Communicator>> Make(FakeNcclApi* api, std::chrono::milliseconds timeout) {
  return NcclCommunicator::Create(c10::make_intrusive<c10d::HashStore>(), 0, 1, 0, timeout, api);
}

// The membership watcher aborts while the training thread waits on a Work and the autograd
// thread launches: no two threads are ever inside NCCL at once, nothing touches the
// communicator once ncclCommAbort freed it, and every wait returns Unavailable promptly.
TEST(NcclCommunicatorTest, AbortRacesWithWaitAndLaunchesSafely) {
  for (int round = 0; round < 5; ++round) {
    FakeNcclApi api;
    api.auto_complete = false;  // collectives complete only when aborted: a peer is gone
    auto comm = Make(&api, 30s);
    ASSERT_TRUE(comm.ok()) << comm.status().ToString();
    Communicator* c = comm->get();
    std::atomic<bool> stop{false};
    std::atomic<int> waits_unavailable{0};
    auto trainer = [&] {
      at::Tensor t = at::ones({4});
      while (!stop) {
        Status s = c->AllReduceSumAsync(t)->Wait();
        if (s.code() == StatusCode::kUnavailable) ++waits_unavailable;
        if (!s.ok()) return;
      }
    };
    std::thread training(trainer), autograd(trainer);
    ASSERT_TRUE(PollUntil([&] { return api.async_error_calls() > 20; }));
    const auto t0 = Clock::now();
    c->Abort();
    const double abort_took = Since(t0);
    training.join();
    autograd.join();
    const double released_after = Since(t0);
    EXPECT_EQ(api.Violations(), "") << "round " << round;
    EXPECT_EQ(waits_unavailable.load(), 2);
    EXPECT_LT(abort_took, 1.0);
    EXPECT_LT(released_after, 1.0);  // far below the 30 s collective timeout
    EXPECT_EQ(api.aborts(), 1);
    at::Tensor late = at::ones({1});
    EXPECT_EQ(c->AllReduceSumAsync(late)->Wait().code(), StatusCode::kUnavailable);
    comm->reset();
    EXPECT_EQ(api.Leaks(), "");
    EXPECT_EQ(api.Violations(), "");
  }
}

// An enqueue that stays ncclInProgress (NCCL cannot reach a peer) is released by Abort from
// another thread, and meanwhile no other launch issues an NCCL call.
TEST(NcclCommunicatorTest, AbortReleasesALaunchStuckInProgress) {
  FakeNcclApi api;
  auto comm = Make(&api, 30s);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  api.enqueue_in_progress_polls = -1;
  Communicator* c = comm->get();
  Status first, second;
  std::thread launcher([&] {
    at::Tensor t = at::ones({4});
    first = c->AllReduceSumAsync(t)->Wait();
  });
  std::thread other([&] {
    ASSERT_TRUE(PollUntil([&] { return api.async_error_calls() > 5; }));
    at::Tensor t = at::ones({4});
    second = c->AllReduceSumAsync(t)->Wait();  // must wait its turn, not enqueue now
  });
  ASSERT_TRUE(PollUntil([&] { return api.async_error_calls() > 20; }));
  const auto t0 = Clock::now();
  c->Abort();
  launcher.join();
  other.join();
  EXPECT_LT(Since(t0), 1.0);
  EXPECT_EQ(first.code(), StatusCode::kUnavailable) << first.ToString();
  EXPECT_EQ(second.code(), StatusCode::kUnavailable) << second.ToString();
  comm->reset();
  EXPECT_EQ(api.Violations(), "");
  EXPECT_EQ(api.Leaks(), "");
}

// A collective that never completes: Wait gives up at the timeout and aborts the communicator.
TEST(NcclCommunicatorTest, NeverCompletingCollectiveIsDeadlineExceeded) {
  FakeNcclApi api;
  api.auto_complete = false;
  auto comm = Make(&api, 300ms);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  at::Tensor t = at::ones({4});
  const auto t0 = Clock::now();
  Status s = (*comm)->AllReduceSumAsync(t)->Wait();
  const double took = Since(t0);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 3.0);
  EXPECT_EQ(api.aborts(), 1);
  EXPECT_EQ((*comm)->Barrier().code(), StatusCode::kUnavailable);
  comm->reset();
  EXPECT_EQ(api.Violations(), "");
  EXPECT_EQ(api.Leaks(), "");
}

// After an abort the kernel may still run for a while (NCCL stops it, not at once): the Work
// keeps its tensor alive, and reports IsCompleted() only once the collective drained, also when
// the Work is dropped first.
TEST(NcclCommunicatorTest, TensorsStayAliveUntilTheAbortedCollectiveDrains) {
  for (bool drop_work_first : {false, true}) {
    FakeNcclApi api;
    api.auto_complete = false;
    api.abort_drains = false;
    auto comm = Make(&api, 30s);
    ASSERT_TRUE(comm.ok()) << comm.status().ToString();
    at::Tensor t = at::ones({1000});
    c10::weak_intrusive_ptr<c10::StorageImpl> storage(t.storage().getWeakStorageImpl());
    std::shared_ptr<Work> work = (*comm)->AllReduceSumAsync(t);
    t = at::Tensor();  // the caller lets go: only the collective references the buffer now
    (*comm)->Abort();
    EXPECT_EQ(work->Wait().code(), StatusCode::kUnavailable);
    EXPECT_FALSE(work->IsCompleted()) << "the kernel has not drained";
    if (drop_work_first) work.reset();
    EXPECT_FALSE(storage.expired()) << "freed while the aborted collective may still write it";
    api.CompleteAll();
    if (!drop_work_first) {
      EXPECT_TRUE(work->IsCompleted());
      work.reset();
    }
    comm->reset();  // the communicator's clean-up releases what dropped Works left behind
    EXPECT_TRUE(storage.expired()) << "drop_work_first " << drop_work_first;
    EXPECT_EQ(api.Violations(), "");
    EXPECT_EQ(api.Leaks(), "");
  }
}

// Broadcast writes into the caller's tensors (a heal into live parameters): after a failure it
// returns only once the aborted kernel stopped, so nothing changes them afterwards.
TEST(NcclCommunicatorTest, AFailedBroadcastReturnsOnlyOnceItsKernelStopped) {
  FakeNcclApi api;
  api.auto_complete = false;
  api.abort_drains = false;
  auto comm = Make(&api, 30s);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  Communicator* c = comm->get();
  std::atomic<bool> returned{false}, stopped{false}, stopped_before_return{false};
  Status s;
  std::thread heal([&] {
    std::vector<at::Tensor> params = {at::ones({8}), at::ones({2}, at::kLong)};
    s = c->Broadcast(params, 0);
    stopped_before_return = stopped.load();
    returned = true;
  });
  ASSERT_TRUE(PollUntil([&] { return api.async_error_calls() > 5; }));
  c->Abort();
  EXPECT_FALSE(PollUntil([&] { return returned.load(); }, 200ms)) << "returned before the kernel stopped";
  stopped = true;
  api.CompleteAll();
  heal.join();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
  EXPECT_TRUE(stopped_before_return.load());
  comm->reset();
  EXPECT_EQ(api.Violations(), "");
  EXPECT_EQ(api.Leaks(), "");
}

// A communicator destroyed with a collective that never completes is aborted after the
// timeout, not waited for forever (ncclCommDestroy would wait for the stream).
TEST(NcclCommunicatorTest, DestroyingWithAStuckCollectiveAborts) {
  FakeNcclApi api;
  api.auto_complete = false;
  auto comm = Make(&api, 200ms);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  at::Tensor t = at::ones({4});
  auto work = (*comm)->AllReduceSumAsync(t);
  const auto t0 = Clock::now();
  comm->reset();
  EXPECT_LT(Since(t0), 3.0);
  EXPECT_EQ(api.aborts(), 1);
  EXPECT_EQ(api.destroys(), 0);
  EXPECT_EQ(work->Wait().code(), StatusCode::kUnavailable);
  work.reset();
  EXPECT_EQ(api.Violations(), "");
  EXPECT_EQ(api.Leaks(), "");
}

TEST(NcclCommunicatorTest, CleanShutdownDestroysEverything) {
  FakeNcclApi api;
  auto comm = Make(&api, 30s);
  ASSERT_TRUE(comm.ok()) << comm.status().ToString();
  at::Tensor t = at::arange(6, at::kFloat);
  ASSERT_TRUE((*comm)->AllReduceSumAsync(t)->Wait().ok());
  std::vector<at::Tensor> ts = {at::ones({3}), at::zeros({2}, at::kLong)};
  ASSERT_TRUE((*comm)->Broadcast(ts, 0).ok());
  ASSERT_TRUE((*comm)->Barrier().ok());
  comm->reset();
  EXPECT_EQ(api.destroys(), 1);
  EXPECT_EQ(api.aborts(), 0);
  EXPECT_EQ(api.Violations(), "");
  EXPECT_EQ(api.Leaks(), "");
}

// Every way creation can fail releases what it created: the NCCL communicator (aborted: a
// communicator that never became ready cannot be destroyed), the stream and the device buffer.
TEST(NcclCommunicatorTest, FailedCreationReleasesEverything) {
  struct Row {
    std::string what;
    std::function<void(FakeNcclApi&)> setup;
    StatusCode want;
    int aborts;
  };
  const std::vector<Row> rows = {
      {"immediate error with a handle", [](FakeNcclApi& a) { a.init_result = 2; },
       StatusCode::kUnavailable, 1},
      {"immediate error without a handle",
       [](FakeNcclApi& a) { a.init_result = 2, a.init_sets_handle = false; },
       StatusCode::kUnavailable, 0},
      {"in progress past the timeout",
       [](FakeNcclApi& a) { a.init_result = kNcclInProgress, a.init_polls = -1; },
       StatusCode::kDeadlineExceeded, 1},
      {"async error while in progress",
       [](FakeNcclApi& a) { a.init_result = kNcclInProgress, a.init_polls = 3, a.init_state = 6; },
       StatusCode::kUnavailable, 1},
      {"stream creation fails", [](FakeNcclApi& a) { a.stream_create_result = 2; },
       StatusCode::kUnavailable, 1},
      {"device buffer allocation fails", [](FakeNcclApi& a) { a.malloc_result = 2; },
       StatusCode::kUnavailable, 1},
  };
  for (const Row& r : rows) {
    FakeNcclApi api;
    r.setup(api);
    auto comm = Make(&api, 200ms);
    EXPECT_EQ(comm.status().code(), r.want) << r.what << ": " << comm.status().ToString();
    EXPECT_EQ(api.aborts(), r.aborts) << r.what;
    EXPECT_EQ(api.Leaks(), "") << r.what;
    EXPECT_EQ(api.Violations(), "") << r.what;
  }
}

}  // namespace
}  // namespace ddp::worker
