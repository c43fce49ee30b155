// `ddp-operator local --scale-at`: a scripted series of resizes, for demos and tests of elastic
// jobs (examples/elastic-inplace.yaml). Parsing only; the runner applies them.
#ifndef DDP_OPERATOR_LOCAL_SCALE_AT_H_
#define DDP_OPERATOR_LOCAL_SCALE_AT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace ddp::controller::local {

// "200=3,400=2,600=4" -> {{200,3},{400,2},{600,4}}: at rank 0's step 200, spec.replicas 3, ...
// InvalidArgument naming the bad entry: steps must increase (>= 1), replicas be 1..100000.
StatusOr<std::vector<std::pair<int64_t, int>>> ParseScaleAt(const std::string& text);

}  // namespace ddp::controller::local

#endif  // DDP_OPERATOR_LOCAL_SCALE_AT_H_
