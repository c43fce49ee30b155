// Straggler detection; see stragglers.h.
#include "operator/plan/stragglers.h"

#include <algorithm>
#include <cstdio>

#include "operator/plan/names.h"

namespace ddp::plan {
namespace {

// The median of `sorted` without its element at `skip` (REQUIRES: sorted.size() >= 2), in O(1):
// the others' j-th value is sorted[j] below skip and sorted[j + 1] from it on.
double MedianWithout(const std::vector<double>& sorted, size_t skip) {
  const size_t m = sorted.size() - 1;
  auto other = [&](size_t j) { return sorted[j < skip ? j : j + 1]; };
  return m % 2 ? other(m / 2) : (other(m / 2 - 1) + other(m / 2)) / 2;
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

std::vector<Straggler> StragglerDetector::Add(const std::map<int, metrics::RankStepTime>& by_rank,
                                              int world_size) {
  // Busy time per step of each rank over the interval since its previous read.
  std::vector<std::pair<double, int>> busy;  // (busy, rank)
  for (const auto& [rank, now] : by_rank) {
    if (rank < 0 || (world_size > 0 && rank >= world_size)) continue;
    RankState& st = ranks_[rank];
    // A counter that went back is a new process (a restarted trainer starts from zero): no
    // interval, the next read measures from here.
    const bool reset = now.count < st.last.count || now.sum_seconds < st.last.sum_seconds ||
                       now.exposed_allreduce_seconds < st.last.exposed_allreduce_seconds;
    if (st.has_last && !reset && now.count > st.last.count) {
      const double steps = now.count - st.last.count;
      const double wall = now.sum_seconds - st.last.sum_seconds;
      const double waited = now.exposed_allreduce_seconds - st.last.exposed_allreduce_seconds;
      busy.emplace_back(std::max(0.0, wall - std::max(0.0, waited)) / steps, rank);
    }
    st.last = now;
    st.has_last = true;
  }
  std::vector<Straggler> out;
  if (busy.size() < 2) return out;
  std::sort(busy.begin(), busy.end());
  std::vector<double> sorted(busy.size());
  for (size_t i = 0; i < busy.size(); ++i) sorted[i] = busy[i].first;
  // Ranks in ascending order, as before, so the Events come out by rank.
  std::vector<size_t> by_rank_order(busy.size());
  for (size_t i = 0; i < busy.size(); ++i) by_rank_order[i] = i;
  std::sort(by_rank_order.begin(), by_rank_order.end(),
            [&](size_t a, size_t b) { return busy[a].second < busy[b].second; });
  for (size_t i : by_rank_order) {
    const int rank = busy[i].second;
    const double mine = busy[i].first;
    const double median = MedianWithout(sorted, i);
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
