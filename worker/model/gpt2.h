// GPT-2 presets: the published GPT-2 sizes as minGPT configurations (tied embeddings, the
// vocabulary padded to a multiple of 64 for faster matmuls). Pure: no tensors.
#ifndef DDP_WORKER_MODEL_GPT2_H_
#define DDP_WORKER_MODEL_GPT2_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "worker/model/model.h"

namespace ddp::worker {

inline constexpr int64_t kGpt2VocabSize = 50257;   // the GPT-2 BPE tokenizer's vocabulary
inline constexpr int64_t kGpt2MaxBlockSize = 1024;  // GPT-2's context (wpe rows)
inline constexpr int64_t kVocabPadMultiple = 64;

// gpt2 | gpt2-medium | gpt2-large.
bool IsGpt2Preset(const std::string& kind);

// `cfg` with the preset's n_layer / n_head / n_embd, tie_embeddings on and vocab_size rounded up
// to a multiple of 64 (50257 -> 50304); block_size stays the configured one.
// InvalidArgument when kind is not a preset or block_size exceeds 1024.
StatusOr<ModelConfig> ApplyGpt2Preset(const ModelConfig& cfg);

// Rounds up to a multiple of kVocabPadMultiple. REQUIRES: v > 0.
int64_t PadVocab(int64_t v);

}  // namespace ddp::worker

#endif  // DDP_WORKER_MODEL_GPT2_H_
