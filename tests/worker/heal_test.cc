// The heal's state transfer (worker/train/heal.h) over a real Gloo group of three threads: the
// members behind get the source's parameters, buffers, AdamW state and progress bit for bit (so
// the next step is the same everywhere), and a member whose model differs is named and stopped
// before any tensor moves. Expected values come from the source's own tensors, not from output.
#include <gtest/gtest.h>

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include <thread>

#include "worker/comm/gloo_communicator.h"
#include "worker/train/foreach_adamw.h"
#include "worker/train/heal.h"

namespace ddp::worker {
namespace {

struct NetImpl : torch::nn::Module {
  explicit NetImpl(int hidden) {
    a = register_module("a", torch::nn::Linear(8, hidden));
    b = register_module("b", torch::nn::Linear(hidden, 4));
    scale = register_buffer("scale", torch::rand({4}));
  }
  torch::nn::Linear a{nullptr}, b{nullptr};
  at::Tensor scale;
};
TORCH_MODULE(Net);

struct Member {
  Net net;
  std::unique_ptr<torch::optim::AdamW> opt;
  TrainProgress progress;
  int64_t step = -1;  // optimizer steps applied; -1: no state

  explicit Member(int hidden, uint64_t seed) : net(nullptr) {
    torch::manual_seed(seed);
    net = Net(hidden);
    opt = std::make_unique<torch::optim::AdamW>(net->parameters(), torch::optim::AdamWOptions(1e-2));
  }
  // One AdamW step with gradients that depend on the step number only.
  void Step() {
    for (auto& p : net->parameters()) {
      p.mutable_grad() = torch::full_like(p, 0.01 * static_cast<double>(step + 2));
    }
    opt->step();
    step = std::max<int64_t>(step, 0) + 1;
  }
};

std::string Checksum(Member& m) {
  std::string out;
  for (const auto& t : m.net->parameters()) out += std::to_string(t.sum().item<double>()) + ",";
  for (const auto& t : m.net->buffers()) out += std::to_string(t.sum().item<double>()) + ",";
  return out;
}

// Runs TransferState on every member at once, each with its own Gloo communicator.
std::vector<Status> Heal(std::vector<Member*> members) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  const int n = static_cast<int>(members.size());
  std::vector<int64_t> steps;
  for (Member* m : members) steps.push_back(m->step);
  const HealPlan plan = PlanHeal(steps);
  std::vector<Status> out(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      GlooOptions o;
      o.interface = "lo";
      o.threads = 1;
      auto comm = GlooCommunicator::Create(store, r, n, std::chrono::seconds(30), o);
      if (!comm.ok()) {
        out[static_cast<size_t>(r)] = comm.status();
        return;
      }
      Member& m = *members[static_cast<size_t>(r)];
      out[static_cast<size_t>(r)] = TransferState(comm->get(), plan, m.step, at::kCPU, *m.net,
                                                   *m.opt, &m.progress);
      if (out[static_cast<size_t>(r)].ok()) m.step = m.progress.step;
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST(HealTest, TheMembersBehindGetTheSourcesStateBitForBitAndTakeTheSameNextStep) {
  Member source(16, 1), fresh(16, 2), behind(16, 3);
  for (int i = 0; i < 3; ++i) source.Step();
  behind.Step();
  source.progress.step = 3;
  source.progress.sampler.epoch = 1;
  source.progress.sampler.offset = 48;
  source.progress.world_size = 3;
  behind.progress.step = 1;
  ASSERT_NE(Checksum(fresh), Checksum(source));
  const auto got = Heal({&source, &fresh, &behind});
  for (const Status& s : got) ASSERT_TRUE(s.ok()) << s.ToString();
  for (Member* m : {&fresh, &behind}) {
    EXPECT_EQ(Checksum(*m), Checksum(source));
    EXPECT_EQ(m->progress.step, 3);
    EXPECT_EQ(m->progress.sampler.epoch, 1);
    EXPECT_EQ(m->progress.sampler.offset, 48);
    EXPECT_EQ(m->progress.world_size, 3);
    const auto mine = m->net->parameters();
    const auto theirs = source.net->parameters();
    for (size_t i = 0; i < mine.size(); ++i) {
      auto* a = AdamWStateOf(*m->opt, mine[i]);
      auto* b = AdamWStateOf(*source.opt, theirs[i]);
      ASSERT_NE(a, nullptr);
      EXPECT_EQ(a->step(), b->step());
      EXPECT_TRUE(torch::equal(a->exp_avg(), b->exp_avg()));
      EXPECT_TRUE(torch::equal(a->exp_avg_sq(), b->exp_avg_sq()));
    }
  }
  // The same next step everywhere, bit for bit.
  for (Member* m : {&source, &fresh, &behind}) m->Step();
  for (Member* m : {&fresh, &behind}) {
    const auto mine = m->net->parameters();
    const auto theirs = source.net->parameters();
    for (size_t i = 0; i < mine.size(); ++i) EXPECT_TRUE(torch::equal(mine[i], theirs[i]));
  }
}

TEST(HealTest, ASourceWithoutOptimizerStateLeavesNoneOnTheReceivers) {
  Member source(16, 1), stale(16, 2);
  source.step = 0;  // committed step 0: nothing applied yet
  stale.Step();     // a receiver whose own state must not survive (-1 below: no state)
  stale.step = -1;
  const auto got = Heal({&source, &stale});
  for (const Status& s : got) ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Checksum(stale), Checksum(source));
  for (const auto& p : stale.net->parameters()) EXPECT_EQ(AdamWStateOf(*stale.opt, p), nullptr);
}

TEST(HealTest, AMemberWithAnotherModelIsToldWhatDiffersAndTheOthersFormAgain) {
  Member source(16, 1), fresh(16, 2), other(12, 3);
  source.Step();
  const std::string fresh_before = Checksum(fresh);
  const auto got = Heal({&source, &fresh, &other});
  EXPECT_EQ(got[0].code(), StatusCode::kUnavailable) << got[0].ToString();
  EXPECT_EQ(got[1].code(), StatusCode::kUnavailable) << got[1].ToString();
  ASSERT_EQ(got[2].code(), StatusCode::kDataLoss) << got[2].ToString();
  EXPECT_NE(got[2].message().find("parameter a.weight Float [16, 8]"), std::string::npos)
      << got[2].ToString();
  EXPECT_NE(got[2].message().find("[12, 8]"), std::string::npos) << got[2].ToString();
  EXPECT_EQ(Checksum(fresh), fresh_before) << "no tensor moves when a member cannot take them";
  EXPECT_EQ(fresh.progress.step, 0) << "its progress untouched";
}

// A communicator whose broadcasts stop after `allowed` of them (the heal's header size and header
// take two): the heal is cut between two chunks of the state, on every member alike.
class CutAfter : public Communicator {
 public:
  CutAfter(std::unique_ptr<Communicator> inner, int allowed)
      : inner_(std::move(inner)), left_(allowed) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::shared_ptr<Work> AllReduceSumAsync(at::Tensor& t) override { return inner_->AllReduceSumAsync(t); }
  Status Broadcast(std::vector<at::Tensor>& ts, int root) override {
    if (left_-- <= 0) return Status::Unavailable("cut: the source went away");
    return inner_->Broadcast(ts, root);
  }
  Status Barrier() override { return inner_->Barrier(); }
  void Abort() override { inner_->Abort(); }
  std::string name() const override { return inner_->name(); }

 private:
  std::unique_ptr<Communicator> inner_;
  int left_;
};

// A heal cut off after some chunks leaves the receiver with nothing of the source's: its model
// back to the seed's, no optimizer state, no progress. So a fresh start of the group afterwards
// (the source gone, nobody with state) makes every replica the same and keeps them so, instead
// of one replica carrying half the source's AdamW moments into every later step.
TEST(HealTest, AHealCutBetweenChunksLeavesTheReceiverAtTheSeedAndTheReplicasAgreeAfterAFreshStart) {
  Member source(16, 1), receiver(16, 2), seed(16, 2);
  for (int i = 0; i < 3; ++i) source.Step();
  source.progress.step = 3;
  const HealPlan plan = PlanHeal({source.step, receiver.step});
  ASSERT_EQ(plan.source, 0);
  // Tiny chunks: parameters, buffer and moments take about ten; the cut comes after three.
  HealOptions opts;
  opts.chunk_bytes = 256;
  int resets = 0;
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<Status> got(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      GlooOptions o;
      o.interface = "lo";
      o.threads = 1;
      auto comm = GlooCommunicator::Create(store, r, 2, std::chrono::seconds(30), o);
      if (!comm.ok()) {
        got[static_cast<size_t>(r)] = comm.status();
        return;
      }
      CutAfter cut(std::move(*comm), 2 + 3);
      Member& m = r == 0 ? source : receiver;
      HealOptions mine = opts;
      mine.reset = [&]() -> Status {  // what the trainer does: ResetToSeed
        ++resets;
        torch::NoGradGuard no_grad;
        const auto to = m.net->parameters();
        const auto from = seed.net->parameters();
        for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
        const auto to_b = m.net->buffers();
        const auto from_b = seed.net->buffers();
        for (size_t i = 0; i < to_b.size(); ++i) to_b[i].copy_(from_b[i]);
        return Status::OK();
      };
      got[static_cast<size_t>(r)] =
          TransferState(&cut, plan, m.step, at::kCPU, *m.net, *m.opt, &m.progress, mine);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_FALSE(got[0].ok());
  ASSERT_FALSE(got[1].ok());
  EXPECT_EQ(resets, 1) << "only the receiver resets";
  // Some chunks did arrive: without the reset the receiver would hold a mix.
  EXPECT_EQ(receiver.progress.step, -1);
  EXPECT_EQ(Checksum(receiver), Checksum(seed));
  for (const auto& p : receiver.net->parameters()) {
    EXPECT_EQ(AdamWStateOf(*receiver.opt, p), nullptr) << "a moment of the source survived the cut";
  }
  // The source is gone; the group starts fresh: a new member's parameters to everyone (what
  // BroadcastModule does), then the same steps on both. The replicas stay bit-identical.
  Member other(16, 7);
  {
    torch::NoGradGuard no_grad;
    const auto to = receiver.net->parameters();
    const auto from = other.net->parameters();
    for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
  }
  receiver.step = other.step = -1;
  for (int i = 0; i < 3; ++i) {
    receiver.Step();
    other.Step();
  }
  const auto a = receiver.net->parameters();
  const auto b = other.net->parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << "replicas diverged";
}

}  // namespace
}  // namespace ddp::worker
