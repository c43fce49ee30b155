// minGPT forward pass. The attention path is chosen at compile time from the LibTorch version.
#include "worker/model/mingpt.h"

#include <cmath>

#include <ATen/ops/linear.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/version.h>

namespace ddp::worker {
namespace F = torch::nn::functional;

CausalSelfAttentionImpl::CausalSelfAttentionImpl(int64_t n_embd, int64_t n_head) : n_head_(n_head) {
  qkv_ = register_module("qkv", torch::nn::Linear(n_embd, 3 * n_embd));
  proj_ = register_module("proj", torch::nn::Linear(n_embd, n_embd));
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t b = x.size(0), t = x.size(1), c = x.size(2), hs = c / n_head_;
  auto qkv = qkv_->forward(x).split(c, /*dim=*/2);
  // [B, T, C] -> [B, nh, T, hs]
  auto q = qkv[0].view({b, t, n_head_, hs}).transpose(1, 2);
  auto k = qkv[1].view({b, t, n_head_, hs}).transpose(1, 2);
  auto v = qkv[2].view({b, t, n_head_, hs}).transpose(1, 2);
  torch::Tensor y;
#if TORCH_VERSION_MAJOR >= 2
  y = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                       /*is_causal=*/true);
#else
  auto att = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hs)));
  // Built per call on the input's device: cheap next to the matmuls, and not a buffer, so the
  // reducer does not broadcast it and checkpoints do not carry it.
  auto future = at::ones({t, t}, x.options().dtype(at::kBool)).triu(1);
  att = att.masked_fill(future, -std::numeric_limits<float>::infinity());
  y = at::matmul(att.softmax(-1), v);
#endif
  y = y.transpose(1, 2).contiguous().view({b, t, c});
  return proj_->forward(y);
}

GptBlockImpl::GptBlockImpl(int64_t n_embd, int64_t n_head) {
  ln1_ = register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({n_embd})));
  attn_ = register_module("attn", CausalSelfAttention(n_embd, n_head));
  ln2_ = register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({n_embd})));
  fc_ = register_module("fc", torch::nn::Linear(n_embd, 4 * n_embd));
  fc_proj_ = register_module("fc_proj", torch::nn::Linear(4 * n_embd, n_embd));
}

torch::Tensor GptBlockImpl::forward(const torch::Tensor& x) {
  auto h = x + attn_->forward(ln1_->forward(x));
  return h + fc_proj_->forward(F::gelu(fc_->forward(ln2_->forward(h))));
}

MinGpt::MinGpt(const ModelConfig& cfg) : cfg_(cfg) {
  wte_ = register_module("wte", torch::nn::Embedding(cfg.vocab_size, cfg.n_embd));
  wpe_ = register_module("wpe", torch::nn::Embedding(cfg.block_size, cfg.n_embd));
  blocks_ = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg.n_layer; ++i) blocks_->push_back(GptBlock(cfg.n_embd, cfg.n_head));
  ln_f_ = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.n_embd})));
  if (!cfg.tie_embeddings) {
    head_ = register_module("head",
                            torch::nn::Linear(torch::nn::LinearOptions(cfg.n_embd, cfg.vocab_size)
                                                  .bias(false)));
  }
}

torch::Tensor MinGpt::Logits(const torch::Tensor& x) {
  const int64_t t = x.size(1);
  auto pos = at::arange(t, x.options().dtype(at::kLong));
  auto h = wte_->forward(x) + wpe_->forward(pos);
  for (const auto& block : *blocks_) h = block->as<GptBlock>()->forward(h);
  h = ln_f_->forward(h);
  // Tied: one [vocab, C] matrix embeds and predicts (GPT-2), so the reducer sees it once.
  return cfg_.tie_embeddings ? at::linear(h, wte_->weight) : head_->forward(h);
}

torch::Tensor MinGpt::Loss(const torch::Tensor& x, const torch::Tensor& y) {
  auto logits = Logits(x);
  return F::cross_entropy(logits.view({-1, logits.size(-1)}).to(at::kFloat), y.reshape({-1}));
}

double MinGpt::TrainFlopsPerToken() const {
  // PaLM appendix B: 6N for the weight matmuls plus 12 * L * T * C for attention scores.
  const double n = static_cast<double>(CountParameters(*this));
  return 6.0 * n + 12.0 * cfg_.n_layer * cfg_.block_size * cfg_.n_embd;
}

}  // namespace ddp::worker
