// The sample log's one line per step.
#include "worker/train/sample_log.h"

#include <fstream>
#include <sstream>

namespace ddp::worker {

Status AppendSampleLog(const std::string& path, int64_t step, const DistributedSampler& sampler,
                       const SamplerPosition& pos, const GlobalBatch& g, int rank, int world) {
  const std::vector<int64_t> all = sampler.Take(pos, g.samples);
  std::ostringstream line;
  line << "step " << step;
  // Rank `rank`'s micro-batches, as RankMicroBatches deals them; each sample's epoch is that of
  // its place in the stream.
  for (int64_t j = rank; j < g.micro_batches(); j += world) {
    for (int64_t k = j * g.micro_batch; k < (j + 1) * g.micro_batch; ++k) {
      line << ' ' << sampler.Advance(pos, k).epoch << ':' << all[static_cast<size_t>(k)];
    }
  }
  line << '\n';
  std::ofstream f(path, std::ios::app);
  f << line.str();
  if (!f.flush()) return Status::Internal("sample log " + path + ": cannot append");
  return Status::OK();
}

}  // namespace ddp::worker
