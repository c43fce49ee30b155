// GPT-2 preset table.
#include "worker/model/gpt2.h"

namespace ddp::worker {
namespace {

struct Preset {
  const char* name;
  int64_t n_layer, n_head, n_embd;
};

// Radford et al. 2019, table 2 (the released 124M / 350M / 774M models).
constexpr Preset kPresets[] = {
    {"gpt2", 12, 12, 768},
    {"gpt2-medium", 24, 16, 1024},
    {"gpt2-large", 36, 20, 1280},
};

const Preset* Find(const std::string& kind) {
  for (const auto& p : kPresets) {
    if (kind == p.name) return &p;
  }
  return nullptr;
}

}  // namespace

bool IsGpt2Preset(const std::string& kind) { return Find(kind) != nullptr; }

int64_t PadVocab(int64_t v) { return (v + kVocabPadMultiple - 1) / kVocabPadMultiple * kVocabPadMultiple; }

StatusOr<ModelConfig> ApplyGpt2Preset(const ModelConfig& cfg) {
  const Preset* p = Find(cfg.kind);
  if (p == nullptr) return Status::InvalidArgument("model: '" + cfg.kind + "' is not a GPT-2 preset");
  if (cfg.block_size > kGpt2MaxBlockSize) {
    return Status::InvalidArgument("model.block_size " + std::to_string(cfg.block_size) + " exceeds " +
                                   cfg.kind + "'s context of " + std::to_string(kGpt2MaxBlockSize));
  }
  ModelConfig out = cfg;
  out.n_layer = p->n_layer;
  out.n_head = p->n_head;
  out.n_embd = p->n_embd;
  out.tie_embeddings = true;
  if (out.vocab_size > 0) out.vocab_size = PadVocab(out.vocab_size);
  return out;
}

}  // namespace ddp::worker
