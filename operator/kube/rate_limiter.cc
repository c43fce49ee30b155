#include "operator/kube/rate_limiter.h"

#include <algorithm>
#include <thread>

namespace ddp::controller {

TokenBucket::TokenBucket(double qps, int burst, NowFn now)
    : qps_(qps), burst_(std::max(1, burst)), now_(std::move(now)), tokens_(burst_), last_(now_()) {}

std::chrono::nanoseconds TokenBucket::Reserve() {
  if (qps_ <= 0) return std::chrono::nanoseconds(0);
  std::lock_guard<std::mutex> lock(mu_);
  Clock::time_point now = now_();
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return std::chrono::nanoseconds(0);
  // The deficit is paid back at qps tokens per second.
  return std::chrono::nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

void TokenBucket::Wait() {
  std::chrono::nanoseconds d = Reserve();
  if (d.count() > 0) std::this_thread::sleep_for(d);
}

}  // namespace ddp::controller
