// The batch policies' arithmetic: how large a step's global batch is at a world size, and which
// of its samples each rank takes. Pure; the sampler (sampler.h) owns the order they come from.
#ifndef DDP_WORKER_DATA_GLOBAL_BATCH_H_
#define DDP_WORKER_DATA_GLOBAL_BATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/data/sampler.h"

namespace ddp::worker {

// spec.elastic.batchPolicy (env DDP_BATCH_POLICY). ConstantPerRank: each rank takes
// grad_accum batches of batch_size per step, so the global batch follows the world size.
// ConstantGlobal: the global batch is fixed and a smaller world accumulates more micro-batches.
enum class BatchPolicy { kConstantPerRank, kConstantGlobal };
const char* BatchPolicyName(BatchPolicy p);  // "ConstantPerRank" | "ConstantGlobal"
bool ParseBatchPolicy(const std::string& name, BatchPolicy* out);  // false on an unknown name

struct BatchSettings {
  BatchPolicy policy = BatchPolicy::kConstantPerRank;
  int64_t batch_size = 1;          // samples per micro-batch (forward and backward) on a rank
  int64_t grad_accum = 1;          // ConstantPerRank: micro-batches per rank per step
  int64_t global_batch_size = 0;   // ConstantGlobal: the global batch; 0 = global_batch_ranks'
  int64_t global_batch_ranks = 0;  // ConstantGlobal: global batch = this x batch x grad_accum
};

// One step's global batch: `samples` consecutive samples of the global order, cut into
// micro-batches of `micro_batch` samples.
struct GlobalBatch {
  int64_t samples = 0;
  int64_t micro_batch = 1;
  int64_t micro_batches() const { return samples / micro_batch; }
  bool operator==(const GlobalBatch& o) const {
    return samples == o.samples && micro_batch == o.micro_batch;
  }
};

// The global batch at `world` ranks. ConstantPerRank: world x batch_size x grad_accum.
// ConstantGlobal: global_batch_size, or global_batch_ranks x batch_size x grad_accum. Errors
// (InvalidArgument, naming the numbers): ConstantGlobal with neither size; an explicit
// global_batch_size that is not world x batch_size x k for a whole k >= 1 (micro-batches per
// rank = global / (world x batch_size)). A derived one may leave some ranks one micro-batch more
// than others at a world that does not divide it (exact math all the same), but never none.
// REQUIRES: world >= 1; batch_size, grad_accum >= 1; sizes >= 0.
StatusOr<GlobalBatch> ResolveGlobalBatch(const BatchSettings& s, int world);

// The world sizes in [min_world, max_world] (every `step`-th) at which an explicit global batch
// does not split into whole per-rank batches of `batch_size` ("global % (W x batch) != 0").
std::vector<int> UnevenWorldSizes(int64_t global, int64_t batch_size, int min_world,
                                  int max_world, int step);

// Rank `rank`'s micro-batches of the step whose global batch starts at `pos`: micro-batch j of the
// global batch (its samples j x B .. (j+1) x B - 1 in the global order) is rank (j mod W)'s
// (j div W)-th. Every rank gets at least one. REQUIRES: 0 <= rank < world <= micro_batches().
std::vector<std::vector<int64_t>> RankMicroBatches(const DistributedSampler& sampler,
                                                   const SamplerPosition& pos,
                                                   const GlobalBatch& g, int rank, int world);

// What a micro-batch's mean loss is multiplied by so that, once the reducer averages the ranks'
// gradients (divides their sum by `world`), the gradient is the global batch's mean loss's:
// world x micro_batch / samples. (ConstantPerRank: 1 / grad_accum, as before.)
double MicroBatchLossScale(const GlobalBatch& g, int world);

}  // namespace ddp::worker

#endif  // DDP_WORKER_DATA_GLOBAL_BATCH_H_
