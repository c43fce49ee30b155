// The sample log (--sample-log): which samples of the global order each committed step trained
// on, per rank. For tests and debugging of the exactly-once guarantee; off by default.
#ifndef DDP_WORKER_TRAIN_SAMPLE_LOG_H_
#define DDP_WORKER_TRAIN_SAMPLE_LOG_H_

#include <cstdint>
#include <string>

#include "common/status.h"
#include "worker/data/global_batch.h"
#include "worker/data/sampler.h"

namespace ddp::worker {

// Appends "step S E:I E:I ..." to `path`: the samples rank `rank` of `world` took at step `step`
// (the step's global batch starts at `pos`), each as its epoch and example index, in the order
// trained. Internal naming the file when it cannot be written.
Status AppendSampleLog(const std::string& path, int64_t step, const DistributedSampler& sampler,
                       const SamplerPosition& pos, const GlobalBatch& g, int rank, int world);

}  // namespace ddp::worker

#endif  // DDP_WORKER_TRAIN_SAMPLE_LOG_H_
