// NCCL communicator and reducer on CUDA (label gpu). Skips cleanly without a CUDA device. CUDA is
// only touched in forked children, so the parent stays fork-safe.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include <unistd.h>

#include <thread>

#include "tests/worker_comm/group.h"
#include "tests/worker_comm/multiprocess.h"
#include "worker/ddp/reducer.h"

// ATen/cuda/Sleep.h's kernel launcher (a single thread spinning for `cycles` clocks on the
// current stream), declared weak: null where LibTorch has no CUDA, as in the CPU build.
namespace at::cuda {
__attribute__((weak)) void sleep(int64_t cycles);
}  // namespace at::cuda

namespace ddp::worker {
namespace {

using ddp::testing::CodesToString;
using ddp::testing::FreePort;
using ddp::testing::RunRanks;

int CudaDevices() {
  auto codes = RunRanks(1, [](int) { return std::min<int>(torch::cuda::device_count(), 8); },
                        {std::chrono::seconds(60)});
  return codes[0] < 0 ? 0 : codes[0];
}

TEST(NcclTest, SingleRankCollectivesAndReducer) {
  if (!HaveNccl()) GTEST_SKIP() << "built without NCCL";
  if (CudaDevices() < 1) GTEST_SKIP() << "no CUDA device";
  auto codes = RunRanks(1, [](int) {
    auto store = c10::make_intrusive<c10d::HashStore>();
    auto comm = MakeCommunicator(store, 0, 1, c10::Device(c10::kCUDA, 0), std::chrono::seconds(30));
    CHILD_CHECK_OK(comm.status());
    CHILD_CHECK((*comm)->name() == "nccl");
    auto opts = torch::TensorOptions().device(torch::kCUDA, 0);
    torch::Tensor t = torch::arange(1000, opts.dtype(torch::kFloat));
    CHILD_CHECK_OK((*comm)->AllReduceSumAsync(t)->Wait());
    CHILD_CHECK(torch::equal(t.cpu(), torch::arange(1000, torch::kFloat)));
    std::vector<torch::Tensor> ts = {torch::ones({3}, opts), torch::zeros({2}, opts.dtype(torch::kLong))};
    CHILD_CHECK_OK((*comm)->Broadcast(ts, 0));
    CHILD_CHECK_OK((*comm)->Barrier());

    torch::manual_seed(1);
    torch::nn::Linear lin(8, 4);
    lin->to(torch::Device(torch::kCUDA, 0));
    Reducer reducer(lin->parameters(), comm->get());
    auto x = torch::randn({6, 8}, opts);
    reducer.PrepareForBackward();
    lin->forward(x).pow(2).sum().backward();
    CHILD_CHECK_OK(reducer.FinalizeBackward());
    torch::Tensor got = lin->weight.grad().clone();
    // Closed form for one rank: d/dW sum((xW^T+b)^2) = 2 (xW^T+b)^T x.
    torch::Tensor want = 2 * torch::matmul((torch::matmul(x, lin->weight.t()) + lin->bias).t(), x);
    CHILD_CHECK(torch::allclose(got, want.detach(), 1e-4, 1e-5));
    return 0;
  }, {std::chrono::seconds(120)});
  EXPECT_EQ(codes, std::vector<int>{0}) << CodesToString(codes);
}

// World size 1 (NCCL refuses two ranks on one GPU): an all-reduce queued behind a two-second
// kernel on the compute stream is in flight when another thread aborts the communicator. Wait
// returns Unavailable, the Work completes once the queue drains, later launches fail at once
// without touching NCCL, and a new communicator on the same store (as a re-formed group makes)
// works. The kernel is ATen's at::cuda::sleep (ATen/cuda/Sleep.h), reached through a weak
// reference: it exists only in a CUDA LibTorch, and the test skips where it does not.
TEST(NcclTest, OneRankAbortsAQueuedCollectiveAndReinitializes) {
  if (!HaveNccl()) GTEST_SKIP() << "built without NCCL";
  if (at::cuda::sleep == nullptr) GTEST_SKIP() << "LibTorch without CUDA (no at::cuda::sleep)";
  if (CudaDevices() < 1) GTEST_SKIP() << "no CUDA device";
  auto codes = RunRanks(1, [](int) {
    using Clock = std::chrono::steady_clock;
    auto since = [](Clock::time_point t) {
      return std::chrono::duration<double>(Clock::now() - t).count();
    };
    auto store = c10::make_intrusive<c10d::HashStore>();
    const c10::Device dev(c10::kCUDA, 0);
    auto comm = MakeCommunicator(store, 0, 1, dev, std::chrono::seconds(60));
    CHILD_CHECK_OK(comm.status());
    auto opts = torch::TensorOptions().device(dev);
    torch::Tensor t = torch::ones({1 << 20}, opts);
    torch::cuda::synchronize();
    at::cuda::sleep(int64_t{4'000'000'000});  // ~2 s at 2 GHz, on the (default) compute stream
    auto work = (*comm)->AllReduceSumAsync(t);
    CHILD_CHECK(!work->IsCompleted());  // queued behind the sleep
    const auto start = Clock::now();
    std::thread aborter([&] { (*comm)->Abort(); });
    Status s = work->Wait();
    aborter.join();
    std::fprintf(stderr, "aborted -> %s after %.3fs\n", s.ToString().c_str(), since(start));
    CHILD_CHECK(s.code() == StatusCode::kUnavailable);
    while (!work->IsCompleted() && since(start) < 60.0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    CHILD_CHECK(work->IsCompleted());
    std::fprintf(stderr, "queue drained %.3fs after the abort\n", since(start));
    const auto refused = Clock::now();
    CHILD_CHECK((*comm)->AllReduceSumAsync(t)->Wait().code() == StatusCode::kUnavailable);
    CHILD_CHECK(since(refused) < 0.1);
    comm->reset();  // destroying an aborted communicator touches no NCCL handle

    const auto reinit = Clock::now();
    auto again = MakeCommunicator(store, 0, 1, dev, std::chrono::seconds(60));
    CHILD_CHECK_OK(again.status());
    std::fprintf(stderr, "re-initialised in %.3fs\n", since(reinit));
    torch::Tensor u = torch::arange(4096, opts.dtype(torch::kFloat));
    CHILD_CHECK_OK((*again)->AllReduceSumAsync(u)->Wait());
    CHILD_CHECK(torch::equal(u.cpu(), torch::arange(4096, torch::kFloat)));
    std::vector<torch::Tensor> ts = {torch::full({5}, 3.0, opts)};
    CHILD_CHECK_OK((*again)->Broadcast(ts, 0));
    CHILD_CHECK_OK((*again)->Barrier());
    CHILD_CHECK(torch::equal(ts[0].cpu(), torch::full({5}, 3.0)));
    return 0;
  }, {std::chrono::seconds(150)});
  EXPECT_EQ(codes, std::vector<int>{0}) << CodesToString(codes);
}

TEST(NcclTest, TwoRanksAllReduceMatchesClosedForm) {
  if (!HaveNccl()) GTEST_SKIP() << "built without NCCL";
  if (CudaDevices() < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  const int port = FreePort();
  auto codes = RunRanks(2, [&](int rank) {
    RendezvousConfig c;
    c.master_port = port;
    c.world_size = 2;
    c.rank = rank;
    c.local_world_size = 2;
    c.local_rank = rank;
    auto rv = JoinRendezvous(c);
    CHILD_CHECK_OK(rv.status());
    auto comm = MakeCommunicator(rv->store, rank, 2, c10::Device(c10::kCUDA, rank),
                                 std::chrono::seconds(30));
    CHILD_CHECK_OK(comm.status());
    auto opts = torch::TensorOptions().device(torch::kCUDA, rank);
    torch::Tensor t = torch::arange(1 << 20, opts.dtype(torch::kFloat)) * (rank + 1);
    CHILD_CHECK_OK((*comm)->AllReduceSumAsync(t)->Wait());
    CHILD_CHECK(torch::equal(t.cpu(), torch::arange(1 << 20, torch::kFloat) * 3));
    CHILD_CHECK_OK((*comm)->Barrier());
    return 0;
  }, {std::chrono::seconds(120)});
  EXPECT_EQ(codes, (std::vector<int>{0, 0})) << CodesToString(codes);
}

// What the unit tests' fake NcclApi (nccl_communicator_test.cc) assumes of NCCL and CUDA: an
// all-reduce whose peer never joins is released by Abort from another thread, Wait returns
// Unavailable long before the collective timeout, and the kernel then stops (IsCompleted), so
// its tensor could be reused. Rank 1 joins the communicator and then stays silent.
TEST(NcclTest, AbortReleasesACollectiveStuckOnASilentPeer) {
  if (!HaveNccl()) GTEST_SKIP() << "built without NCCL";
  if (CudaDevices() < 2) GTEST_SKIP() << "needs 2 CUDA devices";
  const int port = FreePort();
  ddp::testing::RunOptions options;
  options.timeout = std::chrono::seconds(120);
  options.stop_when_rank0_exits = true;
  auto codes = RunRanks(2, [&](int rank) {
    RendezvousConfig c;
    c.master_port = port;
    c.world_size = 2;
    c.rank = rank;
    c.local_world_size = 2;
    c.local_rank = rank;
    auto rv = JoinRendezvous(c);
    CHILD_CHECK_OK(rv.status());
    auto comm = MakeCommunicator(rv->store, rank, 2, c10::Device(c10::kCUDA, rank),
                                 std::chrono::seconds(60));
    CHILD_CHECK_OK(comm.status());
    CHILD_CHECK_OK((*comm)->Barrier());
    if (rank == 1) {
      while (true) pause();  // silent peer
    }
    auto opts = torch::TensorOptions().device(torch::kCUDA, 0);
    torch::Tensor t = torch::ones({1 << 20}, opts);
    auto work = (*comm)->AllReduceSumAsync(t);
    const auto start = std::chrono::steady_clock::now();
    std::thread aborter([&] { (*comm)->Abort(); });  // as the membership watcher would
    Status s = work->Wait();
    aborter.join();
    auto since = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    std::fprintf(stderr, "rank 0: aborted -> %s after %.2fs\n", s.ToString().c_str(), since());
    CHILD_CHECK(s.code() == StatusCode::kUnavailable);
    CHILD_CHECK(since() < 30.0);  // far below the 60 s collective timeout
    while (!work->IsCompleted() && since() < 30.0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::fprintf(stderr, "rank 0: the aborted kernel stopped after %.2fs\n", since());
    CHILD_CHECK(work->IsCompleted());
    return 0;
  }, options);
  EXPECT_EQ(codes[0], 0) << CodesToString(codes);
}

}  // namespace
}  // namespace ddp::worker
