// What a checkpoint holds (model, optimizer, progress, RNG) as bytes, and the parameter checksum.
// Uses torch::serialize archives; the file protocol lives in checkpoint_store.h.
#ifndef DDP_WORKER_TRAIN_TRAIN_STATE_H_
#define DDP_WORKER_TRAIN_TRAIN_STATE_H_

#include <cstdint>
#include <string>

#include <c10/core/Device.h>

#include "common/status.h"
#include "worker/data/sampler.h"

namespace at {
class Tensor;
}
namespace torch::nn {
class Module;
}
namespace torch::optim {
class Optimizer;
}
namespace torch::serialize {
class InputArchive;
class OutputArchive;
}  // namespace torch::serialize

namespace ddp::worker {

struct TrainProgress {
  int64_t step = 0;        // optimizer steps completed
  SamplerPosition sampler; // where the group is in the global order (sampler.h)
  int64_t world_size = 1;  // of the group that saved
  // Read from a checkpoint of the earlier per-rank layout (no "sampler_global_offset"):
  // sampler.offset is then one rank's of world_size (DistributedSampler::FromPerRankOffset).
  bool sampler_per_rank = false;
};

// Serializes parameters, buffers, optimizer state, progress and the states of the default random
// generators: the CPU's ("cpu_rng") and every visible CUDA device's ("cuda_rng_count", then
// "cuda_rng_<i>"; a count of 0 where LibTorch has no CUDA or no GPU is visible).
// Internal when LibTorch throws (it should not for an in-memory archive).
StatusOr<std::string> SerializeTrainState(torch::nn::Module& model, torch::optim::Optimizer& opt,
                                          const TrainProgress& progress);

// Restores everything SerializeTrainState wrote, loading tensors onto `device`. A payload without
// "cuda_rng_count" (written before CUDA generators were saved) restores the CPU generator only.
// FailedPrecondition, with nothing restored, when it holds more CUDA generators than
// VisibleCudaDevices(), or when its parameters do not match `model` (another model config: the
// message names the first parameter missing, extra or of another shape, with both shapes).
// DataLoss when the bytes are not a readable archive (a torn or corrupt payload); then the model and optimizer may be partly
// overwritten and must be rebuilt by the caller.
Status RestoreTrainState(const std::string& bytes, const c10::Device& device,
                         torch::nn::Module& model, torch::optim::Optimizer& opt,
                         TrainProgress* progress);

// What a payload holds besides the model and the optimizer (progress and the generators' states),
// for a heal that sends the tensors themselves (heal.h). Write throws what LibTorch throws.
// Read restores the generators and *progress, or returns FailedPrecondition (nothing restored) as
// RestoreTrainState does; it throws on an archive that lacks them.
void WriteProgressAndRng(torch::serialize::OutputArchive& root, const TrainProgress& progress);
Status ReadProgressAndRng(torch::serialize::InputArchive& root, TrainProgress* progress);

// "[d0, d1, ...]": how a mismatch message names a tensor's shape.
std::string ShapeText(const at::Tensor& t);

// CUDA devices this process sees (0 with a LibTorch built without CUDA).
int VisibleCudaDevices();

// FNV-1a over the bytes of every parameter (in registration order, as contiguous CPU tensors):
// equal on two ranks iff their parameters are bit-identical (up to hash collisions).
std::string ParamChecksum(const torch::nn::Module& model);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_TRAIN_STATE_H_
