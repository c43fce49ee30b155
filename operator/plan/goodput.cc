// The goodput (see goodput.h).
#include "operator/plan/goodput.h"

#include <algorithm>

namespace ddp::plan {
namespace {

double Unix(api::TimePoint t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

}  // namespace

double OngoingStall(const api::DDPJobStatus& st, api::TimePoint now) {
  if (!st.start_time) return 0;
  const double end = Unix(st.completion_time ? *st.completion_time : now);
  if (st.goodput.resumed_at <= 0) return std::max(0.0, end - Unix(*st.start_time));
  double since = end;
  for (const api::Incident& i : st.incidents) {
    if (!i.stall_seconds) since = std::min(since, Unix(i.time));
  }
  return std::max(0.0, end - std::max(since, st.goodput.resumed_at));
}

std::optional<double> GoodputRatio(const api::DDPJobStatus& st, api::TimePoint now) {
  if (!st.start_time) return std::nullopt;
  const double elapsed = Unix(st.completion_time ? *st.completion_time : now) - Unix(*st.start_time);
  if (elapsed <= 0) return std::nullopt;
  const double still = st.goodput.stalled_seconds + OngoingStall(st, now);
  return std::clamp((elapsed - still) / elapsed, 0.0, 1.0);
}

}  // namespace ddp::plan
