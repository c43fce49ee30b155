// List-then-watch for one resource type, feeding an InformerSink (a cache). Level-triggered:
// the sink sees every object at least once per list, so a missed event costs latency, not
// correctness. Re-lists after a 410 Gone, after a broken watch (with exponential backoff) and
// every resync period.
#ifndef DDP_OPERATOR_KUBE_INFORMER_H_
#define DDP_OPERATOR_KUBE_INFORMER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "operator/kube/cache.h"
#include "operator/kube/client.h"

namespace ddp::controller {

struct InformerOptions {
  Resource resource;
  std::string ns;              // "" = all namespaces
  std::string label_selector;  // e.g. "ddp.dev/job-name": only the operator's objects
  int64_t page_size = 500;     // list pages, so a re-list never holds the whole world at once
  // Every resync_period the sink re-delivers its cached objects (InformerSink::Resync), as
  // client-go's informers do; the informer lists again only when a watch cannot resume (410
  // Gone, or the watch request fails), never on a timer.
  std::chrono::milliseconds resync_period{std::chrono::minutes(10)};
  std::chrono::milliseconds backoff_initial{200};
  std::chrono::milliseconds backoff_max{std::chrono::seconds(30)};
  int watch_timeout_seconds = 300;  // one watch stream's server-side duration
  // For an optional resource the operator works without (nodes): when set, a 403 is logged
  // once as a WARNING with this hint ("grant ... or ..."), later ones at DEBUG, and the informer
  // keeps retrying every backoff_max, so granting the permission later takes effect.
  std::string forbidden_hint;
  // A resource the server may not serve (a CRD that is not installed). When a list answers
  // NotFound the informer counts as synced with nothing in it (the sink is pruned empty),
  // Absent() turns true, and it lists again every absent_retry until the resource appears.
  // Otherwise a NotFound is an error like any other (retried with backoff, never synced).
  bool optional_resource = false;
  std::chrono::milliseconds absent_retry{std::chrono::seconds(30)};
};

// Owns one thread between Start() and Stop(). Thread-safe.
// REQUIRES: client and sink outlive the informer.
class Informer {
 public:
  Informer(KubeClient* client, InformerOptions options, InformerSink* sink);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  void Start();
  // Ends the watch and joins the thread. Idempotent.
  void Stop();
  // True once the first full list reached the sink.
  bool HasSynced() const { return synced_.load(); }
  // Blocks until HasSynced() or `timeout`; returns HasSynced().
  bool WaitForSync(std::chrono::milliseconds timeout);
  // How many full lists were done (1 after the first sync); for tests and logs.
  int ListCount() const { return lists_.load(); }
  // How many periodic resyncs from the cache were done.
  int ResyncCount() const { return resyncs_.load(); }
  // optional_resource only: the last list answered NotFound (the server does not serve it).
  bool Absent() const { return absent_.load(); }

 private:
  void Run();
  // Lists every page into the sink; sets *rv to the list's resourceVersion.
  Status ListIntoSink(std::string* rv);
  // Watches from *rv until the resync deadline; advances *rv. OK: time to resync.
  Status WatchUntil(std::string* rv, std::chrono::steady_clock::time_point resync_at);
  bool SleepFor(std::chrono::milliseconds d);  // false when stopped

  KubeClient* client_;
  const InformerOptions options_;
  InformerSink* sink_;
  const std::string what_;  // "pods ml (ddp.dev/job-name)" for log lines
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::shared_ptr<Cancellation> cancel_ = std::make_shared<Cancellation>();
  std::atomic<bool> synced_{false};
  std::atomic<bool> absent_{false};
  std::atomic<int> lists_{0};
  std::atomic<int> resyncs_{0};
  bool forbidden_logged_ = false;  // the informer thread's only
};

}  // namespace ddp::controller

#endif  // DDP_OPERATOR_KUBE_INFORMER_H_
