// Models the trainer can train: minGPT (and its GPT-2 presets), an MLP and TorchScript modules,
// behind one interface. Owns model construction and deterministic initialisation; not the
// optimizer or the device.
#ifndef DDP_WORKER_MODEL_MODEL_H_
#define DDP_WORKER_MODEL_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "common/status.h"

namespace ddp::worker {

struct ModelConfig {
  // mingpt | mlp | gpt2 | gpt2-medium | gpt2-large (gpt2.h) | torchscript
  std::string kind = "mingpt";
  int64_t vocab_size = 0;       // set from the dataset
  int64_t block_size = 64;      // context length in tokens
  int64_t n_layer = 2;
  int64_t n_head = 2;
  int64_t n_embd = 64;
  int64_t mlp_hidden = 256;     // MLP only
  std::string file;             // torchscript: the saved module (torchscript_model.h)
  bool tie_embeddings = false;  // minGPT: the head reuses wte's weight (set by the GPT-2 presets)
};

// A next-token model. Not thread-safe (a torch::nn::Module).
class LanguageModel : public torch::nn::Module {
 public:
  // x, y: int64 [B, T] token ids, y being x shifted left by one.
  // Returns the mean cross-entropy loss (a scalar) of the model's predictions of y.
  virtual torch::Tensor Loss(const torch::Tensor& x, const torch::Tensor& y) = 0;
  // Approximate training FLOPs per token (forward + backward), for MFU.
  virtual double TrainFlopsPerToken() const = 0;
};

// Validates `cfg` (InvalidArgument naming the field) and builds the model with weights drawn from
// `seed` only: two calls with the same config and seed give bit-identical parameters.
StatusOr<std::shared_ptr<LanguageModel>> MakeModel(const ModelConfig& cfg, uint64_t seed);

// Number of scalar parameters.
int64_t CountParameters(const torch::nn::Module& module);

}  // namespace ddp::worker

#endif  // DDP_WORKER_MODEL_MODEL_H_
