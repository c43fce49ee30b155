// Formatting of the local terminal's lines.
#include "operator/local/status_line.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ddp::controller::local {

std::string ProgressBar(double fraction, int cells) {
  if (!(fraction >= 0)) fraction = 0;  // also NaN
  fraction = std::min(fraction, 1.0);
  int full = static_cast<int>(std::floor(fraction * cells + 1e-9));
  return "[" + std::string(full, '#') + std::string(cells - full, '-') + "]";
}

std::string FormatDuration(double seconds) {
  long s = seconds > 0 ? static_cast<long>(std::llround(seconds)) : 0;
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ld:%02ld", s / 60, s % 60);
  }
  return buf;
}

std::string FormatRate(double value) {
  char buf[32];
  if (value >= 1e6) {
    std::snprintf(buf, sizeof(buf), "%.1fM", value / 1e6);
  } else if (value >= 1e3) {
    std::snprintf(buf, sizeof(buf), "%.1fk", value / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0f", value);
  }
  return buf;
}

std::string FormatStatusLine(const StatusLineInput& in, int width) {
  std::string line = in.phase.empty() ? "Starting" : in.phase;
  line += "  round " + std::to_string(in.round);
  line += "  pods " + std::to_string(in.running) + "/" + std::to_string(in.total);
  line += "  restarts " + std::to_string(in.restarts);
  if (in.recoveries > 0) line += "  recoveries " + std::to_string(in.recoveries);
  if (in.disruptions > 0) line += "  disruptions " + std::to_string(in.disruptions);
  const WorkerProgress& p = in.progress;
  char buf[64];
  if (p.steps) {
    line += "  step " + std::to_string(static_cast<long>(*p.steps));
    if (p.total_steps && *p.total_steps > 0) {
      double fraction = *p.steps / *p.total_steps;
      line += "/" + std::to_string(static_cast<long>(*p.total_steps)) + " " +
              ProgressBar(fraction, 20);
      std::snprintf(buf, sizeof(buf), " %3.0f%%", std::min(fraction, 1.0) * 100);
      line += buf;
    }
  }
  if (p.loss && std::isfinite(*p.loss)) {
    std::snprintf(buf, sizeof(buf), "  loss %.4f", *p.loss);
    line += buf;
  }
  if (p.tokens_per_second && *p.tokens_per_second > 0) {
    line += "  " + FormatRate(*p.tokens_per_second) + " tok/s";
  }
  if (in.eta_seconds) line += "  ETA " + FormatDuration(*in.eta_seconds);
  if (width > 0 && static_cast<int>(line.size()) > width) line.resize(width);
  return line;
}

void EtaEstimator::Add(double now_seconds, double steps) {
  if (!points_.empty() && steps < points_.back().second) points_.clear();
  if (!points_.empty() && steps == points_.back().second) return;  // no news
  points_.emplace_back(now_seconds, steps);
  // Keep at least two points so a slow job (one step per window) still has a rate.
  while (points_.size() > 2 && now_seconds - points_.front().first > window_) points_.pop_front();
}

std::optional<double> EtaEstimator::EtaSeconds(double total_steps) const {
  if (points_.size() < 2) return std::nullopt;
  double dt = points_.back().first - points_.front().first;
  double ds = points_.back().second - points_.front().second;
  if (dt <= 0 || ds <= 0) return std::nullopt;
  double left = total_steps - points_.back().second;
  return left > 0 ? left * dt / ds : 0.0;
}

std::string FormatSummary(const SummaryInput& in) {
  std::string out = "\n" + in.job + ": " + (in.phase.empty() ? "Unknown" : in.phase);
  if (!in.reason.empty()) out += " (" + in.reason + ")";
  out += "\n";
  if (!in.message.empty()) out += "  " + in.message + "\n";
  out += "  rounds " + std::to_string(in.rounds) + ", restarts " + std::to_string(in.restarts) +
         ", disruptions " + std::to_string(in.disruptions) +
         (in.recoveries > 0 ? ", recoveries " + std::to_string(in.recoveries) : "") +
         ", duration " +
         FormatDuration(in.duration_seconds) + "\n";
  out += "  run dir: " + in.run_dir + "\n";
  if (!in.failed_pod.empty()) {
    out += "  last failure: " + in.failed_pod;
    out += in.log_tail.empty() ? " (empty log)\n" : ", last lines of its log:\n";
    for (const std::string& l : in.log_tail) out += "    | " + l + "\n";
  }
  return out;
}

}  // namespace ddp::controller::local
