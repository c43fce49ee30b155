// Eval loss: fixed per-rank slices of the validation set, averaged over the group.
#include "worker/train/evaluate.h"

#include <cstdio>
#include <vector>

#include <ATen/ops/scalar_tensor.h>
#include <torch/utils.h>

#include "common/logging.h"
#include "worker/train/autocast.h"

namespace ddp::worker {

StatusOr<double> EvalLoss(LanguageModel& model, const TokenDataset& val, Communicator* comm,
                          const c10::Device& device, int64_t batches, int64_t batch_size,
                          bool bf16) {
  torch::NoGradGuard no_grad;
  const int64_t world = comm->size(), rank = comm->rank();
  double sum = 0;
  std::vector<int64_t> idx(static_cast<size_t>(batch_size));
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t j = 0; j < batch_size; ++j) idx[j] = ((b * batch_size + j) * world + rank) % val.size();
    at::Tensor x, y;
    DDP_RETURN_IF_ERROR(val.Batch(idx, &x, &y).WithContext("validation data"));
    BF16Autocast autocast(bf16);
    sum += model.Loss(x.to(device), y.to(device)).item<double>();
  }
  // float, as the step's loss agreement: every backend reduces it.
  at::Tensor t = at::scalar_tensor(sum / static_cast<double>(batches),
                                   at::TensorOptions().dtype(at::kFloat).device(device));
  DDP_RETURN_IF_ERROR(comm->AllReduceSumAsync(t)->Wait().WithContext("eval loss all-reduce"));
  return t.item<double>() / static_cast<double>(world);
}

Status RunEval(LanguageModel& model, const TokenDataset& val, Communicator* comm,
               const c10::Device& device, const TrainConfig& cfg, bool bf16, int64_t step,
               WorkerMetrics* m) {
  auto loss = EvalLoss(model, val, comm, device, cfg.eval_batches, cfg.batch_size, bf16);
  if (!loss.ok()) return loss.status().WithContext("eval at step " + std::to_string(step));
  if (comm->rank() == 0) {
    char line[96];
    std::snprintf(line, sizeof(line), "eval step %lld val_loss %.4f", static_cast<long long>(step), *loss);
    DDP_LOG(INFO) << line;
  }
  if (m != nullptr) m->val_loss.Get().Set(*loss);
  return Status::OK();
}

}  // namespace ddp::worker
