// Gradient clipping by global L2 norm that stays on the device.
#ifndef DDP_WORKER_TRAIN_CLIP_H_
#define DDP_WORKER_TRAIN_CLIP_H_

#include <ATen/core/Tensor.h>

#include <vector>

namespace ddp::worker {

// Scales the defined gradients of `params` in place so that their global L2 norm is at most
// `max_norm`, as PyTorch's torch.nn.utils.clip_grad_norm_ does (the same formula: coefficient
// max_norm / (norm + 1e-6), clamped to 1). Unlike LibTorch's C++ clip_grad_norm_, which returns
// the norm as a double and so waits for the device every step, nothing here is read on the host.
// Returns the total norm before clipping, a 0-dim tensor on the gradients' device (0 when no
// parameter has a gradient).
at::Tensor ClipGradNorm(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_CLIP_H_
