// The progress scraper's threads; see progress_scraper.h.
#include "operator/kube/progress_scraper.h"

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
      fetch_(fetch ? std::move(fetch) : Fetch(HttpGet)) {}

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

std::optional<ScrapedProgress> ProgressScraper::Get(const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.tracker.snapshot()) return std::nullopt;
  return ScrapedProgress{it->second.target.round, *it->second.tracker.snapshot(),
                         it->second.last_page};
}

std::optional<std::pair<int, metrics::GroupScrape>> ProgressScraper::GetGroup(
    const std::string& key) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end() || !it->second.last_page.group.present) return std::nullopt;
  return std::make_pair(it->second.target.round, it->second.last_page.group);
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

void ProgressScraper::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    // The entry due first that no other thread is reading. A linear scan: a few thousand jobs
    // cost microseconds, at most max_in_flight times per fetch.
    auto now = SteadyClock::now();
    std::map<std::string, Entry>::iterator due = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.in_flight) continue;
      if (due == entries_.end() || it->second.next_due < due->second.next_due) due = it;
    }
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
    const uint64_t epoch = due->second.epoch;
    due->second.in_flight = true;
    due->second.next_due = now + (target_group(due->second.target) ? options_.group_interval
                                                                   : options_.interval);
    l.unlock();
    StatusOr<std::string> page =
        fetch_(target.host, target.port, "/metrics", static_cast<int>(options_.timeout.count()));
    metrics::WorkerScrape scrape;
    if (page.ok()) scrape = metrics::ParseWorkerScrape(page.value());
    if (on_fetch_) on_fetch_(page.ok());
    l.lock();
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.epoch != epoch) continue;  // forgotten or retargeted
    it->second.in_flight = false;
    if (!page.ok()) {
      DDP_LOG(DEBUG) << key << ": progress scrape: " << page.status().message();
      continue;
    }
    auto& busy = it->second.busy_reads;
    if (!scrape.busy_by_rank.empty()) {
      if (busy.size() == kMaxBusyReads) busy.erase(busy.begin());
      busy.push_back(scrape.busy_by_rank);
    }
    const bool busy_due =
        !scrape.busy_by_rank.empty() && static_cast<int>(busy.size()) >= options_.busy_reads_wake;
    // A changed group report (a member fenced, a spare taken) is news the job acts on at once.
    const bool group_changed = scrape.group.present && !(scrape.group == it->second.last_page.group);
    it->second.last_page = std::move(scrape);
    const bool advanced =
        it->second.tracker.Add(it->second.last_page, std::chrono::system_clock::now());
    if (group_changed && on_advance_) {
      l.unlock();
      on_advance_(key);
      l.lock();
      continue;
    }
    if (!advanced || !on_advance_) continue;
    const auto fetched = SteadyClock::now();
    auto& last_wake = it->second.last_wake;
    if (last_wake && fetched - *last_wake < options_.min_wake_interval && !busy_due) continue;
    last_wake = fetched;
    l.unlock();
    on_advance_(key);
    l.lock();
  }
}

}  // namespace ddp::controller
