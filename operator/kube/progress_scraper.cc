// The progress scraper's threads; see progress_scraper.h.
#include "operator/kube/progress_scraper.h"

#include <algorithm>

#include "common/http_server.h"
#include "common/logging.h"

namespace ddp::controller {

using SteadyClock = std::chrono::steady_clock;

namespace {
bool target_group(const ScrapeTarget& t) { return t.group; }
}  // namespace

ProgressScraper::ProgressScraper(ProgressScraperOptions options, OnAdvance on_advance,
                                 OnFetch on_fetch, Fetch fetch)
    : options_(options),
      on_advance_(std::move(on_advance)),
      on_fetch_(std::move(on_fetch)),
      fetch_(fetch ? std::move(fetch)
                   : Fetch([max = options.max_page_bytes](const std::string& host, int port,
                                                          const std::string& path, int timeout_ms) {
                       return HttpFetch(host, port, path, timeout_ms, max);
                     })) {}

ProgressScraper::~ProgressScraper() { Stop(); }

void ProgressScraper::Start() {
  std::lock_guard<std::mutex> l(mu_);
  if (!threads_.empty() || stopping_) return;
  for (int i = 0; i < std::max(1, options_.max_in_flight); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

void ProgressScraper::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

void ProgressScraper::Track(const std::string& key, const ScrapeTarget& target) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end() && it->second.target == target) return;
  Entry& e = entries_[key];
  e = Entry{};
  e.target = target;
  e.epoch = next_epoch_++;
  e.next_due = SteadyClock::now();  // a new pod is read at once
  cv_.notify_one();
}

void ProgressScraper::Forget(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  entries_.erase(key);
}

void ProgressScraper::SetProbes(const std::string& key, std::vector<ProbeTarget> probes) {
  if (probes.size() > kMaxProbes) probes.resize(kMaxProbes);
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.probes == probes) return;
  Entry& e = it->second;
  std::map<std::string, ProbeReads> kept;
  for (const ProbeTarget& t : probes) {
    if (auto r = e.probe_reads.find(t.pod_uid); r != e.probe_reads.end()) kept.insert(*r);
  }
  e.probe_reads = std::move(kept);
  e.probes = std::move(probes);
}

std::optional<ScrapedProgress> ProgressScraper::Get(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.tracker.snapshot()) return std::nullopt;
  return ScrapedProgress{it->second.target.round, *it->second.tracker.snapshot(),
                         it->second.last_page};
}

std::optional<ProgressScraper::ScrapedGroup> ProgressScraper::GetGroup(
    const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.last_page.group.present) return std::nullopt;
  return ScrapedGroup{it->second.target.round, it->second.target.pod_uid, it->second.last_page.group};
}

std::optional<PageReads> ProgressScraper::Reads(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.last_ok) return std::nullopt;
  return PageReads{it->second.target.pod_uid, *it->second.last_ok, it->second.failing,
                   it->second.probe_reads};
}

std::vector<BusyRead> ProgressScraper::TakeBusyReads(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return {};
  std::vector<BusyRead> out;
  out.swap(it->second.busy_reads);
  return out;
}

size_t ProgressScraper::Tracked() const {
  std::lock_guard<std::mutex> l(mu_);
  return entries_.size();
}

std::optional<std::string> ProgressScraper::RefusalToReport(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.refusal || it->second.refusal_reported) return std::nullopt;
  it->second.refusal_reported = true;
  return it->second.refusal;
}

std::optional<std::string> ProgressScraper::Refusal(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? std::nullopt : it->second.refusal;
}

std::map<std::string, ProgressScraper::Entry>::iterator ProgressScraper::NextDue() {
  // A linear scan: a few thousand jobs cost microseconds, at most max_in_flight times per fetch.
  const int suspect_quota = std::max(1, options_.max_in_flight / 2);
  auto due = entries_.end();
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.in_flight) continue;
    if (it->second.slow_streak > 0 && suspects_in_flight_ >= suspect_quota) continue;
    if (due == entries_.end() || it->second.next_due < due->second.next_due) due = it;
  }
  return due;
}

std::map<std::string, bool> ProgressScraper::Probe(const std::vector<ProbeTarget>& probes) {
  std::map<std::string, bool> answered;
  for (const ProbeTarget& t : probes) {
    answered[t.pod_uid] =
        fetch_(t.host, t.port, "/healthz", static_cast<int>(options_.timeout.count())).ok();
  }
  return answered;
}

StatusOr<metrics::WorkerScrape> ProgressScraper::ReadPage(const ScrapeTarget& target,
                                                          ScrapeResult* result, bool* answered) {
  StatusOr<HttpAnswer> page =
      fetch_(target.host, target.port, "/metrics", static_cast<int>(options_.timeout.count()));
  if (!page.ok()) {
    // A body past the cap is the page's fault, not the network's.
    const bool too_large = page.status().code() == StatusCode::kFailedPrecondition;
    *result = too_large ? ScrapeResult::kRefused : ScrapeResult::kError;
    *answered = too_large;
    return page.status();
  }
  *answered = true;
  if (page->code != 200) {  // the pod is there, its page is not: no page, no silence
    *result = ScrapeResult::kError;
    return Status::Unavailable("GET /metrics: HTTP " + std::to_string(page->code));
  }
  StatusOr<metrics::WorkerScrape> scrape = metrics::ReadWorkerPage(
      page->body, {options_.max_page_bytes, options_.max_page_series});
  *result = scrape.ok() ? ScrapeResult::kOk : ScrapeResult::kRefused;
  return scrape;
}

void ProgressScraper::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    auto now = SteadyClock::now();
    auto due = NextDue();
    if (due == entries_.end()) {
      cv_.wait(l);
      continue;
    }
    if (due->second.next_due > now) {
      cv_.wait_until(l, due->second.next_due);
      continue;
    }
    const std::string key = due->first;
    const ScrapeTarget target = due->second.target;
    // A group page that answered before and now fails: are the pods on its node silent too?
    const bool answered_before = target.group && due->second.last_ok.has_value();
    const std::vector<ProbeTarget> probes =
        answered_before ? due->second.probes : std::vector<ProbeTarget>{};
    const uint64_t epoch = due->second.epoch;
    const bool suspect = due->second.slow_streak > 0;
    suspects_in_flight_ += suspect ? 1 : 0;
    due->second.in_flight = true;
    const auto interval = target_group(target) ? options_.group_interval : options_.interval;
    due->second.next_due = now + interval;
    l.unlock();
    ScrapeResult result = ScrapeResult::kOk;
    bool answered = false;
    StatusOr<metrics::WorkerScrape> read = ReadPage(target, &result, &answered);
    const auto took = SteadyClock::now() - now;
    std::map<std::string, bool> answers;
    if (!answered && answered_before) {
      // A group page may wait on another pod; the pod's own /healthz does not.
      answered = Probe({{target.pod_uid, target.host, target.port}}).begin()->second;
      if (!answered) answers = Probe(probes);
    }
    if (on_fetch_) on_fetch_(result);
    l.lock();
    suspects_in_flight_ -= suspect ? 1 : 0;
    if (suspect) cv_.notify_one();  // a suspect's slot is free again
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.epoch != epoch) continue;  // forgotten or retargeted
    Entry& e = it->second;
    e.in_flight = false;
    const bool slow = result == ScrapeResult::kRefused || took * 2 > options_.timeout;
    e.slow_streak = slow ? std::min(e.slow_streak + 1, 30) : 0;
    if (slow) {
      const int factor = std::min(kMaxBackoff, 1 << std::min(e.slow_streak - 1, 3));
      e.next_due = now + interval * factor;
    }
    // Answered (any HTTP answer) or not: how long a pod has been silent (silent_rendezvous.h).
    if (answered) {
      e.last_ok = std::chrono::system_clock::now();
      e.failing = false;
      e.probe_reads.clear();
    } else if (e.last_ok) {
      const bool first = !e.failing;
      if (first) e.probe_reads.clear();
      e.failing = true;
      for (const auto& [uid, ok] : answers) {
        if (std::none_of(e.probes.begin(), e.probes.end(),
                         [&](const ProbeTarget& t) { return t.pod_uid == uid; })) {
          continue;  // no longer listed
        }
        ProbeReads& r = e.probe_reads[uid];
        r.sent += 1;
        r.answered = r.answered || ok;
      }
      if (first && target.group && on_advance_) {  // its planner arms the liveness deadline
        l.unlock();
        on_advance_(key);
        l.lock();
        continue;
      }
    }
    if (result == ScrapeResult::kRefused) {
      if (e.refusal != read.status().message()) {
        DDP_LOG(WARNING) << key << ": metrics page of pod " << target.host << ":" << target.port
                         << " refused: " << read.status().message();
      }
      const bool new_streak = !e.refusal;
      if (new_streak) e.refusal_reported = false;
      e.refusal = read.status().message();
      if (new_streak && on_advance_) {  // the job's reconcile reports it (RefusalToReport)
        l.unlock();
        on_advance_(key);
        l.lock();
        continue;
      }
    }
    if (!read.ok()) {
      DDP_LOG(DEBUG) << key << ": progress scrape: " << read.status().message();
      continue;
    }
    e.refusal.reset();
    metrics::WorkerScrape scrape = std::move(read).value();
    auto& busy = e.busy_reads;
    if (!scrape.busy_by_rank.empty()) {
      if (busy.size() == kMaxBusyReads) busy.erase(busy.begin());
      busy.push_back(scrape.busy_by_rank);
    }
    const bool busy_due =
        !scrape.busy_by_rank.empty() && static_cast<int>(busy.size()) >= options_.busy_reads_wake;
    // A changed group report (a member fenced, a spare taken) is news the job acts on at once.
    const bool group_changed = scrape.group.present && !(scrape.group == e.last_page.group);
    e.last_page = std::move(scrape);
    const bool advanced = e.tracker.Add(e.last_page, std::chrono::system_clock::now());
    if (group_changed && on_advance_) {
      l.unlock();
      on_advance_(key);
      l.lock();
      continue;
    }
    if (!advanced || !on_advance_) continue;
    const auto fetched = SteadyClock::now();
    auto& last_wake = e.last_wake;
    if (last_wake && fetched - *last_wake < options_.min_wake_interval && !busy_due) continue;
    last_wake = fetched;
    l.unlock();
    on_advance_(key);
    l.lock();
  }
}

}  // namespace ddp::controller
