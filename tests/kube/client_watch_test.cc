// Watch streams through the REST client: replay from a resourceVersion, selectors, bookmarks,
// 410 after the server loses its cache, and every way a stream ends.
#include <gtest/gtest.h>

#include <future>
#include <mutex>

#include "tests/kube/client_test_util.h"

namespace ddp::controller {
namespace {

using json = nlohmann::json;

// Collects events from a Watch running on its own thread.
class Collector {
 public:
  std::function<bool(const WatchEvent&)> Callback(size_t stop_after = SIZE_MAX) {
    return [this, stop_after](const WatchEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(std::string(WatchEventTypeName(e.type)) + " " +
                        e.object["metadata"].value("name", "") );
      last_rv_ = e.object["metadata"].value("resourceVersion", "");
      return events_.size() < stop_after;
    };
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  size_t size() { return events().size(); }
  std::string last_rv() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_rv_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> events_;
  std::string last_rv_;
};

class WatchTest : public FakeServerTest {
 protected:
  std::future<Status> StartWatch(const WatchOptions& o, Collector* c, size_t stop_after = SIZE_MAX,
                                 const Resource& r = kPods) {
    return std::async(std::launch::async, [this, o, c, stop_after, r] {
      return client_->Watch(r, "ml", o, c->Callback(stop_after));
    });
  }
  static bool Done(std::future<Status>& f, std::chrono::seconds within = std::chrono::seconds(10)) {
    return f.wait_for(within) == std::future_status::ready;
  }
};

TEST_F(WatchTest, ReplaysFromResourceVersionThenStreamsLive) {
  StatusOr<json> a = client_->Create(kPods, "ml", PodObject("a"));
  ASSERT_TRUE(a.ok());
  std::string rv = (*a)["metadata"]["resourceVersion"];
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("b")).ok());  // after rv: replayed

  Collector c;
  WatchOptions o;
  o.resource_version = rv;
  o.allow_bookmarks = false;
  std::future<Status> w = StartWatch(o, &c, /*stop_after=*/4);
  ASSERT_TRUE(Eventually([&] { return c.size() == 1; }));
  ASSERT_TRUE(client_->MergePatch(kPods, "ml", "a", {{"metadata", {{"labels", {{"x", "1"}}}}}}).ok());
  ASSERT_TRUE(client_->Create(kPods, "other", PodObject("elsewhere")).ok());  // other namespace
  ASSERT_TRUE(client_->Delete(kPods, "ml", "b", {}).ok());
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("c")).ok());  // the 4th: on_event stops
  ASSERT_TRUE(Done(w));
  EXPECT_TRUE(w.get().ok());
  EXPECT_EQ(c.events(), (std::vector<std::string>{"ADDED b", "MODIFIED a", "DELETED b", "ADDED c"}));
}

TEST_F(WatchTest, WithoutResourceVersionStartsWithTheCurrentObjects) {
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("a", {{"job", "x"}})).ok());
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("b", {{"job", "y"}})).ok());
  Collector c;
  WatchOptions o;
  o.label_selector = "job=x";
  std::future<Status> w = StartWatch(o, &c, 3);
  ASSERT_TRUE(Eventually([&] { return c.size() == 1; }));
  // b enters the selection, then a leaves it: ADDED and DELETED for this watcher.
  ASSERT_TRUE(client_->MergePatch(kPods, "ml", "b", {{"metadata", {{"labels", {{"job", "x"}}}}}}).ok());
  ASSERT_TRUE(client_->MergePatch(kPods, "ml", "a", {{"metadata", {{"labels", {{"job", "z"}}}}}}).ok());
  ASSERT_TRUE(Done(w));
  EXPECT_EQ(c.events(), (std::vector<std::string>{"ADDED a", "ADDED b", "DELETED a"}));
}

TEST_F(WatchTest, TooOldResourceVersionAfterRestartIsGone) {
  StatusOr<json> a = client_->Create(kPods, "ml", PodObject("a"));
  ASSERT_TRUE(a.ok());
  std::string old_rv = (*a)["metadata"]["resourceVersion"];
  ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("b")).ok());
  Collector live;
  WatchOptions o;
  o.resource_version = old_rv;
  std::future<Status> running = StartWatch(o, &live);
  ASSERT_TRUE(Eventually([&] { return live.size() == 1; }));

  server_->Restart();  // cuts the running stream and forgets the history
  ASSERT_TRUE(Done(running));
  Status cut = running.get();
  EXPECT_EQ(cut.code(), StatusCode::kUnavailable) << cut.ToString();

  Collector c;
  std::future<Status> w = StartWatch(o, &c);
  ASSERT_TRUE(Done(w));
  Status s = w.get();
  EXPECT_EQ(s.code(), StatusCode::kGone) << s.ToString();
  EXPECT_NE(s.message().find("too old resource version"), std::string::npos);
  EXPECT_TRUE(c.events().empty());
}

TEST_F(WatchTest, BoundedHistoryExpiresOldResourceVersions) {
  fake::FakeApiServerOptions opts;
  opts.history_limit = 3;
  StartServer(opts);
  StatusOr<json> first = client_->Create(kPods, "ml", PodObject("p0"));
  for (int i = 1; i < 6; ++i) ASSERT_TRUE(client_->Create(kPods, "ml", PodObject("p" + std::to_string(i))).ok());
  Collector c;
  WatchOptions o;
  o.resource_version = (*first)["metadata"]["resourceVersion"];
  std::future<Status> w = StartWatch(o, &c);
  ASSERT_TRUE(Done(w));
  EXPECT_EQ(w.get().code(), StatusCode::kGone);
}

TEST_F(WatchTest, BookmarksCarryTheCurrentResourceVersion) {
  fake::FakeApiServerOptions opts;
  opts.bookmark_interval = std::chrono::milliseconds(50);
  StartServer(opts);
  StatusOr<json> a = client_->Create(kPods, "ml", PodObject("a"));
  Collector c;
  WatchOptions o;
  o.resource_version = (*a)["metadata"]["resourceVersion"];
  o.allow_bookmarks = true;
  std::future<Status> w = StartWatch(o, &c, 1);
  ASSERT_TRUE(Done(w));
  EXPECT_TRUE(w.get().ok());
  EXPECT_EQ(c.events(), std::vector<std::string>{"BOOKMARK "});
  EXPECT_EQ(c.last_rv(), std::to_string(server_->resource_version()));
}

TEST_F(WatchTest, EndsOnServerTimeoutOnDropAndOnCancel) {
  WatchOptions o;
  o.timeout_seconds = 1;
  Collector c1;
  std::future<Status> timed = StartWatch(o, &c1);
  ASSERT_TRUE(Done(timed, std::chrono::seconds(5)));
  EXPECT_TRUE(timed.get().ok());

  o.timeout_seconds = 300;
  Collector c2;
  std::future<Status> dropped = StartWatch(o, &c2);
  ASSERT_TRUE(Eventually([&] { return server_->watch_count() == 1; }));
  server_->DropWatches(/*cut=*/false);
  ASSERT_TRUE(Done(dropped));
  EXPECT_TRUE(dropped.get().ok());  // a clean end: the caller re-watches from its last RV

  o.cancel = std::make_shared<Cancellation>();
  Collector c3;
  std::future<Status> cancelled = StartWatch(o, &c3);
  ASSERT_TRUE(Eventually([&] { return server_->watch_count() == 1; }));
  o.cancel->Cancel();
  ASSERT_TRUE(Done(cancelled, std::chrono::seconds(3)));
  EXPECT_TRUE(cancelled.get().ok());
}

TEST_F(WatchTest, StopEndsIdleWatchesAndLaterCalls) {
  Collector c;
  std::future<Status> w = StartWatch(WatchOptions{}, &c);
  ASSERT_TRUE(Eventually([&] { return server_->watch_count() == 1; }));
  client_->Stop();
  ASSERT_TRUE(Done(w, std::chrono::seconds(3)));
  EXPECT_TRUE(w.get().ok());
  EXPECT_EQ(client_->Get(kPods, "ml", "x").status().code(), StatusCode::kUnavailable);
}

TEST_F(WatchTest, WatchErrorsBeforeTheStreamAreMapped) {
  server_->FailNext("watch", "pods", 403);
  Collector c;
  std::future<Status> w = StartWatch(WatchOptions{}, &c);
  ASSERT_TRUE(Done(w));
  Status s = w.get();
  EXPECT_EQ(s.code(), StatusCode::kForbidden);
  EXPECT_NE(s.message().find("cannot watch resource \"pods\""), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ddp::controller
