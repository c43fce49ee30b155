// ClipGradNorm: per-gradient norms in one multi-tensor call, their norm, one coefficient tensor.
#include "worker/train/clip.h"

#include <ATen/ATen.h>

namespace ddp::worker {

at::Tensor ClipGradNorm(const std::vector<at::Tensor>& params, double max_norm) {
  std::vector<at::Tensor> grads;
  grads.reserve(params.size());
  for (const auto& p : params) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return at::zeros({});
  const std::vector<at::Tensor> norms = at::_foreach_norm(grads, 2);
  at::Tensor total = at::linalg_vector_norm(at::stack(norms), 2);
  // A tensor, not a double: computed and applied on the device, in the order of the queue.
  at::Tensor coef = at::clamp_max(max_norm / (total + 1e-6), 1.0);
  for (auto& g : grads) g.mul_(coef);
  return total;
}

}  // namespace ddp::worker
