// AdamW whose step is a handful of multi-tensor (ATen _foreach_*) calls instead of a loop of
// per-parameter kernels: LibTorch's C++ AdamW (1.13 and 2.x) has no foreach or fused option.
#ifndef DDP_WORKER_TRAIN_FOREACH_ADAMW_H_
#define DDP_WORKER_TRAIN_FOREACH_ADAMW_H_

#include <torch/optim/adamw.h>

namespace ddp::worker {

// torch::optim::AdamW with the same options, state (AdamWParamState: step, exp_avg, exp_avg_sq),
// serialisation and arithmetic, op for op, so checkpoints and healed state move between the two
// and a CPU step equals the base class's bit for bit. On CUDA each _foreach_* call is one
// multi-tensor kernel for all the parameters of a group (about 150 tensors in GPT-2 small)
// rather than one per tensor. amsgrad is delegated to the base class.
class ForeachAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  at::Tensor step(LossClosure closure = nullptr) override;
};

// The state `opt` keeps for parameter `p` (one of its parameters), nullptr when it has none yet
// (its first step makes one). With `create`, a missing one is made as that first step would:
// step 0, zero moments (and a zero max_exp_avg_sq with `amsgrad`).
torch::optim::AdamWParamState* AdamWStateOf(torch::optim::AdamW& opt, const at::Tensor& p,
                                            bool create = false, bool amsgrad = false);
// Drops the state of `p`, so that its next step starts afresh.
void EraseAdamWState(torch::optim::AdamW& opt, const at::Tensor& p);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_FOREACH_ADAMW_H_
