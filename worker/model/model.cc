// Model factory: validation of the model config and deterministic initialisation.
#include "worker/model/model.h"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "worker/model/gpt2.h"
#include "worker/model/mingpt.h"
#include "worker/model/torchscript_model.h"

namespace ddp::worker {
namespace {
namespace F = torch::nn::functional;

// Bengio-style MLP: embeds the whole context, flattens it and predicts the token that follows.
class Mlp : public LanguageModel {
 public:
  explicit Mlp(const ModelConfig& cfg) : cfg_(cfg) {
    emb_ = register_module("emb", torch::nn::Embedding(cfg.vocab_size, cfg.n_embd));
    fc1_ = register_module("fc1", torch::nn::Linear(cfg.block_size * cfg.n_embd, cfg.mlp_hidden));
    fc2_ = register_module("fc2", torch::nn::Linear(cfg.mlp_hidden, cfg.mlp_hidden));
    out_ = register_module("out", torch::nn::Linear(cfg.mlp_hidden, cfg.vocab_size));
  }
  torch::Tensor Loss(const torch::Tensor& x, const torch::Tensor& y) override {
    auto h = emb_->forward(x).flatten(1);
    h = F::gelu(fc2_->forward(F::gelu(fc1_->forward(h))));
    // Only the last target has the whole context behind it.
    return F::cross_entropy(out_->forward(h).to(at::kFloat), y.select(1, y.size(1) - 1));
  }
  double TrainFlopsPerToken() const override {
    return 6.0 * static_cast<double>(CountParameters(*this)) / static_cast<double>(cfg_.block_size);
  }

 private:
  ModelConfig cfg_;
  torch::nn::Embedding emb_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr}, out_{nullptr};
};

// GPT-2 style init: N(0, 0.02) weights, zero biases, LayerNorm at (1, 0). Done explicitly so
// the result depends only on the seed, not on LibTorch's default initialisers.
void InitWeights(torch::nn::Module& module) {
  torch::NoGradGuard no_grad;
  for (auto& m : module.modules(/*include_self=*/true)) {
    if (auto* lin = m->as<torch::nn::Linear>()) {
      torch::nn::init::normal_(lin->weight, 0.0, 0.02);
      if (lin->bias.defined()) torch::nn::init::zeros_(lin->bias);
    } else if (auto* emb = m->as<torch::nn::Embedding>()) {
      torch::nn::init::normal_(emb->weight, 0.0, 0.02);
    }
  }
}

Status Positive(const char* name, int64_t v) {
  if (v > 0) return Status::OK();
  return Status::InvalidArgument(std::string("model.") + name + " must be > 0, got " +
                                 std::to_string(v));
}

}  // namespace

int64_t CountParameters(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

StatusOr<std::shared_ptr<LanguageModel>> MakeModel(const ModelConfig& requested, uint64_t seed) {
  ModelConfig cfg = requested;
  if (cfg.kind == "torchscript") {
    // The weights are the file's: no seeded initialisation.
    auto ts = TorchScriptModel::Load(cfg.file);
    if (!ts.ok()) return ts.status();
    return std::shared_ptr<LanguageModel>(*ts);
  }
  if (IsGpt2Preset(cfg.kind)) {
    auto preset = ApplyGpt2Preset(cfg);
    if (!preset.ok()) return preset.status();
    cfg = *preset;
  }
  DDP_RETURN_IF_ERROR(Positive("vocab_size", cfg.vocab_size));
  DDP_RETURN_IF_ERROR(Positive("block_size", cfg.block_size));
  DDP_RETURN_IF_ERROR(Positive("n_embd", cfg.n_embd));
  torch::manual_seed(seed);
  std::shared_ptr<LanguageModel> model;
  if (cfg.kind == "mingpt" || IsGpt2Preset(cfg.kind)) {
    DDP_RETURN_IF_ERROR(Positive("n_layer", cfg.n_layer));
    DDP_RETURN_IF_ERROR(Positive("n_head", cfg.n_head));
    if (cfg.n_embd % cfg.n_head != 0) {
      return Status::InvalidArgument("model.n_embd (" + std::to_string(cfg.n_embd) +
                                     ") must be a multiple of model.n_head (" +
                                     std::to_string(cfg.n_head) + ")");
    }
    model = std::make_shared<MinGpt>(cfg);
  } else if (cfg.kind == "mlp") {
    DDP_RETURN_IF_ERROR(Positive("mlp_hidden", cfg.mlp_hidden));
    model = std::make_shared<Mlp>(cfg);
  } else {
    return Status::InvalidArgument("model: unknown kind '" + cfg.kind + "' (want mingpt, mlp, gpt2, gpt2-medium, gpt2-large or torchscript)");
  }
  InitWeights(*model);
  return model;
}

}  // namespace ddp::worker
