#include "operator/kube/informer.h"

#include <algorithm>
#include <unordered_set>

#include "common/logging.h"

namespace ddp::controller {
namespace {

std::string Describe(const InformerOptions& o) {
  std::string s = o.resource.Display() + " " + (o.ns.empty() ? "(all namespaces)" : o.ns);
  if (!o.label_selector.empty()) s += " [" + o.label_selector + "]";
  return s;
}

}  // namespace

Informer::Informer(KubeClient* client, InformerOptions options, InformerSink* sink)
    : client_(client), options_(std::move(options)), sink_(sink), what_(Describe(options_)) {}

Informer::~Informer() { Stop(); }

void Informer::Start() { thread_ = std::thread([this] { Run(); }); }

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  cancel_->Cancel();
  if (thread_.joinable()) thread_.join();
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, timeout, [&] { return synced_.load() || stopped_; });
  return synced_.load();
}

bool Informer::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, d, [&] { return stopped_; });
  return !stopped_;
}

Status Informer::ListIntoSink(std::string* rv) {
  ListOptions opts;
  opts.label_selector = options_.label_selector;
  opts.limit = options_.page_size;
  std::unordered_set<std::string> listed;
  bool first = true;
  do {
    auto page = client_->List(options_.resource, options_.ns, opts);
    if (!page.ok()) return page.status();
    const nlohmann::json& meta = (*page)["metadata"];
    if (first) *rv = meta.value("resourceVersion", "");  // the snapshot every page belongs to
    first = false;
    opts.continue_token = meta.value("continue", "");
    for (const auto& item : (*page)["items"]) {
      listed.insert(ObjectKey(item));
      sink_->Upsert(item);
    }
  } while (!opts.continue_token.empty());
  size_t pruned = sink_->Prune(listed);
  lists_++;
  DDP_LOG(DEBUG) << "informer " << what_ << ": listed " << listed.size() << " at rv " << *rv
                 << (pruned ? ", dropped " + std::to_string(pruned) + " deleted meanwhile" : "");
  return Status::OK();
}

Status Informer::WatchUntil(std::string* rv, std::chrono::steady_clock::time_point resync_at) {
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= resync_at) return Status::OK();
    auto left = std::chrono::ceil<std::chrono::seconds>(resync_at - now);
    WatchOptions w;
    w.label_selector = options_.label_selector;
    w.resource_version = *rv;
    w.allow_bookmarks = true;
    w.timeout_seconds = static_cast<int>(std::min<int64_t>(left.count(), options_.watch_timeout_seconds));
    w.cancel = cancel_;
    auto started = std::chrono::steady_clock::now();
    bool any_event = false;
    Status s = client_->Watch(options_.resource, options_.ns, w, [&](const WatchEvent& ev) {
      any_event = true;
      std::string ev_rv = ResourceVersionOf(ev.object);
      switch (ev.type) {
        case WatchEventType::kAdded:
        case WatchEventType::kModified: sink_->Upsert(ev.object); break;
        case WatchEventType::kDeleted: sink_->Remove(ev.object); break;
        case WatchEventType::kBookmark: break;
        case WatchEventType::kError: return true;  // Watch turns it into its Status
      }
      if (!ev_rv.empty()) *rv = ev_rv;
      return true;
    });
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopped_) return Status::OK();
    }
    if (!s.ok()) return s;
    // The stream ended cleanly (server timeout or a dropped connection): resume from *rv. A
    // stream that ended at once with nothing in it gets a pause, so a server that keeps closing
    // watches is not hammered.
    if (!any_event && std::chrono::steady_clock::now() - started < std::chrono::seconds(1) &&
        !SleepFor(options_.backoff_initial)) {
      return Status::OK();
    }
  }
}

void Informer::Run() {
  auto backoff = options_.backoff_initial;
  while (true) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopped_) return;
    }
    std::string rv;
    Status s = ListIntoSink(&rv);
    if (s.code() == StatusCode::kNotFound && options_.optional_resource) {
      // Not served: nothing exists, which is a complete (empty) view. Look again later.
      sink_->Prune({});
      if (!absent_.exchange(true)) {
        DDP_LOG(WARNING) << "informer " << what_ << ": the server does not serve it ("
                         << s.message() << "); looking again every "
                         << options_.absent_retry.count() << " ms";
      }
      if (!synced_.exchange(true)) cv_.notify_all();
      if (!SleepFor(options_.absent_retry)) return;
      continue;
    }
    if (s.ok()) {
      if (absent_.exchange(false)) DDP_LOG(INFO) << "informer " << what_ << ": now served";
      if (!synced_.exchange(true)) {
        DDP_LOG(INFO) << "informer " << what_ << ": synced";
        cv_.notify_all();
      }
      backoff = options_.backoff_initial;
      // Watch from the list's resourceVersion for as long as the watch can resume; at each
      // resync period, resync from the cache instead of listing again.
      while (true) {
        s = WatchUntil(&rv, std::chrono::steady_clock::now() + options_.resync_period);
        if (!s.ok()) break;
        {
          std::lock_guard<std::mutex> l(mu_);
          if (stopped_) return;
        }
        sink_->Resync();
        resyncs_++;
      }
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopped_) return;
    }
    if (s.code() == StatusCode::kGone) {
      // The watch cache moved past rv: a fresh list is the only way back. A short pause keeps a
      // server that answers 410 to every watch from turning this into a busy loop.
      DDP_LOG(INFO) << "informer " << what_ << ": " << s.message() << "; re-listing";
      if (!SleepFor(options_.backoff_initial)) return;
      continue;
    }
    if (s.code() == StatusCode::kForbidden && !options_.forbidden_hint.empty()) {
      // Not a fault to retry soon: a missing RBAC rule stays missing until someone grants it.
      if (!forbidden_logged_) {
        DDP_LOG(WARNING) << "informer " << what_ << ": " << s.ToString() << "; "
                         << options_.forbidden_hint;
      } else {
        DDP_LOG(DEBUG) << "informer " << what_ << ": still " << s.ToString();
      }
      forbidden_logged_ = true;
      if (!SleepFor(options_.backoff_max)) return;
      continue;
    }
    DDP_LOG(WARNING) << "informer " << what_ << ": " << s.ToString() << "; re-listing in "
                     << backoff.count() << " ms";
    if (!SleepFor(backoff)) return;
    backoff = std::min(backoff * 2, options_.backoff_max);
  }
}

}  // namespace ddp::controller

