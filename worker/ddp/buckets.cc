// Bucket assignment (see buckets.h): reverse or arrival order, capped, grouped by dtype+device.
#include "worker/ddp/buckets.h"

#include <algorithm>

namespace ddp::worker {

std::vector<BucketSpec> AssignBuckets(const std::vector<ParamSpec>& params, size_t cap_bytes,
                                      size_t first_cap_bytes) {
  std::vector<size_t> reverse(params.size());
  for (size_t k = 0; k < params.size(); ++k) reverse[k] = params.size() - 1 - k;
  return AssignBucketsInOrder(params, reverse, cap_bytes, first_cap_bytes);
}

std::vector<BucketSpec> AssignBucketsInOrder(const std::vector<ParamSpec>& params,
                                             const std::vector<size_t>& order, size_t cap_bytes,
                                             size_t first_cap_bytes) {
  cap_bytes = std::max<size_t>(cap_bytes, 1);
  first_cap_bytes = std::max<size_t>(first_cap_bytes, 1);
  std::vector<BucketSpec> buckets;
  BucketSpec current;
  const std::string* current_group = nullptr;
  auto close = [&] {
    if (!current.params.empty()) buckets.push_back(std::move(current));
    current = BucketSpec();
    current_group = nullptr;
  };
  for (size_t k : order) {
    const ParamSpec& p = params[k];
    if (current_group != nullptr && *current_group != p.group) close();
    current.params.push_back(k);
    current.offsets.push_back(current.numel);
    current.numel += p.numel;
    current.bytes += static_cast<size_t>(p.numel) * p.element_size;
    current_group = &p.group;
    const size_t cap = buckets.empty() ? first_cap_bytes : cap_bytes;
    if (current.bytes >= cap) close();
  }
  close();
  return buckets;
}

StatusOr<std::vector<size_t>> CompleteArrivalOrder(const std::vector<size_t>& arrived, size_t n) {
  std::vector<bool> seen(n, false);
  for (size_t i : arrived) {
    if (i >= n || seen[i]) {
      const std::string why =
          i >= n ? " out of range (" + std::to_string(n) + " parameters)" : " listed twice";
      return Status::InvalidArgument("arrival order: parameter " + std::to_string(i) + why);
    }
    seen[i] = true;
  }
  std::vector<size_t> order = arrived;
  for (size_t k = n; k-- > 0;) {
    if (!seen[k]) order.push_back(k);
  }
  return order;
}

}  // namespace ddp::worker
