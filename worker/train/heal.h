// In-place recovery's state transfer: after a group re-formed (membership.h), every member behind
// the latest committed step receives the whole training state from a member at that step, by
// broadcast into its own tensors (nothing serialized but a small header); no file is read.
#ifndef DDP_WORKER_TRAIN_HEAL_H_
#define DDP_WORKER_TRAIN_HEAL_H_

#include <cstdint>
#include <functional>
#include <vector>

#include <c10/core/Device.h>

#include "common/status.h"
#include "worker/comm/communicator.h"
#include "worker/train/train_state.h"

namespace torch::nn {
class Module;
}
namespace torch::optim {
class AdamW;
}

namespace ddp::worker {

struct HealPlan {
  int64_t step = -1;   // the group's latest committed step; -1: nobody has state (a new round)
  int source = -1;     // the lowest rank at `step`; -1 when step is -1
  int behind = 0;      // members below `step` (0: nothing to send)
};

// Pure. `committed_steps` by rank, -1 for a member without state.
HealPlan PlanHeal(const std::vector<int64_t>& committed_steps);

// The state's tensors move in chunks of about this many bytes (the memory a chunk's coalesced
// copy takes beyond the state).
inline constexpr int64_t kHealChunkBytes = int64_t{64} << 20;

struct HealOptions {
  int64_t chunk_bytes = kHealChunkBytes;  // tests make it small, to cut a heal between chunks
  // Puts this member's model back to a known state (the seed's parameters and buffers): called
  // on a receiver whose transfer stopped after some of its tensors were overwritten. Its
  // optimizer state is cleared besides. Required where a transfer can be cut (always, in training).
  std::function<Status()> reset;
};

// Collective (every member, same plan): when plan.behind > 0, the source broadcasts a header
// (`*progress`, the random generators' states, the model's layout, the optimizer's step counts),
// every member says whether it fits its model (one all-reduce), then the source broadcasts its
// parameters, buffers and AdamW moments into every member's own tensors, in chunks of
// options.chunk_bytes. Members with `my_step` < plan.step take *progress and the generators once
// every tensor arrived; until then their progress->step is -1. All or nothing: a receiver whose
// transfer is cut off after its first tensor moved is put back to a known state before the
// error returns (options.reset for the model, its optimizer state cleared): never a mix of the
// source's state and its own that a later fresh start would keep.
// Nothing happens when plan.behind is 0 or step is -1. Errors: the communicator's (the group must
// re-form again); DataLoss on the member whose model the state does not fit (another model config:
// a permanent error, named), and Unavailable on the others (they re-form without it).
Status TransferState(Communicator* comm, const HealPlan& plan, int64_t my_step,
                     const c10::Device& device, torch::nn::Module& model,
                     torch::optim::AdamW& opt, TrainProgress* progress,
                     const HealOptions& options = {});

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_HEAL_H_
