// ForeachAdamW against LibTorch's own AdamW: the same parameters and state after the same
// gradients, bit for bit on CPU, and state that either can continue.
#include "worker/train/foreach_adamw.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace ddp::worker {
namespace {

// Two groups as the trainer makes them (matrices decay, vectors do not); identical starting
// parameters for `n` optimizers.
struct Twin {
  std::vector<at::Tensor> decay, no_decay;
};
Twin MakeParams() {
  at::manual_seed(3);
  Twin t;
  t.decay = {at::randn({16, 8}).requires_grad_(true), at::randn({4, 4}).requires_grad_(true)};
  t.no_decay = {at::randn({8}).requires_grad_(true), at::randn({1}).requires_grad_(true)};
  return t;
}
Twin Clone(const Twin& t) {
  Twin c;
  for (const auto& p : t.decay) c.decay.push_back(p.detach().clone().requires_grad_(true));
  for (const auto& p : t.no_decay) c.no_decay.push_back(p.detach().clone().requires_grad_(true));
  return c;
}
template <typename Opt>
std::unique_ptr<torch::optim::AdamW> Make(const Twin& t) {
  auto opts = [](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(3e-2).betas({0.9, 0.95}).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(t.decay, opts(0.1));
  groups.emplace_back(t.no_decay, opts(0.0));
  return std::make_unique<Opt>(std::move(groups), torch::optim::AdamWOptions(3e-2));
}
std::vector<at::Tensor> All(const Twin& t) {
  std::vector<at::Tensor> all = t.decay;
  all.insert(all.end(), t.no_decay.begin(), t.no_decay.end());
  return all;
}
// The same pseudo-random gradient on both; parameter `skip` gets none this step.
void SetGrads(const Twin& a, const Twin& b, int step, int skip = -1) {
  auto pa = All(a), pb = All(b);
  for (size_t i = 0; i < pa.size(); ++i) {
    if (static_cast<int>(i) == skip) {
      pa[i].mutable_grad() = at::Tensor(), pb[i].mutable_grad() = at::Tensor();
      continue;
    }
    at::manual_seed(100 * step + static_cast<int>(i));
    at::Tensor g = at::randn(pa[i].sizes());
    pa[i].mutable_grad() = g.clone(), pb[i].mutable_grad() = g.clone();
  }
}
// Whether `key` is p's key in Optimizer's state: a printed address of p's TensorImpl in LibTorch
// 1.13, the address itself later.
template <typename Key>
bool IsKeyOf(const Key& key, const at::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream addr;
    addr << p.unsafeGetTensorImpl();
    return key == addr.str();
  } else {
    return static_cast<const void*>(key) == static_cast<const void*>(p.unsafeGetTensorImpl());
  }
}
const torch::optim::AdamWParamState* StateOf(const torch::optim::AdamW& o, const at::Tensor& p) {
  for (const auto& [key, st] : o.state()) {
    if (IsKeyOf(key, p)) return static_cast<const torch::optim::AdamWParamState*>(st.get());
  }
  return nullptr;
}
void ExpectSame(const Twin& a, const Twin& b, const torch::optim::AdamW& oa,
                const torch::optim::AdamW& ob, int step) {
  auto pa = All(a), pb = All(b);
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(at::equal(pa[i], pb[i])) << "parameter " << i << " after step " << step;
  }
  ASSERT_EQ(oa.state().size(), ob.state().size());
  for (size_t i = 0; i < pa.size(); ++i) {
    const auto* x = StateOf(oa, pa[i]);
    const auto* y = StateOf(ob, pb[i]);
    ASSERT_TRUE(x != nullptr && y != nullptr) << "parameter " << i << " has state on both";
    EXPECT_EQ(x->step(), y->step()) << "parameter " << i;
    EXPECT_TRUE(at::equal(x->exp_avg(), y->exp_avg())) << "parameter " << i;
    EXPECT_TRUE(at::equal(x->exp_avg_sq(), y->exp_avg_sq())) << "parameter " << i;
  }
}

TEST(ForeachAdamWTest, EqualsLibTorchsAdamWBitForBit) {
  Twin ref = MakeParams(), ours = Clone(ref);
  auto ref_opt = Make<torch::optim::AdamW>(ref);
  auto our_opt = Make<ForeachAdamW>(ours);
  for (int step = 1; step <= 6; ++step) {
    // Parameter 2 has no gradient at step 3, so its step count falls behind the others': the
    // update then runs at two step counts (two bias corrections) within one group.
    SetGrads(ref, ours, step, step == 3 ? 2 : -1);
    ref_opt->step();
    our_opt->step();
    ExpectSame(ours, ref, *our_opt, *ref_opt, step);
  }
  // The parameters moved (the comparison is not of two idle optimizers).
  EXPECT_FALSE(at::equal(ours.decay[0], MakeParams().decay[0]));
}

// The base class's step continues from state the foreach step made (same keys, same state), so
// checkpoints and healed state are interchangeable.
TEST(ForeachAdamWTest, LibTorchsStepContinuesFromItsState) {
  Twin ref = MakeParams(), ours = Clone(ref);
  auto ref_opt = Make<torch::optim::AdamW>(ref);
  auto our_opt = Make<ForeachAdamW>(ours);
  for (int step = 1; step <= 4; ++step) {
    SetGrads(ref, ours, step);
    ref_opt->step();
    if (step <= 2) {
      our_opt->step();
    } else {
      our_opt->torch::optim::AdamW::step();  // the base class from step 3 on
    }
    ExpectSame(ours, ref, *our_opt, *ref_opt, step);
  }
}

TEST(ForeachAdamWTest, AmsgradIsTheBaseClasssStep) {
  Twin ref = MakeParams(), ours = Clone(ref);
  std::vector<torch::optim::OptimizerParamGroup> g1, g2;
  g1.emplace_back(All(ref), std::make_unique<torch::optim::AdamWOptions>(
                                torch::optim::AdamWOptions(1e-2).amsgrad(true)));
  g2.emplace_back(All(ours), std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(1e-2).amsgrad(true)));
  torch::optim::AdamW ref_opt(std::move(g1), torch::optim::AdamWOptions(1e-2));
  ForeachAdamW our_opt(std::move(g2), torch::optim::AdamWOptions(1e-2));
  for (int step = 1; step <= 3; ++step) {
    SetGrads(ref, ours, step);
    ref_opt.step();
    our_opt.step();
    ExpectSame(ours, ref, our_opt, ref_opt, step);
  }
}

}  // namespace
}  // namespace ddp::worker
