// The trainer's stall record (see stall_clock.h).
#include "worker/train/stall_clock.h"

#include <cstdio>
#include <ctime>

#include "common/logging.h"

namespace ddp::worker {
namespace {

double Unix(StallClock::WallTime t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// "HH:MM:SS.mmm" UTC, as the log lines' own stamps.
std::string Clock(StallClock::WallTime t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  const int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

}  // namespace

void StallClock::Interrupted(WallTime now) {
  if (interrupted_) return;
  interrupted_ = true;
  stall_start_ = last_commit_;
  detected_ = now;
}

std::optional<double> StallClock::Committed(int64_t committed, WallTime now) {
  const bool first = !last_commit_.has_value();
  last_commit_ = now;
  const int64_t before = last_step_;
  last_step_ = committed;
  if (!first && !interrupted_) return std::nullopt;
  interrupted_ = false;
  if (m_ != nullptr) {
    if (stall_start_ && detected_) {
      m_->last_stall.Labels({"start"}).Set(Unix(*stall_start_));
      m_->last_stall.Labels({"detected"}).Set(Unix(*detected_));
    }
    m_->last_stall.Labels({"end"}).Set(Unix(now));
    m_->last_stall_step.Set(static_cast<double>(committed - 1));
  }
  std::optional<double> stood_still;
  if (stall_start_) {
    stood_still = std::chrono::duration<double>(now - *stall_start_).count();
    DDP_LOG(INFO) << "rank " << rank_ << ": training stood still " << *stood_still << "s (step "
                  << before << " at " << Clock(*stall_start_) << " to step " << committed
                  << " at " << Clock(now) << "; the interruption seen at " << Clock(*detected_)
                  << ")";
  }
  stall_start_.reset();
  detected_.reset();
  return stood_still;
}

}  // namespace ddp::worker
