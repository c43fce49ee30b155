// Bucket assignment (see buckets.h): reverse order, capped, grouped by dtype+device.
#include "worker/ddp/buckets.h"

#include <algorithm>

namespace ddp::worker {

std::vector<BucketSpec> AssignBuckets(const std::vector<ParamSpec>& params, size_t cap_bytes,
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
  for (size_t k = params.size(); k-- > 0;) {
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

}  // namespace ddp::worker
