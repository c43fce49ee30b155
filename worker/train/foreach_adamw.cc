// ForeachAdamW::step: per parameter group, parameters grouped by their step count (the bias
// corrections depend on it), then the AdamW update as multi-tensor calls.
#include "worker/train/foreach_adamw.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>

namespace ddp::worker {
namespace {

// The key of a parameter in Optimizer::state_: LibTorch 1.13 uses the TensorImpl's address
// printed as a string (c10::guts::to_string), later versions the address itself.
template <typename Key>
Key StateKey(const at::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

struct Slice {  // the parameters of one group at one step count
  std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs;
};

}  // namespace

at::Tensor ForeachAdamW::step(LossClosure closure) {
  for (const auto& group : param_groups_) {
    if (static_cast<const torch::optim::AdamWOptions&>(group.options()).amsgrad()) {
      return torch::optim::AdamW::step(std::move(closure));
    }
  }
  torch::NoGradGuard no_grad;
  at::Tensor loss = {};
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  using Key = typename std::decay_t<decltype(state_)>::key_type;
  for (auto& group : param_groups_) {
    auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
    std::map<int64_t, Slice> by_step;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "AdamW does not support sparse gradients");
      const Key key = StateKey<Key>(p);
      auto it = state_.find(key);
      if (it == state_.end()) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
        it = state_.emplace(key, std::move(fresh)).first;
      }
      auto& st = static_cast<torch::optim::AdamWParamState&>(*it->second);
      st.step(st.step() + 1);
      Slice& s = by_step[st.step()];
      s.params.push_back(p);
      s.grads.push_back(p.grad());
      s.exp_avgs.push_back(st.exp_avg());
      s.exp_avg_sqs.push_back(st.exp_avg_sq());
    }
    const auto [beta1, beta2] = o.betas();
    for (auto& [step, s] : by_step) {
      // As the base class, in its order: decoupled weight decay, moments, bias-corrected step.
      if (o.weight_decay() != 0) at::_foreach_mul_(s.params, 1 - o.lr() * o.weight_decay());
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(step));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(step));
      at::_foreach_mul_(s.exp_avgs, beta1);
      at::_foreach_add_(s.exp_avgs, s.grads, 1 - beta1);
      at::_foreach_mul_(s.exp_avg_sqs, beta2);
      at::_foreach_addcmul_(s.exp_avg_sqs, s.grads, s.grads, 1 - beta2);
      std::vector<at::Tensor> denom = at::_foreach_sqrt(s.exp_avg_sqs);
      at::_foreach_div_(denom, std::sqrt(bias_correction2));
      at::_foreach_add_(denom, o.eps());
      at::_foreach_addcdiv_(s.params, s.exp_avgs, denom, -o.lr() / bias_correction1);
    }
  }
  return loss;
}

torch::optim::AdamWParamState* AdamWStateOf(torch::optim::AdamW& opt, const at::Tensor& p,
                                            bool create, bool amsgrad) {
  auto& state = opt.state();
  using Key = typename std::decay_t<decltype(state)>::key_type;
  const Key key = StateKey<Key>(p);
  auto it = state.find(key);
  if (it == state.end()) {
    if (!create) return nullptr;
    auto fresh = std::make_unique<torch::optim::AdamWParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
    if (amsgrad) fresh->max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
    it = state.emplace(key, std::move(fresh)).first;
  }
  return static_cast<torch::optim::AdamWParamState*>(it->second.get());
}

void EraseAdamWState(torch::optim::AdamW& opt, const at::Tensor& p) {
  auto& state = opt.state();
  using Key = typename std::decay_t<decltype(state)>::key_type;
  state.erase(StateKey<Key>(p));
}

}  // namespace ddp::worker
