// minGPT: the GPT of the PyTorch DDP tutorial series (token + position embeddings, n_layer
// pre-LayerNorm blocks of causal self-attention and a 4x GELU MLP, a final LayerNorm and a head).
// No dropout: training is deterministic, which the resume and replica tests rely on.
#ifndef DDP_WORKER_MODEL_MINGPT_H_
#define DDP_WORKER_MODEL_MINGPT_H_

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "worker/model/model.h"

namespace ddp::worker {

// Multi-head causal self-attention. Uses the fused at::scaled_dot_product_attention on
// LibTorch >= 2.0 and an explicit masked softmax before that.
class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  CausalSelfAttentionImpl(int64_t n_embd, int64_t n_head);
  torch::Tensor forward(const torch::Tensor& x);  // [B, T, C] -> [B, T, C]

 private:
  int64_t n_head_;
  torch::nn::Linear qkv_{nullptr};
  torch::nn::Linear proj_{nullptr};
};
TORCH_MODULE(CausalSelfAttention);

class GptBlockImpl : public torch::nn::Module {
 public:
  GptBlockImpl(int64_t n_embd, int64_t n_head);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  CausalSelfAttention attn_{nullptr};
  torch::nn::Linear fc_{nullptr}, fc_proj_{nullptr};
};
TORCH_MODULE(GptBlock);

class MinGpt : public LanguageModel {
 public:
  // REQUIRES: cfg validated by MakeModel (n_embd % n_head == 0, all sizes > 0).
  explicit MinGpt(const ModelConfig& cfg);
  torch::Tensor Logits(const torch::Tensor& x);  // [B, T] -> [B, T, vocab]
  torch::Tensor Loss(const torch::Tensor& x, const torch::Tensor& y) override;
  double TrainFlopsPerToken() const override;

 private:
  ModelConfig cfg_;
  torch::nn::Embedding wte_{nullptr}, wpe_{nullptr};
  torch::nn::ModuleList blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
  torch::nn::Linear head_{nullptr};  // stays null with tie_embeddings
};

}  // namespace ddp::worker

#endif  // DDP_WORKER_MODEL_MINGPT_H_
