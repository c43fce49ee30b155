// Gloo communicator with real processes: all-reduce and broadcast against closed forms, and a dead
// or stuck peer turning into an error within the timeout instead of a hang.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <dirent.h>
#include <unistd.h>

#include <csignal>
#include <string>
#include <thread>

#include "tests/worker_comm/group.h"
#include "tests/worker_comm/multiprocess.h"
#include "worker/comm/deadline.h"

namespace ddp::worker {
namespace {

using ddp::testing::CodesToString;
using ddp::testing::FreePort;
using ddp::testing::JoinGroup;
using ddp::testing::OtherRanksExited;
using ddp::testing::RunOptions;
using ddp::testing::RunRanks;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Entries of a /proc directory: /proc/self/task (threads) or /proc/self/fd (open descriptors).
int CountEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] == '.' ? 0 : 1;
  closedir(d);
  return n;
}

TEST(GlooTest, AllReduceSumMatchesClosedForm) {
  const int world = 3, port = FreePort();
  auto codes = RunRanks(world, [&](int rank) {
    at::set_num_threads(1);
    auto g = JoinGroup(port, world, rank);
    CHILD_CHECK_OK(g.status());
    Communicator* comm = g->comm.get();
    CHILD_CHECK(comm->name() == "gloo" && comm->rank() == rank && comm->size() == world);
    // rank r holds (r+1) * i; the sum is (1+2+3) * i = 6i, exact in float for these sizes.
    at::Tensor small = at::arange(10, at::kFloat) * (rank + 1);
    at::Tensor big = at::arange(1 << 20, at::kDouble) * (rank + 1);  // several Gloo chunks
    auto w1 = comm->AllReduceSumAsync(small);
    auto w2 = comm->AllReduceSumAsync(big);  // two in flight at once
    CHILD_CHECK_OK(w1->Wait());
    CHILD_CHECK_OK(w2->Wait());
    CHILD_CHECK(w1->IsCompleted() && w2->IsCompleted());
    CHILD_CHECK(w2->seconds() > 0);
    CHILD_CHECK(at::equal(small, at::arange(10, at::kFloat) * 6));
    CHILD_CHECK(at::equal(big, at::arange(1 << 20, at::kDouble) * 6));
    CHILD_CHECK_OK(comm->Barrier());
    return 0;
  });
  EXPECT_EQ(codes, std::vector<int>(world, 0)) << CodesToString(codes);
}

TEST(GlooTest, BroadcastCopiesRootTensorsOfMixedDtypes) {
  const int world = 3, root = 1, port = FreePort();
  auto codes = RunRanks(world, [&](int rank) {
    at::set_num_threads(1);
    auto g = JoinGroup(port, world, rank);
    CHILD_CHECK_OK(g.status());
    std::vector<at::Tensor> ts = {at::full({3, 4}, rank + 1.0, at::kFloat),
                                  at::full({5}, (rank + 1) * 10.0, at::kDouble),
                                  at::full({2}, rank, at::kLong),
                                  at::full({7}, -rank - 0.5, at::kFloat)};
    CHILD_CHECK_OK(g->comm->Broadcast(ts, root));
    CHILD_CHECK(at::equal(ts[0], at::full({3, 4}, root + 1.0, at::kFloat)));
    CHILD_CHECK(at::equal(ts[1], at::full({5}, (root + 1) * 10.0, at::kDouble)));
    CHILD_CHECK(at::equal(ts[2], at::full({2}, root, at::kLong)));
    CHILD_CHECK(at::equal(ts[3], at::full({7}, -root - 0.5, at::kFloat)));
    CHILD_CHECK_OK(g->comm->Barrier());
    return 0;
  });
  EXPECT_EQ(codes, std::vector<int>(world, 0)) << CodesToString(codes);
}

TEST(GlooTest, BadTensorIsAnErrorNotACrash) {
  const int port = FreePort();
  auto codes = RunRanks(1, [&](int rank) {
    auto g = JoinGroup(port, 1, rank);
    CHILD_CHECK_OK(g.status());
    at::Tensor strided = at::zeros({4, 4}).t();
    Status s = g->comm->AllReduceSumAsync(strided)->Wait();
    CHILD_CHECK(s.code() == StatusCode::kInvalidArgument);
    std::vector<at::Tensor> none;
    CHILD_CHECK(g->comm->Broadcast(none, 3).code() == StatusCode::kInvalidArgument);
    return 0;
  });
  EXPECT_EQ(codes, std::vector<int>{0}) << CodesToString(codes);
}

// A write to a peer that reset the connection raises SIGPIPE (Gloo writes with writev); joining a
// group leaves SIGPIPE ignored so that such a write is an error, not the death of the rank. A
// handler the program installed itself stays.
TEST(GlooTest, JoiningIgnoresSigpipeUnlessTheProgramHandlesIt) {
  // Two independent one-rank groups: child 0 keeps the default disposition, child 1 has its own.
  auto codes = RunRanks(2, [&](int child) {
    void (*own)(int) = [](int) {};
    std::signal(SIGPIPE, child == 0 ? SIG_DFL : own);
    auto g = JoinGroup(FreePort(), 1, 0);
    CHILD_CHECK_OK(g.status());
    struct sigaction now {};
    CHILD_CHECK(sigaction(SIGPIPE, nullptr, &now) == 0);
    CHILD_CHECK(now.sa_handler == (child == 0 ? SIG_IGN : own));
    return 0;
  });
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << CodesToString(codes);
}

// Rank 1 exits after the setup barrier; rank 0's next all-reduce must fail within the timeout,
// and the aborted communicator must refuse further work at once.
TEST(GlooTest, DeadPeerIsAnErrorWithinTheTimeout) {
  const int port = FreePort();
  const auto timeout = std::chrono::seconds(3);
  auto codes = RunRanks(2, [&](int rank) {
    at::set_num_threads(1);
    auto g = JoinGroup(port, 2, rank, timeout);
    CHILD_CHECK_OK(g.status());
    CHILD_CHECK_OK(g->comm->Barrier());
    if (rank == 1) _exit(0);  // dies without a goodbye
    at::Tensor t = at::ones({1000});
    const auto start = Clock::now();
    Status s = g->comm->AllReduceSumAsync(t)->Wait();
    const double took = Since(start);
    std::fprintf(stderr, "rank 0: dead peer -> %s after %.2fs\n", s.ToString().c_str(), took);
    CHILD_CHECK(!s.ok());
    CHILD_CHECK(s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded);
    CHILD_CHECK(took < 3.0 + 5.0);
    Status again = g->comm->AllReduceSumAsync(t)->Wait();
    CHILD_CHECK(again.code() == StatusCode::kUnavailable);
    return 0;
  }, {std::chrono::seconds(60)});
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << CodesToString(codes);
}

// Rank 1 stays alive but never joins the collective: DeadlineExceeded after about the timeout.
TEST(GlooTest, StuckPeerIsDeadlineExceeded) {
  const int port = FreePort();
  const auto timeout = std::chrono::seconds(2);
  RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.stop_when_rank0_exits = true;
  auto codes = RunRanks(2, [&](int rank) {
    at::set_num_threads(1);
    auto g = JoinGroup(port, 2, rank, timeout);
    CHILD_CHECK_OK(g.status());
    CHILD_CHECK_OK(g->comm->Barrier());
    if (rank == 1) {
      // The simulated fault: alive, connected, silent. Killed by the parent when rank 0 is done.
      while (true) pause();
    }
    at::Tensor t = at::ones({10});
    const auto start = Clock::now();
    Status s = g->comm->AllReduceSumAsync(t)->Wait();
    const double took = Since(start);
    std::fprintf(stderr, "rank 0: stuck peer -> %s after %.2fs\n", s.ToString().c_str(), took);
    CHILD_CHECK(s.code() == StatusCode::kDeadlineExceeded);
    CHILD_CHECK(took >= 1.5 && took < 2.0 + 5.0);
    return 0;
  }, options);
  EXPECT_EQ(codes[0], 0) << CodesToString(codes);
}

// Abort() from another thread (a signal handler's helper, a watchdog) releases a blocked Wait long
// before the collective timeout.
TEST(GlooTest, AbortFromAnotherThreadReleasesWait) {
  const int port = FreePort();
  RunOptions options;
  options.timeout = std::chrono::seconds(60);
  options.stop_when_rank0_exits = true;
  auto codes = RunRanks(2, [&](int rank) {
    at::set_num_threads(1);
    auto g = JoinGroup(port, 2, rank, std::chrono::seconds(30));
    CHILD_CHECK_OK(g.status());
    CHILD_CHECK_OK(g->comm->Barrier());
    if (rank == 1) {
      while (true) pause();  // silent peer
    }
    at::Tensor t = at::ones({10});
    auto work = g->comm->AllReduceSumAsync(t);
    const auto start = Clock::now();
    std::thread aborter([&] { g->comm->Abort(); });
    Status s = work->Wait();
    aborter.join();
    const double took = Since(start);
    std::fprintf(stderr, "rank 0: aborted -> %s after %.2fs\n", s.ToString().c_str(), took);
    CHILD_CHECK(s.code() == StatusCode::kUnavailable);
    CHILD_CHECK(took < 10.0);  // far below the 30 s collective timeout
    return 0;
  }, options);
  EXPECT_EQ(codes[0], 0) << CodesToString(codes);
}


// Abort() is a real abort, not a flag: the Gloo work this rank has in flight fails at once
// (IsCompleted, long before the 30 s timeout), and the peer's connections close, so a collective
// the peer starts afterwards fails at once instead of pairing with the abandoned one.
TEST(GlooTest, AbortFailsTheWorkInFlightAndThePeersConnections) {
  const int port = FreePort();
  auto codes = RunRanks(2, [&](int rank) {
    at::set_num_threads(1);
    auto g = JoinGroup(port, 2, rank, std::chrono::seconds(30));
    CHILD_CHECK_OK(g.status());
    CHILD_CHECK_OK(g->comm->Barrier());
    at::Tensor t = at::ones({10});
    if (rank == 1) {
      // Only once rank 0 has aborted (it says so through the store).
      g->rendezvous.store->wait({"aborted"}, std::chrono::seconds(30));
      const auto start = Clock::now();
      Status s = g->comm->AllReduceSumAsync(t)->Wait();
      const double took = Since(start);
      std::fprintf(stderr, "rank 1: after the peer's abort -> %s after %.2fs\n", s.ToString().c_str(), took);
      CHILD_CHECK(s.code() == StatusCode::kUnavailable);
      CHILD_CHECK(took < 10.0);
      return 0;
    }
    auto work = g->comm->AllReduceSumAsync(t);
    // Rank 1 has not joined it and will not: for 200 ms it stays incomplete.
    CHILD_CHECK(PollUntil(Clock::now() + std::chrono::milliseconds(200), std::chrono::milliseconds(20),
                          [&] { return work->IsCompleted(); }) == PollOutcome::kDeadline);
    const auto start = Clock::now();
    g->comm->Abort();
    g->rendezvous.store->set("aborted", std::vector<uint8_t>{1});
    while (!work->IsCompleted() && Since(start) < 10.0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const double took = Since(start);
    std::fprintf(stderr, "rank 0: Gloo work completed %.2fs after the abort\n", took);
    CHILD_CHECK(work->IsCompleted());
    CHILD_CHECK(took < 5.0);
    CHILD_CHECK(work->Wait().code() == StatusCode::kUnavailable);
    CHILD_CHECK(OtherRanksExited(std::chrono::seconds(30)));  // keeps the store up for rank 1
    return 0;
  }, {std::chrono::seconds(60)});
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << CodesToString(codes);
}

// Every abort used to leak its c10d group (worker threads, a listening socket): a job with a
// failure every few seconds ran out of threads. 30 aborted groups, each with a collective in
// flight on rank 0 when it aborts and the peer's collective failing on the reset connections:
// once the background destruction caught up (polled with a deadline), both processes hold no
// more threads and descriptors than while the first group was alive.
TEST(GlooTest, RepeatedAbortsDoNotAccumulateThreadsOrSockets) {
  constexpr int kAborts = 30;
  const int port = FreePort();
  auto codes = RunRanks(2, [&](int rank) {
    at::set_num_threads(1);
    auto g = JoinGroup(port, 2, rank, std::chrono::seconds(30));
    CHILD_CHECK_OK(g.status());
    c10::intrusive_ptr<c10d::Store> store = g->rendezvous.store;
    std::unique_ptr<Communicator> comm = std::move(g->comm);
    int base_threads = 0, base_fds = 0;
    for (int i = 0; i < kAborts; ++i) {
      if (comm == nullptr) {
        auto c = MakeCommunicator(store, rank, 2, c10::Device(c10::kCPU), std::chrono::seconds(30));
        CHILD_CHECK_OK(c.status());
        comm = std::move(c).value();
      }
      CHILD_CHECK_OK(comm->Barrier());
      if (i == 0) {
        base_threads = CountEntries("/proc/self/task");
        base_fds = CountEntries("/proc/self/fd");
      }
      at::Tensor t = at::ones({1000});
      const std::string aborted = "aborted/" + std::to_string(i);
      if (rank == 0) {
        auto work = comm->AllReduceSumAsync(t);  // rank 1 never joins this one
        comm->Abort();
        CHILD_CHECK(work->Wait().code() == StatusCode::kUnavailable);
        store->set(aborted, std::vector<uint8_t>{1});
      } else {
        store->wait({aborted}, std::chrono::seconds(30));
        CHILD_CHECK(!comm->AllReduceSumAsync(t)->Wait().ok());  // its Wait aborts it too
      }
      comm.reset();
    }
    int threads = 0, fds = 0;
    const auto start = Clock::now();
    do {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // poll, 20 s deadline below
      threads = CountEntries("/proc/self/task");
      fds = CountEntries("/proc/self/fd");
    } while ((threads > base_threads || fds > base_fds) && Since(start) < 20.0);
    std::fprintf(stderr, "rank %d: after %d aborts: threads %d (baseline %d), fds %d (baseline %d)\n",
                 rank, kAborts, threads, base_threads, fds, base_fds);
    CHILD_CHECK(threads <= base_threads);
    CHILD_CHECK(fds <= base_fds);
    // Rank 0 hosts the store: it leaves last.
    if (rank == 0) CHILD_CHECK(OtherRanksExited(std::chrono::seconds(30)));
    return 0;
  }, {std::chrono::seconds(90)});
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << CodesToString(codes);
}

}  // namespace
}  // namespace ddp::worker
