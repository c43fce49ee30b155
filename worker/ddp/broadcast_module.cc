// BroadcastModule: replicas start identical (parameters and buffers of rank 0).
#include <torch/nn/module.h>

#include "worker/ddp/reducer.h"

namespace ddp::worker {

Status BroadcastModule(torch::nn::Module& m, Communicator* comm) {
  if (comm->size() == 1) return Status::OK();
  std::vector<at::Tensor> tensors;
  for (const auto& p : m.parameters(/*recurse=*/true)) tensors.push_back(p.detach());
  for (const auto& b : m.buffers(/*recurse=*/true)) {
    if (b.defined()) tensors.push_back(b.detach());
  }
  if (tensors.empty()) return Status::OK();
  // detach() shares storage, so the in-place broadcast lands in the module.
  return comm->Broadcast(tensors, /*root=*/0).WithContext("broadcast parameters and buffers");
}

}  // namespace ddp::worker
