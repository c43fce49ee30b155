// State transfer from the member at the latest committed step (see heal.h).
#include "worker/train/heal.h"

#include <ATen/ATen.h>

#include <cstring>

namespace ddp::worker {

HealPlan PlanHeal(const std::vector<int64_t>& committed_steps) {
  HealPlan p;
  for (size_t r = 0; r < committed_steps.size(); ++r) {
    if (committed_steps[r] > p.step) {
      p.step = committed_steps[r];
      p.source = static_cast<int>(r);
    }
  }
  if (p.step < 0) return HealPlan{};
  for (int64_t s : committed_steps) p.behind += s < p.step ? 1 : 0;
  return p;
}

Status TransferState(Communicator* comm, const HealPlan& plan, int64_t my_step,
                     const c10::Device& device, torch::nn::Module& model,
                     torch::optim::Optimizer& opt, TrainProgress* progress) {
  if (plan.step < 0 || plan.behind == 0) return Status::OK();
  const bool source = comm->rank() == plan.source;
  std::string bytes;
  if (source) {
    auto payload = SerializeTrainState(model, opt, *progress);
    if (!payload.ok()) return payload.status();
    bytes = std::move(*payload);
  }
  // 1. The size, so that receivers can allocate; 2. the bytes. Gloo broadcasts CPU tensors and
  // NCCL CUDA ones: the buffers live on the communicator's device.
  const auto on = at::TensorOptions().device(device);
  const auto n_bytes = static_cast<int64_t>(bytes.size());
  std::vector<at::Tensor> size{at::full({1}, n_bytes, on.dtype(at::kLong))};
  DDP_RETURN_IF_ERROR(comm->Broadcast(size, plan.source).WithContext("heal: state size"));
  const int64_t n = size[0].cpu().item<int64_t>();
  at::Tensor buf = at::empty({n}, at::TensorOptions().dtype(at::kByte));
  if (source) std::memcpy(buf.data_ptr(), bytes.data(), bytes.size());
  std::vector<at::Tensor> payload{buf.to(device)};
  DDP_RETURN_IF_ERROR(comm->Broadcast(payload, plan.source).WithContext("heal: state"));
  if (my_step >= plan.step) return Status::OK();
  at::Tensor got = payload[0].cpu().contiguous();
  std::string received(static_cast<const char*>(got.data_ptr()), static_cast<size_t>(n));
  return RestoreTrainState(received, device, model, opt, progress)
      .WithContext("heal: restoring the state of rank " + std::to_string(plan.source) +
                   " at step " + std::to_string(plan.step));
}

}  // namespace ddp::worker
