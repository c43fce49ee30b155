// Informer + IndexedCache against the in-process fake API server through the real client:
// label-filtered list-then-watch, re-list after the server loses its watch cache (410), and
// pruning of objects deleted while no watch was running.
#include "operator/kube/informer.h"

#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "operator/kube/kubeconfig.h"
#include "tests/kube/fake_apiserver.h"
#include "tests/common/poll.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

// The cache takes the label key as a plain value; any key works, this is the operator's.
constexpr char kJobLabel[] = "ddp.dev/job-name";
using std::chrono::milliseconds;

bool WaitFor(const std::function<bool()>& cond, milliseconds timeout = milliseconds(10000)) {
  return ddp::testing::PollUntil(cond, timeout);
}

json Pod(const std::string& name, const std::string& job) {
  json p = {{"apiVersion", "v1"}, {"kind", "Pod"},
            {"metadata", {{"name", name}, {"namespace", "ml"}}},
            {"spec", {{"containers", json::array({{{"name", "worker"}, {"image", "x"}}})}}}};
  if (!job.empty()) p["metadata"]["labels"] = {{kJobLabel, job}};
  return p;
}

class InformerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    ASSERT_TRUE(server_.Start(0, &err)) << err;
    auto cfg = ParseKubeconfig("apiVersion: v1\nkind: Config\nclusters:\n- name: f\n  cluster:\n"
                               "    server: " + server_.url() +
                               "\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: f\n"
                               "  context: {cluster: f, user: u}\ncurrent-context: f\n", "");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    cfg->qps = 0;
    auto c = NewRestClient(*cfg);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(*c);
  }
  void TearDown() override {
    informer_.reset();
    if (client_) client_->Stop();
  }
  void StartInformer() {
    InformerOptions o;
    o.resource = kPods;
    o.ns = "ml";
    o.label_selector = kJobLabel;
    o.page_size = 2;  // several pages even for a handful of pods
    o.backoff_initial = milliseconds(20);
    informer_ = std::make_unique<Informer>(client_.get(), o, &cache_);
    informer_->Start();
    ASSERT_TRUE(informer_->WaitForSync(milliseconds(10000)));
  }
  void Create(const json& pod) {
    std::string err;
    ASSERT_TRUE(server_.CreateObject("/api/v1/namespaces/ml/pods", pod, &err)) << err;
  }

  fake::FakeApiServer server_;
  std::unique_ptr<KubeClient> client_;
  IndexedCache<std::string> cache_{
      [](const json& obj) -> std::optional<IndexedCache<std::string>::Entry> {
        std::string job = JobKeyFromLabel(obj, kJobLabel);
        if (job.empty()) return std::nullopt;
        return IndexedCache<std::string>::Entry{job, obj["metadata"]["name"].get<std::string>()};
      },
      nullptr};
  std::unique_ptr<Informer> informer_;
};

TEST_F(InformerTest, ListsEveryPageThenWatchesOnlyLabelledPods) {
  for (int i = 0; i < 5; ++i) Create(Pod("a-worker-" + std::to_string(i), "a"));
  Create(Pod("unrelated", ""));
  StartInformer();
  EXPECT_EQ(cache_.ByIndex("ml/a").size(), 5u) << "all pages were read";
  EXPECT_FALSE(cache_.Get("ml/unrelated")) << "the label selector filters at the server";
  Create(Pod("b-worker-0", "b"));
  ASSERT_TRUE(WaitFor([&] { return cache_.ByIndex("ml/b").size() == 1; }));
  ASSERT_TRUE(server_.RemoveObject("/api/v1/namespaces/ml/pods/a-worker-4"));
  ASSERT_TRUE(WaitFor([&] { return cache_.ByIndex("ml/a").size() == 4; }));
  EXPECT_EQ(informer_->ListCount(), 1) << "watch events, not re-lists, carried the changes";
}

TEST_F(InformerTest, RelistsWhileWatchesBreakAndPrunesWhatWentAway) {
  Create(Pod("a-worker-0", "a"));
  Create(Pod("a-worker-1", "a"));
  StartInformer();
  ASSERT_EQ(cache_.Size(), 2u);
  // Every watch now fails and the open one is cut: changes from here on reach the cache only
  // through re-lists. One pod goes, one comes.
  server_.FailNext("watch", "pods", 500, 1000000);
  server_.Restart();
  ASSERT_TRUE(server_.RemoveObject("/api/v1/namespaces/ml/pods/a-worker-0"));
  Create(Pod("a-worker-2", "a"));
  ASSERT_TRUE(WaitFor([&] {
    return !cache_.Get("ml/a-worker-0") && cache_.Get("ml/a-worker-2").has_value();
  })) << "lists: " << informer_->ListCount();
  EXPECT_TRUE(cache_.Get("ml/a-worker-1").has_value());
  EXPECT_GE(informer_->ListCount(), 2);
  server_.ClearFaults();
}

TEST_F(InformerTest, GoneWatchLeadsToAFreshList) {
  Create(Pod("a-worker-0", "a"));
  StartInformer();
  server_.FailNext("watch", "pods", 410, 1);
  server_.DropWatches(/*cut=*/false);  // the informer re-watches and gets 410
  ASSERT_TRUE(WaitFor([&] { return informer_->ListCount() >= 2; }));
  Create(Pod("a-worker-1", "a"));
  ASSERT_TRUE(WaitFor([&] { return cache_.ByIndex("ml/a").size() == 2; }));
}

// The periodic resync re-delivers the cached objects from memory: no list request, and changes
// keep arriving through the same watch.
TEST_F(InformerTest, ResyncsFromTheCacheWithoutListingAgain) {
  std::mutex mu;
  std::map<std::string, int> unchanged;  // name -> notifications with old == now
  IndexedCache<std::string> cache(
      [](const json& obj) -> std::optional<IndexedCache<std::string>::Entry> {
        std::string job = JobKeyFromLabel(obj, kJobLabel);
        if (job.empty()) return std::nullopt;
        return IndexedCache<std::string>::Entry{job, obj["metadata"]["name"].get<std::string>()};
      },
      [&](const std::string&, const std::string* old, const std::string* now) {
        std::lock_guard<std::mutex> l(mu);
        if (old && now && *old == *now) unchanged[*now]++;
      });
  Create(Pod("a-worker-0", "a"));
  Create(Pod("a-worker-1", "a"));
  InformerOptions o;
  o.resource = kPods;
  o.ns = "ml";
  o.label_selector = kJobLabel;
  o.resync_period = milliseconds(300);
  informer_ = std::make_unique<Informer>(client_.get(), o, &cache);
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForSync(milliseconds(10000)));
  ASSERT_TRUE(WaitFor([&] { return informer_->ResyncCount() >= 2; }));
  Create(Pod("a-worker-2", "a"));
  ASSERT_TRUE(WaitFor([&] { return cache.ByIndex("ml/a").size() == 3; }));
  EXPECT_EQ(informer_->ListCount(), 1) << "resyncs come from the cache, not from re-lists";
  std::lock_guard<std::mutex> l(mu);
  EXPECT_GE(unchanged["a-worker-0"], 2);
  EXPECT_GE(unchanged["a-worker-1"], 2);
  informer_.reset();  // before `cache` goes
}

TEST_F(InformerTest, KeepsTryingThroughServerErrors) {
  server_.FailFor(milliseconds(300));
  InformerOptions o;
  o.resource = kPods;
  o.ns = "ml";
  o.backoff_initial = milliseconds(20);
  Create(Pod("a-worker-0", "a"));
  informer_ = std::make_unique<Informer>(client_.get(), o, &cache_);
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForSync(milliseconds(10000)));
  EXPECT_EQ(cache_.Size(), 1u);
}

// An optional resource the operator may not be allowed to read (nodes): a 403 is not retried at
// the error backoff (which would log and list every few ms at first) but every backoff_max, and
// a permission granted later takes effect.
TEST_F(InformerTest, ForbiddenOptionalResourceRetriesSlowlyAndSyncsOnceGranted) {
  server_.FailNext("list", "pods", 403, 1000000);
  InformerOptions o;
  o.resource = kPods;
  o.ns = "ml";
  o.backoff_initial = milliseconds(20);
  o.backoff_max = milliseconds(1500);
  o.forbidden_hint = "grant list and watch on pods";
  Create(Pod("a-worker-0", "a"));
  informer_ = std::make_unique<Informer>(client_.get(), o, &cache_);
  informer_->Start();
  // At the error backoff (20, 40, 80, ... ms) a second of 403s would be 6 lists; here it is 1.
  EXPECT_FALSE(informer_->WaitForSync(milliseconds(1000)));
  EXPECT_EQ(server_.RequestCount("list"), 1);
  server_.ClearFaults();
  ASSERT_TRUE(informer_->WaitForSync(milliseconds(10000)));
  EXPECT_EQ(cache_.Size(), 1u);
}

// A resource whose CRD is not installed: an optional informer counts as synced and empty and
// says Absent(); once the CRD and an object appear, its next look lists them. A required
// informer never syncs on a resource the server does not serve.
TEST_F(InformerTest, OptionalResourceSyncsEmptyWhileAbsentAndListsOnceServed) {
  InformerOptions o;
  o.resource = kVolcanoPodGroups;
  o.ns = "ml";
  o.label_selector = kJobLabel;
  o.backoff_initial = milliseconds(20);
  Informer required(client_.get(), o, &cache_);
  required.Start();
  o.optional_resource = true;
  o.absent_retry = milliseconds(100);
  informer_ = std::make_unique<Informer>(client_.get(), o, &cache_);
  informer_->Start();
  ASSERT_TRUE(informer_->WaitForSync(milliseconds(10000)));
  EXPECT_TRUE(informer_->Absent());
  EXPECT_EQ(cache_.Size(), 0u);
  EXPECT_FALSE(required.WaitForSync(milliseconds(300))) << "NotFound is an error when required";
  required.Stop();

  server_.RegisterCrd({"scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", true, {}});
  std::string err;
  ASSERT_TRUE(server_.CreateObject("/apis/scheduling.volcano.sh/v1beta1/namespaces/ml/podgroups",
                                   {{"metadata", {{"name", "a"}, {"labels", {{kJobLabel, "a"}}}}},
                                    {"spec", {{"minMember", 1}}}},
                                   &err))
      << err;
  ASSERT_TRUE(WaitFor([&] { return !informer_->Absent() && cache_.ByIndex("ml/a").size() == 1; }));
}

}  // namespace
}  // namespace ddp::controller
