// Reading a ddp-worker's page and tracking its step over successive pages.
#include "common/worker_progress.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace ddp::metrics {
namespace {

std::optional<double> ReadRank0(const std::vector<ParsedFamily>& families, const std::string& name) {
  std::optional<double> v = FindSample(families, name, {{"rank", "0"}});
  return v ? v : FindSample(families, name);
}

// The label `key` as an int; -1 when absent or not a number.
int RankOf(const LabelPairs& labels, const std::string& key = "rank") {
  for (const auto& [k, v] : labels) {
    if (k != key) continue;
    char* end = nullptr;
    long r = std::strtol(v.c_str(), &end, 10);
    return end != v.c_str() && *end == '\0' && r >= 0 && r <= kMaxPageRank ? static_cast<int>(r)
                                                                            : -1;
  }
  return -1;
}

std::string Label(const LabelPairs& labels, const std::string& key) {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return "";
}

// The rendezvous pod's series (common/group_contract.h).
GroupScrape ReadGroupScrape(const std::vector<ParsedFamily>& families) {
  using namespace ddp::group;
  GroupScrape g;
  const std::optional<double> generation = FindSample(families, kGroupGeneration);
  if (!generation) return g;
  g.present = true;
  g.generation = *generation;
  g.recoveries = FindSample(families, kGroupRecoveries).value_or(0);
  g.budget_left = FindSample(families, kGroupBudgetLeft).value_or(0);
  g.world_size = FindSample(families, kGroupWorldSize).value_or(0);
  g.resizes = FindSample(families, kGroupResizes).value_or(0);
  g.shrunk_nodes = FindSample(families, kGroupShrunkNodes).value_or(0);
  g.silent_held = FindSample(families, kGroupSilentHeld).value_or(0);
  g.abandoned = FindSample(families, kGroupAbandoned).value_or(0) > 0;
  for (const ParsedFamily& f : families) {
    for (const Sample& x : f.samples) {
      if (f.name == kGroupTrainerIncarnation && x.value >= 0 && x.value <= kMaxPageCount &&
          x.value == std::floor(x.value)) {
        const int rank = RankOf(x.labels, kRankLabel);
        if (rank >= 0) g.trainers[rank] = {Label(x.labels, kPodLabel), static_cast<int>(x.value)};
        continue;
      }
      if (x.value <= 0) continue;
      if (f.name == kGroupMember) {
        g.members[Label(x.labels, kPodLabel)] = RankOf(x.labels, kNodeRankLabel);
      } else if (f.name == kGroupSpare) {
        g.spares.push_back(Label(x.labels, kPodLabel));
      } else if (f.name == kGroupFenced) {
        g.fenced.push_back({Label(x.labels, kPodLabel), Label(x.labels, kUidLabel)});
      } else if (f.name == kGroupEnded) {
        g.ended.push_back({Label(x.labels, kPodLabel), Label(x.labels, kUidLabel),
                           RankOf(x.labels, kNodeRankLabel)});
      }
    }
  }
  return g;
}

// Every rank's stall record on the page; the newest into s->last_stall (worker_progress.h).
void ReadStalls(const std::vector<ParsedFamily>& families, WorkerScrape* s) {
  std::map<int, StallRecord> by_rank;
  std::map<int, bool> has_end;
  for (const ParsedFamily& f : families) {
    if (f.name == kWorkerLastStallStep || f.name == kGroupPeerLastStallStep) {
      s->stall_series = true;
      for (const Sample& x : f.samples) by_rank[RankOf(x.labels)].step = x.value;
    }
    if (f.name != kWorkerLastStall && f.name != kGroupPeerLastStall) continue;
    for (const Sample& x : f.samples) {
      StallRecord& r = by_rank[RankOf(x.labels)];
      const std::string edge = Label(x.labels, kStallEdgeLabel);
      if (edge == "start") r.start = x.value;
      if (edge == "detected") r.detected = x.value;
      if (edge == "end") {
        r.end = x.value;
        has_end[RankOf(x.labels)] = true;
      }
    }
  }
  const StallRecord* best = nullptr;
  for (auto& [rank, r] : by_rank) {
    r.rank = rank;
    if (!has_end.count(rank)) continue;
    if (best == nullptr || r.end > best->end) best = &r;
  }
  if (best == nullptr) return;
  const StallRecord* full = best->start ? best : nullptr;
  for (const auto& [rank, r] : by_rank) {
    if (!has_end.count(rank) || !r.start || best->end - r.end > kSameStall) continue;
    if (full == nullptr || r.end > full->end) full = &r;
  }
  s->last_stall = full != nullptr ? *full : *best;
}

}  // namespace

bool GroupScrape::operator==(const GroupScrape& o) const {
  return present == o.present && generation == o.generation && recoveries == o.recoveries &&
         budget_left == o.budget_left && world_size == o.world_size && resizes == o.resizes &&
         shrunk_nodes == o.shrunk_nodes && silent_held == o.silent_held && members == o.members &&
         spares == o.spares && fenced == o.fenced && ended == o.ended &&
         abandoned == o.abandoned && trainers == o.trainers;
}

WorkerScrape ReadWorkerScrape(const std::vector<ParsedFamily>& families) {
  WorkerScrape s;
  s.steps = ReadRank0(families, kWorkerSteps);
  s.loss = ReadRank0(families, kWorkerLoss);
  s.tokens_per_second = ReadRank0(families, kWorkerTokensPerSecond);
  s.total_steps = ReadRank0(families, kWorkerTotalSteps);
  s.generation = ReadRank0(families, kWorkerGeneration);
  const std::string rec = kWorkerRecoverySeconds;
  s.recovery_seconds_sum = ReadRank0(families, rec + "_sum");
  s.recovery_seconds_count = ReadRank0(families, rec + "_count");
  const std::string step_sum = std::string(kWorkerStepSeconds) + "_sum";
  const std::string step_count = std::string(kWorkerStepSeconds) + "_count";
  for (const ParsedFamily& f : families) {
    if (f.name == kWorkerExposedAllreduceSeconds) {
      for (const Sample& x : f.samples) {
        s.step_time_by_rank[RankOf(x.labels)].exposed_allreduce_seconds = x.value;
      }
    }
    if (f.name != kWorkerStepSeconds) continue;
    for (const Sample& x : f.samples) {
      if (x.name == step_sum) s.step_time_by_rank[RankOf(x.labels)].sum_seconds = x.value;
      if (x.name == step_count) s.step_time_by_rank[RankOf(x.labels)].count = x.value;
    }
  }
  ReadStalls(families, &s);
  s.group = ReadGroupScrape(families);
  // Rank 0's per-rank busy series: under launch a page may merge several processes' series;
  // only rank 0's (or an unlabelled page's) carry values.
  const std::optional<double> busy_steps = ReadRank0(families, kWorkerRankBusySteps);
  for (const ParsedFamily& f : families) {
    if (f.name != kWorkerRankBusySeconds || !busy_steps) continue;
    for (const Sample& x : f.samples) {
      const int own = RankOf(x.labels), peer = RankOf(x.labels, kPeerRankLabel);
      if (own > 0 || peer < 0) continue;
      s.busy_by_rank[peer] = RankStepTime{x.value, *busy_steps, 0};
    }
  }
  return s;
}

Status CheckWorkerScrape(WorkerScrape* s) {
  auto bad = [](const std::string& series, double v, const char* want) {
    std::ostringstream o;
    o << series << " is " << v << " (want " << want << ")";
    return Status::FailedPrecondition(o.str());
  };
  auto whole = [](double v, double lo, double hi) {
    return std::isfinite(v) && v >= lo && v <= hi && v == std::floor(v);
  };
  auto time_ok = [](double v) { return std::isfinite(v) && v >= 0; };
  using Count = std::pair<const char*, std::optional<double>*>;
  for (const Count& c : {Count{kWorkerSteps, &s->steps}, Count{kWorkerTotalSteps, &s->total_steps}}) {
    if (*c.second && !whole(**c.second, 0, kMaxPageSteps)) {
      return bad(c.first, **c.second, "a whole number >= 0, <= 2^53");
    }
  }
  if (s->loss && !std::isfinite(*s->loss)) s->loss.reset();
  if (s->tokens_per_second && std::isnan(*s->tokens_per_second)) s->tokens_per_second.reset();
  if (s->tokens_per_second && !time_ok(*s->tokens_per_second)) {
    return bad(kWorkerTokensPerSecond, *s->tokens_per_second, "a finite rate >= 0");
  }
  if (s->generation && !whole(*s->generation, 0, kMaxPageCount)) {
    return bad(kWorkerGeneration, *s->generation, "a whole number >= 0, <= 1e9");
  }
  const std::string rec = kWorkerRecoverySeconds;
  if (s->recovery_seconds_sum && !time_ok(*s->recovery_seconds_sum)) {
    return bad(rec + "_sum", *s->recovery_seconds_sum, "finite seconds >= 0");
  }
  if (s->recovery_seconds_count && !whole(*s->recovery_seconds_count, 0, kMaxPageSteps)) {
    return bad(rec + "_count", *s->recovery_seconds_count, "a whole number >= 0");
  }
  if (s->last_stall) {
    StallRecord& r = *s->last_stall;
    for (const auto& [what, v] : {std::pair<const char*, std::optional<double>>{"end", r.end},
                                  {"start", r.start}, {"detected", r.detected}}) {
      if (v && !whole(std::floor(*v), 0, kMaxPageSteps)) {
        return bad(std::string(kWorkerLastStall) + "{edge=\"" + what + "\"}", *v,
                   "finite unix seconds >= 0");
      }
    }
    if (!whole(r.step, 0, kMaxPageSteps)) {
      return bad(kWorkerLastStallStep, r.step, "a whole number >= 0, <= 2^53");
    }
    // One process's clock: a record out of order is no measurement. Dropped, not refused.
    if ((r.start && (*r.start > r.end || (r.detected && *r.detected < *r.start))) ||
        (r.detected && *r.detected > r.end)) {
      s->last_stall.reset();
    }
  }
  const GroupScrape& g = s->group;
  if (g.present) {
    if (!whole(g.generation, 0, kMaxPageCount)) {
      return bad(group::kGroupGeneration, g.generation, "a whole number >= 0, <= 1e9");
    }
    if (!whole(g.recoveries, 0, kMaxPageCount)) {
      return bad(group::kGroupRecoveries, g.recoveries, "a whole number >= 0, <= 1e9");
    }
    if (!whole(g.world_size, 0, kMaxPageCount)) {
      return bad(group::kGroupWorldSize, g.world_size, "a whole number >= 0, <= 1e9");
    }
    if (!whole(g.resizes, 0, kMaxPageCount)) {
      return bad(group::kGroupResizes, g.resizes, "a whole number >= 0, <= 1e9");
    }
    if (!whole(g.shrunk_nodes, 0, kMaxPageCount)) {
      return bad(group::kGroupShrunkNodes, g.shrunk_nodes, "a whole number >= 0, <= 1e9");
    }
    if (!whole(g.silent_held, 0, kMaxPageCount)) {
      return bad(group::kGroupSilentHeld, g.silent_held, "a whole number >= 0, <= 1e9");
    }
    if (!whole(g.budget_left, -kMaxPageCount, kMaxPageCount)) {
      return bad(group::kGroupBudgetLeft, g.budget_left, "a whole number, |n| <= 1e9");
    }
  }
  const std::string step = kWorkerStepSeconds;
  for (const auto& [rank, t] : s->step_time_by_rank) {
    const std::string of = "{rank=\"" + std::to_string(rank) + "\"}";
    if (!time_ok(t.sum_seconds)) return bad(step + "_sum" + of, t.sum_seconds, "finite seconds >= 0");
    if (!time_ok(t.count)) return bad(step + "_count" + of, t.count, "a finite count >= 0");
    if (!time_ok(t.exposed_allreduce_seconds)) {
      return bad(kWorkerExposedAllreduceSeconds + of, t.exposed_allreduce_seconds,
                 "finite seconds >= 0");
    }
  }
  for (const auto& [peer, t] : s->busy_by_rank) {
    const std::string of = "{peer_rank=\"" + std::to_string(peer) + "\"}";
    if (!time_ok(t.sum_seconds)) {
      return bad(kWorkerRankBusySeconds + of, t.sum_seconds, "finite seconds >= 0");
    }
    if (!time_ok(t.count)) return bad(kWorkerRankBusySteps, t.count, "a finite count >= 0");
  }
  return Status::OK();
}

StatusOr<WorkerScrape> ReadWorkerPage(const std::string& text, const ParseLimits& limits) {
  auto families = ParseExposition(text, limits);
  if (!families.ok()) return families.status();
  WorkerScrape s = ReadWorkerScrape(families.value());
  DDP_RETURN_IF_ERROR(CheckWorkerScrape(&s));
  return s;
}

WorkerScrape ParseWorkerScrape(const std::string& text) {
  auto s = ReadWorkerPage(text);
  return s.ok() ? std::move(s).value() : WorkerScrape{};
}

std::optional<double> ProgressSnapshot::EtaSeconds() const {
  if (!total_steps || !steps_per_second || *steps_per_second <= 0) return std::nullopt;
  return std::max(0.0, *total_steps - step) / *steps_per_second;
}

bool ProgressTracker::Add(const WorkerScrape& page, WallTime now) {
  if (!page.steps || !std::isfinite(*page.steps)) return false;
  // Step 0 is what a process shows before it trains or resumes: a new rank 0 (a replaced pod,
  // a resize, a new round) reads 0 until it has loaded its state, then jumps to the step it
  // resumed at. After a real step, such a page says nothing about the job: it is skipped.
  if (*page.steps <= 0 && snapshot_ && snapshot_->step > 0) return false;
  const bool advanced = !snapshot_ || *page.steps != snapshot_->step;
  if (!snapshot_) snapshot_.emplace();
  ProgressSnapshot& s = *snapshot_;
  s.total_steps = page.total_steps;
  s.loss = page.loss;
  s.tokens_per_second = page.tokens_per_second;
  s.scraped_at = now;
  s.stall_series = page.stall_series;
  if (page.last_stall) s.last_stall = page.last_stall;
  s.scraped_at = now;
  if (!advanced) return false;
  s.step = *page.steps;
  s.last_advance = now;
  // A step that went back (a new process resumed from an older checkpoint) restarts the rate.
  if (!advances_.empty() && *page.steps < advances_.back().step) advances_.clear();
  // The rate starts at the first real step: from step 0 the next page may be a resume (0 to
  // the checkpoint's step in a second), not training, and would inflate the rate.
  if (!advances_.empty() && advances_.back().step <= 0) advances_.clear();
  advances_.push_back({now, *page.steps});
  while (advances_.size() > 2 && now - advances_[1].at >= kRateWindow) {
    advances_.erase(advances_.begin());
  }
  const Point& first = advances_.front();
  const double secs = std::chrono::duration<double>(now - first.at).count();
  if (advances_.size() >= 2 && secs > 0) {
    s.steps_per_second = (*page.steps - first.step) / secs;
  } else {
    s.steps_per_second.reset();
  }
  return true;
}

}  // namespace ddp::metrics
