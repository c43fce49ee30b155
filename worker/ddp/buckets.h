// Bucket assignment: which parameters share one flat all-reduce buffer. Pure; no tensors here,
// so it is tested with tables.
#ifndef DDP_WORKER_DDP_BUCKETS_H_
#define DDP_WORKER_DDP_BUCKETS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::worker {

inline constexpr size_t kDefaultBucketCapBytes = 25 << 20;      // PyTorch DDP's default
inline constexpr size_t kDefaultFirstBucketCapBytes = 1 << 20;  // small first bucket: early start

// What assignment needs to know about one parameter.
struct ParamSpec {
  int64_t numel = 0;
  size_t element_size = 4;
  std::string group;  // dtype+device; parameters of different groups never share a bucket
};

struct BucketSpec {
  std::vector<size_t> params;    // indices into the parameter list, in bucket order
  std::vector<int64_t> offsets;  // element offset of each parameter in the flat buffer
  int64_t numel = 0;             // total elements
  size_t bytes = 0;
  bool operator==(const BucketSpec& o) const {
    return params == o.params && offsets == o.offsets && numel == o.numel && bytes == o.bytes;
  }
};

// Walks parameters in REVERSE order (gradients of the last layers are ready first in backward)
// and closes a bucket once it reaches its cap: `first_cap_bytes` for bucket 0, `cap_bytes` after.
// As in PyTorch's DDP, the parameter that reaches the cap still joins the bucket (so a bucket can
// exceed its cap by one parameter); a change of group closes a bucket.
// Every parameter lands in exactly one bucket. Caps of 0 are treated as 1 byte (one param each).
std::vector<BucketSpec> AssignBuckets(const std::vector<ParamSpec>& params, size_t cap_bytes,
                                      size_t first_cap_bytes);

// The same walk over `order` instead of reverse parameter order: how the reducer rebuilds its
// buckets in the order gradients arrived in its first step (as PyTorch's DDP does once), so that
// a parameter registered early but ready late no longer holds back a bucket of early ones.
// REQUIRES: `order` is a permutation of 0..params.size()-1 (see CompleteArrivalOrder).
std::vector<BucketSpec> AssignBucketsInOrder(const std::vector<ParamSpec>& params,
                                             const std::vector<size_t>& order, size_t cap_bytes,
                                             size_t first_cap_bytes);

// A bucket order from the parameters whose gradients arrived, in arrival order (each index once,
// each < n), followed by those that got none (unused in that step) in reverse index order.
// InvalidArgument when `arrived` repeats an index or holds one >= n.
StatusOr<std::vector<size_t>> CompleteArrivalOrder(const std::vector<size_t>& arrived, size_t n);

}  // namespace ddp::worker

#endif  // DDP_WORKER_DDP_BUCKETS_H_
