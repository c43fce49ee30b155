// A user's own model: a TorchScript module (scripted or traced in Python, saved with
// torch.jit.save) behind the LanguageModel interface, so the reducer, AdamW, checkpoints and
// metrics treat it like a built-in model. Owns loading and the forward contract; not training.
#ifndef DDP_WORKER_MODEL_TORCHSCRIPT_MODEL_H_
#define DDP_WORKER_MODEL_TORCHSCRIPT_MODEL_H_

#include <memory>
#include <string>

#include <torch/script.h>

#include "worker/model/model.h"

namespace ddp::worker {

// The module's forward(idx, targets) gets int64 [B, T] tensors and returns either the loss (a
// scalar) or logits [B, T, V] (then the loss is the mean cross-entropy against targets).
// Its parameters and buffers are registered here under their TorchScript names with '.' -> "__"
// (a torch::nn::Module name cannot hold '.'), sharing storage with the script module, so moving
// this module to a device or updating its parameters updates the script module too.
// Weights come from the file: every rank loads the same file (and rank 0's copy is broadcast).
// Not thread-safe.
class TorchScriptModel : public LanguageModel {
 public:
  // NotFound when `path` cannot be opened; InvalidArgument when it is not a TorchScript archive
  // or has no forward method.
  static StatusOr<std::shared_ptr<TorchScriptModel>> Load(const std::string& path);

  torch::Tensor Loss(const torch::Tensor& x, const torch::Tensor& y) override;
  double TrainFlopsPerToken() const override;  // 6 x parameters, the dense-model estimate

 private:
  explicit TorchScriptModel(torch::jit::Module module);
  torch::jit::Module module_;
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_MODEL_TORCHSCRIPT_MODEL_H_
