// Union-of-intervals accounting of a step's all-reduce time.
#include "worker/ddp/allreduce_time.h"

#include <algorithm>
#include <utility>

namespace ddp::worker {
namespace {

// Length of the union of [start, end) intervals.
double UnionLength(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double length = 0, open_start = 0, open_end = 0;
  bool open = false;
  for (const auto& [start, end] : spans) {
    if (end <= start) continue;
    if (open && start <= open_end) {
      open_end = std::max(open_end, end);
      continue;
    }
    if (open) length += open_end - open_start;
    open = true, open_start = start, open_end = end;
  }
  if (open) length += open_end - open_start;
  return length;
}

}  // namespace

AllReduceTime MeasureAllReduce(const std::vector<BucketInterval>& buckets, double backward_end) {
  std::vector<std::pair<double, double>> all, after;
  for (const BucketInterval& b : buckets) {
    const double end = b.launch + std::max(0.0, b.seconds);
    all.emplace_back(b.launch, end);
    after.emplace_back(std::max(b.launch, backward_end), end);
  }
  // Each clipped interval lies inside its whole one, so the clipped union is a part of the
  // whole union: exposed <= total by construction, not by rounding luck.
  return {UnionLength(std::move(all)), UnionLength(std::move(after))};
}

}  // namespace ddp::worker
