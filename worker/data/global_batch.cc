// Batch policy arithmetic.
#include "worker/data/global_batch.h"

namespace ddp::worker {

const char* BatchPolicyName(BatchPolicy p) {
  return p == BatchPolicy::kConstantGlobal ? "ConstantGlobal" : "ConstantPerRank";
}

bool ParseBatchPolicy(const std::string& name, BatchPolicy* out) {
  if (name == "ConstantGlobal") *out = BatchPolicy::kConstantGlobal;
  else if (name == "ConstantPerRank") *out = BatchPolicy::kConstantPerRank;
  else return false;
  return true;
}

StatusOr<GlobalBatch> ResolveGlobalBatch(const BatchSettings& s, int world) {
  const std::string w = std::to_string(world), b = std::to_string(s.batch_size);
  GlobalBatch g;
  g.micro_batch = s.batch_size;
  if (s.policy == BatchPolicy::kConstantPerRank) {
    g.samples = world * s.batch_size * s.grad_accum;
    return g;
  }
  if (s.global_batch_size > 0) {
    g.samples = s.global_batch_size;
    if (g.samples % (world * s.batch_size) != 0) {
      return Status::InvalidArgument(
          "batch policy ConstantGlobal: the global batch " + std::to_string(g.samples) +
          " does not split into whole per-rank batches at world size " + w + " (" + w + " x " +
          "batch " + b + " = " + std::to_string(world * s.batch_size) +
          " does not divide it); pick a global batch that every world size x batch divides");
    }
    return g;
  }
  if (s.global_batch_ranks <= 0) {
    return Status::InvalidArgument("batch policy ConstantGlobal needs a global batch: "
                                   "train.global_batch_size or train.global_batch_ranks");
  }
  g.samples = s.global_batch_ranks * s.batch_size * s.grad_accum;
  if (g.micro_batches() < world) {
    return Status::InvalidArgument(
        "batch policy ConstantGlobal: the global batch " + std::to_string(g.samples) + " is " +
        std::to_string(g.micro_batches()) + " micro-batches of " + b + ", fewer than the " + w +
        " ranks (global_batch_ranks " + std::to_string(s.global_batch_ranks) +
        " must be at least the largest world size)");
  }
  return g;
}

std::vector<int> UnevenWorldSizes(int64_t global, int64_t batch_size, int min_world,
                                  int max_world, int step) {
  std::vector<int> bad;
  if (step < 1 || batch_size < 1) return bad;
  for (int w = min_world; w <= max_world; w += step) {
    if (w >= 1 && global % (static_cast<int64_t>(w) * batch_size) != 0) bad.push_back(w);
  }
  return bad;
}

std::vector<std::vector<int64_t>> RankMicroBatches(const DistributedSampler& sampler,
                                                   const SamplerPosition& pos,
                                                   const GlobalBatch& g, int rank, int world) {
  const std::vector<int64_t> all = sampler.Take(pos, g.samples);
  std::vector<std::vector<int64_t>> mine;
  for (int64_t j = rank; j < g.micro_batches(); j += world) {
    mine.emplace_back(all.begin() + j * g.micro_batch, all.begin() + (j + 1) * g.micro_batch);
  }
  return mine;
}

double MicroBatchLossScale(const GlobalBatch& g, int world) {
  return static_cast<double>(world) * static_cast<double>(g.micro_batch) /
         static_cast<double>(g.samples);
}

}  // namespace ddp::worker
