// Straggler detection; see stragglers.h.
#include "operator/plan/stragglers.h"

#include <algorithm>
#include <cstdio>

#include "operator/plan/names.h"

namespace ddp::plan {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string Straggler::Describe() const {
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "rank %d is a straggler: %.3f s busy per step, %.1fx the median of the other "
                "ranks (%.3f s)",
                rank, busy_seconds,
                others_median_seconds > 0 ? busy_seconds / others_median_seconds : 0.0,
                others_median_seconds);
  return buf;
}

std::vector<Straggler> StragglerDetector::Add(const std::map<int, metrics::RankStepTime>& by_rank) {
  // Busy time per step of each rank over the interval since its previous read.
  std::map<int, double> busy;
  for (const auto& [rank, now] : by_rank) {
    RankState& st = ranks_[rank];
    // A counter that went back is a new process (a restarted trainer starts from zero): no
    // interval, the next read measures from here.
    const bool reset = now.count < st.last.count || now.sum_seconds < st.last.sum_seconds ||
                       now.exposed_allreduce_seconds < st.last.exposed_allreduce_seconds;
    if (st.has_last && !reset && now.count > st.last.count) {
      const double steps = now.count - st.last.count;
      const double wall = now.sum_seconds - st.last.sum_seconds;
      const double waited = now.exposed_allreduce_seconds - st.last.exposed_allreduce_seconds;
      busy[rank] = std::max(0.0, wall - std::max(0.0, waited)) / steps;
    }
    st.last = now;
    st.has_last = true;
  }
  std::vector<Straggler> out;
  if (busy.size() < 2) return out;
  for (const auto& [rank, mine] : busy) {
    std::vector<double> others;
    for (const auto& [r, b] : busy) {
      if (r != rank) others.push_back(b);
    }
    const double median = Median(others);
    RankState& st = ranks_[rank];
    if (median > 0 && mine >= options_.factor * median) {
      ++st.streak;
    } else {
      st.streak = 0;
      st.flagged = false;
    }
    if (!st.flagged && st.streak >= options_.reads) {
      st.flagged = true;
      out.push_back({rank, mine, median});
    }
  }
  return out;
}

Event StragglerEvent(const api::DDPJob& job, const Straggler& straggler) {
  const int index = straggler.rank / std::max(1, job.spec.nproc_per_node);
  return {"Warning", kStragglerReason,
          straggler.Describe() + "; pod " + PodName(job, index) + " (reported, not restarted)"};
}

size_t StragglerDetector::flagged() const {
  size_t n = 0;
  for (const auto& [rank, st] : ranks_) n += st.flagged ? 1 : 0;
  return n;
}

}  // namespace ddp::plan
