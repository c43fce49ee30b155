// In-place recovery's state transfer: after a group re-formed (membership.h), every member behind
// the latest committed step receives the whole training state from a member at that step.
// The bytes are a checkpoint payload (train_state.h), sent by broadcast; no file is read.
#ifndef DDP_WORKER_TRAIN_HEAL_H_
#define DDP_WORKER_TRAIN_HEAL_H_

#include <cstdint>
#include <vector>

#include <c10/core/Device.h>

#include "common/status.h"
#include "worker/comm/communicator.h"
#include "worker/train/train_state.h"

namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}

namespace ddp::worker {

struct HealPlan {
  int64_t step = -1;   // the group's latest committed step; -1: nobody has state (a new round)
  int source = -1;     // the lowest rank at `step`; -1 when step is -1
  int behind = 0;      // members below `step` (0: nothing to send)
};

// Pure. `committed_steps` by rank, -1 for a member without state.
HealPlan PlanHeal(const std::vector<int64_t>& committed_steps);

// Collective (every member, same plan): when plan.behind > 0, the source serializes model,
// optimizer and `*progress` and broadcasts the bytes; members with `my_step` < plan.step restore
// them into model, optimizer and *progress. Nothing happens when plan.behind is 0 or step is -1.
// Errors: the communicator's (the group must re-form again), DataLoss when the bytes do not
// restore into this model (a different model config on some rank: a permanent error).
Status TransferState(Communicator* comm, const HealPlan& plan, int64_t my_step,
                     const c10::Device& device, torch::nn::Module& model,
                     torch::optim::Optimizer& opt, TrainProgress* progress);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_HEAL_H_
