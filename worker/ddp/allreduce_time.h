// The all-reduce time of one step, from the in-flight intervals of its gradient buckets: how
// long some bucket was in flight, and how much of that came after backward ended (exposed, not
// hidden behind backward). Pure, so the accounting is tested with tables.
#ifndef DDP_WORKER_DDP_ALLREDUCE_TIME_H_
#define DDP_WORKER_DDP_ALLREDUCE_TIME_H_

#include <vector>

namespace ddp::worker {

// One bucket's all-reduce, in seconds since the step's PrepareForBackward.
struct BucketInterval {
  double launch = 0;   // when it was launched
  double seconds = 0;  // launch -> completion, as the communicator measured it
};

struct AllReduceTime {
  double total = 0;    // the length of the union of [launch, launch + seconds]
  double exposed = 0;  // the length of that union after `backward_end`
};

// `backward_end`: when the trainer stopped computing and began waiting for the buckets
// (FinalizeBackward). Two buckets in flight at once count once; gaps between buckets count
// not at all. Hence 0 <= exposed <= total, always (negative durations count as 0).
AllReduceTime MeasureAllReduce(const std::vector<BucketInterval>& buckets, double backward_end);

}  // namespace ddp::worker

#endif  // DDP_WORKER_DDP_ALLREDUCE_TIME_H_
