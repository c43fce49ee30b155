// Reducer with 2 real processes over Gloo. Expected gradients come from an independent
// single-process reference: each rank's batch run through its own copy of the model, averaged.
#include "worker/ddp/reducer.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <atomic>

#include "tests/worker_comm/group.h"
#include "tests/worker_comm/multiprocess.h"

namespace ddp::worker {
namespace {

using ddp::testing::CodesToString;
using ddp::testing::FreePort;
using ddp::testing::JoinGroup;
using ddp::testing::RunRanks;

constexpr int kWorld = 2;

// Same weights on every rank (seeded), 6 parameters: 96+16+256+16+48+3 floats.
torch::nn::Sequential MakeModel() {
  torch::manual_seed(7);
  return torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::Tanh(),
                               torch::nn::Linear(16, 16), torch::nn::Tanh(),
                               torch::nn::Linear(16, 3));
}

// Different data per rank and micro-step.
torch::Tensor Loss(torch::nn::Sequential& m, int rank, int step) {
  torch::manual_seed(1000 + 10 * rank + step);
  auto x = torch::randn({5, 6});
  auto y = torch::randn({5, 3});
  return torch::mse_loss(m->forward(x), y);
}

std::vector<torch::Tensor> Grads(torch::nn::Sequential& m) {
  std::vector<torch::Tensor> g;
  for (auto& p : m->parameters()) g.push_back(p.grad().clone());
  return g;
}

// Reference: gradients of micro-steps [first, last] summed, averaged over ranks.
// `weights`, when given, replaces the initial weights (the reference after optimizer steps).
std::vector<torch::Tensor> ReferenceGrads(int first, int last,
                                          const std::vector<torch::Tensor>& weights = {}) {
  auto m = MakeModel();
  if (!weights.empty()) {
    torch::NoGradGuard no_grad;
    auto ps = m->parameters();
    for (size_t i = 0; i < ps.size(); ++i) ps[i].copy_(weights[i]);
  }
  std::vector<torch::Tensor> sum;
  for (int r = 0; r < kWorld; ++r) {
    for (auto& p : m->parameters()) p.mutable_grad() = torch::Tensor();
    for (int s = first; s <= last; ++s) Loss(m, r, s).backward();
    auto g = Grads(m);
    if (sum.empty()) sum = g;
    else for (size_t i = 0; i < g.size(); ++i) sum[i] += g[i];
  }
  for (auto& t : sum) t /= kWorld;
  return sum;
}

bool AllClose(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::allclose(a[i], b[i], /*rtol=*/1e-5, /*atol=*/1e-7)) {
      std::fprintf(stderr, "tensor %zu differs: max abs diff %g\n", i,
                   (a[i] - b[i]).abs().max().item<double>());
      return false;
    }
  }
  return true;
}

// Every rank holds bit-identical tensors: compare with rank 0's copy.
bool SameOnAllRanks(Communicator* comm, const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> copy;
  for (auto& t : ts) copy.push_back(t.clone());
  if (!comm->Broadcast(copy, 0).ok()) return false;
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!torch::equal(copy[i], ts[i])) return false;
  }
  return true;
}

ReducerOptions SmallBuckets() {
  ReducerOptions o;
  o.first_bucket_cap_bytes = 64;  // bucket 0: last layer (12+192 bytes)
  o.bucket_cap_bytes = 256;       // bucket 1: middle layer, bucket 2: first layer
  return o;
}

void RunChildren(const std::function<int(int)>& fn) {
  auto codes = RunRanks(kWorld, [&](int rank) {
    torch::set_num_threads(1);
    return fn(rank);
  }, {std::chrono::seconds(90)});
  EXPECT_EQ(codes, std::vector<int>(kWorld, 0)) << CodesToString(codes);
}

TEST(ReducerTest, GradientsAreTheAverageAndBucketsOverlapBackward) {
  const int port = FreePort();
  RunChildren([&](int rank) {
    auto g = JoinGroup(port, kWorld, rank);
    CHILD_CHECK_OK(g.status());
    auto model = MakeModel();
    Reducer reducer(model->parameters(), g->comm.get(), SmallBuckets());
    CHILD_CHECK(reducer.buckets().size() == 3);
    CHILD_CHECK((reducer.buckets()[0].params == std::vector<size_t>{5, 4}));
    torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1));
    auto ref = MakeModel();
    torch::optim::SGD ref_sgd(ref->parameters(), torch::optim::SGDOptions(0.1));
    for (int step = 0; step < 2; ++step) {
      reducer.PrepareForBackward();
      Loss(model, rank, step).backward();
      CHILD_CHECK_OK(reducer.FinalizeBackward());
      auto want = ReferenceGrads(step, step, ref->parameters());
      CHILD_CHECK(AllClose(Grads(model), want));
      CHILD_CHECK(SameOnAllRanks(g->comm.get(), Grads(model)));

      const Reducer::Stats st = reducer.last_stats();
      CHILD_CHECK(st.buckets == 3);
      CHILD_CHECK(st.buckets_launched_in_backward == 3);  // every bucket launched by a hook
      CHILD_CHECK(st.allreduce_bytes == (96 + 16 + 256 + 16 + 48 + 3) * 4);
      // The first bucket went out before the last gradient was ready: overlap with backward.
      CHILD_CHECK(st.bucket_launch_seconds.size() == 3);
      CHILD_CHECK(st.bucket_launch_seconds[0] < st.backward_seconds);
      CHILD_CHECK(st.allreduce_seconds > 0 && st.exposed_allreduce_seconds >= 0);
      CHILD_CHECK(st.exposed_allreduce_seconds <= st.allreduce_seconds);  // a part of it

      sgd.step();
      sgd.zero_grad();  // zeroes in place (1.13) or drops the grads (2.x): both must work
      // The reference takes the same step with the averaged gradients.
      auto rp = ref->parameters();
      for (size_t i = 0; i < rp.size(); ++i) rp[i].mutable_grad() = want[i];
      ref_sgd.step();
      CHILD_CHECK(AllClose(model->parameters(), ref->parameters()));
    }
    CHILD_CHECK(SameOnAllRanks(g->comm.get(), model->parameters()));
    CHILD_CHECK_OK(g->comm->Barrier());
    return 0;
  });
}

// Counts collectives: no_sync must not communicate.
class CountingCommunicator : public Communicator {
 public:
  explicit CountingCommunicator(Communicator* inner) : inner_(inner) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::shared_ptr<Work> AllReduceSumAsync(at::Tensor& t) override {
    ++all_reduces;
    return inner_->AllReduceSumAsync(t);
  }
  Status Broadcast(std::vector<at::Tensor>& ts, int root) override { return inner_->Broadcast(ts, root); }
  Status Barrier() override { return inner_->Barrier(); }
  void Abort() override { inner_->Abort(); }
  std::string name() const override { return inner_->name(); }
  std::atomic<int> all_reduces{0};

 private:
  Communicator* inner_;
};

TEST(ReducerTest, NoSyncAccumulatesLocallyThenAveragesTheSum) {
  const int port = FreePort();
  RunChildren([&](int rank) {
    auto g = JoinGroup(port, kWorld, rank);
    CHILD_CHECK_OK(g.status());
    CountingCommunicator counting(g->comm.get());
    auto model = MakeModel();
    Reducer reducer(model->parameters(), &counting, SmallBuckets());
    for (auto& p : model->parameters()) p.mutable_grad().zero_();

    reducer.set_sync(false);
    reducer.PrepareForBackward();
    Loss(model, rank, 0).backward();
    CHILD_CHECK_OK(reducer.FinalizeBackward());  // no-op without sync
    CHILD_CHECK(counting.all_reduces == 0);
    // Local gradient only: the reference for this rank alone.
    auto local = MakeModel();
    Loss(local, rank, 0).backward();
    CHILD_CHECK(AllClose(Grads(model), Grads(local)));

    reducer.set_sync(true);
    reducer.PrepareForBackward();
    Loss(model, rank, 1).backward();
    CHILD_CHECK_OK(reducer.FinalizeBackward());
    CHILD_CHECK(counting.all_reduces == 3);
    CHILD_CHECK(AllClose(Grads(model), ReferenceGrads(0, 1)));
    CHILD_CHECK_OK(g->comm->Barrier());
    return 0;
  });
}

// Rank 1 never uses head_b: its hooks never fire there, yet both ranks must run the same
// collectives and end with head_b's gradient = (rank 0's + 0) / 2.
TEST(ReducerTest, ParametersWithoutGradientAreReducedAsZeros) {
  const int port = FreePort();
  RunChildren([&](int rank) {
    auto g = JoinGroup(port, kWorld, rank);
    CHILD_CHECK_OK(g.status());
    struct Heads {
      torch::nn::Linear a{nullptr}, b{nullptr};
      std::vector<torch::Tensor> params() const {
        auto ps = a->parameters();
        for (auto& p : b->parameters()) ps.push_back(p);
        return ps;
      }
      torch::Tensor Loss(int r) {
        torch::manual_seed(50 + r);
        auto x = torch::randn({3, 4});
        auto out = a->forward(x);
        if (r == 0) out = out + b->forward(x);  // rank 1 never touches head b
        return out.pow(2).sum();
      }
    };
    auto make = [] {
      torch::manual_seed(3);
      Heads h;
      h.a = torch::nn::Linear(4, 2);
      h.b = torch::nn::Linear(4, 2);
      return h;
    };
    Heads heads = make();
    ReducerOptions one_per_param;
    one_per_param.bucket_cap_bytes = 1;
    one_per_param.first_bucket_cap_bytes = 1;
    Reducer reducer(heads.params(), g->comm.get(), one_per_param);
    for (int step = 0; step < 2; ++step) {
      for (auto& p : heads.params()) p.mutable_grad() = torch::Tensor();  // zero_grad(set_to_none)
      reducer.PrepareForBackward();
      heads.Loss(rank).backward();
      CHILD_CHECK_OK(reducer.FinalizeBackward());
      CHILD_CHECK(reducer.last_stats().buckets == 4);
      if (step == 0) {
        // Buckets launch in order and bucket 0 holds head b's bias: on rank 1 nothing launches
        // early.
        CHILD_CHECK(reducer.last_stats().buckets_launched_in_backward == (rank == 0 ? 4 : 0));
      }
      // The rebuild after step 0 took rank 0's arrival order: rank 1, whose head b got no gradient,
      // has the same buckets (or the collectives above would not have matched).
      std::vector<torch::Tensor> layout;
      for (const BucketSpec& b : reducer.buckets()) {
        for (size_t p : b.params) layout.push_back(torch::tensor(static_cast<int64_t>(p)));
      }
      CHILD_CHECK(SameOnAllRanks(g->comm.get(), layout));

      // Reference: each rank's gradients on a fresh copy, a missing gradient counted as zero.
      std::vector<torch::Tensor> want;
      for (int r = 0; r < kWorld; ++r) {
        Heads h = make();
        h.Loss(r).backward();
        auto ps = h.params();
        for (size_t i = 0; i < ps.size(); ++i) {
          torch::Tensor gi = ps[i].grad().defined() ? ps[i].grad() : torch::zeros_like(ps[i]);
          if (want.size() <= i) want.push_back(gi / kWorld);
          else want[i] = want[i] + gi / kWorld;
        }
      }
      std::vector<torch::Tensor> got;
      for (auto& p : heads.params()) got.push_back(p.grad());
      CHILD_CHECK(AllClose(got, want));
      CHILD_CHECK(!torch::equal(want[2], torch::zeros_like(want[2])));  // head b did get rank 0's
    }
    CHILD_CHECK_OK(g->comm->Barrier());
    return 0;
  });
}

// Three bias-free matrices registered a, b, c but applied a, c, b: backward reaches b first,
// then c, then a, so gradients arrive 1, 2, 0, while the initial buckets (one parameter each)
// follow reverse registration, 2, 1, 0. After step 0 the buckets follow the arrival order, and
// every gradient stays bit-identical to a reducer that keeps its initial buckets (each element
// is still the same sum of the same two values).
struct Chain {
  torch::Tensor a, b, c;
  std::vector<torch::Tensor> params() const { return {a, b, c}; }
  torch::Tensor Loss(int rank, int step) const {
    torch::manual_seed(500 + 10 * rank + step);
    auto x = torch::randn({5, 6});
    auto y = torch::randn({5, 3});
    return torch::mse_loss(x.mm(a).tanh().mm(c).tanh().mm(b), y);
  }
};
Chain MakeChain() {
  torch::manual_seed(11);
  Chain ch;
  ch.a = (torch::randn({6, 8}) * 0.3).requires_grad_();
  ch.b = (torch::randn({8, 3}) * 0.3).requires_grad_();
  ch.c = (torch::randn({8, 8}) * 0.3).requires_grad_();
  return ch;
}

std::vector<std::vector<size_t>> Layout(const Reducer& r) {
  std::vector<std::vector<size_t>> l;
  for (const BucketSpec& b : r.buckets()) l.push_back(b.params);
  return l;
}

TEST(ReducerTest, BucketsAreRebuiltInArrivalOrderAfterTheFirstStep) {
  const int port = FreePort();
  RunChildren([&](int rank) {
    auto g = JoinGroup(port, kWorld, rank);
    CHILD_CHECK_OK(g.status());
    ReducerOptions rebuild;
    rebuild.bucket_cap_bytes = 1;
    rebuild.first_bucket_cap_bytes = 1;
    ReducerOptions fixed = rebuild;
    fixed.rebuild_buckets = false;
    Chain x = MakeChain(), y = MakeChain();
    Reducer rx(x.params(), g->comm.get(), rebuild);
    Reducer ry(y.params(), g->comm.get(), fixed);
    const std::vector<std::vector<size_t>> reverse = {{2}, {1}, {0}}, arrival = {{1}, {2}, {0}};
    CHILD_CHECK(Layout(rx) == reverse && Layout(ry) == reverse);
    Chain ref = MakeChain();
    for (int step = 0; step < 3; ++step) {
      for (auto* pair : {&x, &y}) {
        Reducer& r = pair == &x ? rx : ry;
        r.PrepareForBackward();
        pair->Loss(rank, step).backward();
        CHILD_CHECK_OK(r.FinalizeBackward());
        const Reducer::Stats st = r.last_stats();
        CHILD_CHECK(st.buckets == 3 && st.buckets_launched_in_backward == 3);
      }
      CHILD_CHECK(Layout(rx) == arrival);  // rebuilt after step 0, and only then
      CHILD_CHECK(Layout(ry) == reverse);
      // Reference: the average over ranks of each rank's gradient, computed here.
      std::vector<torch::Tensor> want(3);
      for (int r = 0; r < kWorld; ++r) {
        for (auto& p : ref.params()) p.mutable_grad() = torch::Tensor();
        ref.Loss(r, step).backward();
        auto ps = ref.params();
        for (size_t i = 0; i < 3; ++i) {
          want[i] = want[i].defined() ? want[i] + ps[i].grad() / kWorld : ps[i].grad() / kWorld;
        }
      }
      std::vector<torch::Tensor> gx, gy;
      for (auto& p : x.params()) gx.push_back(p.grad().clone());
      for (auto& p : y.params()) gy.push_back(p.grad().clone());
      CHILD_CHECK(AllClose(gx, want));
      for (size_t i = 0; i < 3; ++i) CHILD_CHECK(torch::equal(gx[i], gy[i]));
      // The same SGD step on all three copies, then gradients zeroed in place.
      torch::NoGradGuard no_grad;
      for (const Chain* ch : {&x, &y}) {
        for (auto& p : ch->params()) {
          p.sub_(p.grad() * 0.5);
          p.mutable_grad().zero_();
        }
      }
      auto rp = ref.params();
      for (size_t i = 0; i < 3; ++i) rp[i].sub_(want[i] * 0.5);
    }
    CHILD_CHECK(SameOnAllRanks(g->comm.get(), x.params()));
    CHILD_CHECK_OK(g->comm->Barrier());
    return 0;
  });
}

// A second backward through a parameter in one step is an error naming it (PyTorch's DDP raises
// too); the step's collectives still complete on every rank, and the next step is clean.
TEST(ReducerTest, GradientArrivingTwiceIsAnErrorNamingTheParameter) {
  const int port = FreePort();
  RunChildren([&](int rank) {
    auto g = JoinGroup(port, kWorld, rank);
    CHILD_CHECK_OK(g.status());
    torch::manual_seed(5);
    auto lin = torch::nn::Linear(3, 2);
    ReducerOptions opts;
    opts.param_names = {"head.weight", "head.bias"};
    Reducer reducer({lin->weight, lin->bias}, g->comm.get(), opts);
    auto x = torch::ones({1, 3});
    reducer.PrepareForBackward();
    lin->forward(x).sum().backward();
    lin->forward(x).sum().backward();  // second backward, same step
    Status st = reducer.FinalizeBackward();
    CHILD_CHECK(st.code() == StatusCode::kFailedPrecondition);
    CHILD_CHECK(st.message().find("'head.weight'") != std::string::npos ||
                st.message().find("'head.bias'") != std::string::npos);
    CHILD_CHECK(st.message().find("twice") != std::string::npos);
    lin->zero_grad();
    reducer.PrepareForBackward();
    lin->forward(x).sum().backward();
    CHILD_CHECK_OK(reducer.FinalizeBackward());
    // d/dW sum(Wx + b) = x^T = ones; d/db = 1: the same on both ranks, so the average too.
    CHILD_CHECK(torch::allclose(lin->weight.grad(), torch::ones({2, 3})));
    CHILD_CHECK(torch::allclose(lin->bias.grad(), torch::ones({2})));
    CHILD_CHECK_OK(g->comm->Barrier());
    return 0;
  });
}

// A tensor listed twice (tied weights) gets one bucket slot and the plain averaged gradient.
TEST(ReducerTest, TiedWeightsCountOnce) {
  const int port = FreePort();
  RunChildren([&](int rank) {
    auto g = JoinGroup(port, kWorld, rank);
    CHILD_CHECK_OK(g.status());
    auto make = [] {
      torch::manual_seed(11);
      return torch::nn::Linear(4, 4);
    };
    auto loss = [](torch::nn::Linear& lin, int r) {
      torch::manual_seed(70 + r);
      auto x = torch::randn({2, 4});
      return torch::matmul(lin->forward(x), lin->weight).pow(2).sum();  // weight used twice
    };
    auto lin = make();
    Reducer reducer({lin->weight, lin->bias, lin->weight}, g->comm.get());
    int64_t numel = 0;
    for (const auto& b : reducer.buckets()) numel += b.numel;
    CHILD_CHECK(numel == 16 + 4);
    reducer.PrepareForBackward();
    loss(lin, rank).backward();
    CHILD_CHECK_OK(reducer.FinalizeBackward());
    std::vector<torch::Tensor> want(2);
    for (int r = 0; r < kWorld; ++r) {
      auto ref = make();
      loss(ref, r).backward();
      want[0] = r == 0 ? ref->weight.grad() / kWorld : want[0] + ref->weight.grad() / kWorld;
      want[1] = r == 0 ? ref->bias.grad() / kWorld : want[1] + ref->bias.grad() / kWorld;
    }
    CHILD_CHECK(AllClose({lin->weight.grad(), lin->bias.grad()}, want));
    CHILD_CHECK_OK(g->comm->Barrier());
    return 0;
  });
}

TEST(ReducerTest, BroadcastModuleCopiesParametersAndBuffersOfRankZero) {
  const int port = FreePort();
  RunChildren([&](int rank) {
    auto g = JoinGroup(port, kWorld, rank);
    CHILD_CHECK_OK(g.status());
    auto make = [](int seed) {
      torch::manual_seed(seed);
      auto m = torch::nn::Sequential(torch::nn::Linear(3, 4), torch::nn::BatchNorm1d(4));
      torch::NoGradGuard no_grad;
      for (auto& b : m->buffers()) {
        if (b.is_floating_point()) b.fill_(seed + 0.25);
      }
      return m;
    };
    auto m = make(rank);  // different on every rank
    CHILD_CHECK_OK(BroadcastModule(*m, g->comm.get()));
    auto want = make(0);
    for (size_t i = 0; i < m->parameters().size(); ++i) {
      CHILD_CHECK(torch::equal(m->parameters()[i], want->parameters()[i]));
    }
    CHILD_CHECK(m->buffers().size() == want->buffers().size());
    for (size_t i = 0; i < m->buffers().size(); ++i) {
      CHILD_CHECK(torch::equal(m->buffers()[i], want->buffers()[i]));
    }
    return 0;
  });
}

}  // namespace
}  // namespace ddp::worker
